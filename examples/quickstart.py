"""Quickstart: warm-start a Tune search with the results of two earlier Tune experiments.

The smallest end-to-end flow, offline, in Tune's own idiom:

1. two earlier "source" experiments tune a cheap function trainable on related tasks with Tune's
   default random search (``BasicVariantGenerator``); one task's optimum lies close to the new
   task's ("near"), the other's far away ("far");
2. a new search on the target task uses ``RMBOSearcher(meta_tasks=[...])`` with the two
   experiment directories;
3. the best result is printed, and the meta-weights the searcher learned per source task
   (``searcher.history``; the same records are in ``rmbo_history.json`` in the target
   experiment's directory). The near task should end up with most of the weight.

The trainable is a smooth function of two parameters whose optimum moves with the task
(``shift``); it needs no data. With the defaults the script runs in under a minute on two cores
(Ray's start-up included)::

    python examples/quickstart.py
    python examples/quickstart.py --storage-path /tmp/rmbo --source-samples 10 --num-samples 8

Everything lands in ``<storage-path>/<name>/`` (default ``~/ray_results/quickstart_<time>``):
``source-near``, ``source-far`` and ``target``, three ordinary Tune experiment directories.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

import ray
from _common import add_run_options, fit, make_parser, run_folder
from ray import tune
from ray.tune.search import BasicVariantGenerator

from rmbo_tune import RMBOSearcher
from rmbo_tune.bench.console import ray_logs_to_file

TARGET_SHIFT = 1.0
TARGET_MIN = -0.0982  # at x = 0.968, y = -0.5
SOURCE_SHIFTS = {"near": 0.9, "far": -1.5}


def objective(config: dict[str, Any]) -> None:
    """A task-dependent bowl with ripples; its minimum lies near ``(shift, -shift / 2)``."""
    x, y, shift = config["x"], config["y"], config["shift"]
    loss = (x - shift) ** 2 + 0.5 * (y + 0.5 * shift) ** 2 + 0.1 * math.sin(5.0 * x)
    tune.report({"loss": loss})


def search_space() -> dict[str, Any]:
    """The two tuned parameters (the task's ``shift`` is added as a constant)."""
    return {"x": tune.uniform(-2.0, 2.0), "y": tune.uniform(-2.0, 2.0)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(
        __doc__,
        "quickstart",
        storage_help="root of the Tune experiments",
        name_help="folder under --storage-path for this run's experiments "
        "(default: quickstart_<time>)",
    )
    p.add_argument("--source-samples", type=int, default=20, help="trials per source experiment")
    p.add_argument("--num-samples", type=int, default=15, help="trials of the new search")
    add_run_options(p, seed_help="seeds the random and the meta-BO search", max_concurrent=False)
    args = p.parse_args(argv)
    if args.source_samples < 1 or args.num_samples < 1:
        p.error("--source-samples and --num-samples must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the source experiments, then the warm-started search; print what it found."""
    args = parse_args(argv)
    root = run_folder(args.storage_path, args.name, "quickstart")
    # Ray's own log lines go to <root>/ray.log, named in the last line printed.
    with ray_logs_to_file(os.path.join(root, "ray.log"), announce=True):
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False)

        # 1. Earlier experiments on related tasks, with Tune's default (random) search.
        source_dirs = []
        for i, (task, shift) in enumerate(SOURCE_SHIFTS.items()):
            source = fit(
                objective,
                {**search_space(), "shift": shift},
                BasicVariantGenerator(random_state=args.seed + i),
                name=f"source-{task}",
                storage_path=root,
                num_samples=args.source_samples,
                verbose=args.verbose,
                metric="loss",
                mode="min",
            )
            source_dirs.append(source.experiment_path)
            print(f"source experiment: {source.experiment_path} (shift {shift})")

        # 2. The new task, warm-started from the source experiments' directories (a glob such as
        # f"{root}/source-*", a storage URI or the ResultGrid objects would do as well).
        searcher = RMBOSearcher(metric="loss", mode="min", meta_tasks=source_dirs, seed=args.seed)
        grid = fit(
            objective,
            {**search_space(), "shift": TARGET_SHIFT},
            searcher,
            name="target",
            storage_path=root,
            num_samples=args.num_samples,
            verbose=args.verbose,
        )

        # 3. What it found, and how much it trusted each source task.
        best = grid.get_best_result(metric="loss", mode="min")
        print(f"target experiment: {grid.experiment_path}")
        print(
            f"best loss: {best.metrics['loss']:.4f} after {len(grid)} trials "
            f"(x={best.config['x']:.3f}, y={best.config['y']:.3f}; the minimum is {TARGET_MIN})"
        )
        # Tuner runs the very searcher object passed in (no copy), so its history is complete
        # after fit(). The same records are in rmbo_history.json, written at every experiment
        # checkpoint: read that file for a run that was restored or ran in another process.
        print("meta-weights (nu = total weight on the source tasks):")
        for record in searcher.history:
            weights = ", ".join(f"{k}={v:.2f}" for k, v in record["weights"].items())
            print(f"  trial {record['trial_id']}: nu={record['nu']:.3f}  {weights}")
        print(f"history file: {os.path.join(grid.experiment_path, 'rmbo_history.json')}")
        ray.shutdown()  # explicitly: quicker than leaving it to the interpreter's exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
