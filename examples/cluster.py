"""Meta-BO on a Ray cluster, with the experiments kept on shared storage or in object storage.

What a team does over time on a cluster, in one script:

1. ``--step meta``: the meta-task searches (one Tune experiment per source task, Tune's random
   search) run on the cluster with ``tune.with_resources`` per trial and are written to
   ``<storage-path>/<name>/meta-<task>`` (``tune.RunConfig(storage_path=...)``). The storage
   path must be visible to every node: an NFS/Lustre path, or a URI such as
   ``s3://bucket/prefix`` or ``gs://bucket/prefix`` (read and written through pyarrow; the
   nodes need credentials for it).
2. ``--step target``, possibly days later and from another machine: a new search loads every
   earlier experiment as a meta-task straight from the same location, with a glob in the URI
   (``RMBOSearcher(meta_tasks="s3://bucket/prefix/<name>/meta-*")``), and writes its own
   experiment beside them (``<name>/target``).

``--step all`` (the default) does both. Workloads (``--workload``) are those of
:mod:`trainables.experiments`, with the paper's source tasks:

* ``logreg``: Pima stages 1-4, target stage 5 (offline, seconds per trial);
* ``cartpole``: 10 initial states (3 near the target's, 7 random), target ``--target-state``
  (offline);
* ``cnn``: SVHN, CIFAR-10 and CIFAR-100, target MNIST (downloads; a GPU job);
* ``siamese``: Omniglot alphabets (the shipped ``background_small1`` subset, target
  ``Sanskrit`` of ``background_small2``; ``--omniglot-split background`` for the paper's).

Data for ``cnn``/``siamese``: ``--data-dir`` must exist at the same path on every node (a shared
directory, or the same pre-populated local one); missing files are downloaded there by the
trials. Every node needs this package installed (``pip install "rmbo-tune[trainables]"``).

Cost: the full budgets (``--meta-samples 50 --num-samples 30``) are hours of GPU time for
``cnn``/``siamese`` and minutes for ``logreg``/``cartpole`` on a few CPUs; ``--n-meta`` and the
sample counts cut them. Commands::

    # on a node of a running cluster (ray start --head ...; ray start --address ...):
    python examples/cluster.py --workload cnn --gpus-per-trial 1 --cpus-per-trial 4 \
        --storage-path s3://my-bucket/rmbo --name cnn-mnist --data-dir /shared/datasets
    # later, another target search on the same meta-tasks:
    python examples/cluster.py --workload cnn --step target --storage-path s3://my-bucket/rmbo \
        --name cnn-mnist --target-name target-2 --gpus-per-trial 1
    # without a cluster: a local Ray instance on 2 CPUs and a local directory
    python examples/cluster.py --address local --workload logreg --storage-path /tmp/rmbo

S3-compatible stores take pyarrow's URI options, e.g.
``s3://bucket/prefix?endpoint_override=minio:9000&scheme=http``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import pyarrow.fs as pafs
import ray
from _common import (
    add_run_options,
    add_sample_options,
    add_set_option,
    add_target_state_option,
    add_trial_resource_options,
    data_error,
    fit,
    make_parser,
    set_entries,
    trial_resources,
    warm_started_search,
)
from ray import tune
from ray.tune.search import BasicVariantGenerator

from trainables import DatasetNotFoundError, cartpole
from trainables.experiments import (
    WORKLOADS,
    cartpole_tasks,
    cnn_tasks,
    logreg_tasks,
    siamese_tasks,
)


def join(base: str, *parts: str) -> str:
    """Append path parts to a local path or a URI, keeping a URI's ``?query`` at the end."""
    head, sep, query = base.partition("?")
    if "://" not in head:
        head = os.path.abspath(os.path.expanduser(head))
    return "/".join([head.rstrip("/"), *parts]) + sep + query


def exists(location: str) -> bool:
    """Whether a local path or URI names an existing file or directory."""
    if "://" not in location:
        return os.path.exists(location)
    fs, path = pafs.FileSystem.from_uri(location)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def workload_tasks(args: argparse.Namespace) -> tuple[dict[str, dict], dict[str, Any]]:
    """The workload's meta-tasks (name -> config entries) and the target's config entries."""
    if args.workload == "logreg":
        tasks, target = logreg_tasks(), {"stage": 5}
    elif args.workload == "cartpole":
        tasks = cartpole_tasks(args.target_state, seed=args.seed)
        target = {"initial_state": list(args.target_state)}
    elif args.workload == "cnn":
        tasks, target = cnn_tasks("mnist"), {"dataset": "mnist"}
    else:
        target = {"alphabet": args.target_alphabet, "split": args.target_split}
        tasks = {
            name: task
            for name, task in siamese_tasks(
                args.omniglot_split, n_alphabets=(args.n_meta or 10) + 1, data_dir=args.data_dir
            ).items()
            if task != target
        }
    if args.n_meta is not None:
        tasks = dict(list(tasks.items())[: args.n_meta])
    return tasks, target


def fixed_config(args: argparse.Namespace) -> dict[str, Any]:
    """Config entries shared by every trial: budget, data location, --set overrides."""
    fixed: dict[str, Any] = {}
    if args.epochs is not None:
        fixed["episodes" if args.workload == "cartpole" else "epochs"] = args.epochs
    if args.data_dir is not None and args.workload in ("cnn", "siamese"):
        fixed["data_dir"] = args.data_dir
    if args.workload in ("cnn", "siamese", "cartpole"):
        fixed["seed"] = args.seed
    fixed.update(args.set_config)
    return fixed


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(
        __doc__,
        "<workload>",
        storage_help="shared directory or URI (s3://, gs://, ...) visible to every node",
        name_help="run folder under --storage-path (default: <workload>_<time>)",
    )
    p.add_argument(
        "--address",
        default="auto",
        help='Ray cluster address ("auto": the cluster this node belongs to; '
        '"ray://head:10001": Ray Client; "local": start a local Ray on --num-cpus CPUs)',
    )
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the --address local Ray")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="logreg")
    p.add_argument("--step", choices=["all", "meta", "target"], default="all")
    p.add_argument("--target-name", default="target", help="experiment name of the target search")
    p.add_argument("--n-meta", type=int, default=None, help="use only the first N meta-tasks")
    add_sample_options(p, meta=50, target=30)
    p.add_argument("--epochs", type=int, default=None, help="epochs (cartpole: episodes)")
    p.add_argument(
        "--output-scaling",
        choices=["shared", "per-task"],
        default=None,
        help="meta-task output scaling (default: per-task for cnn, whose datasets differ in "
        "error level; shared otherwise)",
    )
    add_trial_resource_options(p)
    p.add_argument("--data-dir", default=None, help="cnn/siamese: dataset dir on every node")
    add_target_state_option(
        p, cartpole.DEFAULT_INITIAL_STATE, help="cartpole: the target's initial state"
    )
    p.add_argument("--omniglot-split", default="background_small1", help="siamese: meta split")
    p.add_argument("--target-split", default="background_small2", help="siamese: target split")
    p.add_argument("--target-alphabet", default="Sanskrit", help="siamese: target alphabet")
    add_set_option(
        p, help="extra fixed config entry for every trial, e.g. --set max_train_samples=5000"
    )
    add_run_options(p, seed_help="seeds the searches (and the tasks)", num_cpus=False)
    args = p.parse_args(argv)
    if min(args.meta_samples, args.num_samples) < 1 or (
        args.n_meta is not None and args.n_meta < 1
    ):
        p.error("--meta-samples, --num-samples and --n-meta must be >= 1")
    if args.step == "target" and args.name is None:
        p.error("--step target needs the --name of the run that holds the meta-tasks")
    args.set_config = set_entries(p, args.set)
    return args


def run_meta_searches(
    args: argparse.Namespace, trainable: Any, tasks: dict[str, dict], run: str
) -> None:
    """Step 1: one random-search experiment per meta-task, written to ``<run>/meta-<task>``.

    (:func:`trainables.experiments.run_meta_tasks` does the same for local directories; this
    loop also accepts URIs.)
    """
    _, metric, mode, space = WORKLOADS[args.workload]
    for i, (task, task_config) in enumerate(tasks.items()):
        grid = fit(
            trainable,
            {**space(), **fixed_config(args), **task_config},
            BasicVariantGenerator(random_state=args.seed + i),
            name=f"meta-{task}",
            storage_path=run,
            num_samples=args.meta_samples,
            max_concurrent=args.max_concurrent,
            verbose=args.verbose,
            max_failures=2,
            metric=metric,
            mode=mode,
        )
        errors = [r.error for r in grid if r.error is not None]
        if errors:
            raise RuntimeError(f"{len(errors)} trial(s) of meta-task {task!r} failed: {errors[0]}")
        print(f"meta-task {task}: {join(run, f'meta-{task}')}")


def run_target_search(
    args: argparse.Namespace, trainable: Any, target: dict[str, Any], run: str
) -> None:
    """Step 2: the target search, warm-started from every ``<run>/meta-*`` experiment."""
    _, metric, mode, space = WORKLOADS[args.workload]
    meta_glob = join(run, "meta-*")  # globs work in URIs as in local paths
    scaling = args.output_scaling or ("per-task" if args.workload == "cnn" else "shared")
    searcher, grid = warm_started_search(
        args,
        run,
        trainable=trainable,
        param_space={**space(), **fixed_config(args), **target},
        meta_tasks=meta_glob,
        metric=metric,
        mode=mode,
        name=args.target_name,
        max_failures=2,
        output_scaling=scaling,
    )
    best = grid.get_best_result(metric=metric, mode=mode)
    print(f"meta-tasks loaded from {meta_glob}")
    final = searcher.history[-1]
    weights = ", ".join(f"{k}={w:.2f}" for k, w in (final["weights"] or {}).items())
    print(f"final meta-weights: nu={final['nu']:.3f}  {weights}")
    tuned = {k: best.config[k] for k in space()}
    print(f"best {metric}: {best.metrics[metric]:.4f} after {len(grid)} trials with {tuned}")
    print(f"target experiment: {join(run, args.target_name)}")


def main(argv: list[str] | None = None) -> int:
    """Connect to the cluster and run the requested steps."""
    args = parse_args(argv)
    name = args.name or time.strftime(f"{args.workload}_%Y-%m-%d_%H-%M-%S")
    run = join(args.storage_path, name)
    try:
        tasks, target = workload_tasks(args)
    except DatasetNotFoundError as exc:  # siamese lists the alphabets of its data
        return data_error(exc)
    # Tune appends to an existing experiment: a meta-task run twice would count twice.
    taken = [join(run, f"meta-{t}") for t in tasks if exists(join(run, f"meta-{t}"))]
    if args.step in ("all", "meta") and taken:
        raise SystemExit(f"error: {taken[0]} exists; pass another --name")
    if args.step == "target" and not taken:
        raise SystemExit(f"error: no meta-task experiment in {run}; run --step meta first")
    if args.step in ("all", "target") and exists(join(run, args.target_name)):
        raise SystemExit(f"error: {join(run, args.target_name)} exists; pass --target-name")

    if args.address == "local":  # a new local instance, even where RAY_ADDRESS is set
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False)
    else:
        try:
            ray.init(address=args.address)
        except ConnectionError as exc:
            print(
                f"error: {exc} Start a cluster with `ray start --head` (and `ray start "
                "--address=<head>:6379` on the other nodes), or use --address local.",
                file=sys.stderr,
            )
            return 2
    print(f"Ray cluster resources: {ray.cluster_resources()}")

    trainable = tune.with_resources(WORKLOADS[args.workload][0], trial_resources(args))
    if args.step in ("all", "meta"):
        run_meta_searches(args, trainable, tasks, run)
    if args.step in ("all", "target"):
        run_target_search(args, trainable, target, run)
    ray.shutdown()  # explicitly: quicker than leaving it to the interpreter's exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
