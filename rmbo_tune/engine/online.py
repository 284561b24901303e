"""Online meta-tasks: meta-tasks of the current search that gain observations while it runs.

The results of the current search at a lower fidelity (an early-stopping scheduler's rungs:
every trial's value after 1, 3, 9 epochs) are another task, correlated with the target
(the full-fidelity results) but not equal to it. Treated as a meta-task, such a level gets
what every meta-task gets: a GP, a meta-weight learned from how well it ranks the target's
observations, and the overall weight nu that decays to 0 if it misleads.

An online task differs from an earlier experiment's task in two ways. Its data are replaced
between asks (a level gains a trial each time one reaches it), so its GP is rebuilt at the
next ask, its hyperparameters refitted once it has grown by ``REFIT_GROWTH`` since their last
fit (a rebuild with known hyperparameters is one Cholesky factorization). And it may join
after target observations were made: it then enters the meta-weights with the ranking gaps
it would have accrued had it been present from the first observation, so that a late task
is neither favoured nor penalized for arriving late.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, astuple, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine.gp import GPHyperparameters
from rmbo_tune.engine.meta_models import MetaTaskModels, fit_meta_models, meta_output_scale
from rmbo_tune.engine.meta_weights import ranking_gaps
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array

if TYPE_CHECKING:
    from rmbo_tune.engine.metabo import MetaBO

REFIT_GROWTH = 1.2


@dataclass
class OnlineTask:
    """Bookkeeping of one online meta-task.

    Attributes
    ----------
    name : str
        The caller's name for it (for example ``"training_iteration=3"``).
    index : int
        Its position among the engine's meta-tasks.
    fit_size : int
        Observations at its last hyperparameter fit; 0 before the first.
    """

    name: str
    index: int
    fit_size: int = 0

    def needs_fit(self, n: int) -> bool:
        """Whether ``n`` observations call for a new hyperparameter fit."""
        return self.fit_size == 0 or n >= REFIT_GROWTH * self.fit_size

    def to_dict(self) -> dict[str, Any]:
        """Plain-value form for the engine's state."""
        return asdict(self)


def count_given_tasks(online: Mapping[str, OnlineTask], n_tasks: int) -> int:
    """How many of an engine's ``n_tasks`` meta-tasks were given at construction: the online
    ones (``online``, by name) follow them (a restored engine's meta-tasks include them)."""
    return min((t.index for t in online.values()), default=n_tasks)


def joining_gap(mu: Array, y: Array) -> float:
    """The cumulative ranking gap of a task joining after ``len(y)`` target observations.

    Parameters
    ----------
    mu : ndarray of shape (t,)
        The joining task's posterior mean at the target's observed inputs, in the order
        they were observed.
    y : ndarray of shape (t,)
        The target's observed outputs, in the same order.

    Returns
    -------
    float
        ``sum_{s=2..t} ranking_gap(mu[:s], y[:s])``: what the task would have accrued had it
        been a meta-task from the start (a single observation has gap 0).
    """
    mu = np.asarray(mu, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return float(sum(ranking_gaps(mu[None, :s], y[:s])[0] for s in range(2, len(y) + 1)))


def refresh(engine: MetaBO) -> None:
    """Rebuild the GPs of the online meta-tasks of ``engine`` that changed; the others, and
    their predictions at the fixed candidates, are kept."""
    changed = sorted(engine._dirty)
    hypers: list[GPHyperparameters | None] = list(engine._meta_hypers)
    for task in engine._online.values():
        n = len(engine._meta_data[task.index][1])
        if task.index in engine._dirty and task.needs_fit(n):
            hypers[task.index], task.fit_size = None, n
    prior = LogNormalPrior.default(engine.dim) if engine.options.hyper_prior else None
    if engine.options.output_scaling == "shared" or engine.meta.n_tasks == 0:
        # One output map for all tasks (or nothing built yet): rebuild everything.
        engine.meta, engine._meta_hypers, scale = fit_meta_models(
            engine._meta_data, hypers, engine.options, engine.rng, prior, tied=engine._tied
        )
        engine._meta_cache = None
    else:
        built, fitted, _ = fit_meta_models(
            [engine._meta_data[i] for i in changed],
            [hypers[i] for i in changed],
            engine.options,
            engine.rng,
            prior,
            tied=engine._tied,
        )
        models: list[Any] = list(engine.meta.models)
        models += [None] * (len(engine._meta_data) - len(models))
        maps: list[Any] = list(engine.meta.output_maps or [])
        maps += [None] * (len(engine._meta_data) - len(maps))
        assert built.output_maps is not None
        for i, model, hyper, out_map in zip(
            changed, built.models, fitted, built.output_maps, strict=True
        ):
            models[i], hypers[i], maps[i] = model, hyper, out_map
        engine.meta, engine._meta_hypers = MetaTaskModels(models, maps), hypers  # type: ignore[assignment]
        # The medians of every task's own map, as a fit of all of them gives.
        scale = meta_output_scale(maps)
        if engine._meta_cache is not None:  # predict again only for the changed tasks
            grow = ((0, engine.meta.n_tasks - len(engine._meta_cache.mu)), (0, 0))
            cache = acq.MetaCache(*(np.pad(a, grow) for a in astuple(engine._meta_cache)))
            cache.mu[changed], cache.sigma[changed] = built.predict(engine._fixed)
            engine._meta_cache = cache
    # The target borrows the tasks' scale ("shared", and "per-task" for its first few
    # observations): the one a restored engine, fitted to every task, computes.
    engine.target.set_meta_scale(scale)
    _join_new_tasks(engine)
    engine._uses_meta = True
    engine._ts_pool = None
    engine._dirty.clear()
    if engine._method.robust and engine.options.gap_estimate == "bound":
        engine.target.set_cached_points(np.vstack([engine._fixed, engine.meta.X_all]))


def _join_new_tasks(engine: MetaBO) -> None:
    """Give meta-weights to online tasks created since the last refresh."""
    ws = engine.weight_state
    if ws.n_tasks == engine.meta.n_tasks:
        return
    mu_new = engine.meta.means(engine.target.X)[ws.n_tasks :] if len(engine.y) else None
    for k in range(engine.meta.n_tasks - ws.n_tasks):
        if engine.options.gap_estimate == "ranking" and mu_new is not None:
            ws.add_task(joining_gap(mu_new[k], engine.y))
        else:  # bound gaps of the past are unknown: the tasks' average
            ws.add_task(float(ws.cumulative_gaps.mean()) if ws.n_tasks else 0.0)
