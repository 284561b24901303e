"""The ``rmbo-tune`` command: ``demo`` and ``bench``.

``rmbo-tune demo`` currently runs the paper's synthetic experiment on the engine (a few
minutes on two cores); the Ray Tune CartPole demo replaces it when the benchmark-suite issue
lands.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``rmbo-tune`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="rmbo-tune", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "demo", help="offline demo: the paper's synthetic experiment, reduced", add_help=False
    )
    bench = sub.add_parser("bench", help="run a benchmark: synthetic | latency")
    bench.add_argument("task", choices=["synthetic", "latency"])
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from rmbo_tune.bench import synthetic

        print(
            "rmbo-tune demo: the paper's synthetic experiment (section 6.1) on the engine, "
            "10 functions x 30 iterations",
            flush=True,
        )
        synthetic.main(["--functions", "10", "--iterations", "30", *rest])
    elif args.task == "synthetic":
        from rmbo_tune.bench import synthetic

        synthetic.main(rest)
    else:
        from rmbo_tune.bench import latency

        latency.main(rest)


if __name__ == "__main__":
    main()
