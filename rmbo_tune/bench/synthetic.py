"""The paper's synthetic benchmark (section 6.1, appendix E.1) run on the engine directly.

Target functions are draws from a GP with an SE kernel on ``[0, 1]^dim`` (length scale 0.05
in 1-D, as in the paper; ``0.05 sqrt(dim)`` in more dimensions, so that a draw has a
comparable number of optima along each axis), realised with 4,000 random Fourier features
so they can be evaluated anywhere. Meta-task i observes ``f(x_ij) + u_ij + noise`` at
``20 dim`` uniform inputs, ``u_ij ~ U[-d_i, d_i]`` and noise variance 0.01; targets are
observed with the same noise. With ``--adversarial`` every meta-task observes ``-f`` instead
(gaps 0.05): the meta-tasks point at the target's minimum, the case the robustness
guarantee is for. Simple regret is measured on the noiseless ``f`` against its maximum
(over a grid of 20,001 points in 1-D; in more dimensions over 100,000 random points
polished by L-BFGS-B).

Run ``python -m rmbo_tune.bench.synthetic --help``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from rmbo_tune.bench import report
from rmbo_tune.bench.console import Progress
from rmbo_tune.bench.options import (
    add_option_argument,
    method_list,
    out_dir,
    parse_options,
    positive_int,
)
from rmbo_tune.engine import MetaBO
from rmbo_tune.engine.types import Array

PAPER_GAPS = (0.05, 0.05, 4.0, 4.0)
DISSIMILAR_GAPS = (8.0, 8.0, 8.0, 8.0)
ADVERSARIAL_GAPS = (0.05, 0.05, 0.05, 0.05)
HORIZONS = (5, 10, 25, 50)

# name -> (engine method, engine options)
VARIANTS: dict[str, tuple[str, dict]] = {
    "rm-gp-ucb": ("rm-gp-ucb", {}),
    "rm-gp-ucb-fixed": ("rm-gp-ucb", {"learn_weights": False}),
    "rm-gp-ucb-per-task": ("rm-gp-ucb", {"output_scaling": "per-task"}),
    "rm-gp-ts": ("rm-gp-ts", {}),
    "gp-ucb": ("gp-ucb", {}),
    "gp-ts": ("gp-ts", {}),
    "rm-gp-ucb-paper": ("rm-gp-ucb", {"variant": "paper"}),
    "rm-gp-ucb-beta1": ("rm-gp-ucb", {"beta_scale": 1.0}),
    "gp-ucb-beta1": ("gp-ucb", {"beta_scale": 1.0}),
    "warm-start": ("warm-start", {}),
    "portfolio": ("portfolio", {}),
    "rgpe": ("rgpe", {}),
    "taf": ("taf", {}),
    "random": ("random", {}),
}


@dataclass
class SyntheticProblem:
    """One target function and its meta-tasks."""

    omega: Array  # (n_features, dim)
    phase: Array
    weights: Array
    meta_tasks: list[tuple[Array, Array]]
    noise_sd: float
    f_max: float

    @property
    def dim(self) -> int:
        """Input dimension."""
        return self.omega.shape[1]

    def f(self, X: Array) -> Array:
        """Noiseless target at inputs X of shape (n, dim)."""
        return (
            np.sqrt(2.0 / len(self.phase)) * np.cos(X @ self.omega.T + self.phase) @ self.weights
        )

    def _f_and_grad(self, x: Array) -> tuple[float, Array]:
        phase = self.omega @ x + self.phase
        c = np.sqrt(2.0 / len(self.phase)) * self.weights
        return float(c @ np.cos(phase)), -(c * np.sin(phase)) @ self.omega

    def _maximum(self, rng: np.random.Generator) -> float:
        if self.dim == 1:
            return float(self.f(np.linspace(0.0, 1.0, 20001)[:, None]).max())
        X = rng.random((100_000, self.dim))
        values = self.f(X)
        best = float(values.max())
        for x0 in X[np.argsort(-values)[:10]]:
            res = optimize.minimize(
                lambda x: tuple(-v for v in self._f_and_grad(x)),
                x0,
                jac=True,
                method="L-BFGS-B",
                bounds=[(0.0, 1.0)] * self.dim,
            )
            best = max(best, -float(res.fun))
        return best


def make_problem(
    rng: np.random.Generator,
    *,
    gaps: Sequence[float] = PAPER_GAPS,
    dim: int = 1,
    n_meta: int | None = None,
    lengthscale: float | None = None,
    noise_var: float = 0.01,
    n_features: int = 4000,
    adversarial: bool = False,
) -> SyntheticProblem:
    """Draw a target function and meta-tasks as in the paper's appendix E.1.

    ``n_meta`` defaults to ``20 dim`` and ``lengthscale`` to ``0.05 sqrt(dim)``;
    ``adversarial`` makes every meta-task observe ``-f`` (plus its gap and noise).
    """
    n_meta = 20 * dim if n_meta is None else n_meta
    lengthscale = 0.05 * np.sqrt(dim) if lengthscale is None else lengthscale
    omega = rng.standard_normal((n_features, dim)) / lengthscale
    phase = rng.uniform(0.0, 2.0 * np.pi, n_features)
    weights = rng.standard_normal(n_features)
    prob = SyntheticProblem(omega, phase, weights, [], float(np.sqrt(noise_var)), 0.0)
    prob.f_max = prob._maximum(rng)
    sign = -1.0 if adversarial else 1.0
    for d in gaps:
        X = rng.random((n_meta, dim))
        y = sign * prob.f(X) + rng.uniform(-d, d, n_meta)
        prob.meta_tasks.append((X, y + prob.noise_sd * rng.standard_normal(n_meta)))
    return prob


def run_one(prob: SyntheticProblem, variant: str, *, n_iter: int, seed: int, **options) -> dict:
    """Run one method on one problem: f at each suggestion (noiseless), timings, weights."""
    method, opts = VARIANTS[variant]
    opt = MetaBO(prob.dim, prob.meta_tasks, method, seed=seed, **{**opts, **options})
    noise_rng = np.random.default_rng(seed + 10_000)
    values, times = [], []
    for _ in range(n_iter):
        t0 = time.perf_counter()
        x = opt.ask()
        times.append(time.perf_counter() - t0)
        fx = float(prob.f(x[None, :])[0])
        values.append(fx)
        t0 = time.perf_counter()
        opt.tell(x, fx + prob.noise_sd * noise_rng.standard_normal())
        times[-1] += time.perf_counter() - t0
    weights = [
        {f"task{i}": float(w) for i, w in enumerate(r["weights"] or [])} for r in opt.history
    ]
    return {
        "seed": seed,
        "values": values,
        "optimum": prob.f_max,
        "seconds": times,
        "weights": weights,
        "nu": [r["nu"] for r in opt.history],
    }


def run(
    *,
    n_functions: int = 20,
    n_iter: int = 50,
    variants: Sequence[str] = tuple(VARIANTS),
    gaps: Sequence[float] = PAPER_GAPS,
    seed: int = 0,
    options: dict | None = None,
    dim: int = 1,
    adversarial: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Run every variant on ``n_functions`` problems; returns raw results by variant
    (``progress`` steps once per function and variant)."""
    results: dict[str, list[dict]] = {v: [] for v in variants}
    for k in range(n_functions):
        prob = make_problem(
            np.random.default_rng([seed, k]), gaps=gaps, dim=dim, adversarial=adversarial
        )
        for v in variants:
            results[v].append(
                run_one(prob, v, n_iter=n_iter, seed=seed * 1000 + k, **(options or {}))
            )
            if progress is not None:
                progress.step(f"function {k + 1}, {v}")
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench synthetic", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--functions", type=positive_int, default=20, help="GP sample functions (20)")
    p.add_argument(
        "--iterations", type=positive_int, default=50, help="evaluations per search (50)"
    )
    p.add_argument("--seed", type=int, default=0, help="(0)")
    p.add_argument(
        "--methods",
        nargs="+",
        default=list(VARIANTS),
        help=f"space- or comma-separated, from {','.join(VARIANTS)} (default: all)",
    )
    p.add_argument(
        "--dissimilar",
        action="store_true",
        help="every meta-task dissimilar (all gaps 8, r = 0.99 as in Fig. 1d)",
    )
    p.add_argument(
        "--out",
        type=out_dir,
        default="bench-results/synthetic",
        help="directory for results.json, results.md and the plots",
    )
    p.add_argument(
        "--adversarial",
        action="store_true",
        help="every meta-task observes -f (gaps 0.05): they point at the target's minimum",
    )
    p.add_argument(
        "--dim", type=positive_int, default=1, help="input dimension (default 1, the paper's)"
    )
    add_option_argument(p)
    a = p.parse_args(argv)
    if a.dissimilar and a.adversarial:
        p.error("choose one of --dissimilar and --adversarial")
    given = parse_options(a.option, p)  # before anything runs
    try:
        methods = method_list(a.methods, list(VARIANTS))
    except ValueError as exc:
        p.error(str(exc))
    gaps = DISSIMILAR_GAPS if a.dissimilar else ADVERSARIAL_GAPS if a.adversarial else PAPER_GAPS
    options = {"r": 0.99, **given} if a.dissimilar else given
    t0 = time.time()
    res = run(
        n_functions=a.functions,
        n_iter=a.iterations,
        variants=methods,
        gaps=gaps,
        seed=a.seed,
        options=options,
        dim=a.dim,
        adversarial=a.adversarial,
        progress=Progress("synthetic", a.functions * len(methods)),
    )
    horizons = sorted({h for h in HORIZONS if h <= a.iterations} | {a.iterations})
    kind = (
        "all dissimilar, gaps 8"
        if a.dissimilar
        else "adversarial, every meta-task observes -f"
        if a.adversarial
        else "gaps 0.05, 0.05, 4, 4"
    )
    print(
        f"synthetic ({kind}), {a.dim}-D, {a.functions} functions x {a.iterations} iterations, "
        f"{time.time() - t0:.0f} s"
    )
    task = "synthetic-dissimilar" if a.dissimilar else "synthetic"
    task = "synthetic-adversarial" if a.adversarial else task
    doc = {
        "task": task if a.dim == 1 else f"{task}-{a.dim}d",
        "metric": "f",
        "mode": "max",
        "optimum": None,
        "budget": a.iterations,
        "settings": {
            "functions": a.functions,
            "gaps": list(gaps),
            "seed": a.seed,
            "dim": a.dim,
            "adversarial": a.adversarial,
            **(options or {}),
        },
        "runs": res,
    }
    files = report.write_outputs(doc, a.out, horizons)
    print(report.summary_markdown(doc, horizons))
    print("wrote " + ", ".join(map(str, files.values())))


if __name__ == "__main__":
    main()
