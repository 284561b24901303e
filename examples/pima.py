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
``logreg-stage1`` ... ``logreg-stage4`` and ``target-stage5``; Ray's own log lines go to
``ray.log`` beside them.
"""

from __future__ import annotations

import argparse
import sys

from _common import (
    add_meta_tasks_option,
    add_run_options,
    add_sample_options,
    make_parser,
    meta_bo,
    run_folder,
)

from trainables import logreg
from trainables.experiments import logreg_tasks

METRIC, MODE = "val_error", "min"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(__doc__, "pima")
    add_meta_tasks_option(p)
    p.add_argument(
        "--meta-stages",
        type=int,
        nargs="+",
        default=[1, 2, 3, 4],
        choices=[1, 2, 3, 4],
        help="earlier stages searched as meta-tasks in step 1",
    )
    add_sample_options(
        p,
        meta=30,
        target=30,
        meta_help="random trials per stage",
        target_help="trials of the stage-5 search",
    )
    p.add_argument("--epochs", type=int, default=logreg.DEFAULT_EPOCHS, help="SGD epochs")
    add_run_options(p)
    args = p.parse_args(argv)
    if min(args.meta_samples, args.num_samples, args.epochs) < 1:
        p.error("--meta-samples, --num-samples and --epochs must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run stages 1-4 (unless given), then the warm-started stage-5 search."""
    args = parse_args(argv)
    root = run_folder(args.storage_path, args.name, "pima")
    tasks = logreg_tasks()
    return meta_bo(
        args,
        root,
        workload="logreg",
        tasks={f"stage{k}": tasks[f"stage{k}"] for k in sorted(set(args.meta_stages))},
        trainable=logreg.logreg_trainable,
        search_space=logreg.search_space(),
        fixed={"epochs": args.epochs},
        target={"stage": 5},
        target_name="target-stage5",
        metric=METRIC,
        mode=MODE,
        heading="stage-5 search, in the order the searcher suggested "
        f"({METRIC}, lower is better):",
        show_config=lambda config: str({k: config[k] for k in logreg.search_space()}),
    )


if __name__ == "__main__":
    sys.exit(main())
