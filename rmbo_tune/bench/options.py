"""Engine options given on a benchmark's command line (``--option NAME=VALUE``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """``["n_polish=0", "kernel=se"]`` -> ``{"n_polish": 0, "kernel": "se"}``: each value is
    read as JSON, or kept as a string when it is not JSON."""
    options: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--option must look like NAME=VALUE, got {item!r}")
        try:
            options[name] = json.loads(value)
        except json.JSONDecodeError:
            options[name] = value
    return options
