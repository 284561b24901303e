"""Tune the paper's CNN on MNIST, warm-started from the same search on SVHN and CIFAR-10.

The paper's image-classification experiment (section 6.2). The CNN of :mod:`trainables.cnn`
(two conv/pool blocks, two dense layers) is trained with RMSprop; its learning rate, learning
rate decay and L2 penalty are tuned, log-uniform in [1e-7, 1e-2], to minimize the validation
error. The meta-tasks are the same search on other datasets:

1. one Tune experiment per meta-task dataset (default SVHN and CIFAR-10; the paper also used
   CIFAR-100) with Tune's random search, skipped when ``--meta-tasks`` names existing
   experiments (e.g. from ``examples/make_meta_tasks.py cnn --target mnist``);
2. MNIST is searched with ``RMBOSearcher`` warm-started from them;
3. the script prints each trial's validation error with the best so far and the meta-weight of
   every dataset, then the best configuration.

Data: MNIST (``mnist.npz``), SVHN (``train_32x32.mat``, ``test_32x32.mat``) and CIFAR-10
(``cifar-10-batches-py/``) are downloaded from their standard sources into ``--data-dir``
(default ``$RMBO_TUNE_DATA_DIR``, else Keras's cache ``~/.keras/datasets``) before any trial
starts, about 0.4 GB in all. Offline, or with ``--no-download``, place the files there
yourself; a missing file stops the script with a message naming it and its source.

Cost (estimates; neither the datasets nor a GPU were available to time it): the paper's budget
(20 epochs; 2 x 50 meta-task trials and 30 MNIST trials) is a GPU job of a few hours, and one
CPU trial of 20 epochs on the full data takes tens of minutes. For a quick CPU run use
``--epochs 1 --max-train-samples 2000 --meta-samples 5 --num-samples 5``::

    python examples/cnn_mnist.py --data-dir ~/datasets --gpus-per-trial 1
    python examples/cnn_mnist.py --data-dir ~/datasets --epochs 1 --max-train-samples 2000 \
        --meta-samples 5 --num-samples 5
    python examples/cnn_mnist.py --meta-tasks "~/meta/cnn-*" --gpus-per-trial 0.5

Experiments land in ``<storage-path>/<name>/`` (default ``~/ray_results/cnn_mnist_<time>``):
``cnn-svhn``, ``cnn-cifar10`` and ``target-mnist``; Ray's own log lines go to
``ray.log`` beside them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from _common import (
    add_meta_tasks_option,
    add_run_options,
    add_sample_options,
    add_trial_resource_options,
    data_error,
    make_parser,
    meta_bo,
    run_folder,
    trial_resources,
)

from trainables import DatasetNotFoundError, cnn, datasets, storage

METRIC, MODE = "val_error", "min"
TARGET = "mnist"
CIFAR = {  # dataset -> (name in messages, folder, archive URL, archive SHA-256)
    "cifar10": (
        "CIFAR-10",
        "cifar-10-batches-py",
        datasets.CIFAR10_ORIGIN,
        datasets.CIFAR10_SHA256,
    ),
    "cifar100": (
        "CIFAR-100",
        "cifar-100-python",
        datasets.CIFAR100_ORIGIN,
        datasets.CIFAR100_SHA256,
    ),
}


def fetch_datasets(names: list[str], directory: Path, *, download: bool) -> None:
    """Make sure the dataset files are in ``directory``, downloading what is missing.

    Done once in the driver, so that trials do not all download the same files at once and a
    missing file is reported before anything runs.

    Raises
    ------
    trainables.DatasetNotFoundError
        A file is missing and could not be downloaded; the message names it.
    """
    for name in names:
        if name == "mnist":
            storage.fetch(
                "MNIST",
                "mnist.npz",
                directory,
                datasets.MNIST_ORIGIN,
                download=download,
                file_hash=datasets.MNIST_SHA256,
            )
        elif name == "svhn":
            for fname in ("train_32x32.mat", "test_32x32.mat"):
                storage.fetch(
                    "SVHN", fname, directory, datasets.SVHN_ORIGIN + fname, download=download
                )
        elif name in CIFAR:
            label, folder, origin, sha = CIFAR[name]
            # keras.datasets.cifar*.load_data() leaves "<folder>-target" and similar layouts
            # in its cache, which the trainable also reads.
            if not any(directory.glob(f"{folder}*")):
                storage.fetch_and_extract_tar(
                    label, folder, directory, origin, download=download, file_hash=sha
                )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(__doc__, "cnn_mnist")
    p.add_argument(
        "--data-dir",
        default=None,
        help=f"dataset directory (default: ${storage.ENV_VAR}, else ~/.keras/datasets)",
    )
    p.add_argument(
        "--no-download", action="store_true", help="never download; fail if a file is missing"
    )
    p.add_argument(
        "--meta-datasets",
        nargs="+",
        default=["svhn", "cifar10"],
        choices=["svhn", "cifar10", "cifar100"],
        help="datasets searched as meta-tasks in step 1",
    )
    add_meta_tasks_option(p)
    add_sample_options(
        p,
        meta=50,
        target=30,
        meta_help="random trials per dataset",
        target_help="trials of the MNIST search",
    )
    p.add_argument("--epochs", type=int, default=cnn.PAPER_EPOCHS, help="epochs per trial")
    p.add_argument("--batch-size", type=int, default=cnn.PAPER_BATCH_SIZE)
    p.add_argument(
        "--max-train-samples", type=int, default=None, help="train on a subset (quick runs)"
    )
    p.add_argument(
        "--output-scaling",
        default="per-task",
        choices=["per-task", "shared"],
        help="per-task: each dataset's errors standardized on their own (they differ in level)",
    )
    add_trial_resource_options(p)
    add_run_options(p, seed_help="seeds both searches and the networks")
    args = p.parse_args(argv)
    if min(args.meta_samples, args.num_samples, args.epochs, args.batch_size) < 1:
        p.error("--meta-samples, --num-samples, --epochs and --batch-size must be >= 1")
    if args.max_train_samples is not None and args.max_train_samples < 1:
        p.error("--max-train-samples must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Fetch the data, run the meta-task searches (unless given), then search MNIST."""
    args = parse_args(argv)
    root = run_folder(args.storage_path, args.name, "cnn_mnist")
    directory = storage.data_dir(args.data_dir)
    needed = [TARGET] + ([] if args.meta_tasks else args.meta_datasets)
    try:
        fetch_datasets(needed, directory, download=not args.no_download)
    except DatasetNotFoundError as exc:
        return data_error(exc)

    fixed: dict[str, Any] = {
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "seed": args.seed,
        "data_dir": str(directory),
        "download": False,  # fetched above
    }
    if args.max_train_samples is not None:
        fixed["max_train_samples"] = args.max_train_samples
    return meta_bo(
        args,
        root,
        workload="cnn",
        tasks={d: {"dataset": d} for d in args.meta_datasets},
        trainable=cnn.cnn_trainable,
        resources=trial_resources(args),
        search_space=cnn.search_space(),
        fixed=fixed,
        target={"dataset": TARGET},
        target_name=f"target-{TARGET}",
        metric=METRIC,
        mode=MODE,
        heading=f"MNIST search, in suggestion order ({METRIC}, lower is better):",
        show_config=lambda config: str({k: f"{config[k]:.3g}" for k in cnn.search_space()}),
        output_scaling=args.output_scaling,
    )


if __name__ == "__main__":
    sys.exit(main())
