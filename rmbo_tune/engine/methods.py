"""The search methods: one registry from a method's name to how it builds its acquisition.

This is the only place method names are listed. Each :class:`Method` says whether it reads
the meta-tasks and whether it is one of the paper's robust methods (FTRL meta-weights and
the overall meta-task weight nu); its builder turns a :class:`Context` (the target posterior,
the meta-task models, the weights) into the acquisition that ``ask`` maximizes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine import baselines
from rmbo_tune.engine.gp import ScaledGP
from rmbo_tune.engine.meta_basis import PRIOR_MEAN_COEFFICIENT, MetaBasisGP, MetaBasisSample
from rmbo_tune.engine.meta_models import MetaTaskModels
from rmbo_tune.engine.meta_weights import MetaWeightState
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.rff import RFFPosterior
from rmbo_tune.engine.types import Array


@dataclass
class Context:
    """What a method's builder may read at one ``ask``.

    Attributes
    ----------
    t : int
        Target observations so far.
    beta : float
        The target's confidence multiplier ``beta_{t+1}``.
    target : acquisition.CachedTarget
        The target posterior (pending points hallucinated), cached at the fixed candidates.
    gp : ScaledGP
        The GP behind ``target``.
    fitted : ScaledGP
        The target GP of the observations alone (no pending points).
    X, y : ndarray
        Target inputs and outputs on the GP's scale.
    fixed : ndarray
        The fixed candidates (where ``target`` and ``meta_cache`` are precomputed).
    meta : MetaTaskModels
    weights : ndarray of shape (M,)
        Meta-weights of the robust methods.
    nu : float
    options : MetaBOOptions
    rng : numpy.random.Generator
    meta_cache : callable
        The meta-task predictions at the fixed candidates (computed once).
    meta_sample : callable
        A weighted draw of the meta-tasks' functions (RM-GP-TS's meta branch).
    record : dict
        The suggestion's diagnostics record; builders set ``branch`` and may add weights.
    escalation : float
        The factor by which the k-th repeat escalation multiplied ``beta`` (1 before any):
        ``2^k`` with option ``escalation="beta"``, ``2^(k/2)`` with "shrink", which also
        divides the target's length scales and nu (:func:`_escalated_nu`) by it. It
        widens RM-GP-TS's target samples with ``ts_scale="none"`` too.
    memo : dict
        What a builder computes once per ``ask`` whatever ``beta`` is (RM-GP-UCB's late
        target), shared with the copies that a repeat escalation makes with a larger
        ``beta`` (``dataclasses.replace`` passes the same dict).
    meta_term : str
        RM-GP-UCB's meta term, option ``meta_term`` with "auto" resolved ("mean",
        "improvement" or "taf").
    n_given : int
        Target observations the search did not choose (told without being suggested or
        marked pending: ``evaluated_rewards``, a harness's initial design).
    """

    t: int
    beta: float
    target: acq.CachedTarget
    gp: ScaledGP
    fitted: ScaledGP
    X: Array
    y: Array
    fixed: Array
    meta: MetaTaskModels
    weights: Array
    nu: float
    options: MetaBOOptions
    rng: np.random.Generator
    meta_cache: Callable[[], acq.MetaCache]
    meta_sample: Callable[[], acq.Acquisition]
    record: dict[str, Any]
    escalation: float = 1.0
    memo: dict[str, Any] = field(default_factory=dict)
    meta_term: str = "mean"
    n_given: int = 0


Builder = Callable[[Context], acq.Acquisition]


def _gp_ucb(c: Context) -> acq.Acquisition:
    c.record["branch"] = "target"
    return acq.UCB(c.target, c.beta)


def _thompson(c: Context, late: bool = False) -> acq.Acquisition:
    """A target sample; ``late``: of the model with the meta-tasks' basis once it is due
    (or from the first observation, option ``ts_early_basis``), or where option
    ``meta_prior_mean`` is on (RM-GP-TS's default) of the model with the tasks' mean as
    prior mean (as :func:`_late_target`) from the first observation."""
    c.record["branch"] = "target"
    scale = c.beta if c.options.ts_scale == "beta" else c.escalation
    n_features, n_observed = c.options.n_rff_features, c.fitted.gp.n_obs
    prior_mean = late and c.options.prior_mean("rm-gp-ts") and c.gp.gp.n_obs > 0
    if prior_mean or (late and _basis_due(c, early=c.options.ts_early_basis)):
        sample = MetaBasisSample(
            c.gp,
            c.meta,
            c.weights,
            c.meta_cache().mu,
            n_features=n_features,
            rng=c.rng,
            scale=scale,
            n_observed=n_observed,
            task_var=c.options.meta_basis_tasks,
            observed=c.fitted,
            coefficient_mean=PRIOR_MEAN_COEFFICIENT if prior_mean else None,
        )
        c.record["mean_coefficient"] = sample.coef
        return sample
    post = RFFPosterior(c.gp, n_features=n_features, rng=c.rng, n_observed=n_observed)
    return acq.SampledFunction(post, post.sample_weights(c.rng, scale=scale)[0])


def _basis_due(c: Context, early: bool = False) -> bool:
    """Whether the robust methods' target model takes the meta-tasks' basis function
    (:mod:`~rmbo_tune.engine.meta_basis`): once ``nu <= meta_basis_nu``; or from the first
    suggestion when at least ``min_fit_observations`` of the target's observations were
    given rather than chosen by the search; or with ``early`` (RM-GP-TS's option
    ``ts_early_basis``) from the first observation.

    The basis's coefficient is learned from how the target's values follow the tasks' mean
    across its observations. The search's own first points cluster where that mean is high
    and barely tell it, so the basis waits for nu; given points, spread over the space
    (a random design, earlier trials), tell it before the search's first suggestion.
    """
    opt = c.options
    if opt.meta_basis_nu <= 0.0 or c.gp.gp.n_obs == 0:
        return False
    return early or c.nu <= opt.meta_basis_nu or c.n_given >= opt.min_fit_observations


def _late_target(c: Context) -> acq.CachedTarget:
    """The target model of RM-GP-UCB: once the basis is due, with the meta-weights' mean of
    the meta-tasks as a basis function (:mod:`~rmbo_tune.engine.meta_basis`); with option
    ``meta_prior_mean``, from the first observation, as the target's prior mean. The
    record gets the coefficient of that mean (``mean_coefficient``), as RM-GP-TS's does
    from :func:`_thompson`."""
    prior_mean = c.options.prior_mean("rm-gp-ucb")
    if not (c.gp.gp.n_obs > 0 if prior_mean else _basis_due(c)):
        return c.target
    if "late_target" not in c.memo:
        model = MetaBasisGP(
            c.gp,
            c.meta,
            c.weights,
            c.fixed,
            c.meta_cache().mu,
            observed=c.fitted,
            task_var=c.options.meta_basis_tasks,
            coefficient_mean=PRIOR_MEAN_COEFFICIENT if prior_mean else 0.0,
            bound=not prior_mean,
        )
        c.memo["late_target"] = acq.CachedTarget(
            model, *model.fixed_predictions(c.target.fixed_mu, c.target.fixed_sigma)
        )
        c.record["mean_coefficient"] = model.coef
    return c.memo["late_target"]


def _escalated_nu(c: Context) -> float:
    """nu at the suggestion's repeat escalation (option ``escalation``): divided, under
    "shrink", by the factor that divides the length scales; nu itself under "beta".

    RM-GP-UCB weighs its tasks' term by it, RM-GP-TS draws its tasks' branch with it. A
    repeat can be the tasks' doing: their term holding the bound's best point on an
    observation, or their sampled function peaking there. With nu still large, a wider
    target model alone does not move it (the tasks' mean stays where it was); under
    doubled beta (x 16 at the 4th escalation) the target's term outgrew it, the shrink
    widens the target by less, so the tasks' weight gives way too. A smaller nu keeps
    ``nu_t <= r^t``, and the guarantee.
    """
    if c.options.escalation == "shrink":
        return c.nu / c.escalation
    return c.nu


def _rm_gp_ucb(c: Context) -> acq.Acquisition:
    target = _late_target(c)
    if c.nu == 0.0:
        return _gp_ucb(replace(c, target=target))
    c.record["branch"] = "combined"
    incumbents, best_y = None, None
    if c.meta_term in ("improvement", "taf") and c.t > 0:
        incumbents = c.meta.means(c.X).max(1)  # TAF-R's incumbents, as in _taf
        if c.meta_term == "taf" and c.nu > c.options.meta_basis_nu:
            best_y = float(c.y.max())  # TAF's target term, the expected improvement
    # The committee's prior: the target GP's own kernel variance, on the engine's scale.
    target_var = c.gp.scale**2 * c.gp.gp.hyper.signal_var
    return acq.RMUCB(
        target,
        c.beta,
        c.meta,
        c.weights,
        _escalated_nu(c),
        c.options.tau,
        c.meta_cache(),
        incumbents,
        target_var=target_var,
        best_y=best_y,
    )


def _rm_gp_ts(c: Context) -> acq.Acquisition:
    if c.rng.random() < _escalated_nu(c):
        c.record["branch"] = "meta"
        return c.meta_sample()
    return _thompson(c, late=True)


def _rgpe(c: Context) -> acq.Acquisition:
    c.record["branch"] = "ensemble"
    w, wt = baselines.rgpe_weights(
        c.meta, c.fitted.gp, c.X, c.y, n_samples=c.options.rgpe_n_samples, rng=c.rng
    )
    c.record["weights"], c.record["target_weight"] = w.tolist(), wt
    return baselines.RGPE(c.target, c.beta, c.meta, w, wt, c.meta_cache())


def _taf(c: Context) -> acq.Acquisition:
    c.record["branch"] = "ensemble"
    cache = c.meta_cache()
    best: float | None
    if c.t > 0:
        mu_t = c.meta.means(c.X)
        w = baselines.taf_weights(mu_t, c.y, bandwidth=c.options.taf_bandwidth)
        inc, best = mu_t.max(1), float(c.y.max())
    else:
        w, inc, best = np.full(c.meta.n_tasks, 0.75), cache.mu.min(1), None
    c.record["weights"] = w.tolist()
    return baselines.TAF(c.target, best, c.meta, w, inc, cache)


@dataclass(frozen=True)
class Method:
    """A search method.

    Attributes
    ----------
    uses_meta : bool
        Reads the meta-tasks (the others never fit them).
    robust : bool
        The paper's RM-GP-UCB / RM-GP-TS: FTRL meta-weights and nu, the probe.
    build : callable or None
        Builds the acquisition once the model is used (None: random search).
    cold : callable or None
        The builder without meta-tasks (None: ``build`` itself).
    """

    uses_meta: bool
    robust: bool
    build: Builder | None
    cold: Builder | None = None

    def builder(self, has_meta: bool) -> Builder | None:
        """The builder for a search with (``has_meta``) or without meta-tasks."""
        return self.build if has_meta or self.cold is None else self.cold


REGISTRY: dict[str, Method] = {
    "rm-gp-ucb": Method(uses_meta=True, robust=True, build=_rm_gp_ucb, cold=_gp_ucb),
    "rm-gp-ts": Method(uses_meta=True, robust=True, build=_rm_gp_ts, cold=_thompson),
    "gp-ucb": Method(uses_meta=False, robust=False, build=_gp_ucb),
    # RM-GP-TS's target branch alone: the cold form it reduces to once nu reaches 0.
    "gp-ts": Method(uses_meta=False, robust=False, build=_thompson),
    "rgpe": Method(uses_meta=True, robust=False, build=_rgpe, cold=_gp_ucb),
    "taf": Method(uses_meta=True, robust=False, build=_taf, cold=_gp_ucb),
    # The meta-tasks' best inputs first (MetaBO's initial design), then GP-UCB.
    "warm-start": Method(uses_meta=True, robust=False, build=_gp_ucb),
    # A greedy portfolio of the meta-tasks' inputs (or the candidates) first, then GP-UCB.
    "portfolio": Method(uses_meta=True, robust=False, build=_gp_ucb),
    "random": Method(uses_meta=False, robust=False, build=None),
}
METHODS = tuple(REGISTRY)
META_METHODS = tuple(name for name, m in REGISTRY.items() if m.uses_meta)
ROBUST_METHODS = tuple(name for name, m in REGISTRY.items() if m.robust)


def check_method(name: str) -> Method:
    """The method called ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"method must be one of {METHODS}, got {name!r}")
    return REGISTRY[name]


def new_record(
    t: int, n_pending: int, method: str, nu: float, weights: MetaWeightState, robust: bool
) -> dict[str, Any]:
    """The diagnostics record of one ``ask``: ``t`` (1-based), pending points, method, nu,
    and for the robust methods the meta-weights and latest gaps; ``branch`` (which part of
    the acquisition chose the point), ``acquisition`` (its value) and ``x`` are filled in
    by the caller."""
    record: dict[str, Any] = {
        "t": t + 1,
        "n_pending": n_pending,
        "method": method,
        "nu": nu,
        "weights": None,
        "gaps": None,
        "branch": None,
        "acquisition": None,
    }
    if robust:
        record["weights"] = weights.weights.tolist()
        record["gaps"] = [None if np.isnan(g) else g for g in weights.last_gaps]
    return record


class MetaSamplePool:
    """Pre-drawn RFF samples of each meta-task's GP, evaluated at the fixed candidates.

    RM-GP-TS's meta branch combines one sample per meta-task with the meta-weights; drawing
    from a fixed pool of ``ts_pool_size`` per task keeps that branch O(M n) per ``ask``.
    """

    def __init__(
        self, meta: MetaTaskModels, fixed: Array, options: MetaBOOptions, seed: int
    ) -> None:
        rng = np.random.default_rng(seed)
        ts_tau = 1.0 if options.tau is None else options.tau
        self.posts = [
            RFFPosterior(m, n_features=options.n_rff_features, rng=rng) for m in meta.models
        ]
        self.ws = np.stack(
            [p.sample_weights(rng, scale=ts_tau, size=options.ts_pool_size) for p in self.posts]
        )  # (M, S, m)
        self.vals = np.stack(
            [p.evaluate(fixed, w) for p, w in zip(self.posts, self.ws, strict=True)]
        )  # (M, n_fixed, S)
        self.size = options.ts_pool_size

    def draw(self, rng: np.random.Generator, weights: Array) -> acq.Acquisition:
        """One sample per meta-task, combined with ``weights`` (negligible ones skipped)."""
        pick = rng.integers(self.size, size=len(self.posts))
        used = np.flatnonzero(weights > 1e-12 * weights.max())
        fixed_vals = np.einsum("m,mn->n", weights[used], self.vals[used, :, pick[used]])
        return acq.WeightedMetaSample(
            [self.posts[i] for i in used], self.ws[used, pick[used]], weights[used], fixed_vals
        )
