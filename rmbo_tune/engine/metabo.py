"""MetaBO: the ask/tell state machine of robust meta-Bayesian optimization.

Each ``ask`` follows the paper's Algorithm 1: the meta-weights and nu were updated from the
latest observation's gaps (``tell``), the method's acquisition combines the target GP with the
weighted meta-task GPs (:mod:`~rmbo_tune.engine.methods`), and its maximizer is suggested.

Everything is maximization over the unit cube ``[0, 1]^dim``; after ``t`` target
evaluations ``ask`` chooses ``x_{t+1}`` with ``beta_{t+1}``.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine import candidates as cand
from rmbo_tune.engine import state
from rmbo_tune.engine.gp import GPHyperparameters
from rmbo_tune.engine.gp.posterior import UNRECORDED_PULL
from rmbo_tune.engine.meta_models import (
    SEARCHED_CROWDING,
    SPACING_STREAM,
    TASK_WARP_PRIOR_SCALE,
    WARP_STREAM,
    MetaTaskModels,
    disagreement,
    fit_meta_models,
    fit_task_warps,
    searched_score,
)
from rmbo_tune.engine.meta_weights import (
    MetaWeightState,
    beta_schedule,
    comparison_information,
    decay_rate,
    function_gaps,
    ranking_gaps,
)
from rmbo_tune.engine.methods import Context, MetaSamplePool, check_method, new_record
from rmbo_tune.engine.online import OnlineTask, count_given_tasks, refresh
from rmbo_tune.engine.optimize import identity, min_distances, sobol_points
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.target import TargetModel, initial_hyper
from rmbo_tune.engine.threads import one_blas_thread
from rmbo_tune.engine.types import Array, Mask

# The informative probe: candidates whose comparison with the reference carries at least this
# share of the most informative one's information; the tasks' best of them is evaluated.
INFORMATIVE_SHARE = 0.7
# probe_point="auto": with fewer meta-tasks than this, each is a tenth of the weight or more
# at the first point, and the clipped gain lets one task's own best draw the probe; the
# smoothed gain also counts the losses the others expect there.
PROBE_FEW_TASKS = 10
# Mean discordance of the tasks with the first observations (including the informative
# probe) from which the lowest point is probed too: three quarters of the tasks order the
# target's pairs wrongly, as mirror images of the target do, while a split among the tasks
# at the informative probe leaves about half of them wrong.
MIRROR_DISCORDANCE = 0.75
# A suggestion this close to an observation (Euclidean between the unwarped inputs, in units
# of the target's length scales: a Matern-5/2 correlation above 0.999 where the inputs are
# not warped) repeats it; see
# MetaBOOptions.repeat_escalations.
REPEAT_RADIUS = 0.03


class MetaBO:
    """Robust meta-Bayesian optimization (RM-GP-UCB / RM-GP-TS) with ask/tell.

    Parameters
    ----------
    dim : int
        Dimension of the unit cube searched.
    meta_tasks : sequence of (X, y)
        Earlier tasks: X of shape (n_i, dim) in ``[0, 1]^dim``, y of shape (n_i,), maximized.
        A column that is NaN in every row of a task is one that task did not record (a
        parameter its experiment did not search): its GP is constant along it.
    method : str
        One of :data:`~rmbo_tune.engine.methods.METHODS` ("rm-gp-ucb", "rgpe", ...).
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

    @one_blas_thread
    def __init__(
        self,
        dim: int,
        meta_tasks: Sequence[tuple[ArrayLike, ArrayLike]] | None = (),
        method: str = "rm-gp-ucb",
        *,
        candidates: ArrayLike | None = None,
        seed: int | None = None,
        project: Callable[[Array], Array] | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(dim, int | np.integer) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        check_method(method)
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0
        ):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        tasks, unrecorded = cand.check_meta_tasks(
            () if meta_tasks is None else meta_tasks, int(dim)
        )
        cands = None if candidates is None else cand.as_points(candidates, int(dim), "candidates")
        if cands is not None and len(cands) == 0:
            raise ValueError("candidates must contain at least one row")
        rng = np.random.default_rng(seed)
        opts = MetaBOOptions.from_kwargs(options)
        seeds = {k: int(rng.integers(2**31)) for k in ("sobol", "initial", "pool")}
        levels = None
        if cands is not None and check_method(method).uses_meta:
            # Its own generator, as the tasks' warp: the engine's stream is unchanged.
            levels = cand.choose_spacing(
                cands,
                tasks,
                opts,
                np.random.default_rng([seeds["sobol"], SPACING_STREAM]),
                LogNormalPrior.default(int(dim)) if opts.hyper_prior else None,
                unrecorded,
            )
            if levels is not None:
                # Every point the engine models is placed in the chosen spacing.
                cands = levels.forward(cands)
                tasks = [(levels.forward(X), y) for X, y in tasks]
        self._setup(
            dim=int(dim),
            method=method,
            options=opts,
            tasks=tasks,
            hypers=[None] * len(tasks),
            unrecorded=unrecorded,
            candidates=cands,
            levels=levels,
            rng=rng,
            seeds=seeds,
            project=project,
        )

    # ------------------------------------------------------------------ construction
    def _setup(
        self,
        *,
        dim: int,
        method: str,
        options: MetaBOOptions,
        tasks: list[tuple[Array, Array]],
        hypers: Sequence[GPHyperparameters | None],
        candidates: Array | None,
        rng: np.random.Generator,
        seeds: dict[str, int],
        project: Callable[[Array], Array] | None,
        task_warp: Array | None = None,
        levels: cand.GridLevels | None = None,
        unrecorded: Sequence[Mask] | None = None,
        n_given_tasks: int | None = None,
    ) -> None:
        """Build every model; meta-task GPs with a ``None`` in ``hypers`` are fitted (on the
        columns their task recorded: ``unrecorded`` as from
        :func:`~rmbo_tune.engine.candidates.check_meta_tasks`), and with
        ``input_warp="tasks"`` the tasks' warp unless ``task_warp`` gives it. With
        ``levels`` (option ``grid_levels``) ``tasks`` and ``candidates`` are already in the
        spacing it maps to. ``n_given_tasks``: how many of ``tasks`` were given at
        construction (a restored engine's online tasks follow them; default all). What the
        constructor derives from the tasks once (the fixed candidates, the warm start's and
        the portfolio's points) it derives from those alone, as the engine did before the
        online tasks existed."""
        self.dim, self.method, self.options = dim, method, options
        self._method, opt = check_method(method), options
        self.rng, self._seeds = rng, seeds
        self.levels = levels
        self.project = project or identity
        if levels is not None and project is not None:
            self.project = lambda P: levels.forward(project(levels.inverse(P)))
        self._cands = candidates
        # The repeat test measures in the set's own spacing, whatever the model's.
        self._repeat_levels = None if candidates is None else cand.GridLevels.of(candidates)
        if not self._method.uses_meta:
            tasks, hypers = [], []  # gp-ucb and random ignore meta-tasks: skip fitting them
        self._uses_meta = len(tasks) > 0
        self._meta_data = tasks
        prior = LogNormalPrior.default(dim) if opt.hyper_prior else None
        given = tasks[:n_given_tasks]
        if candidates is not None:
            self._fixed = candidates
        else:
            self._fixed = cand.fixed_candidates(
                dim, opt.n_candidates, seeds["sobol"], given, self.project
            )
        # A categorical parameter's one-hot columns, as the candidates show them.
        tied = cand.onehot_groups(self._fixed) if opt.onehot_lengthscales == "group" else ()
        self._tied = tied  # the online meta-tasks' fits tie the same columns
        self.meta, self._meta_hypers, meta_scale = fit_meta_models(
            tasks, list(hypers), opt, rng, prior, unrecorded, tied
        )
        # input_warp="tasks": the tasks' warp is fitted before the target's first fit (not
        # here, so that it does not lengthen the build) unless ``task_warp`` gives it.
        self._warp_prior = prior if opt.input_warp == "tasks" and tasks else None
        self.task_warp = task_warp if self._warp_prior is not None else None
        self.weight_state = MetaWeightState(
            self.meta.n_tasks,
            eta_n=opt.eta_n,
            r=decay_rate(opt.r, dim),
            epsilon=opt.epsilon,
            learn_weights=opt.learn_weights,
            nu_floor=opt.nu_floor,
        )
        # Points where the target posterior is maintained incrementally: the fixed
        # candidates and, for the "bound" gaps of RM-GP-UCB / RM-GP-TS, the meta-tasks' inputs.
        bound_gaps = self._uses_meta and self._method.robust and opt.gap_estimate == "bound"
        cached = np.vstack([self._fixed, self.meta.X_all]) if bound_gaps else self._fixed
        self.target = TargetModel(
            dim,
            opt,
            hyper=initial_hyper(self._meta_hypers, dim, opt.noise_floor),
            prior=self._centred_prior(prior),
            meta_scale=meta_scale,
            cached_points=cached,
            n_fixed=len(self._fixed),
            tied=tied,
        )
        self._warm = None
        given_meta = (
            self.meta
            if len(given) == self.meta.n_tasks
            else MetaTaskModels(self.meta.models[: len(given)])
        )
        if method == "warm-start" and given:
            self._warm = cand.warm_start_points(given, given_meta, self.project)
        elif given and (method == "portfolio" or (self._method.robust and opt.portfolio_start)):
            pool = candidates
            if pool is None:  # the inputs the earlier tasks evaluated
                pool = np.unique(self.project(np.vstack([X for X, _ in given])), axis=0)
            limit = cand.WARM_START_POINTS if method == "portfolio" else opt.portfolio_start
            self._warm = cand.portfolio_points(given, given_meta, pool, limit)
        if opt.n_initial is not None:
            self.n_initial = opt.n_initial
        elif self._warm is not None:
            self.n_initial = len(self._warm)
        else:  # a space-filling design without meta-tasks given at construction
            self.n_initial = 0 if given else int(np.clip(dim + 1, 2, 5))
        self._pending: list[Array] = []
        self._excluded: list[Array] = []  # dropped before full evaluation: not suggested again
        self._online: dict[str, OnlineTask] = {}
        self._dirty: set[int] = set()  # online meta-tasks changed since their GPs were built
        self.n_failed = 0
        # Target observations the search did not choose (told without being pending).
        self.n_given = 0
        self.history: list[dict] = []
        self._meta_cache: acq.MetaCache | None = None
        self._ts_pool: MetaSamplePool | None = None

    # ------------------------------------------------------------------ public state
    def _out(self, X: Array) -> Array:
        """Points of the engine's space in the caller's coordinates."""
        return X if self.levels is None else self.levels.inverse(X)

    def _in(self, X: Array) -> Array:
        """Points (n, dim) of the caller's unit cube in the engine's space."""
        return X if self.levels is None else self.levels.forward(X)

    @property
    def candidates(self) -> Array | None:
        """The finite domain given, if any, shape (n_candidates, dim)."""
        return None if self._cands is None else self._out(self._cands)

    @property
    def X(self) -> Array:
        """Observed target inputs, shape (t, dim)."""
        return self._out(self.target.X)

    @property
    def y(self) -> Array:
        """Observed target outputs as told, shape (t,)."""
        return self.target.y

    @property
    def pending(self) -> Array:
        """Suggested points not yet told, shape (p, dim)."""
        return self._out(self._pending_points)

    @property
    def _pending_points(self) -> Array:
        return np.array(self._pending).reshape(-1, self.dim)

    @property
    def _excluded_points(self) -> Array:
        return np.array(self._excluded).reshape(-1, self.dim)

    @property
    def excluded(self) -> Array:
        """Points dropped before a full evaluation (:meth:`drop`), shape (e, dim)."""
        return self._out(self._excluded_points)

    @property
    def nu(self) -> float:
        """Current overall weight of the meta-tasks (0 for methods that ignore them)."""
        return self.weight_state.nu if self._method.robust else 0.0

    @property
    def meta_weights(self) -> Array:
        """Current meta-weights of RM-GP-UCB / RM-GP-TS, shape (M,)."""
        return self.weight_state.weights

    @property
    def n_meta_tasks(self) -> int:
        """Number of meta-tasks M."""
        return self.meta.n_tasks

    def _beta(self, t: int) -> float:
        opt = self.options
        return beta_schedule(t, self.dim, beta=opt.beta, beta_scale=opt.beta_scale)

    # ------------------------------------------------------------------ tell
    @one_blas_thread
    def tell(self, x: ArrayLike, y: float | None) -> None:
        """Record the outcome of evaluating ``x``.

        Parameters
        ----------
        x : array-like of shape (dim,)
            Need not have been asked (warm starts); resolves it if it was pending.
        y : float or None
            The observed value (maximized). None drops a pending evaluation that produced
            no value (nothing is learned; see :meth:`fail` for a configuration that failed).
        """
        point, pending = self._resolve(x, y)
        if y is None:
            self.n_failed += 1
            return
        # Online meta-tasks changed since the last ask join on the observations before this
        # one; this one's ranking gap is added below, once for every task.
        self._refresh_meta()
        self.target.add(point, float(y))
        if not pending:
            self.n_given += 1
        # A point that was not pending (told without being asked for or marked pending) is
        # not one of the search's iterations: it informs the weights and nu, but nu's
        # schedule r^t counts iterations (MetaWeightState.update). That holds for the
        # target's first min_fit_observations; once its GP is fitted, a given observation
        # sharpens it as one the search chose would, and counts as an iteration (a finished
        # experiment of the same task fed in spends nu, and the search goes on as GP-UCB).
        scheduled = pending or len(self.target.y_list) > self.options.min_fit_observations
        self._update()
        if self._method.robust and self.weight_state.active:
            self.weight_state.update(self._gaps(), scheduled=scheduled)
        elif (
            self._method.robust and self.weight_state.n_tasks == 0 and self.nu > 0.0 and scheduled
        ):
            self.weight_state.decay()

    @one_blas_thread
    def fail(self, x: ArrayLike) -> None:
        """Record that evaluating ``x`` failed (an error, NaN): the target GP counts it as
        worse than every success, so that the region is not proposed again."""
        self.target.add(self._resolve(x, None)[0], math.nan)
        self.n_failed += 1
        self._update()

    @one_blas_thread
    def retry(self, x: ArrayLike) -> None:
        """A failed evaluation of ``x`` is run again (Tune's ``resume_errored``): its failure
        is forgotten and ``x`` is pending until its new outcome is told.

        Raises
        ------
        ValueError
            If no failed evaluation lies within ``duplicate_tol`` of ``x``.
        """
        point = self._in(cand.as_points(np.reshape(x, (1, -1)), self.dim, "x"))[0]
        failed = [i for i, y in enumerate(self.target.y_list) if math.isnan(y)]
        k = self._same_point([self.target.X_list[i] for i in failed], point)
        if k is None:
            raise ValueError(f"no failed evaluation at x={np.asarray(x).tolist()} to retry")
        self.target.remove(failed[k])
        self.n_failed -= 1
        self._pending.append(point)

    def _same_point(self, points: Sequence[Array], point: Array) -> int | None:
        """The index of the point of ``points`` nearest ``point`` if it lies within
        ``duplicate_tol`` (the same point, up to a round trip through float32 or a CSV)."""
        if not points:
            return None
        d = np.linalg.norm(np.asarray(points) - point, axis=1)
        k = int(np.argmin(d))
        return k if d[k] <= self.options.duplicate_tol else None

    def _resolve(self, x: ArrayLike, y: float | None) -> tuple[Array, bool]:
        """``x`` in the engine's coordinates, and whether it was pending (then resolved)."""
        point = self._in(cand.as_points(np.reshape(x, (1, -1)), self.dim, "x"))[0]
        if y is not None and (
            isinstance(y, bool) or not isinstance(y, numbers.Real) or not np.isfinite(y)
        ):
            raise ValueError(f"y must be a finite number or None, got {y!r}")
        k = self._same_point(self._pending, point)  # told back after a round trip too
        if k is not None:
            del self._pending[k]
            return point, True
        return point, False

    def _centred_prior(self, prior: LogNormalPrior | None) -> LogNormalPrior | None:
        """The target's prior: centred on the tasks' warp where they agree on one."""
        warp = self.task_warp
        if prior is None or warp is None or not np.any(warp != 0.0):
            return prior
        return prior.centred_warp(warp, TASK_WARP_PRIOR_SCALE)

    def _given_tasks(self) -> int:
        """How many meta-tasks were given at construction: those added online follow them
        (a restored engine's meta-tasks include them)."""
        return count_given_tasks(self._online, len(self._meta_data))

    def trust(self) -> dict[str, Any]:
        """``nu``, the meta-weights and the latest gaps as the next ``ask`` records them
        (``weights`` and ``gaps`` None for methods that learn no weights): for a point
        started without ``ask`` (``add_pending``)."""
        self._refresh_meta()
        robust = self._method.robust and self._uses_meta
        record = new_record(0, 0, self.method, self.nu, self.weight_state, robust)
        return {k: record[k] for k in ("nu", "weights", "gaps")}

    @property
    def n_given_tasks(self) -> int:
        """Number of meta-tasks given at construction; :attr:`online_tasks` follow them."""
        return self._given_tasks()

    @functools.cached_property
    def searched_score(self) -> float:
        """How much the meta-tasks given at construction look like a search's trials
        (:func:`~rmbo_tune.engine.meta_models.searched_score`); computed once, when first
        read, from those tasks only, so a restored engine reads the same."""
        return searched_score(self._meta_data[: self._given_tasks()])

    @functools.cached_property
    def disagreement(self) -> float:
        """How much the meta-tasks given at construction disagree on where the good
        configurations are (:func:`~rmbo_tune.engine.meta_models.disagreement` of their
        means at the fixed candidates); computed once, when first read, from those tasks
        only, so a restored engine reads the same."""
        return disagreement(self._meta_cache_get().mu[: self._given_tasks()])

    @property
    def meta_term_source(self) -> str:
        """What decides :attr:`meta_term`: "option" (option ``meta_term`` is not "auto"),
        "searched" (:attr:`searched_score` at least ``SEARCHED_CROWDING``), "disagreement"
        (:attr:`disagreement` at least option ``taf_disagreement``) or "default"."""
        if self.options.meta_term != "auto":
            return "option"
        if self.searched_score >= SEARCHED_CROWDING:
            return "searched"
        limit = self.options.taf_disagreement
        if limit is not None and self._uses_meta and self.disagreement >= limit:
            return "disagreement"
        return "default"

    @property
    def meta_term(self) -> str:
        """Option ``meta_term`` with "auto" resolved: "taf" when the earlier tasks' rows look
        searched or the tasks disagree (:attr:`meta_term_source`), else "mean"."""
        source = self.meta_term_source
        if source == "option":
            return self.options.meta_term
        return "mean" if source == "default" else "taf"

    def _fit_task_warp(self) -> None:
        if self._warp_prior is None or self.task_warp is not None:
            return
        given = self._given_tasks()
        if given == 0:  # only online tasks: as without meta-tasks, no warp
            self._warp_prior = None
            return
        # Its own generator (from the candidates' seed): the warp leaves the engine's
        # stream, hence RM-GP-TS's samples, as they are without it.
        rng = np.random.default_rng([self._seeds["sobol"], WARP_STREAM])
        self.task_warp = fit_task_warps(
            self._meta_data[:given],
            self.options,
            rng,
            self._warp_prior,
            [h.unrecorded for h in self._meta_hypers[:given]],
        )
        self.target.prior = self._centred_prior(self._warp_prior)

    def _update(self) -> None:
        if self.method != "random":  # random search never uses the target GP
            if len(self.target.y_list) >= self.options.min_fit_observations:
                self._fit_task_warp()
            self.target.refit(self.rng)

    def _gaps(self) -> Array:
        """Estimated function gaps of the meta-tasks after the latest observation."""
        if self.options.gap_estimate == "ranking":
            mu_meta = self.meta.means(self.target.X)
            return ranking_gaps(mu_meta, self.y)
        n_fixed = len(self._fixed)
        mu, sigma, _ = self.target.posterior(None, with_meta_inputs=self.weight_state.active)
        return function_gaps(
            self.meta.y_all,
            self.meta.task_index,
            self.meta.n_tasks,
            mu[n_fixed:],
            sigma[n_fixed:],
            self._beta(len(self.y) + 1),
            aggregation=self.options.gap_aggregation,
        )

    def drop(self, x: ArrayLike) -> None:
        """Forget the pending evaluation of ``x`` without an outcome, and never suggest ``x``
        again: its evaluation was stopped early (an early-stopping scheduler's decision),
        so its value is not one of the target's, and a rerun would be stopped again."""
        self._excluded.append(self._resolve(x, None)[0])

    @one_blas_thread
    def update_meta_task(self, name: str, X: ArrayLike, y: ArrayLike) -> None:
        """Create the online meta-task ``name``, or replace its data with ``(X, y)``.

        Online meta-tasks belong to the current search and grow while it runs, such as its
        results at one lower fidelity (see :mod:`rmbo_tune.engine.online`). Each gets a GP,
        a meta-weight and a place in :attr:`history` like the meta-tasks given at
        construction (which keep indices ``0..M-1``; online tasks follow in order of
        creation). Methods that ignore meta-tasks ignore this too.

        Parameters
        ----------
        name : str
        X : array-like of shape (n, dim)
            In ``[0, 1]^dim``.
        y : array-like of shape (n,)
            Finite values, maximized.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        try:
            [(X, y)], [unrecorded] = cand.check_meta_tasks([(X, y)], self.dim)
            if unrecorded.any():
                raise ValueError(
                    f"X is NaN in columns {np.flatnonzero(unrecorded).tolist()}; an online "
                    "meta-task records every column"
                )
        except ValueError as exc:
            raise ValueError(f"online meta-task {name!r}: {exc}") from None
        if not self._method.uses_meta:
            return
        X = self._in(X)
        task = self._online.get(name)
        if task is None:
            task = self._online[name] = OnlineTask(name, len(self._meta_data))
            self._meta_data.append((X, y))
            self._meta_hypers.append(None)  # type: ignore[arg-type]
        else:
            self._meta_data[task.index] = (X, y)
        self._dirty.add(task.index)

    @property
    def online_tasks(self) -> list[str]:
        """Names of the online meta-tasks, in index order (they follow the others)."""
        return [t.name for t in sorted(self._online.values(), key=lambda t: t.index)]

    def _refresh_meta(self) -> None:
        """Rebuild the online meta-tasks that changed, before the meta-tasks are read."""
        if self._dirty:
            refresh(self)

    def add_pending(self, x: ArrayLike) -> None:
        """Mark ``x`` as being evaluated without asking for it (user-supplied points), so
        that suggestions avoid it until it is told."""
        self._pending.append(self._in(cand.as_points(np.reshape(x, (1, -1)), self.dim, "x"))[0])

    # ------------------------------------------------------------------ ask
    @one_blas_thread
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
        t = len(self.target.y_list)
        self._refresh_meta()
        robust = self._method.robust and self._uses_meta
        record = new_record(t, len(self._pending), self.method, self.nu, self.weight_state, robust)
        exclude = np.vstack([self.target.X_fit, self._pending_points, self._excluded_points])
        build = self._method.builder(self._uses_meta)
        x = None
        if build is None:
            record["branch"] = "random"
        elif (k := self._initial_step(exclude)) is not None and not self._start_contested():
            record["branch"] = "initial"
            x = cand.initial_point(
                k,
                self._warm,
                sobol_points(self.n_initial, self.dim, self._seeds["initial"]),
                exclude,
                self.options.duplicate_tol,
                self._cands,
                self.project,
            )
        elif (probe := self._probe_due()) is not None:
            record["branch"] = "probe"
            x = self._probe_point(exclude, lowest=probe == "lowest")
        elif self._portfolio_due() and (x := self._portfolio_point(exclude)) is not None:
            record["branch"] = "portfolio"
        else:
            context, escalations = self._context(t, record), 0
            while True:
                acquisition = build(self._escalated(context, t, record, escalations))
                if escalations == 0:
                    drawn = record["branch"]
                found = self._maximize(acquisition, exclude, record["branch"])
                if (
                    escalations == self.options.repeat_escalations
                    or found is None
                    or not self._repeats(found[0], record["branch"])
                ):
                    break
                escalations += 1
            if escalations:
                record["escalations"] = escalations
                if record["branch"] != drawn:  # RM-GP-TS drew its branch again
                    record["escalated_from"] = drawn
            if found is not None:
                x, record["acquisition"] = found
        if x is None:
            tol = self.options.duplicate_tol
            x = cand.random_point(self.rng, self.dim, exclude, tol, self._cands, self.project)
        self._pending.append(x)
        out = self._out(x[None, :])[0]
        record["x"] = out.tolist()
        self.history.append(record)
        return out

    def _maximize(
        self, acquisition: acq.Acquisition, exclude: Array, branch: str
    ) -> tuple[Array, float] | None:
        if self._pending and self.options.pending_penalty:
            acquisition = acq.penalize(
                acquisition, self._fixed, self._pending_points, self.target.hyper.lengthscales
            )
        found = cand.maximize(
            acquisition,
            options=self.options,
            rng=self.rng,
            fixed=self._fixed,
            candidates=self._cands,
            exclude=exclude,
            top=self.target.X[np.argsort(-self.y)[:4]],
            project=self.project,
            # The target alone is polished only on request.
            polish=branch != "target" or self.options.polish_target,
        )
        if found is not None and self._cands is None:
            found = self._centred(acquisition, found, exclude)
        return found

    def _centred(
        self, acquisition: acq.Acquisition, found: tuple[Array, float], exclude: Array
    ) -> tuple[Array, float]:
        """``found``, or the same point moved to the tasks' place along the columns a
        meta-task did not record where the acquisition ties there (it is as high, and
        higher by no more than the tie-break ``UNRECORDED_PULL`` gives). In the cube that
        tie-break is too weak for the polish to act on: without this step the column's value
        would be that of whichever candidate scored best on the others."""
        centre = self.meta.unrecorded_centre
        if centre is None:
            return found
        x = self.project(np.where(np.isnan(centre), found[0], centre)[None, :])
        if min_distances(x, exclude)[0] <= self.options.duplicate_tol:
            return found
        value = float(acquisition.values(x)[0])
        tie = UNRECORDED_PULL * self.dim * max(1.0, float(np.sum(self.meta.scale)))
        return (x[0], value) if 0.0 <= value - found[1] <= tie else found

    def _repeats(self, x: Array, branch: str) -> bool:
        """Whether suggesting ``x`` on ``branch`` would repeat an observation: within
        ``REPEAT_RADIUS`` of one, in units of the target's length scales between the unwarped
        inputs (``MetaBOOptions.repeat_escalations`` says why not the warped ones), on a
        branch whose acquisition is the target's confidence bound (alone or beside the
        meta-tasks') or, with ``escalation="shrink"``, RM-GP-TS's sample of the tasks: each
        escalation then draws its branch again with nu divided (``methods._escalated_nu``).
        On a finite candidate set the distance is taken in the set's own
        spacing (:class:`~rmbo_tune.engine.candidates.GridLevels`), so that the levels of
        a log-spaced parameter scaled linearly are not repeats of each other, while a
        dense grid's neighbours are."""
        branches: tuple[str, ...] = ("target", "combined")
        if self.options.escalation == "shrink":
            branches += ("meta",)
        if branch not in branches:
            return False
        ls, X, x = self.target.hyper.lengthscales, self.target.X_fit, x[None, :]
        if self._repeat_levels is not None:
            X, x = self._repeat_levels.forward(X), self._repeat_levels.forward(x)
        return bool(min_distances(x / ls, X / ls)[0] < REPEAT_RADIUS)

    def _escalated(self, context: Context, t: int, record: dict[str, Any], k: int) -> Context:
        """The acquisition's context at the ``k``-th repeat escalation (0: ``context``):
        with option ``escalation="shrink"`` the target GP's length scales divided and beta
        multiplied by ``2^(k/2)`` each; with "beta", beta multiplied by ``2^k``."""
        if k == 0:
            return context
        if self.options.escalation == "beta":
            factor = 2.0**k
            return replace(context, beta=context.beta * factor, escalation=factor)
        step = 2.0 ** (k / 2)
        shrunk = self._context(t, record, self.target.shrunk(step))
        return replace(shrunk, beta=shrunk.beta * step, escalation=step)

    def _context(
        self, t: int, record: dict[str, Any], target: TargetModel | None = None
    ) -> Context:
        """What the method's acquisition is built from, with ``target`` (default: the
        target model) as the target's GP."""
        target = self.target if target is None else target
        active = self.weight_state.active
        mu_f, sigma_f, gp = target.posterior(self._pending_points, with_meta_inputs=active)
        n_fixed = len(self._fixed)
        return Context(
            t=t,
            beta=self._beta(t + 1),
            target=acq.CachedTarget(gp, mu_f[:n_fixed], sigma_f[:n_fixed]),
            gp=gp,
            fitted=target.model(active),
            X=target.X_fit,
            y=target.scaled_y(),
            fixed=self._fixed,
            meta=self.meta,
            weights=self.meta_weights,
            nu=self.nu,
            options=self.options,
            rng=self.rng,
            meta_cache=self._meta_cache_get,
            meta_sample=self._meta_sample,
            record=record,
            # Only RM-GP-UCB reads it: resolving "auto" predicts every task at the candidates.
            meta_term=self.meta_term if self.method == "rm-gp-ucb" else self.options.meta_term,
            n_given=self.n_given,
        )

    def _probe_due(self) -> str | None:
        """Which probe this suggestion is, if any ("informative" or "lowest").

        The first is suggestion ``probe_after + 1`` when the meta-tasks' ranking of the
        observations before it is contested. With ``probe_point="informative"`` the lowest
        point follows at once when the observations told by then (at least two) are ordered
        wrongly by at least ``MIRROR_DISCORDANCE`` of the tasks on average. During a
        portfolio start that covers the probe's turn, that test alone applies
        (:meth:`_start_contested`).
        """
        if not self._probing():
            return None
        if self._start_contested():
            return None if self._probed() else "lowest"
        started = len(self.target.y_list) + len(self._pending)
        if started == self.options.probe_after:
            if self._mean_discordance(no_evidence=1.0) >= 0.5:
                return self.probe_point
            return None
        if (
            self.probe_point != "lowest"
            and started == self.options.probe_after + 1
            and bool(self.history)
            and self.history[-1]["branch"] == "probe"
            and self._mean_discordance(no_evidence=0.0) >= MIRROR_DISCORDANCE
        ):
            return "lowest"
        return None

    def _start_contested(self) -> bool:
        """Whether RM-GP-UCB / RM-GP-TS leave their portfolio start (option
        ``portfolio_start``, when it covers the probe's turn): when the observations told
        (at least two) are ordered wrongly by at least ``MIRROR_DISCORDANCE`` of the tasks
        on average, as after the probe, during the start or at its end, the lowest point
        is probed instead of the next portfolio point, and no later portfolio point is
        evaluated."""
        opt = self.options
        if opt.portfolio_start <= opt.probe_after or not self._method.robust:
            return False
        if self._warm is None or not self._probing():
            return False
        if self._probed():
            return True
        return (
            self._n_initial_done() <= self.n_initial
            and self._mean_discordance(no_evidence=0.0) >= MIRROR_DISCORDANCE
        )

    def _n_started(self) -> int:
        """Suggestions started so far: told, pending or dropped."""
        return len(self.target.y_list) + len(self._pending) + len(self._excluded)

    def _n_initial_done(self) -> int:
        """How far the initial design has gone. With warm points (the warm start, the
        portfolio, option ``portfolio_start``): the search's own initial suggestions, so
        that points it did not choose (results told before the search, a user's
        ``points_to_evaluate`` marked pending) do not use up the earlier tasks' best
        points. For the space-filling design: every point started, as any point serves a
        design."""
        if self._warm is None:
            return self._n_started()
        return sum(r["branch"] == "initial" for r in self.history)

    def _initial_step(self, exclude: Array) -> int | None:
        """Which step of the initial design this suggestion is (:meth:`_n_initial_done`),
        or None when it is none of them: ``n_initial`` reached, or, while the design is in
        the warm points, none of them left to evaluate (a warm point given by the user is
        not evaluated again)."""
        k = self._n_initial_done()
        if k >= self.n_initial:
            return None
        if self._warm is None or k >= len(self._warm):
            return k
        free = min_distances(self._warm, exclude) > self.options.duplicate_tol
        return k if free.any() else None

    def _probed(self) -> bool:
        """Whether a probe has been suggested."""
        return any(r["branch"] == "probe" for r in self.history)

    def _probing(self) -> bool:
        """Whether the probe and the portfolio after it apply: option ``probe``, a robust
        method with meta-tasks, and nu not yet spent."""
        return self.options.probe and self._method.robust and self._uses_meta and self.nu > 0.0

    def _portfolio_due(self) -> bool:
        """Whether this suggestion continues the probe as a portfolio: no target value is
        known yet and the probe is already pending (trials in flight from the start, as
        with Tune's ``max_concurrent_trials``)."""
        return (
            self._probing()
            and not self.target.y_list
            and len(self._pending) > self.options.probe_after
        )

    def _portfolio_point(self, exclude: Array) -> Array | None:
        """The next point of a greedy portfolio for a blind batch: where the weighted tasks
        expect the most gain over the best of the pending points by their own predictions,
        ``sum_i w_i max(0, mu_i(x) - max_p mu_i(p))``.

        Until the first value arrives, the batch is judged by its best point, and under the
        hypothesis "the target behaves like task i" (as likely as its weight) adding ``x``
        gains ``max(0, mu_i(x) - max_p mu_i(p))``: this is the batch's expected best, raised
        greedily, the criterion of the greedy initial designs of Wistuba et al. (2015) and
        Feurer et al. (2015) on the tasks' models. The best region of the tasks that the
        batch does not yet serve gains much under those. The probe's smoothing
        (``probe_point="smoothed"``) is not applied: it charges a point with the losses the
        other tasks expect there, which a batch's best does not suffer, and on tasks with
        optima at 0.2, 0.2, 0.5 and 0.8 it spent the third and fourth points beside 0.2.

        A point within the pending penalty's radius of a pending point
        (:func:`~rmbo_tune.engine.acquisition.pending_radius`) counts as no gain: its small
        gain over its neighbour is the tasks' models' detail, not a second region; nor do
        points that may not be suggested (observed, pending or dropped by :meth:`drop`).
        None where no other point has a gain: the method's own acquisition, penalized
        around the pending points, chooses instead.
        """
        cache = self._meta_cache_get()
        points, pending, w = self._fixed, self._pending_points, self.meta_weights
        gain = acq.weighted_improvement(w, cache.mu, self.meta.means(pending).max(axis=1))
        rho = acq.pending_radius(self.target.hyper.lengthscales)
        gain[min_distances(points / rho, pending / rho) < 1.0] = 0.0
        # Observed, pending or dropped points are never suggested.
        gain[min_distances(points, exclude) <= self.options.duplicate_tol] = 0.0
        if gain.max() <= 0.0:
            return None
        return points[int(np.argmax(gain))]  # a positive gain: never an excluded point

    def _mean_discordance(self, no_evidence: float) -> float:
        """The meta-tasks' mean discordance with the target's observations so far: the
        fraction of pairs ordered wrongly, averaged over the tasks (``no_evidence`` with
        fewer than two distinct observations).

        The mean is unweighted: the meta-weights were learned from these same pairs, so a
        weighted discordance would favour the tasks that happened to agree.
        """
        y = self.y
        if len(y) < 2 or np.all(y == y[0]):
            return no_evidence
        mu = self.meta.means(self.target.X)
        return float(np.mean(ranking_gaps(mu, y, scale=1.0)))

    def _probe_point(self, exclude: Array, lowest: bool) -> Array | None:
        """The probe of RM-GP-UCB / RM-GP-TS (option ``probe_point``).

        "lowest": the point the weighted meta-tasks rank lowest, where one more target
        observation tests their claim most decisively. Otherwise one of the points whose
        comparison with the reference (the best observation, or the first started point) is
        at least ``INFORMATIVE_SHARE`` as informative as the most informative one, by
        :func:`~rmbo_tune.engine.meta_weights.comparison_information`: "gain", the one where
        the weighted tasks expect the most improvement over their predictions at the
        reference (a greedy portfolio's second point: the best point of the tasks that rank
        the reference low); "smoothed", the same with each task's expected gain under the
        tasks' discrepancy over the fixed points (:func:`_discrepancy`), so a few tasks'
        gain counts less where the tasks stray far from one another; "informative", or where
        no task expects a gain, the one they rate best.
        """
        # The fixed points are the candidates when they are given: the cache holds both.
        cache = self._meta_cache_get()
        points, mu, sigma = self._fixed, cache.mu, cache.sigma
        w, tol = self.meta_weights, self.options.duplicate_tol
        if lowest:
            return cand.lowest(points, w @ mu, exclude, tol)
        ref = self.target.X[np.argmax(self.y)] if len(self.y) else exclude[0]
        mu_ref, sigma_ref = self.meta.predict(ref[None, :])
        p_above = stats.norm.cdf((mu - mu_ref) / np.sqrt(sigma**2 + sigma_ref**2 + 1e-12))
        info = comparison_information(p_above, w, self.nu)
        spread = np.maximum(mu.std(axis=1, keepdims=True), 1e-12)
        rating = w @ ((mu - mu.mean(axis=1, keepdims=True)) / spread)
        informative = info >= INFORMATIVE_SHARE * info.max()
        if (point := self.probe_point) in ("gain", "smoothed"):
            scale = _discrepancy(mu - mu_ref) if point == "smoothed" else 0.0
            gain = acq.smoothed_improvement(w, mu, mu_ref[:, 0], scale)
            gain = np.where(informative, gain, 0.0)
            if gain.max() > 0.0:
                return cand.lowest(points, np.where(informative, -gain, np.inf), exclude, tol)
        return cand.lowest(points, np.where(informative, -rating, np.inf), exclude, tol)

    @property
    def probe_point(self) -> str:
        """Where the probe goes: option ``probe_point``, with "auto" resolved by the number
        of meta-tasks (``PROBE_FEW_TASKS``)."""
        point = self.options.probe_point
        if point != "auto":
            return point
        return "smoothed" if self.n_meta_tasks < PROBE_FEW_TASKS else "gain"

    def _meta_cache_get(self) -> acq.MetaCache:
        if self._meta_cache is None:
            self._meta_cache = acq.MetaCache(*self.meta.predict(self._fixed))
        return self._meta_cache

    def _meta_sample(self) -> acq.Acquisition:
        if self._ts_pool is None:
            self._ts_pool = MetaSamplePool(
                self.meta, self._fixed, self.options, self._seeds["pool"]
            )
        return self._ts_pool.draw(self.rng, self.meta_weights)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """A plain, versioned dict (numbers, lists, strings) from which
        :meth:`from_state_dict` rebuilds an engine that continues identically (pending
        online meta-task updates are applied first)."""
        self._refresh_meta()
        return state.dump(self)

    @classmethod
    @one_blas_thread
    def from_state_dict(
        cls, saved: dict[str, Any], *, project: Callable[[Array], Array] | None = None
    ) -> MetaBO:
        """Rebuild an engine from :meth:`state_dict` (pass the same ``project``)."""
        return state.load(cls, saved, project)


def _discrepancy(gains: Array) -> float:
    """How far one meta-task's predicted gains ``gains`` (M, n) stray from the tasks'
    consensus: the pooled standard deviation of ``gains[i, j]`` around the unweighted mean
    over tasks at each candidate ``j`` (0 with a single task)."""
    if gains.shape[0] < 2:
        return 0.0
    return float(np.sqrt(np.mean(np.var(gains, axis=0, ddof=1))))
