"""Non-stationary BO: logistic regression on Pima diabetes data that grows over time.

The paper's non-stationary experiment. The Pima Indians diabetes records (shipped with the
package) arrive in five stages of 138, 276, 414, 552 and 691 training rows
(:mod:`trainables.logreg`); the model's batch size, L2 penalty and learning rate are tuned
again at each stage. Stages 1-4 are earlier tuning runs, stage 5 is the new one:

1. one Tune experiment per earlier stage with Tune's random search (skipped when
   ``--meta-tasks`` names existing experiments, e.g. from ``examples/make_meta_tasks.py logreg``);
2. stage 5 is searched with ``RMBOSearcher`` warm-started from those experiments;
3. the script prints each trial's validation error with the best so far and the meta-weight
   of every stage, then the best configuration.

Offline, CPU only, no download. With the defaults (4 x 30 + 30 trials of 30 epochs) it takes
about 3 minutes on two cores, most of it Tune's per-trial overhead; ``--meta-samples 10
--num-samples 10`` under a minute::

    python examples/pima.py
    python examples/pima.py --storage-path /tmp/rmbo --meta-samples 10 --num-samples 10
    python examples/pima.py --meta-stages 3 4   # only the two latest stages as meta-tasks
    python examples/pima.py --meta-tasks "~/meta/logreg-stage*" --num-samples 30

Experiments land in ``<storage-path>/<name>/`` (default ``~/ray_results/pima_<time>``):
``logreg-stage1`` ... ``logreg-stage4`` and ``target-stage5``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import ray
from ray import tune

from rmbo_tune import RMBOSearcher
from rmbo_tune.diagnostics import final_metrics, trace_lines
from trainables import logreg
from trainables.experiments import logreg_tasks, run_meta_tasks

METRIC, MODE = "val_error", "min"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--storage-path", default="~/ray_results", help="root of the experiments")
    p.add_argument("--name", default=None, help="run folder (default: pima_<time>)")
    p.add_argument(
        "--meta-tasks",
        nargs="+",
        default=None,
        metavar="PATH",
        help="existing meta-task experiments (dirs, globs or URIs); skips step 1",
    )
    p.add_argument(
        "--meta-stages",
        type=int,
        nargs="+",
        default=[1, 2, 3, 4],
        choices=[1, 2, 3, 4],
        help="earlier stages searched as meta-tasks in step 1",
    )
    p.add_argument("--meta-samples", type=int, default=30, help="random trials per stage")
    p.add_argument("--num-samples", type=int, default=30, help="trials of the stage-5 search")
    p.add_argument("--epochs", type=int, default=logreg.DEFAULT_EPOCHS, help="SGD epochs")
    p.add_argument("--max-concurrent", type=int, default=None, help="simultaneous trials")
    p.add_argument("--seed", type=int, default=0, help="seeds both searches")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs for Ray (default: all)")
    p.add_argument("--verbose", type=int, default=0, help="Tune verbosity (0-3)")
    args = p.parse_args(argv)
    if min(args.meta_samples, args.num_samples, args.epochs) < 1:
        p.error("--meta-samples, --num-samples and --epochs must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run stages 1-4 (unless given), then the warm-started stage-5 search."""
    args = parse_args(argv)
    name = args.name or time.strftime("pima_%Y-%m-%d_%H-%M-%S")
    root = os.path.join(os.path.abspath(os.path.expanduser(args.storage_path)), name)
    if os.path.exists(root):
        raise SystemExit(f"error: {root} exists; pass another --name or remove it")
    ray.init(num_cpus=args.num_cpus, include_dashboard=False)

    if args.meta_tasks:
        meta_tasks: list[str] = args.meta_tasks
    else:
        tasks = logreg_tasks()
        dirs = run_meta_tasks(
            "logreg",
            {f"stage{k}": tasks[f"stage{k}"] for k in sorted(set(args.meta_stages))},
            storage_path=root,
            num_samples=args.meta_samples,
            fixed={"epochs": args.epochs},
            max_concurrent_trials=args.max_concurrent,
            seed=args.seed,
            verbose=args.verbose,
        )
        meta_tasks = [str(path) for path in dirs.values()]
        for task, path in dirs.items():
            print(f"meta-task {task}: {path}")

    # The target's trials are scored by their last report (what Tune hands the searcher when
    # a trial completes); score the meta-tasks' trials the same way.
    searcher = RMBOSearcher(
        metric=METRIC, mode=MODE, meta_tasks=meta_tasks, meta_scope="last", seed=args.seed
    )
    grid = tune.Tuner(
        logreg.logreg_trainable,
        param_space={**logreg.search_space(), "stage": 5, "epochs": args.epochs},
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=args.num_samples,
            max_concurrent_trials=args.max_concurrent,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(name="target-stage5", storage_path=root, verbose=args.verbose),
    ).fit()

    print(f"stage-5 search, in the order the searcher suggested ({METRIC}, lower is better):")
    values = final_metrics(grid, METRIC)
    print("\n".join(trace_lines(searcher.history, values, metric=METRIC, mode=MODE)))
    best = grid.get_best_result(metric=METRIC, mode=MODE)
    config = {k: best.config[k] for k in logreg.search_space()}
    print(f"best {METRIC}: {best.metrics[METRIC]:.4f} with {config}")
    print(f"target experiment: {grid.experiment_path}")
    ray.shutdown()  # explicitly: quicker than leaving it to the interpreter's exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
