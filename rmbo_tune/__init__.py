"""rmbo-tune: robust meta-Bayesian optimization for Ray Tune.

Importing this package does not import ray; the Ray-facing names load on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"
