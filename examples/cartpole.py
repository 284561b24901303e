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
``cartpole-similar0`` ... ``cartpole-random6`` and ``target``.
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
from trainables import cartpole
from trainables.experiments import cartpole_tasks, run_meta_tasks

METRIC, MODE = "normalized_return", "max"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--storage-path", default="~/ray_results", help="root of the experiments")
    p.add_argument("--name", default=None, help="run folder (default: cartpole_<time>)")
    p.add_argument(
        "--target-state",
        type=float,
        nargs=4,
        default=list(cartpole.DEFAULT_INITIAL_STATE),
        metavar=("X", "X_DOT", "THETA", "THETA_DOT"),
        help="the target task's initial state",
    )
    p.add_argument(
        "--meta-tasks",
        nargs="+",
        default=None,
        metavar="PATH",
        help="existing meta-task experiments (dirs, globs or URIs); skips step 1",
    )
    p.add_argument("--n-similar", type=int, default=3, help="meta-tasks near the target state")
    p.add_argument("--n-random", type=int, default=7, help="meta-tasks at random states")
    p.add_argument("--meta-samples", type=int, default=50, help="random trials per meta-task")
    p.add_argument("--num-samples", type=int, default=30, help="trials of the target search")
    p.add_argument("--episodes", type=int, default=cartpole.N_EPISODES, help="per trial")
    p.add_argument("--max-concurrent", type=int, default=None, help="simultaneous trials")
    p.add_argument("--seed", type=int, default=0, help="seeds the states and both searches")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs for Ray (default: all)")
    p.add_argument("--verbose", type=int, default=0, help="Tune verbosity (0-3)")
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


def main(argv: list[str] | None = None) -> int:
    """Run the meta-task searches (unless given), then the warm-started target search."""
    args = parse_args(argv)
    name = args.name or time.strftime("cartpole_%Y-%m-%d_%H-%M-%S")
    root = os.path.join(os.path.abspath(os.path.expanduser(args.storage_path)), name)
    if os.path.exists(root):
        raise SystemExit(f"error: {root} exists; pass another --name or remove it")
    ray.init(num_cpus=args.num_cpus, include_dashboard=False)

    if args.meta_tasks:
        meta_tasks: list[str] = args.meta_tasks
    else:
        tasks = cartpole_tasks(
            args.target_state, n_similar=args.n_similar, n_random=args.n_random, seed=args.seed
        )
        dirs = run_meta_tasks(
            "cartpole",
            tasks,
            storage_path=root,
            num_samples=args.meta_samples,
            fixed={"episodes": args.episodes},
            max_concurrent_trials=args.max_concurrent,
            seed=args.seed,
            verbose=args.verbose,
        )
        meta_tasks = [str(path) for path in dirs.values()]
        for task, path in dirs.items():
            print(f"meta-task {task} (initial state {tasks[task]['initial_state']}): {path}")

    # normalized_return is a running mean over episodes, so a trial's last report is its
    # score, as it is for the target's trials (Tune hands the searcher the last result).
    searcher = RMBOSearcher(
        metric=METRIC, mode=MODE, meta_tasks=meta_tasks, meta_scope="last", seed=args.seed
    )
    grid = tune.Tuner(
        cartpole.cartpole_trainable,
        param_space={
            **cartpole.search_space(),
            "initial_state": list(args.target_state),
            "episodes": args.episodes,
        },
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=args.num_samples,
            max_concurrent_trials=args.max_concurrent,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(name="target", storage_path=root, verbose=args.verbose),
    ).fit()

    print(f"target search from {args.target_state}, in suggestion order ({METRIC}, max 1.0):")
    # Weights summed by kind of meta-task: the similar states should earn the trust.
    trace = trace_lines(
        searcher.history,
        final_metrics(grid, METRIC),
        metric=METRIC,
        mode=MODE,
        digits=3,
        group=lambda task: (
            "similar" if "similar" in task else "random" if "random" in task else task
        ),
    )
    print("\n".join(trace))
    best = grid.get_best_result(metric=METRIC, mode=MODE)
    policy = [round(best.config[f"w{i}"], 3) for i in range(cartpole.N_WEIGHTS)]
    print(f"best {METRIC}: {best.metrics[METRIC]:.3f} with weights {policy}")
    print(f"target experiment: {grid.experiment_path}")
    ray.shutdown()  # explicitly: quicker than leaving it to the interpreter's exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
