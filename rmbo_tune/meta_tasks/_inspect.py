"""``rmbo-tune inspect``: print the load report of meta-task sources."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


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


def inspect_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rmbo-tune inspect PATH_OR_URI... --metric M --mode max``.

    Loads the sources with :func:`load_meta_tasks` and prints :func:`format_report`.

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
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        tasks = load_meta_tasks(
            args.sources,
            args.metric,
            args.mode,
            scope=args.scope,
            metric_map=dict(args.metric_map) or None,
        )
    except (OSError, ValueError, TypeError) as exc:
        print(f"rmbo-tune inspect: error: {exc}", file=sys.stderr)
        return 1
    print(format_report(tasks))
    return 0
