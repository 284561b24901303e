"""Engine options given on a benchmark's command line (``--option NAME=VALUE``)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from rmbo_tune.engine.options import MetaBOOptions


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (a count of seeds, trials, functions...)."""
    return _int_at_least(text, 1)


def positive_int_list(text: str) -> list[int]:
    """An argparse type: comma-separated integers >= 1 (horizons, trial counts)."""
    values = [positive_int(v.strip()) for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    return values


def method_list(values: str | Sequence[str], known: Sequence[str]) -> list[str]:
    """Method names from a ``--methods`` value: comma-separated text, or several such texts
    (``nargs="+"``).

    Parameters
    ----------
    values : str or sequence of str
        The option's text(s).
    known : sequence of str
        The methods the command runs.

    Returns
    -------
    list of str
        The names, in the order given.

    Raises
    ------
    ValueError
        Naming the unknown names, if any, or if no name is given.
    """
    texts = [values] if isinstance(values, str) else list(values)
    methods = [m for text in texts for m in text.split(",") if m]
    unknown = [m for m in methods if m not in known]
    if unknown or not methods:
        raise ValueError(f"unknown method(s) {unknown} in --methods; choose from {list(known)}")
    return methods


def nonnegative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    return _int_at_least(text, 0)


def nonnegative_float(text: str) -> float:
    """An argparse type: a number >= 0 (a tolerance)."""
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
    return value


def out_dir(text: str) -> str:
    """``--out``: a folder to write into (created if missing), not an existing file."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    return text


def add_option_argument(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--option NAME=VALUE`` argument (read by :func:`parse_options`)."""
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option of the engine's methods, e.g. n_polish=0 (repeatable; read as JSON)",
    )


def parse_options(
    items: Sequence[str], parser: argparse.ArgumentParser | None = None
) -> dict[str, Any]:
    """``["n_polish=0", "kernel=se"]`` -> ``{"n_polish": 0, "kernel": "se"}``: each value is
    read as JSON, or kept as a string when it is not JSON. The options are validated here,
    so that a bad one is named before any experiment runs: through ``parser.error`` (a
    usage error) when a parser is given.

    Raises
    ------
    ValueError, TypeError
        Without ``parser``: for an item not of the form NAME=VALUE, an unknown option or a
        bad value.
    """
    try:
        return _parse_options(items)
    except (TypeError, ValueError) as exc:
        if parser is None:
            raise
        parser.error(str(exc))


def _parse_options(items: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--option must look like NAME=VALUE, got {item!r}")
        try:
            options[name] = json.loads(value)
        except json.JSONDecodeError:
            options[name] = value
    MetaBOOptions.from_kwargs(options)
    return options
