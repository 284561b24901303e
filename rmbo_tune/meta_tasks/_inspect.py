"""``rmbo-tune inspect``: print the load report of meta-task sources."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _map_entry(text: str) -> tuple[str, tuple[float, float]]:
    name, sep, spec = text.partition("=")
    try:
        if not (name and sep):
            raise ValueError
        scale, _, offset = spec.partition(",")
        return name, (float(scale), float(offset or 0.0))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NAME=SCALE[,OFFSET] (e.g. val_acc=-1,1), got {text!r}"
        ) from None


def _fidelity_entry(text: str) -> tuple[str, float]:
    """``ATTR=VALUE``: keep only the trials that reached ``VALUE`` of ``ATTR``."""
    attr, sep, value = text.partition("=")
    try:
        if not (attr and sep) or not float(value) > 0:
            raise ValueError
        return attr, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected ATTR=VALUE with VALUE > 0 (e.g. training_iteration=27), got {text!r}"
        ) from None


def _space_entry(text: str) -> Mapping[str, Any]:
    """The ``param_space`` dict ``NAME`` of ``MODULE:NAME`` or ``FILE.py:NAME`` (the file is
    run as a module, as ``python FILE.py`` would run it)."""
    target, sep, name = text.rpartition(":")
    if not (sep and target and name):
        raise argparse.ArgumentTypeError(f"expected MODULE:NAME or FILE.py:NAME, got {text!r}")
    try:
        if target.endswith(".py"):
            path = Path(target).expanduser()
            if not path.is_file():
                raise argparse.ArgumentTypeError(f"{text!r}: no file {str(path)!r}")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise argparse.ArgumentTypeError(f"{text!r}: {str(path)!r} is not a module")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except ImportError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    space = getattr(module, name, None)
    if not isinstance(space, Mapping):
        found = "nothing" if space is None else type(space).__name__
        raise argparse.ArgumentTypeError(f"{text!r}: {name} is {found}, not a param_space dict")
    return space


def inspect_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rmbo-tune inspect PATH_OR_URI... --metric M --mode max``.

    Loads the sources with :func:`load_meta_tasks` and prints :func:`format_report`; with
    ``--space MODULE:NAME`` (or ``FILE.py:NAME``), aligned with that ``param_space`` as
    ``RMBOSearcher`` aligns them, so configs outside it are counted as dropped and keys an
    experiment did not search, or searched where the space holds them constant, are named.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments after ``inspect``; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 1 when loading fails (the error is printed to stderr). Bad arguments
        exit with status 2, as argparse does.
    """
    from rmbo_tune.meta_tasks._loader import load_meta_tasks
    from rmbo_tune.meta_tasks._report import format_report

    parser = argparse.ArgumentParser(
        prog="rmbo-tune inspect",
        description="Load earlier Tune experiments as meta-tasks and print what was found, "
        "used and dropped.",
    )
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="PATH_OR_URI",
        help="experiment directory, directory of experiments, glob, CSV or URI",
    )
    parser.add_argument("--metric", required=True, help="target metric")
    parser.add_argument("--mode", required=True, choices=["min", "max"])
    parser.add_argument("--scope", default="best", choices=["best", "last"])
    parser.add_argument(
        "--map",
        dest="metric_map",
        action="append",
        type=_map_entry,
        default=[],
        metavar="NAME=SCALE[,OFFSET]",
        help="read NAME as SCALE * NAME + OFFSET where the metric is missing (repeatable)",
    )
    parser.add_argument(
        "--space",
        type=_space_entry,
        metavar="MODULE:NAME",
        help="the new search's param_space, a dict NAME in a module or a FILE.py: align "
        "the experiments with it as the searcher does",
    )
    parser.add_argument(
        "--fidelity",
        type=_fidelity_entry,
        metavar="ATTR=VALUE",
        help="keep only the trials that reached VALUE of ATTR, as a searcher given "
        "max_fidelity (or an early-stopping scheduler=) does",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        tasks = load_meta_tasks(
            args.sources,
            args.metric,
            args.mode,
            scope=args.scope,
            metric_map=dict(args.metric_map) or None,
            space=args.space,
            fidelity=args.fidelity,
        )
    except (OSError, ValueError, TypeError) as exc:
        print(f"rmbo-tune inspect: error: {exc}", file=sys.stderr)
        return 1
    print(format_report(tasks))
    return 0
