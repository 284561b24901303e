"""Generate meta-tasks (ordinary Tune experiment directories) for one of the paper's workloads.

Examples
--------
Pima stages 1-4 (seconds, CPU)::

    python examples/make_meta_tasks.py logreg --storage-path ~/meta --num-samples 30

CNN on SVHN, CIFAR-10 and CIFAR-100 as sources for an MNIST target, one GPU per trial::

    python examples/make_meta_tasks.py cnn --target mnist --num-samples 50 --gpus-per-trial 1 \
        --data-dir /shared/datasets --storage-path /shared/meta

CartPole, 7 random and 3 similar initial states around the target's::

    python examples/make_meta_tasks.py cartpole --target-state 0 0 0.05 0 --num-samples 50

Omniglot, 10 alphabets of the background set::

    python examples/make_meta_tasks.py siamese --num-samples 30 --gpus-per-trial 0.5

Each source task ends up in ``<storage-path>/<workload>-<task>``; pass those directories to the
meta-BO searcher. Connects to a running Ray cluster when ``RAY_ADDRESS`` is set.
"""

from __future__ import annotations

import argparse
import sys

import ray
from _common import (
    add_set_option,
    add_target_state_option,
    add_trial_resource_options,
    set_entries,
    trial_resources,
)

from trainables.experiments import WORKLOADS, default_tasks, run_meta_tasks


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the meta-task searches and print the experiment directories."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--storage-path", required=True, help="root directory for the experiments")
    p.add_argument("--num-samples", type=int, default=30, help="evaluations per source task")
    p.add_argument("--target", default="mnist", help="cnn: target dataset to exclude")
    add_target_state_option(
        p, [0.0, 0.0, 0.0, 0.0], help="cartpole: the target task's initial state"
    )
    p.add_argument("--n-similar", type=int, default=3, help="cartpole: states near the target")
    p.add_argument("--n-random", type=int, default=7, help="cartpole: random initial states")
    p.add_argument("--split", default="background", help="siamese: Omniglot split")
    p.add_argument("--alphabets", type=int, default=10, help="siamese: number of alphabets")
    p.add_argument("--epochs", type=int, default=None, help="override the trainable's epochs")
    p.add_argument("--data-dir", default=None, help="dataset directory (else RMBO_TUNE_DATA_DIR)")
    add_trial_resource_options(p)
    p.add_argument("--max-concurrent", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", type=int, default=1, help="Tune verbosity (0-3)")
    add_set_option(p, help="extra fixed config entry, e.g. --set max_train_samples=5000")
    args = p.parse_args(argv)
    set_config = set_entries(p, args.set)

    if args.workload == "cnn":
        tasks = default_tasks("cnn", target=args.target)
    elif args.workload == "cartpole":
        tasks = default_tasks(
            "cartpole",
            target_state=args.target_state,
            n_similar=args.n_similar,
            n_random=args.n_random,
            seed=args.seed,
        )
    elif args.workload == "siamese":
        tasks = default_tasks(
            "siamese", split=args.split, n_alphabets=args.alphabets, data_dir=args.data_dir
        )
    else:
        tasks = default_tasks("logreg")

    fixed: dict = {}
    if args.epochs is not None:
        fixed["episodes" if args.workload == "cartpole" else "epochs"] = args.epochs
    if args.data_dir is not None and args.workload in ("cnn", "siamese"):
        fixed["data_dir"] = args.data_dir
    fixed.update(set_config)
    ray.init(ignore_reinit_error=True)
    dirs = run_meta_tasks(
        args.workload,
        tasks,
        storage_path=args.storage_path,
        num_samples=args.num_samples,
        fixed=fixed,
        resources=trial_resources(args),
        max_concurrent_trials=args.max_concurrent,
        seed=args.seed,
        verbose=args.verbose,
    )
    for task, path in dirs.items():
        print(f"{task}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
