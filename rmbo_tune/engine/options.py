"""Validated algorithm options of :class:`~rmbo_tune.engine.MetaBO`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rmbo_tune.engine.kernels import KERNELS

METHODS = ("rm-gp-ucb", "rm-gp-ts", "gp-ucb", "rgpe", "taf", "warm-start", "random")
META_METHODS = ("rm-gp-ucb", "rm-gp-ts", "rgpe", "taf", "warm-start")
ROBUST_METHODS = ("rm-gp-ucb", "rm-gp-ts")


@dataclass(frozen=True)
class MetaBOOptions:
    """Algorithm options with their defaults.

    Parameters
    ----------
    kernel : {"matern52", "se"}
        Matern-5/2 with ARD length scales (what the paper's authors ran) or squared exponential
        (what the theory assumes).
    output_scaling : {"shared", "per-task"}
        "shared" (default): one affine map for all tasks (location = median of the
        meta-tasks' means, scale = median of their standard deviations), which keeps
        differences in level and spread, as the paper's gap bounds assume. "per-task": every
        task standardized on its own, so gaps compare shapes rather than levels (use it when
        meta-tasks differ in level, e.g. the same model on other datasets); the target
        borrows the meta-tasks' scale until ``min_fit_observations``. On the synthetic
        benchmark per-task reached lower regret late, but with the target's first points
        clustered near one optimum its own standardization leaves the gaps uninformative
        and the dissimilar tasks keep their weight (README, "Output scaling").
    beta : float or None
        Fixed target confidence multiplier; None uses ``sqrt(beta_scale * dim * log(2 t))``.
    beta_scale : float
        Default 1.0, i.e. ``beta_t = sqrt(dim log 2t)``. The authors ran 0.2; on the paper's
        synthetic benchmark that leaves both GP-UCB and RM-GP-UCB stuck in local optima
        (most visibly when every meta-task misleads), and 1.0 was better for both at every
        horizon we measured (README, "Synthetic benchmark").
    tau : float
        Meta-task confidence multiplier (paper practice: 1).
    eta_n : float
        ``eta * N``, the FTRL learning rate (paper: 1).
    r, epsilon : float
        nu schedule: ``nu_{t+1} = nu_t min(r, gap^(-epsilon))`` (paper: 0.7, 0.7).
    gap_aggregation : {"mean", "max"}
        Aggregation over a meta-task's observations in the gap bound (paper practice: mean).
    learn_weights : bool
        False keeps the meta-weights uniform (the paper's ablation).
    nu_floor : float
        nu below this becomes 0: the meta-tasks no longer count and gaps are not computed.
    n_initial : int or None
        Space-filling points before the model is used. None: 0 when meta-tasks guide the
        search, otherwise ``clip(dim + 1, 2, 5)``.
    min_fit_observations : int
        Target observations needed before the target GP's hyperparameters are fitted; until
        then it uses the median of the meta-task GPs' hyperparameters (or neutral defaults).
        Type-II ML on two or three points is degenerate (all noise, or a tiny length scale).
    n_restarts : int
        Random restarts of each meta-task's hyperparameter fit and of the target's at sizes
        ``min_fit_observations`` and 10, 20, 40, ... (warm-started refits in between have
        none). Each restart begins at the most likely of 32 random hyperparameter settings.
    noise_floor : float
        Lower bound on the noise variance of standardized outputs.
    n_candidates : int
        Quasi-random candidates of the acquisition maximizer.
    n_local : int
        Candidates drawn per call: half uniformly at random, half around the four best
        target observations.
    n_polish : int
        Best candidates refined with L-BFGS-B (each refinement costs 10-20 acquisition
        gradient evaluations) when the acquisition includes the meta-tasks: RM-GP-UCB while
        nu > 0, RGPE, TAF and RM-GP-TS's meta branch. There the meta-tasks' optimum is
        known sharply, and polishing finds it exactly (Ackley-4, 16 seeds: regret 0.89 at
        trials 1-10 with it, 1.72 without).
    polish_target : bool
        Also polish acquisitions of the target GP alone (GP-UCB, RM-GP-UCB once nu = 0,
        Thompson samples of the target). Off by default: GP-UCB was as good or better
        without it (48 seeds, simple regret at trial 30 / 60 without vs with: Hartmann-6
        1.38 / 0.67 vs 1.59 / 0.81, Ackley-4 3.31 / 1.39 vs 3.35 / 1.68, Branin 0.09 / 0.003
        vs 0.11 / 0.001; 24 seeds in 8-D at trial 60: Ackley 4.35 vs 4.67, Levy 27 vs 44,
        Styblinski-Tang 143 vs 162, Rastrigin 4.4 vs 4.8; an exact UCB maximum is often on
        the cube's boundary), and the refinement was a third of the searcher's cost per trial.
    polish_maxiter : int
        L-BFGS-B iterations per refinement (it starts from the best of over a thousand
        candidates, so a short local refinement suffices).
    n_rff_features : int
        Random Fourier features for Thompson sampling (paper: 120).
    ts_scale : {"beta", "none"}
        RM-GP-TS's target samples are drawn from ``GP(mu_t, beta_t^2 sigma_t^2)`` ("beta",
        eq. 3 of the paper) or from the posterior itself, ``GP(mu_t, sigma_t^2)`` ("none",
        what the authors' experiments ran, per their appendix).
    ts_pool_size : int
        Posterior samples drawn ahead of time per meta-task for RM-GP-TS.
    duplicate_tol : float
        Two points closer than this (Euclidean, in the unit cube) are the same point.
    pending_penalty : bool
        Penalize the whole acquisition around pending points (in addition to GP-BUCB).
    rgpe_n_samples : int
        Posterior samples for the RGPE weights (paper: 500).
    taf_bandwidth : float
        TAF-R Epanechnikov bandwidth rho (paper: 0.5).
    """

    kernel: str = "matern52"
    output_scaling: str = "rank"
    gap_estimate: str = "ranking"
    hyper_prior: bool = True
    meta_prior: bool = False
    probe: str = "meta-worst"
    target_warp: str = "rank"
    beta: float | None = None
    beta_scale: float = 0.2
    tau: float = 1.0
    eta_n: float = 1.0
    r: float = 0.7
    epsilon: float = 0.7
    gap_aggregation: str = "mean"
    learn_weights: bool = True
    nu_floor: float = 1e-6
    n_initial: int | None = None
    min_fit_observations: int = 5
    n_restarts: int = 1
    noise_floor: float = 1e-6
    n_candidates: int = 1024
    n_local: int = 64
    n_polish: int = 1
    polish_target: bool = False
    polish_maxiter: int = 15
    n_rff_features: int = 128
    ts_scale: str = "beta"
    ts_pool_size: int = 16
    duplicate_tol: float = 1e-6
    pending_penalty: bool = True
    rgpe_n_samples: int = 256
    taf_bandwidth: float = 0.5

    def __post_init__(self) -> None:
        choices = {
            "kernel": KERNELS,
            "output_scaling": ("rank", "shared", "per-task"),
            "gap_estimate": ("ranking", "bound"),
            "ts_scale": ("beta", "none"),
            "probe": ("meta-worst", "explore", "none"),
            "target_warp": ("none", "rank"),
            "gap_aggregation": ("mean", "max"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        positive = [
            "beta_scale",
            "tau",
            "eta_n",
            "epsilon",
            "noise_floor",
            "duplicate_tol",
            "taf_bandwidth",
        ]
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("learn_weights", "polish_target", "pending_penalty", "hyper_prior", "meta_prior"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.beta is not None and not self.beta >= 0:
            raise ValueError(f"beta must be >= 0 or None, got {self.beta!r}")
        if not 0 < self.r < 1:
            raise ValueError(f"r must be in (0, 1), got {self.r!r}")
        if not 0 <= self.nu_floor < 1:
            raise ValueError(f"nu_floor must be in [0, 1), got {self.nu_floor!r}")
        counts = {
            "min_fit_observations": 2,
            "n_restarts": 0,
            "n_candidates": 1,
            "n_local": 0,
            "n_polish": 0,
            "polish_maxiter": 1,
            "n_rff_features": 1,
            "ts_pool_size": 1,
            "rgpe_n_samples": 1,
        }
        for name, low in counts.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.n_initial is not None and (
            not isinstance(self.n_initial, int) or self.n_initial < 0
        ):
            raise ValueError(
                f"n_initial must be a non-negative integer or None, got {self.n_initial!r}"
            )

    @classmethod
    def from_kwargs(cls, options: dict[str, Any]) -> MetaBOOptions:
        """Build from keyword options, naming any unknown one."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown option(s) {unknown}; valid options are {sorted(known)}")
        return cls(**options)
