"""One-shot Omniglot: tune a Siamese network on a new alphabet, warm-started from other alphabets.

The paper's Omniglot experiment. A task is one alphabet: a Siamese network is trained to tell
whether two drawings show the same character, and scored by its 2-way one-shot validation error
on held-out characters (:mod:`trainables.siamese`; learning rate, its decay and the L2 penalty
are tuned, log-uniform in [1e-7, 1e-2]). The meta-tasks are earlier searches on other
alphabets:

1. one Tune experiment per meta-task alphabet with Tune's random search (skipped when
   ``--meta-tasks`` names existing experiments, e.g. from ``examples/make_meta_tasks.py
   siamese``);
2. the target alphabet is searched with ``RMBOSearcher`` warm-started from them;
3. the script prints each trial's error with the best so far and the meta-weight of every
   alphabet, then the best configuration.

Data: by default it runs offline on the two small Omniglot subsets shipped with the package
(``background_small1``: 5 alphabets as meta-tasks; target ``Sanskrit`` from
``background_small2``). The paper's setting uses the full background set (10 alphabets) and an
alphabet of the evaluation set; both are downloaded from github.com/brendenlake/omniglot into
``--data-dir`` (or ``$RMBO_TUNE_DATA_DIR``) on first use.

Cost: each trial trains a convolutional network with TensorFlow, and each experiment's first
trial waits for TensorFlow to load (5-10 s). With the paper's settings (105x105 images, 4,096
pairs per epoch, 20 epochs, 5 x 30 + 30 trials) plan on a GPU and hours (an estimate: no GPU
was available to time it); on CPU use small settings, e.g. ``--image-size 28
--pairs-per-epoch 512 --epochs 3``::

    python examples/omniglot.py --image-size 28 --pairs-per-epoch 512 --epochs 3 \
        --meta-samples 5 --num-samples 10
    python examples/omniglot.py --meta-split background --n-meta 10 \
        --target-split evaluation --target-alphabet Kannada --gpus-per-trial 0.5 \
        --data-dir /shared/omniglot

Experiments land in ``<storage-path>/<name>/`` (default ``~/ray_results/omniglot_<time>``):
``siamese-<alphabet>`` per meta-task and ``target-<alphabet>``; Ray's own log lines go
to ``ray.log`` beside them.
"""

from __future__ import annotations

import argparse
import os
import sys

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

from trainables import DatasetNotFoundError, siamese
from trainables.omniglot import OMNIGLOT_SPLITS, list_omniglot_alphabets

METRIC, MODE = "val_error", "min"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(__doc__, "omniglot")
    p.add_argument("--data-dir", default=None, help="Omniglot directory (else RMBO_TUNE_DATA_DIR)")
    p.add_argument("--target-split", default="background_small2", choices=OMNIGLOT_SPLITS)
    p.add_argument("--target-alphabet", default="Sanskrit", help="alphabet of --target-split")
    p.add_argument("--meta-split", default="background_small1", choices=OMNIGLOT_SPLITS)
    p.add_argument("--n-meta", type=int, default=5, help="meta-task alphabets (paper: 10)")
    add_meta_tasks_option(p)
    add_sample_options(p, meta=30, target=30, meta_help="random trials per alphabet")
    p.add_argument("--epochs", type=int, default=siamese.PAPER_EPOCHS, help="epochs per trial")
    p.add_argument("--image-size", type=int, default=siamese.NATIVE_SIZE, help="pixels per side")
    p.add_argument("--pairs-per-epoch", type=int, default=siamese.PAIRS_PER_EPOCH)
    add_trial_resource_options(p)
    add_run_options(p, seed_help="seeds both searches and the networks")
    args = p.parse_args(argv)
    if min(args.meta_samples, args.num_samples, args.epochs, args.n_meta) < 1:
        p.error("--meta-samples, --num-samples, --epochs and --n-meta must be >= 1")
    return args


def meta_alphabets(args: argparse.Namespace) -> dict[str, dict]:
    """The first ``--n-meta`` alphabets of ``--meta-split`` other than the target."""
    names = list_omniglot_alphabets(args.meta_split, args.data_dir)
    names = [a for a in names if (a, args.meta_split) != (args.target_alphabet, args.target_split)]
    return {a: {"alphabet": a, "split": args.meta_split} for a in names[: args.n_meta]}


def main(argv: list[str] | None = None) -> int:
    """Run the meta-task searches (unless given), then the warm-started target search."""
    args = parse_args(argv)
    root = run_folder(args.storage_path, args.name, "omniglot")
    try:  # find the data in the driver: a missing file is then one clear message
        targets = list_omniglot_alphabets(args.target_split, args.data_dir)
        tasks = {} if args.meta_tasks else meta_alphabets(args)
    except DatasetNotFoundError as exc:
        return data_error(exc)
    if args.target_alphabet not in targets:
        print(
            f"error: no alphabet {args.target_alphabet!r} in {args.target_split}; "
            f"choose one of {targets}",
            file=sys.stderr,
        )
        return 2

    fixed = {
        "epochs": args.epochs,
        "image_size": args.image_size,
        "pairs_per_epoch": args.pairs_per_epoch,
        "seed": args.seed,
    }
    if args.data_dir is not None:
        fixed["data_dir"] = os.path.abspath(os.path.expanduser(args.data_dir))
    return meta_bo(
        args,
        root,
        workload="siamese",
        tasks=tasks,
        trainable=siamese.siamese_trainable,
        resources=trial_resources(args),
        search_space=siamese.search_space(),
        fixed=fixed,
        target={"alphabet": args.target_alphabet, "split": args.target_split},
        target_name=f"target-{args.target_alphabet}",
        metric=METRIC,
        mode=MODE,
        heading=f"target {args.target_alphabet}, in suggestion order "
        f"(2-way {METRIC}, chance 0.5):",
        digits=3,
        show_config=lambda config: str({k: f"{config[k]:.3g}" for k in siamese.search_space()}),
    )


if __name__ == "__main__":
    sys.exit(main())
