"""The paper's synthetic experiment (section 6.1) as Ray Tune runs: RM-GP-UCB against GP-UCB.

For each of ``--functions`` seeds, :func:`rmbo_tune.bench.synthetic.make_problem` draws a
target function on [0, 1] from a GP (SE kernel, length scale 0.05) and four meta-tasks of 20
noisy observations each, two similar to the target (gap 0.05) and two not (gap 4). A Tune
function trainable evaluates the target at ``config["x"]`` with observation noise (variance
0.01) and reports ``y`` (the noisy value the searcher maximizes) and ``f`` (the noiseless value,
for the regret). Each method then runs ``--iterations`` sequential trials through
``RMBOSearcher`` (``method="rm-gp-ucb"``, and ``method="gp-ucb"``, which ignores the
meta-tasks), with the meta-tasks passed in memory as ``(configs, values)`` pairs. The script
prints the simple regret ``max f - best f so far`` at a few horizons, mean ± standard error over
the functions, and the meta-weights RM-GP-UCB ended with.

No data needed, offline. The paper averages 20 functions over 50 iterations
(``--functions 20``, about 12 minutes on two cores); the default of 5 functions takes about 3
minutes, most of it Tune's per-trial overhead::

    python examples/synthetic.py
    python examples/synthetic.py --functions 20 --iterations 50 --storage-path /tmp/rmbo

The engine-only version of this benchmark (no Ray, many more methods) is
``python -m rmbo_tune.bench.synthetic``. Every run is an ordinary Tune experiment under
``<storage-path>/<name>/f<k>-<method>`` (default ``~/ray_results/synthetic_<time>``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np
import ray
from _common import add_run_options, fit, make_parser, run_folder
from ray import tune

from rmbo_tune import RMBOSearcher
from rmbo_tune.bench.console import ray_logs_to_file
from rmbo_tune.bench.synthetic import PAPER_GAPS, SyntheticProblem, make_problem

HORIZONS = (5, 10, 25, 50)


def evaluate(config: dict[str, Any], problem: SyntheticProblem, noise_seed: int) -> None:
    """Tune function trainable: one noisy observation of the target function at ``x``.

    The noise is seeded by ``noise_seed`` and ``x`` itself, so a run is reproducible.
    """
    x = float(config["x"])
    f = float(problem.f(np.array([[x]]))[0])
    rng = np.random.default_rng([noise_seed, int(np.float64(x).view(np.uint64))])
    tune.report({"y": f + problem.noise_sd * float(rng.standard_normal()), "f": f})


def meta_task_pairs(problem: SyntheticProblem) -> dict[str, tuple[list[dict], list[float]]]:
    """The problem's meta-tasks as named ``(configs, values)`` pairs, named by their gap."""
    return {
        f"gap{gap:g}-{i}": ([{"x": float(x)} for x in X[:, 0]], [float(v) for v in y])
        for i, (gap, (X, y)) in enumerate(zip(PAPER_GAPS, problem.meta_tasks, strict=True))
    }


def run_search(
    problem: SyntheticProblem,
    method: str,
    *,
    n_iter: int,
    seed: int,
    storage_path: str,
    name: str,
    verbose: int,
) -> tuple[list[float], dict[str, Any]]:
    """One sequential Tune search; returns the simple regret after each trial and the
    searcher's last history record (empty for a method without meta-weights)."""
    searcher = RMBOSearcher(
        metric="y", mode="max", meta_tasks=meta_task_pairs(problem), method=method, seed=seed
    )
    grid = fit(
        tune.with_parameters(evaluate, problem=problem, noise_seed=seed),
        {"x": tune.uniform(0.0, 1.0)},
        searcher,
        name=name,
        storage_path=storage_path,
        num_samples=n_iter,
        max_concurrent=1,  # the paper's setting: one observation at a time
        verbose=verbose,
    )
    f_by_trial = {r.metrics["trial_id"]: r.metrics["f"] for r in grid if r.error is None}
    # The searcher's history lists the trials in the order it suggested them.
    values = [f_by_trial[rec["trial_id"]] for rec in searcher.history]
    regret = (problem.f_max - np.maximum.accumulate(values)).tolist()
    last = searcher.history[-1]
    return regret, last if isinstance(last.get("weights"), dict) else {}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = make_parser(__doc__, "synthetic")
    p.add_argument("--functions", type=int, default=5, help="target functions (paper: 20)")
    p.add_argument("--iterations", type=int, default=50, help="trials per search (paper: 50)")
    p.add_argument(
        "--methods",
        nargs="+",
        default=["rm-gp-ucb", "gp-ucb"],
        choices=["rm-gp-ucb", "rm-gp-ts", "gp-ucb", "gp-ts", "rgpe", "taf", "random"],
    )
    add_run_options(p, seed_help="function k is drawn from (seed, k)", max_concurrent=False)
    args = p.parse_args(argv)
    if args.functions < 1 or args.iterations < 1:
        p.error("--functions and --iterations must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run every method on every function and print the regret table."""
    args = parse_args(argv)
    root = run_folder(args.storage_path, args.name, "synthetic")
    # Ray's own log lines go to <root>/ray.log, named in the last line printed.
    with ray_logs_to_file(os.path.join(root, "ray.log"), announce=True):
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False)
        regrets: dict[str, list[list[float]]] = {m: [] for m in args.methods}
        for k in range(args.functions):
            problem = make_problem(np.random.default_rng([args.seed, k]))
            for method in args.methods:
                regret, last = run_search(
                    problem,
                    method,
                    n_iter=args.iterations,
                    seed=args.seed * 1000 + k,
                    storage_path=root,
                    name=f"f{k}-{method}",
                    verbose=args.verbose,
                )
                regrets[method].append(regret)
                line = (
                    f"function {k} {method:>10}: regret {regret[-1]:.4f} "
                    f"after {len(regret)} trials"
                )
                if last:
                    weights = ", ".join(f"{t}={w:.2f}" for t, w in last["weights"].items())
                    line += f"; meta-weights nu={last['nu']:.3f}: {weights}"
                print(line)

        horizons = [h for h in HORIZONS if h <= args.iterations] or [args.iterations]
        print(
            f"\nsimple regret, mean ± standard error over {args.functions} functions "
            "(meta-task gaps 0.05, 0.05, 4, 4):"
        )
        print("method      " + "".join(f"{f't={h}':>18}" for h in horizons))
        for method, runs in regrets.items():
            table = np.array(runs)
            cells = []
            for h in horizons:
                col = table[:, h - 1]
                se = col.std(ddof=1) / np.sqrt(len(col)) if len(col) > 1 else 0.0
                cells.append(f"{col.mean():>10.3f} ± {se:.3f}")
            print(f"{method:<12}" + "".join(cells))
        print(f"experiments: {root}")
        ray.shutdown()  # explicitly: quicker than leaving it to the interpreter's exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
