"""CartPole policy search, warm-started from policy searches on other initial states.

The paper's reinforcement-learning experiment. A task is CartPole-v1 started from a given
initial state (cart position, cart velocity, pole angle, pole angular velocity); the policy is
linear (8 weights in [-1, 1], :mod:`trainables.cartpole`) and its score ``normalized_return``
is the mean episode return over ``--episodes`` episodes divided by 200 (1.0 = balanced
throughout). The meta-tasks are earlier searches on 10 other initial states, 3 close to the
target's and 7 random:

1. one Tune experiment per meta-task initial state with Tune's random search (skipped when
   ``--meta-tasks`` names existing experiments, e.g. from
   ``examples/make_meta_tasks.py cartpole``);
2. the target state is searched with ``RMBOSearcher`` warm-started from them;
3. the script prints each trial's score with the best so far and the meta-weights of the
   similar and the random tasks, then the best policy.

Offline, CPU only (gymnasium). With the paper's budget (10 x 50 meta-task trials, 30 target
trials) it takes about 10 minutes on two cores, most of it Tune's per-trial overhead;
``--meta-samples 10`` about 3 minutes::

    python examples/cartpole.py
    python examples/cartpole.py --target-state 0 0 0.05 0 --meta-samples 10 --num-samples 20
    python examples/cartpole.py --meta-tasks "~/meta/cartpole-*" --num-samples 30

Experiments land in ``<storage-path>/<name>/`` (default ``~/ray_results/cartpole_<time>``):
``cartpole-similar0`` ... ``cartpole-random6`` and ``target``; Ray's own log lines go to
``ray.log`` beside them.
"""

from __future__ import annotations

import argparse
import sys

from _common import (
    add_meta_tasks_option,
    add_run_options,
    add_sample_options,
    add_target_state_option,
    make_parser,
    meta_bo,
    run_folder,
)

from trainables import cartpole
from trainables.experiments import cartpole_tasks

METRIC, MODE = "normalized_return", "max"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(__doc__, "cartpole")
    add_target_state_option(
        p, cartpole.DEFAULT_INITIAL_STATE, help="the target task's initial state"
    )
    add_meta_tasks_option(p)
    p.add_argument("--n-similar", type=int, default=3, help="meta-tasks near the target state")
    p.add_argument("--n-random", type=int, default=7, help="meta-tasks at random states")
    add_sample_options(p, meta=50, target=30)
    p.add_argument("--episodes", type=int, default=cartpole.N_EPISODES, help="per trial")
    add_run_options(p, seed_help="seeds the states and both searches")
    args = p.parse_args(argv)
    if min(args.meta_samples, args.num_samples, args.episodes) < 1:
        p.error("--meta-samples, --num-samples and --episodes must be >= 1")
    if args.meta_tasks is None and args.n_similar + args.n_random < 1:
        p.error("need at least one meta-task: --n-similar + --n-random >= 1, or --meta-tasks")
    try:
        cartpole.check_initial_state(args.target_state)
    except ValueError as exc:
        p.error(f"--target-state: {exc}")
    return args


def kind(task: str) -> str:
    """The kind of a meta-task, to sum the meta-weights by: similar or random state."""
    return "similar" if "similar" in task else "random" if "random" in task else task


def main(argv: list[str] | None = None) -> int:
    """Run the meta-task searches (unless given), then the warm-started target search."""
    args = parse_args(argv)
    root = run_folder(args.storage_path, args.name, "cartpole")
    tasks = {}
    if not args.meta_tasks:
        tasks = cartpole_tasks(
            args.target_state, n_similar=args.n_similar, n_random=args.n_random, seed=args.seed
        )
    # normalized_return is a running mean over episodes, so a trial's last report is its
    # score, as it is for the target's trials (Tune hands the searcher the last result).
    return meta_bo(
        args,
        root,
        workload="cartpole",
        tasks=tasks,
        describe_task=lambda task: f" (initial state {tasks[task]['initial_state']})",
        trainable=cartpole.cartpole_trainable,
        search_space=cartpole.search_space(),
        fixed={"episodes": args.episodes},
        target={"initial_state": list(args.target_state)},
        target_name="target",
        metric=METRIC,
        mode=MODE,
        heading=f"target search from {args.target_state}, in suggestion order "
        f"({METRIC}, max 1.0):",
        # Weights summed by kind of meta-task: the similar states should earn the trust.
        group=kind,
        digits=3,
        show_config=lambda config: (
            "weights " + str([round(config[f"w{i}"], 3) for i in range(cartpole.N_WEIGHTS)])
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
