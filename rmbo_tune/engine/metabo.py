"""MetaBO: the ask/tell state machine of robust meta-Bayesian optimization.

Notation
--------
Everything is maximization over the unit cube ``[0, 1]^dim``.
t
    Number of target observations; ``ask`` chooses ``x_{t+1}`` with ``beta_{t+1}``.
c, a
    Median location and spread of the meta-tasks' outputs: the output map
    ``y -> (y - c) / a`` of "shared" scaling, also used for the target's first
    observations under "per-task" scaling.
M
    Number of meta-tasks, each a GP fitted once (hyperparameters by type-II ML) and fixed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine import baselines
from rmbo_tune.engine.gp import (
    FixedPointFactor,
    GPHyperparameters,
    ScaledGP,
    fit_hyperparameters,
    normal_scores,
    standardization,
)
from rmbo_tune.engine.meta_models import MetaTaskModels
from rmbo_tune.engine.meta_weights import (
    MetaWeightState,
    beta_schedule,
    function_gaps,
    ranking_gaps,
)
from rmbo_tune.engine.optimize import (
    identity,
    local_points,
    maximize_box,
    maximize_finite,
    min_distances,
    sobol_points,
)
from rmbo_tune.engine.options import (
    META_METHODS,
    METHODS,
    ROBUST_METHODS,
    VERSION_1_OPTIONS,
    MetaBOOptions,
)
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.rff import RFFPosterior
from rmbo_tune.engine.types import Array, SearchSpaceExhausted

STATE_VERSION = 2
WARM_START_POINTS = 10
_BOX_TOL = 1e-9


def _as_points(X: ArrayLike, dim: int, what: str) -> Array:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"{what} must have shape (n, {dim}), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{what} contains NaN or inf")
    if X.size and (X.min() < -_BOX_TOL or X.max() > 1 + _BOX_TOL):
        raise ValueError(
            f"{what} must lie in the unit cube [0, 1]^{dim}; found values in "
            f"[{X.min():.6g}, {X.max():.6g}]"
        )
    return np.clip(X, 0.0, 1.0)


def _check_meta_tasks(meta_tasks: Sequence[tuple[ArrayLike, ArrayLike]], dim: int) -> list:
    out = []
    for i, task in enumerate(meta_tasks):
        try:
            X, y = task
        except (TypeError, ValueError):
            raise ValueError(f"meta_tasks[{i}] must be an (X, y) pair") from None
        X = _as_points(X, dim, f"meta_tasks[{i}] X")
        y = np.asarray(y, dtype=np.float64)
        if len(X) == 0:
            raise ValueError(f"meta_tasks[{i}] is empty; every meta-task needs observations")
        if y.shape != (len(X),):
            raise ValueError(
                f"meta_tasks[{i}] y must have shape ({len(X)},) to match X, got {y.shape}"
            )
        if not np.all(np.isfinite(y)):
            raise ValueError(
                f"meta_tasks[{i}] y contains NaN or inf at rows "
                f"{np.flatnonzero(~np.isfinite(y))[:10].tolist()}"
            )
        out.append((X, y))
    return out


class MetaBO:
    """Robust meta-Bayesian optimization (RM-GP-UCB / RM-GP-TS) with ask/tell.

    Parameters
    ----------
    dim : int
        Dimension of the unit cube searched.
    meta_tasks : sequence of (X, y)
        Earlier tasks: X of shape (n_i, dim) in ``[0, 1]^dim``, y of shape (n_i,), maximized.
    method : {"rm-gp-ucb", "rm-gp-ts", "gp-ucb", "rgpe", "taf", "random"}
    candidates : ndarray of shape (n_candidates, dim), optional
        A finite domain: ``ask`` returns one of its rows, never one observed or pending.
    seed : int, optional
        Seed of the engine's only random generator.
    project : callable, optional
        Maps points of shape (n, dim) to valid points (integer, quantized, categorical
        dimensions); every candidate is projected before the acquisition sees it.
    **options
        Algorithm options, see :class:`MetaBOOptions`.

    Examples
    --------
    >>> opt = MetaBO(dim=2, meta_tasks=[(X1, y1), (X2, y2)], seed=0)
    >>> x = opt.ask()
    >>> opt.tell(x, objective(x))
    """

    def __init__(
        self,
        dim: int,
        meta_tasks: Sequence[tuple[ArrayLike, ArrayLike]] = (),
        method: str = "rm-gp-ucb",
        *,
        candidates: ArrayLike | None = None,
        seed: int | None = None,
        project: Callable[[Array], Array] | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(dim, int | np.integer) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.dim, self.method = int(dim), method
        self.options = MetaBOOptions.from_kwargs(options)
        tasks = _check_meta_tasks(meta_tasks, self.dim)
        cands = None if candidates is None else _as_points(candidates, self.dim, "candidates")
        if cands is not None and len(cands) == 0:
            raise ValueError("candidates must contain at least one row")
        rng = np.random.default_rng(seed)
        seeds = {k: int(rng.integers(2**31)) for k in ("sobol", "initial", "pool")}
        hypers = [None] * len(tasks)
        self._setup(tasks, hypers, cands, rng, seeds, project, fit_rng=rng)

    # ------------------------------------------------------------------ construction
    def _setup(self, tasks, hypers, candidates, rng, seeds, project, fit_rng) -> None:
        opt = self.options
        self.rng, self._seeds = rng, seeds
        self.project = project or identity
        self.candidates = candidates
        uses_meta = self.method in META_METHODS
        self._uses_meta = uses_meta and len(tasks) > 0
        if not uses_meta:
            tasks, hypers = [], []  # gp-ucb and random ignore meta-tasks: skip fitting them
        self._meta_data = tasks
        self._prior = LogNormalPrior.default(self.dim) if opt.hyper_prior else None
        models = []
        for (X, y), hyper in zip(tasks, hypers, strict=True):
            if opt.output_scaling == "rank":
                y = normal_scores(y)
            if hyper is None:
                models.append(
                    ScaledGP.fit(
                        X,
                        y,
                        kind=opt.kernel,
                        rng=fit_rng,
                        n_restarts=opt.n_restarts,
                        noise_floor=opt.noise_floor,
                        prior=self._prior,
                    )
                )
            else:
                models.append(ScaledGP.from_hyper(X, y, hyper, kind=opt.kernel))
        self._meta_hypers = [m.hyper for m in models]
        if models:
            self._c = float(np.median([m.loc for m in models]))
            self._a = float(np.median([m.scale for m in models]))
        else:
            self._c, self._a = 0.0, 1.0
        if opt.output_scaling == "shared":
            models = [m.rescaled(self._c, self._a) for m in models]
        else:
            models = [m.rescaled(m.loc, m.scale) for m in models]
        self.meta = MetaTaskModels(models)
        self.weight_state = MetaWeightState(
            len(models),
            eta_n=opt.eta_n,
            r=opt.r,
            epsilon=opt.epsilon,
            learn_weights=opt.learn_weights,
            nu_floor=opt.nu_floor,
        )
        if self._uses_meta:
            # Borrow the meta-tasks' length scales (how fast the response varies with each
            # parameter) but not their signal variance: the target's outputs are on a unit
            # scale, and a meta GP fitted to a smooth bowl runs its amplitude up to the bound,
            # which would make the target GP wildly uncertain away from its first points
            # (every suggestion after the first went to a corner of the cube).
            logs = np.array([h.to_theta() for h in self._meta_hypers])
            median = GPHyperparameters.from_theta(np.median(logs, axis=0))
            self._target_hyper = GPHyperparameters(
                median.lengthscales, 1.0, float(np.clip(median.noise_var, opt.noise_floor, 0.1))
            )
        else:
            self._target_hyper = GPHyperparameters.default(self.dim, noise_floor=opt.noise_floor)
        self._warm = self._warm_start_points(tasks) if self.method == "warm-start" else None
        if opt.n_initial is not None:
            self.n_initial = opt.n_initial
        elif self._warm is not None:
            self.n_initial = len(self._warm)
        else:
            self.n_initial = 0 if self._uses_meta else int(np.clip(self.dim + 1, 2, 5))
        self._X: list[Array] = []
        self._y: list[float] = []
        self._pending: list[Array] = []
        self.n_failed = 0
        self.history: list[dict] = []
        self._target_cache: ScaledGP | None = None
        # The target GP's factor, grown per observation between hyperparameter refits; it
        # was last rebuilt from the first ``_factor_base`` observations (kept in the state
        # so that a restored engine grows the very same factor).
        self._factor: FixedPointFactor | None = None
        self._factor_base = 0
        self._meta_cache: acq.MetaCache | None = None
        self._ts_pool: tuple[list[RFFPosterior], Array, Array] | None = None
        if candidates is not None:
            self._fixed = candidates
        else:
            fixed = [sobol_points(opt.n_candidates, self.dim, seeds["sobol"])]
            if self._uses_meta:
                # Each meta-task's three best inputs and points around its best one; these
                # candidates are fixed so the meta predictions there are cached too.
                fixed += [X[np.argsort(-y)[:3]] for X, y in tasks]
                best = np.array([X[np.argmax(y)] for X, y in tasks])
                local_rng = np.random.default_rng(seeds["sobol"])
                fixed.append(local_points(best, 4, 0.05, local_rng))
            self._fixed = np.unique(self.project(np.vstack(fixed)), axis=0)
        # Points where the target posterior is maintained incrementally: the fixed
        # candidates and, for the gaps of RM-GP-UCB / RM-GP-TS, the meta-tasks' inputs.
        gaps = self._uses_meta and self.method in ROBUST_METHODS and opt.gap_estimate == "bound"
        self._cached_points = np.vstack([self._fixed, self.meta.X_all]) if gaps else self._fixed

    def _warm_start_points(self, tasks: list) -> Array | None:
        """The warm-start baseline's first points: each meta-task's best input, ranked by
        its mean predicted value over all meta-tasks (on the common scale), at most 10."""
        if not tasks:
            return None
        best = np.unique(self.project(np.array([X[np.argmax(y)] for X, y in tasks])), axis=0)
        mu, _ = self.meta.predict(best)
        return best[np.argsort(-mu.mean(0), kind="stable")][:WARM_START_POINTS]

    # ------------------------------------------------------------------ public state
    @property
    def X(self) -> Array:
        """Observed target inputs, shape (t, dim)."""
        return np.array(self._X).reshape(-1, self.dim)

    @property
    def y(self) -> Array:
        """Observed target outputs as told, shape (t,)."""
        return np.array(self._y, dtype=np.float64)

    @property
    def pending(self) -> Array:
        """Suggested points not yet told, shape (p, dim)."""
        return np.array(self._pending).reshape(-1, self.dim)

    @property
    def nu(self) -> float:
        """Current overall weight of the meta-tasks (0 for methods that ignore them)."""
        return self.weight_state.nu if self.method in ROBUST_METHODS else 0.0

    @property
    def meta_weights(self) -> Array:
        """Current meta-weights of RM-GP-UCB / RM-GP-TS, shape (M,)."""
        return self.weight_state.weights

    @property
    def n_meta_tasks(self) -> int:
        """Number of meta-tasks M."""
        return self.meta.n_tasks

    # ------------------------------------------------------------------ models
    def _borrows_meta_scale(self) -> bool:
        # The target's own mean and spread are meaningless for its first few observations,
        # which cluster near one optimum when the meta-tasks guide the search: standardizing
        # by them makes the GP overconfident away from the cluster and the gaps uninformative.
        # Until ``min_fit_observations``, per-task scaling borrows the meta-tasks' scale
        # (median location and spread), exactly as shared scaling does throughout.
        if not self.meta.n_tasks or self.options.output_scaling == "rank":
            return False
        return (
            self.options.output_scaling == "shared"
            or len(self._y) < self.options.min_fit_observations
        )

    def _target_y(self) -> Array:
        y = self.y
        if self._borrows_meta_scale():
            return (y - self._c) / self._a  # the meta-tasks' scale: no warp of its own
        if self.options.target_warp == "rank" and len(y) > 2:
            y = normal_scores(y)
        loc, scale = standardization(y)
        return (y - loc) / scale

    def _target_standardization(self, yc: Array) -> tuple[float, float]:
        return (0.0, 1.0) if self._borrows_meta_scale() else standardization(yc)

    def _target_factor(self) -> FixedPointFactor:
        f = self._factor
        # Once the meta-weights are inactive no gaps are computed: drop the meta-task inputs.
        n_points = len(self._cached_points) if self.weight_state.active else len(self._fixed)
        if f is None:
            f = FixedPointFactor(
                self.X[: self._factor_base],
                self._cached_points[:n_points],
                self._target_hyper,
                kind=self.options.kernel,
            )
        f.keep_points(n_points)
        for x in self._X[f.n_obs :]:
            f.append(x)
        self._factor = f
        return f

    def _target_model(self) -> ScaledGP:
        if self._target_cache is None:
            yc = self._target_y()
            loc, scale = self._target_standardization(yc)
            gp = self._target_factor().gp((yc - loc) / scale)
            self._target_cache = ScaledGP(gp, loc, scale)
        return self._target_cache

    def _target_posterior(self, *, pending: bool) -> tuple[Array, Array, ScaledGP]:
        """Target mean and std at the cached points (outer scale) and the target GP, with
        the pending points hallucinated if ``pending``."""
        model = self._target_model()
        mu, sigma, gp = self._target_factor().predict(model.gp, self.pending if pending else None)
        return (
            model.loc + model.scale * mu,
            model.scale * sigma,
            ScaledGP(gp, model.loc, model.scale),
        )

    def _refit_target(self) -> None:
        t = len(self._y)
        self._target_cache = None
        opt = self.options
        # Refit after every observation up to 20, then once the observations have grown by
        # 20% since the last refit (``_factor_base``), with random restarts whenever a size
        # 10 * 2^k was passed: the fit costs O(t^3) per likelihood evaluation, so refitting
        # all the time would dominate a long search.
        base = self._factor_base
        if self.method == "random":
            return  # random search never uses the target GP
        if t < opt.min_fit_observations or (t > 20 and t < 1.2 * base):
            return
        yc = self._target_y()
        loc, scale = self._target_standardization(yc)
        doubling = 10 * 2 ** int(np.log2(t / 10)) if t >= 10 else None
        full = t == opt.min_fit_observations or (doubling is not None and base < doubling)
        self._target_hyper = fit_hyperparameters(
            self.X,
            (yc - loc) / scale,
            kind=opt.kernel,
            rng=self.rng,
            n_restarts=opt.n_restarts if full else 0,
            init=self._target_hyper,
            noise_floor=opt.noise_floor,
            prior=self._prior,
        )
        self._factor, self._factor_base = None, t

    def _beta(self, t: int) -> float:
        return beta_schedule(
            t, self.dim, beta=self.options.beta, beta_scale=self.options.beta_scale
        )

    # ------------------------------------------------------------------ tell
    def tell(self, x: ArrayLike, y: float | None) -> None:
        """Record the outcome of evaluating ``x``.

        Parameters
        ----------
        x : array-like of shape (dim,)
            Need not have been asked (warm starts); resolves it if it was pending.
        y : float or None
            The observed value (maximized). None marks a pending evaluation that failed:
            it is dropped and nothing is observed.
        """
        point = _as_points(np.asarray(x, dtype=np.float64).reshape(1, -1), self.dim, "x")[0]
        for k, p in enumerate(self._pending):
            if np.allclose(p, point, rtol=0.0, atol=1e-12):
                del self._pending[k]
                break
        if y is None:
            self.n_failed += 1
            return
        value = float(y)
        if not np.isfinite(value):
            raise ValueError(f"y must be a finite number or None, got {y!r}")
        self._X.append(point)
        self._y.append(value)
        self._refit_target()
        if self.method in ROBUST_METHODS and self.weight_state.active:
            self.weight_state.update(self._gaps())

    def _gaps(self) -> Array:
        """Estimated function gaps of the meta-tasks after the latest observation."""
        if self.options.gap_estimate == "ranking":
            mu_meta, _ = self.meta.predict(self.X)
            return ranking_gaps(mu_meta, self.y)
        n_fixed = len(self._fixed)
        mu, sigma, _ = self._target_posterior(pending=False)
        return function_gaps(
            self.meta.y_all,
            self.meta.task_index,
            self.meta.n_tasks,
            mu[n_fixed:],
            sigma[n_fixed:],
            self._beta(len(self._y) + 1),
            aggregation=self.options.gap_aggregation,
        )

    def add_pending(self, x: ArrayLike) -> None:
        """Mark ``x`` as being evaluated without asking for it (user-supplied points), so
        that suggestions avoid it until it is told."""
        point = _as_points(np.asarray(x, dtype=np.float64).reshape(1, -1), self.dim, "x")[0]
        self._pending.append(point)

    # ------------------------------------------------------------------ ask
    def ask(self) -> Array:
        """Suggest the next point to evaluate; it stays pending until told.

        Returns
        -------
        ndarray of shape (dim,)

        Raises
        ------
        SearchSpaceExhausted
            If every valid point has been observed or is pending.
        """
        t = len(self._y)
        record: dict[str, Any] = {
            "t": t + 1,
            "n_pending": len(self._pending),
            "method": self.method,
            "nu": self.nu,
            "weights": None,
            "gaps": None,
            "branch": None,
            "acquisition": None,
        }
        if self.method in ROBUST_METHODS and self._uses_meta:
            record["weights"] = self.meta_weights.tolist()
            record["gaps"] = [None if np.isnan(g) else g for g in self.weight_state.last_gaps]
        exclude = np.vstack([self.X, self.pending])
        x = None
        if self.method == "random":
            record["branch"] = "random"
        elif t + len(self._pending) < self.n_initial:
            record["branch"] = "initial"
            x = self._initial_point(t + len(self._pending), exclude)
        elif self._probe_due():
            record["branch"] = "probe"
            x = self._probe_point(exclude)
        else:
            acquisition = self._acquisition(t, record)
            if self._pending and self.options.pending_penalty:
                acquisition = self._penalize(acquisition)
            x = self._maximize(acquisition, exclude, record)
        if x is None:
            x = self._random_point(exclude)
        self._pending.append(x)
        record["x"] = x.tolist()
        self.history.append(record)
        return x.copy()

    def _probe_due(self) -> bool:
        return (
            self.options.probe
            and self.method in ROBUST_METHODS
            and self._uses_meta
            and self.nu > 0.0
            and len(self._X) + len(self._pending) == 1
        )

    def _probe_point(self, exclude: Array) -> Array | None:
        """The second suggestion of RM-GP-UCB / RM-GP-TS: the point the meta-tasks rank
        lowest, so that the first pair of target observations tests their claim where it
        is most decisive (option ``probe``)."""
        points = self.candidates if self.candidates is not None else self._fixed
        avail = min_distances(points, exclude) > self.options.duplicate_tol
        if not avail.any():
            return None
        mu = self._meta_cache_get().mu if self.candidates is None else self.meta.predict(points)[0]
        score = np.where(avail, self.meta_weights @ mu, np.inf)
        return points[int(np.argmin(score))]

    def _initial_point(self, k: int, exclude: Array) -> Array | None:
        if self._warm is not None and k < len(self._warm):
            p = self._warm[k : k + 1]
        else:
            p = sobol_points(self.n_initial, self.dim, self._seeds["initial"])[k : k + 1]
            p = self.project(p)
        if self.candidates is not None:
            avail = min_distances(self.candidates, exclude) > self.options.duplicate_tol
            if not avail.any():
                return None
            idx = np.flatnonzero(avail)
            return self.candidates[idx[np.argmin(min_distances(self.candidates[idx], p))]]
        return p[0] if min_distances(p, exclude)[0] > self.options.duplicate_tol else None

    def _random_point(self, exclude: Array) -> Array:
        tol = self.options.duplicate_tol
        if self.candidates is not None:
            idx = np.flatnonzero(min_distances(self.candidates, exclude) > tol)
            if len(idx) == 0:
                raise SearchSpaceExhausted(
                    f"all {len(self.candidates)} candidates have been observed or are pending"
                )
            return self.candidates[self.rng.choice(idx)]
        P = self.project(self.rng.random((1024, self.dim)))
        ok = np.flatnonzero(min_distances(P, exclude) > tol)
        if len(ok) == 0:
            raise SearchSpaceExhausted(
                "1024 random valid points all duplicate observed or pending points; "
                "the search space looks exhausted"
            )
        return P[ok[0]]

    def _meta_cache_get(self) -> acq.MetaCache:
        if self._meta_cache is None:
            self._meta_cache = acq.MetaCache(*self.meta.predict(self._fixed))
        return self._meta_cache

    def _acquisition(self, t: int, record: dict) -> acq.Acquisition:
        opt = self.options
        beta = self._beta(t + 1)
        mu_f, sigma_f, target_gp = self._target_posterior(pending=True)
        n_fixed = len(self._fixed)
        target = acq.CachedTarget(target_gp, mu_f[:n_fixed], sigma_f[:n_fixed])
        method = self.method if self._uses_meta or self.method == "rm-gp-ts" else "gp-ucb"
        if method == "warm-start":
            method = "gp-ucb"
        if method == "rm-gp-ts" and not self._uses_meta:
            method = "ts"
        if method == "gp-ucb" or (method == "rm-gp-ucb" and self.nu == 0.0):
            record["branch"] = "target"
            return acq.UCB(target, beta)
        if method == "rm-gp-ucb":
            record["branch"] = "combined"
            return acq.RMUCB(
                target,
                beta,
                self.meta,
                self.meta_weights,
                self.nu,
                opt.tau,
                self._meta_cache_get(),
            )
        if method in ("rm-gp-ts", "ts"):
            if method == "rm-gp-ts" and self.rng.random() < self.nu:
                record["branch"] = "meta"
                return self._meta_sample()
            record["branch"] = "target"
            post = RFFPosterior(target_gp, n_features=opt.n_rff_features, rng=self.rng)
            scale = beta if opt.ts_scale == "beta" else 1.0
            return acq.SampledFunction(post, post.sample_weights(self.rng, scale=scale)[0])
        if method == "rgpe":
            record["branch"] = "ensemble"
            w, wt = baselines.rgpe_weights(
                self.meta,
                self._target_model().gp,
                self.X,
                self._target_y(),
                n_samples=opt.rgpe_n_samples,
                rng=self.rng,
            )
            record["weights"], record["target_weight"] = w.tolist(), wt
            return baselines.RGPE(target, beta, self.meta, w, wt, self._meta_cache_get())
        record["branch"] = "ensemble"
        cache = self._meta_cache_get()
        if t > 0:
            mu_t, _ = self.meta.predict(self.X)
            w = baselines.taf_weights(mu_t, self._target_y(), bandwidth=opt.taf_bandwidth)
            inc = mu_t.max(1)
            best = float(self._target_y().max())
        else:
            w, inc, best = np.full(self.meta.n_tasks, 0.75), cache.mu.min(1), None
        record["weights"] = w.tolist()
        return baselines.TAF(target, best, self.meta, w, inc, cache)

    def _meta_sample(self) -> acq.Acquisition:
        opt = self.options
        if self._ts_pool is None:
            pool_rng = np.random.default_rng(self._seeds["pool"])
            posts = [
                RFFPosterior(m, n_features=opt.n_rff_features, rng=pool_rng)
                for m in self.meta.models
            ]
            ws = np.stack(
                [p.sample_weights(pool_rng, scale=opt.tau, size=opt.ts_pool_size) for p in posts]
            )  # (M, S, m)
            vals = np.stack([p.evaluate(self._fixed, w) for p, w in zip(posts, ws, strict=True)])
            self._ts_pool = (posts, ws, vals)  # vals: (M, n_fixed, S)
        posts, ws, vals = self._ts_pool
        pick = self.rng.integers(opt.ts_pool_size, size=len(posts))
        weights = self.meta_weights
        used = np.flatnonzero(weights > 1e-12 * weights.max())
        fixed_vals = np.einsum("m,mn->n", weights[used], vals[used, :, pick[used]])
        return acq.WeightedMetaSample(
            [posts[i] for i in used], ws[used, pick[used]], weights[used], fixed_vals
        )

    def _penalize(self, acquisition: acq.Acquisition) -> acq.Acquisition:
        base = acquisition.values(self._fixed, fixed=True)
        finite = base[np.isfinite(base)]
        height = float(finite.max() - finite.min()) if finite.size else 1.0
        rho = np.clip(0.5 * self._target_hyper.lengthscales, 0.01, 0.1)
        return acq.Penalized(acquisition, self.pending, rho, max(height, 1e-9), base)

    def _maximize(
        self, acquisition: acq.Acquisition, exclude: Array, record: dict
    ) -> Array | None:
        opt = self.options
        if self.candidates is not None:
            avail = min_distances(self.candidates, exclude) > opt.duplicate_tol
            found = maximize_finite(acquisition, self.candidates, avail)
            if found is None:
                return None
            record["acquisition"] = found[1]
            return self.candidates[found[0]]
        extra = [self.rng.random((opt.n_local // 2, self.dim))]
        if len(self._y):
            top = self.X[np.argsort(-self.y)[:4]]
            extra.append(local_points(top, max(1, opt.n_local // 8), 0.05, self.rng))
        res = maximize_box(
            acquisition,
            fixed=self._fixed,
            extra=np.vstack(extra),
            exclude=exclude,
            project=self.project,
            tol=opt.duplicate_tol,
            # The target alone (record["branch"] == "target") is polished only on request.
            n_polish=opt.n_polish if record["branch"] != "target" or opt.polish_target else 0,
            polish_maxiter=opt.polish_maxiter,
        )
        if res is None:
            return None
        record["acquisition"] = res[1]
        return res[0]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """A plain, versioned dict (numbers, lists, strings) from which
        :meth:`from_state_dict` rebuilds an engine that continues identically."""
        return {
            "version": STATE_VERSION,
            "dim": self.dim,
            "method": self.method,
            "options": dataclasses.asdict(self.options),
            "meta_tasks": [
                {"X": X.tolist(), "y": y.tolist(), "hyper": h.to_dict()}
                for (X, y), h in zip(self._meta_data, self._meta_hypers, strict=True)
            ],
            "candidates": None if self.candidates is None else self.candidates.tolist(),
            "seeds": dict(self._seeds),
            "rng": self.rng.bit_generator.state,
            "X": self.X.tolist(),
            "y": self.y.tolist(),
            "pending": self.pending.tolist(),
            "n_failed": self.n_failed,
            "target_hyper": self._target_hyper.to_dict(),
            "factor_base": self._factor_base,
            "weights": self.weight_state.state_dict(),
            "history": [dict(r) for r in self.history],
        }

    @classmethod
    def from_state_dict(
        cls, state: dict[str, Any], *, project: Callable[[Array], Array] | None = None
    ) -> MetaBO:
        """Rebuild an engine from :meth:`state_dict` (pass the same ``project``)."""
        version = state.get("version")
        if version not in (1, STATE_VERSION):
            raise ValueError(
                f"unsupported MetaBO state version {version!r}; expected {STATE_VERSION}"
            )
        self = cls.__new__(cls)
        self.dim, self.method = int(state["dim"]), state["method"]
        options = dict(state["options"])
        if version == 1:
            # Written before these options existed: the behaviour of that engine.
            options = {**VERSION_1_OPTIONS, **options}
        self.options = MetaBOOptions(**options)
        tasks = [
            (
                np.asarray(t["X"], dtype=np.float64).reshape(-1, self.dim),
                np.asarray(t["y"], dtype=np.float64),
            )
            for t in state["meta_tasks"]
        ]
        hypers = [GPHyperparameters.from_dict(t["hyper"]) for t in state["meta_tasks"]]
        cands = state["candidates"]
        cands = None if cands is None else np.asarray(cands, dtype=np.float64)
        rng = np.random.default_rng()
        rng.bit_generator.state = state["rng"]
        self._setup(tasks, hypers, cands, rng, dict(state["seeds"]), project, fit_rng=None)
        self._X = [np.asarray(x, dtype=np.float64) for x in state["X"]]
        self._y = [float(v) for v in state["y"]]
        self._pending = [np.asarray(x, dtype=np.float64) for x in state["pending"]]
        self.n_failed = int(state["n_failed"])
        self._target_hyper = GPHyperparameters.from_dict(state["target_hyper"])
        # States written before the factor was grown incrementally: factorize all at once.
        self._factor_base = int(state.get("factor_base", len(self._y)))
        self.weight_state.load_state_dict(state["weights"])
        self.history = [dict(r) for r in state["history"]]
        return self
