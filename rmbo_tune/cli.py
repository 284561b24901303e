"""The ``rmbo-tune`` command: ``demo``, ``inspect`` and ``bench``.

- ``rmbo-tune demo``: the paper's synthetic experiment on the engine, reduced (a few minutes
  on two cores). The Ray Tune CartPole demo replaces it when the demo issue lands.
- ``rmbo-tune inspect PATH_OR_URI... --metric M --mode max``: what would be loaded from
  earlier Tune experiments as meta-tasks, and what would be dropped and why.
- ``rmbo-tune bench synthetic|latency|overhead|load-time [options]``: the benchmark scripts.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

BENCHES = {
    "synthetic": "rmbo_tune.bench.synthetic",
    "latency": "rmbo_tune.bench.latency",
    "overhead": "rmbo_tune.bench.overhead",
    "load-time": "rmbo_tune.bench.load_time",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rmbo-tune`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="rmbo-tune", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "demo", help="offline demo: the paper's synthetic experiment, reduced", add_help=False
    )
    sub.add_parser(
        "inspect", help="report what earlier Tune experiments hold as meta-tasks", add_help=False
    )
    bench = sub.add_parser("bench", help="run a benchmark")
    bench.add_argument("task", choices=sorted(BENCHES))
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from rmbo_tune.bench import synthetic

        print(
            "rmbo-tune demo: the paper's synthetic experiment (section 6.1) on the engine, "
            "10 functions x 30 iterations",
            flush=True,
        )
        synthetic.main(["--functions", "10", "--iterations", "30", *rest])
        return 0
    if args.command == "inspect":
        from rmbo_tune.meta_tasks import inspect_main

        return inspect_main(rest)
    importlib.import_module(BENCHES[args.task]).main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
