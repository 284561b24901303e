"""The ``rmbo-tune`` command: ``demo``, ``inspect`` and ``bench``.

- ``rmbo-tune demo``: CartPole meta-BO through real Ray Tune, offline (a few minutes on two
  cores): RMBOSearcher with ten earlier experiments as meta-tasks against GP-UCB and Tune's
  random search; prints a table and writes plots.
- ``rmbo-tune inspect PATH_OR_URI... --metric M --mode max [--space MODULE:NAME]``: what
  would be loaded from earlier Tune experiments as meta-tasks, and what would be dropped and
  why (with ``--space``, aligned with the new search's ``param_space``).
- ``rmbo-tune bench TASK [options]``: the benchmark suite. Tasks through Ray Tune:
  ``cartpole``, ``pima``, ``cnn-digits``, ``omniglot-small``; on the engine: ``synthetic``,
  ``tabular --data DIR``, ``fidelity`` (searchers beside ASHA on replayed learning
  curves); measurements: ``latency``, ``overhead``, ``load-time``; ``scoreboard``
  (one method against the strongest other one on several ``tabular`` results), ``ablation``
  (an option's runs against the default's), ``tails`` (how often and how badly each method
  loses to GP-UCB, run by run) and ``placement`` (how the earlier tasks rate each method's
  evaluations, step by step).
  ``rmbo-tune bench TASK --help`` lists each one's options.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

TUNE_TASKS = ("cartpole", "pima", "cnn-digits", "omniglot-small")
BENCHES = {
    "synthetic": "rmbo_tune.bench.synthetic",
    "tabular": "rmbo_tune.bench.tabular",
    "fidelity": "rmbo_tune.bench.early_stopping",
    "latency": "rmbo_tune.bench.latency",
    "overhead": "rmbo_tune.bench.overhead",
    "load-time": "rmbo_tune.bench.load_time",
    "scoreboard": "rmbo_tune.bench.scoreboard",
    "ablation": "rmbo_tune.bench.ablation",
    "tails": "rmbo_tune.bench.tails",
    "placement": "rmbo_tune.bench.placement",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rmbo-tune`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="rmbo-tune", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="offline demo: CartPole meta-BO through Ray Tune", add_help=False)
    sub.add_parser(
        "inspect", help="report what earlier Tune experiments hold as meta-tasks", add_help=False
    )
    # add_help=False: "rmbo-tune bench TASK --help" is the task's own help.
    bench = sub.add_parser(
        "bench", help="run a benchmark (rmbo-tune bench TASK --help)", add_help=False
    )
    bench.add_argument("task", choices=sorted([*TUNE_TASKS, *BENCHES]))
    if argv[:1] == ["bench"] and (len(argv) == 1 or argv[1] in ("-h", "--help")):
        bench.print_help()
        return 0
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from rmbo_tune.bench import demo

        demo.main(rest)
        return 0
    if args.command == "inspect":
        from rmbo_tune.meta_tasks import inspect_main

        return inspect_main(rest)
    if args.task in TUNE_TASKS:
        # One configuration box per experiment from Tune's new console output would bury the
        # suite's own progress lines.
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        from rmbo_tune.bench import tasks

        tasks.main(rest, task_name=args.task)
        return 0
    importlib.import_module(BENCHES[args.task]).main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
