"""Suggestion latency at the paper's scalability setting (appendix E, M = 60, N = 130).

Per method: construction time (fitting the meta GPs), then 50 iterations of ``ask`` plus the
``tell`` before it, timed early (iterations 1-10, nu near 1, all meta-task terms count) and
late (41-50). A single joint GP over all 7,850 observations is timed in the same run: one
Cholesky factorization with fixed hyperparameters plus prediction at the same 1,024
candidates, a lower bound on what a joint-GP suggestion costs (no hyperparameter fit).

BLAS is pinned to one thread before numpy loads, as the targets are per core.
Run ``python -m rmbo_tune.bench.latency``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402

import numpy as np  # noqa: E402

from rmbo_tune.bench.options import (  # noqa: E402
    add_option_argument,
    method_list,
    nonnegative_int,
    parse_options,
    positive_int,
)
from rmbo_tune.engine import METHODS, MetaBO  # noqa: E402
from rmbo_tune.engine.gp import GaussianProcess, GPHyperparameters  # noqa: E402


def smooth_function(rng: np.random.Generator, dim: int, n_features: int = 500):
    """A random smooth function on the unit cube (an RFF draw, length scale 0.3)."""
    W = rng.standard_normal((n_features, dim)) / 0.3
    b = rng.uniform(0, 2 * np.pi, n_features)
    a = rng.standard_normal(n_features) * np.sqrt(2.0 / n_features)
    return lambda X: np.cos(np.atleast_2d(X) @ W.T + b) @ a


def make_tasks(rng: np.random.Generator, *, n_tasks: int, n_obs: int, dim: int, n_noise: int = 0):
    """Target function and ``n_tasks`` meta-tasks.

    The first ``n_tasks - n_noise`` observe the target plus a random smooth offset; the last
    ``n_noise`` observe pure Gaussian noise, whose GP fits are the slowest to converge.
    """
    if not 0 <= n_noise <= n_tasks:
        raise ValueError(f"n_noise must be in [0, {n_tasks}], got {n_noise}")
    f = smooth_function(rng, dim)
    tasks = []
    for i in range(n_tasks):
        X = rng.random((n_obs, dim))
        if i >= n_tasks - n_noise:
            tasks.append((X, rng.standard_normal(n_obs)))
            continue
        g = smooth_function(rng, dim)
        scale = rng.uniform(0.05, 1.0)
        tasks.append((X, f(X) + scale * g(X) + 0.05 * rng.standard_normal(n_obs)))
    return f, tasks


def time_method(
    method: str, f, tasks, *, dim: int, n_iter: int, seed: int, options: dict | None = None
) -> dict:
    """Construction time and per-iteration (tell + ask) times of one method."""
    t0 = time.perf_counter()
    opt = MetaBO(dim, tasks, method, seed=seed, **(options or {}))
    build = time.perf_counter() - t0
    times = []
    x = opt.ask()
    for _ in range(n_iter):
        t0 = time.perf_counter()
        opt.tell(x, float(f(x)[0]))
        x = opt.ask()
        times.append(time.perf_counter() - t0)
    return {"build_s": build, "times": np.array(times)}


def time_joint_gp(tasks, n_candidates: int, dim: int, n_target: int, rng) -> float:
    """Seconds for one joint-GP posterior over all observations and its prediction."""
    X = np.vstack([t[0] for t in tasks] + [rng.random((n_target, dim))])
    y = np.concatenate([t[1] for t in tasks] + [np.zeros(n_target)])
    cands = rng.random((n_candidates, dim))
    t0 = time.perf_counter()
    gp = GaussianProcess(X, y, GPHyperparameters.default(dim), kind="matern52")
    gp.predict(cands)
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench latency", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--tasks", type=positive_int, default=60, help="meta-tasks M (60)")
    p.add_argument("--obs", type=positive_int, default=130, help="observations per task N (130)")
    p.add_argument("--dim", type=positive_int, default=8, help="dimension D (8)")
    p.add_argument(
        "--noise-tasks",
        type=nonnegative_int,
        default=10,
        help="how many of the meta-tasks are pure noise (10)",
    )
    p.add_argument(
        "--iterations", type=positive_int, default=50, help="target observations, >= 10 (50)"
    )
    p.add_argument(
        "--methods",
        nargs="+",
        default=["rm-gp-ucb", "rm-gp-ts", "gp-ucb", "gp-ts", "rgpe", "taf"],
        help="engine methods (rm-gp-ucb rm-gp-ts gp-ucb gp-ts rgpe taf)",
    )
    p.add_argument("--seed", type=int, default=0, help="(0)")
    add_option_argument(p)
    a = p.parse_args(argv)
    options = parse_options(a.option, p)  # before anything runs
    rng = np.random.default_rng(a.seed)
    if a.iterations < 10:
        p.error(f"--iterations must be at least 10, got {a.iterations}")
    if a.noise_tasks > a.tasks:
        p.error(f"--noise-tasks ({a.noise_tasks}) cannot exceed --tasks ({a.tasks})")
    try:
        method_list(a.methods, METHODS)
    except ValueError as exc:
        p.error(str(exc))
    f, tasks = make_tasks(rng, n_tasks=a.tasks, n_obs=a.obs, dim=a.dim, n_noise=a.noise_tasks)
    n_total = a.tasks * a.obs + a.iterations
    print(
        f"latency: M={a.tasks} x N={a.obs} ({a.noise_tasks} of pure noise), D={a.dim}, "
        f"{a.iterations} target observations, "
        + "".join(f"{k}={v}, " for k, v in options.items())
        + f"BLAS threads={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    print(
        "| method | build (s) | median ms/iter | median 1-5 | median 1-10 | "
        f"median {a.iterations - 9}-{a.iterations} | max |"
    )
    print("|---|---|---|---|---|---|---|")
    medians = {}
    for m in a.methods:
        gc.collect()  # the previous method's engine is garbage: not this method's time
        r = time_method(m, f, tasks, dim=a.dim, n_iter=a.iterations, seed=a.seed, options=options)
        t = 1000 * r["times"]
        medians[m] = float(np.median(t))
        print(
            f"| {m} | {r['build_s']:.1f} | {np.median(t):.1f} | {np.median(t[:5]):.1f} | "
            f"{np.median(t[:10]):.1f} | "
            f"{np.median(t[-10:]):.1f} | {t.max():.0f} |",
            flush=True,
        )
    joint = 1000 * time_joint_gp(tasks, 1024, a.dim, a.iterations, rng)
    print(f"| joint GP, {n_total} obs (one factorization + predict) | | {joint:.0f} | | | | |")
    if "rm-gp-ucb" in medians:
        print(f"joint GP / RM-GP-UCB median: {joint / medians['rm-gp-ucb']:.0f}x")


if __name__ == "__main__":
    main()
