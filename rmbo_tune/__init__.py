"""rmbo-tune: robust meta-Bayesian optimization for Ray Tune.

``from rmbo_tune import RMBOSearcher`` loads Ray on first use; ``import rmbo_tune.engine``
never does.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["MetaBO", "MetaTask", "RMBOError", "RMBOSearcher", "SearchSpace", "load_meta_tasks"]

_LAZY = {
    "MetaBO": "rmbo_tune.engine",
    "MetaTask": "rmbo_tune.meta_tasks",
    "RMBOError": "rmbo_tune.engine.types",
    "RMBOSearcher": "rmbo_tune.searcher",
    "SearchSpace": "rmbo_tune.space",
    "load_meta_tasks": "rmbo_tune.meta_tasks",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rmbo_tune' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
