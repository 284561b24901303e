"""Where the engine looks: input checks, the fixed candidate set, space-filling and random
points, and the maximization of an acquisition over a finite domain or the unit cube."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine.meta_models import (
    WARP_MIN_TASKS,
    MetaTaskModels,
    spacing_evidence,
)
from rmbo_tune.engine.optimize import (
    local_points,
    maximize_box,
    maximize_finite,
    min_distances,
    sobol_points,
)
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array, Mask, SearchSpaceExhausted

BOX_TOL = 1e-9
RANDOM_TRIES = 1024
WARM_START_POINTS = 10
# Around each meta-task's best input: LOCAL_PER_TASK points at LOCAL_RADIUS.
LOCAL_PER_TASK, LOCAL_RADIUS = 4, 0.05
# grid_levels="tasks": a column is modelled in the set's spacing when that gains the
# meta-tasks' GPs at least this much log evidence per task consulted.
SPACING_EVIDENCE = 1.0


def as_points(X: ArrayLike, dim: int, what: str) -> Array:
    """``X`` as finite float64 points of shape (n, dim) in the unit cube (``what`` names it
    in errors); values within ``BOX_TOL`` of the cube are clipped onto it."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"{what} must have shape (n, {dim}), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{what} contains NaN or inf")
    if X.size and (X.min() < -BOX_TOL or X.max() > 1 + BOX_TOL):
        raise ValueError(
            f"{what} must lie in the unit cube [0, 1]^{dim}; found values in "
            f"[{X.min():.6g}, {X.max():.6g}]"
        )
    return np.clip(X, 0.0, 1.0)


# Where a meta-task's unrecorded columns are placed: the cube's centre. Its GP ignores them
# (an infinite length scale) but for the tie-break towards this place
# (:data:`~rmbo_tune.engine.gp.posterior.UNRECORDED_PULL`); the value also places the task's
# points where they are used as points (the warm start, the candidates around its best).
UNRECORDED_FILL = 0.5


def check_meta_tasks(
    meta_tasks: Sequence[tuple[ArrayLike, ArrayLike]], dim: int
) -> tuple[list[tuple[Array, Array]], list[Mask]]:
    """Validated ``(X, y)`` pairs and, per task, the boolean mask of its unrecorded columns;
    errors name the offending task and rows.

    A column that is NaN in every row of a task is unrecorded: the task's experiment did
    not search that parameter (it was added since). It is filled with ``UNRECORDED_FILL``
    and the task's GP is taken to be constant along it. A NaN in some rows of a column only
    is an error, as is a task with no recorded column.
    """
    out, unrecorded = [], []
    for i, task in enumerate(meta_tasks):
        try:
            if isinstance(task, Mapping | str | bytes):
                raise TypeError
            X, y = task
        except (TypeError, ValueError):
            raise ValueError(
                f"meta_tasks[{i}] must be an (X, y) pair, got {type(task).__name__}"
            ) from None
        X = np.asarray(X, dtype=np.float64)
        free = np.zeros(dim, dtype=bool)
        if X.ndim == 2 and X.shape[1] == dim and len(X):
            nan = np.isnan(X)
            free = nan.all(axis=0)
            partial = np.flatnonzero(nan.any(axis=0) & ~free)
            if len(partial):
                raise ValueError(
                    f"meta_tasks[{i}] X has NaN in some rows of columns {partial.tolist()}: "
                    "a column the task did not record is NaN in every row"
                )
            if free.all():
                raise ValueError(f"meta_tasks[{i}] X is NaN in every column: nothing recorded")
            X = np.where(free, UNRECORDED_FILL, X)
        X = as_points(X, dim, f"meta_tasks[{i}] X")
        raw = np.asarray(y)
        if raw.dtype.kind not in "iuf":  # "0.5" or True is a bug upstream, never coerced
            raise ValueError(
                f"meta_tasks[{i}] y must hold numbers, got {raw.dtype} values such as "
                f"{raw.ravel()[:1].tolist()}"
            )
        y = raw.astype(np.float64)
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
        unrecorded.append(free)
    return out, unrecorded


class GridLevels:
    """The spacing of a finite candidate set: each column placed by its rank among that
    column's distinct values (its levels), interpolated between them and spread evenly over
    the levels' own range, so that neighbouring values of the set are equally far apart
    whatever their coordinates (a log-spaced parameter scaled linearly becomes evenly
    spaced). Evenly spaced levels map to themselves. Outside the levels' range the map is
    linear up to the cube's faces, so it is a monotone bijection of ``[0, 1]`` per column
    and :meth:`inverse` undoes :meth:`forward` (exactly at the levels).

    Parameters
    ----------
    levels : sequence of array-like or None
        Per column, its sorted distinct values in ``[0, 1]``; None leaves the column as it
        is.
    """

    def __init__(self, levels: Sequence[ArrayLike | None]) -> None:
        self.levels = [None if lv is None else np.asarray(lv, dtype=np.float64) for lv in levels]
        self._knots = []
        for lv in self.levels:
            if lv is None:
                self._knots.append((np.array([0.0, 1.0]), np.array([0.0, 1.0])))
                continue
            ranks = np.linspace(lv[0], lv[-1], len(lv))
            lo, hi = [0.0] if lv[0] > 0.0 else [], [1.0] if lv[-1] < 1.0 else []
            self._knots.append((np.r_[lo, lv, hi], np.r_[lo, ranks, hi]))

    @classmethod
    def of(cls, candidates: Array) -> GridLevels:
        """The levels of each column of ``candidates`` (points in the unit cube)."""
        return cls([np.unique(c) for c in np.asarray(candidates).T])

    @property
    def uneven(self) -> list[int]:
        """The columns this map changes: levels that are not evenly spaced."""
        return [
            j
            for j, lv in enumerate(self.levels)
            if lv is not None
            and not np.allclose(lv, np.linspace(lv[0], lv[-1], len(lv)), rtol=0.0, atol=1e-9)
        ]

    def forward(self, X: Array) -> Array:
        """``X`` (n, dim) in the candidate set's spacing."""
        out = np.array(X, dtype=np.float64)
        for j, (coords, ranks) in enumerate(self._knots):
            out[:, j] = np.interp(out[:, j], coords, ranks)
        return out

    def inverse(self, Z: Array) -> Array:
        """The coordinates of points ``Z`` (n, dim) given in the set's spacing."""
        out = np.array(Z, dtype=np.float64)
        for j, (coords, ranks) in enumerate(self._knots):
            out[:, j] = np.interp(out[:, j], ranks, coords)
        return out


def choose_spacing(
    candidates: Array,
    tasks: list[tuple[Array, Array]],
    options: MetaBOOptions,
    rng: np.random.Generator,
    prior: LogNormalPrior | None,
    unrecorded: Sequence[Mask] | None = None,
) -> GridLevels | None:
    """The spacing the engine models a finite candidate set in (option ``grid_levels``):
    None for the coordinates as given; otherwise the columns placed in the set's own
    spacing. With "tasks", the columns whose levels are unevenly spaced and where the
    meta-tasks' GPs gain at least ``SPACING_EVIDENCE`` log evidence per task consulted
    that recorded the column (:func:`~rmbo_tune.engine.meta_models.spacing_evidence`,
    ``unrecorded`` as there); a column with fewer than ``WARP_MIN_TASKS`` such tasks (all
    columns, with fewer meta-tasks) keeps its coordinates."""
    if options.grid_levels == "none":
        return None
    full = GridLevels.of(candidates)
    uneven = full.uneven
    if not uneven:
        return None
    if options.grid_levels == "all":
        return full
    if len(tasks) < WARP_MIN_TASKS:
        return None
    gain, consulted = spacing_evidence(
        tasks, full.forward, uneven, options, rng, prior, unrecorded
    )
    chosen = {
        j
        for j, g, n in zip(uneven, gain, consulted, strict=True)
        if n >= WARP_MIN_TASKS and g >= SPACING_EVIDENCE * n
    }
    if not chosen:
        return None
    return GridLevels([lv if j in chosen else None for j, lv in enumerate(full.levels)])


def fixed_candidates(
    dim: int,
    n_sobol: int,
    seed: int,
    tasks: Sequence[tuple[Array, Array]],
    project: Callable[[Array], Array],
) -> Array:
    """The candidates every acquisition is evaluated at (predictions there are cached).

    A scrambled Sobol set plus, per meta-task, its three best inputs and points around its
    best one.
    """
    fixed = [sobol_points(n_sobol, dim, seed)]
    if tasks:
        fixed += [X[np.argsort(-y)[:3]] for X, y in tasks]
        best = np.array([X[np.argmax(y)] for X, y in tasks])
        fixed.append(local_points(best, LOCAL_PER_TASK, LOCAL_RADIUS, np.random.default_rng(seed)))
    return np.unique(project(np.vstack(fixed)), axis=0)


def onehot_groups(points: Array) -> tuple[tuple[int, ...], ...]:
    """The groups of columns that encode one categorical parameter one-hot in ``points``.

    A group is a set of at least two columns, each 0 or 1 in every row and each 1 in some
    row, with exactly one 1 among them in every row. They are found as the connected sets
    of columns no two of which are 1 in the same row, kept where every row sums to one
    over the set; two binary parameters of their own are 1 together somewhere in a grid or
    a space-filling set, so they are not taken for one.
    """
    P = np.asarray(points, dtype=np.float64)
    if P.ndim != 2 or len(P) < 2:
        return ()
    binary = np.flatnonzero(np.all((P == 0.0) | (P == 1.0), axis=0) & np.any(P == 1.0, axis=0))
    if len(binary) < 2:
        return ()
    B = P[:, binary]
    exclusive = (B.T @ B) == 0.0  # never 1 in the same row
    parent = list(range(len(binary)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in zip(*np.nonzero(np.triu(exclusive, 1)), strict=True):
        parent[root(int(a))] = root(int(b))
    members: dict[int, list[int]] = {}
    for i in range(len(binary)):
        members.setdefault(root(i), []).append(i)
    groups = [
        tuple(int(binary[i]) for i in group)
        for group in members.values()
        if len(group) >= 2 and np.all(B[:, group].sum(axis=1) == 1.0)
    ]
    return tuple(sorted(groups))


def warm_start_points(
    tasks: Sequence[tuple[Array, Array]],
    meta: MetaTaskModels,
    project: Callable[[Array], Array],
    limit: int = WARM_START_POINTS,
) -> Array:
    """The warm-start baseline's first points: each meta-task's best input, ranked by its
    mean predicted value over all meta-tasks (on their common scale), at most ``limit``."""
    best = np.unique(project(np.array([X[np.argmax(y)] for X, y in tasks])), axis=0)
    mu = meta.means(best)
    return best[np.argsort(-mu.mean(0), kind="stable")][:limit]


def range_values(tasks: Sequence[tuple[Array, Array]], meta: MetaTaskModels, X: Array) -> Array:
    """Each meta-task's predicted value at ``X`` (n, dim) as a share of its own observed
    range (M, n): 0 at the task's worst observation, 1 at its best.

    A task's GP predicts on the engine's common scale (normal scores by default), which
    keeps the order of the task's outputs and not their distances. The prediction is mapped
    back by matching quantiles: the GP's means at the task's own inputs, sorted, against the
    quantiles of its observed outputs; a prediction beyond the task's own range is clipped
    to it. On this scale a configuration's worth is what the normalized regret measures.
    """
    mu = meta.means(X)
    out = np.empty_like(mu)
    for i, ((_, y), model) in enumerate(zip(tasks, meta.models, strict=True)):
        # each task's own GP at its own (possibly thinned) inputs: not every task at all
        fitted = np.sort(model.predict(model.gp.X)[0])
        q = (np.arange(len(fitted)) + 0.5) / len(fitted)
        levels = np.quantile(y, q, method="inverted_cdf")  # sorted y when none was thinned
        spread = max(float(np.ptp(y)), 1e-12)
        out[i] = (np.interp(mu[i], fitted, levels) - float(np.min(y))) / spread
    return out


def portfolio_points(
    tasks: Sequence[tuple[Array, Array]],
    meta: MetaTaskModels,
    pool: Array,
    limit: int = WARM_START_POINTS,
) -> Array:
    """The portfolio baseline's first points: a greedy portfolio of ``pool`` (n, dim).

    Each point added is the one that most raises the mean over the meta-tasks of the best
    value in the portfolio, every value a share of its task's observed range
    (:func:`range_values`): the sequence that minimizes the tasks' mean normalized regret
    one point at a time (Wistuba et al. 2015, "Sequential model-free hyperparameter
    tuning"; the portfolios of Auto-sklearn 2.0, Feurer et al. 2022). The first is the
    point the tasks rate best on average; later points cover the tasks the portfolio so far
    serves worst. It stops at ``limit`` points or when no point raises the mean.
    """
    values = range_values(tasks, meta, pool)
    best = np.zeros(len(values))
    chosen: list[int] = []
    for _ in range(min(limit, len(pool))):
        score = np.maximum(values, best[:, None]).mean(axis=0)
        score[chosen] = -np.inf
        j = int(np.argmax(score))
        if chosen and score[j] <= best.mean() + 1e-12:
            break
        chosen.append(j)
        best = np.maximum(best, values[:, j])
    return pool[chosen]


def initial_point(
    k: int,
    warm: Array | None,
    design: Array,
    exclude: Array,
    tol: float,
    candidates: Array | None,
    project: Callable[[Array], Array],
) -> Array | None:
    """The ``k``-th point of the initial design: the warm-start points first, then the
    space-filling ``design``; on a finite domain the nearest available candidate. None if it
    duplicates a point within ``tol`` of ``exclude``.

    While ``k`` is in ``warm``, the point is the first warm point not within ``tol`` of
    ``exclude``: those before it were evaluated, are pending, or were given.
    """
    if warm is not None and k < len(warm):
        free = np.flatnonzero(min_distances(warm, exclude) > tol)
        j = int(free[0]) if len(free) else k
        p = warm[j : j + 1]
    else:
        p = project(design[k : k + 1])
    if candidates is not None:
        return nearest_available(candidates, p, exclude, tol)
    return p[0] if min_distances(p, exclude)[0] > tol else None


def lowest(points: Array, score: Array, exclude: Array, tol: float) -> Array | None:
    """The row of ``points`` with the lowest ``score`` among those not within ``tol`` of
    ``exclude``; None if none is left."""
    avail = min_distances(points, exclude) > tol
    if not avail.any():
        return None
    return points[int(np.argmin(np.where(avail, score, np.inf)))]


def nearest_available(candidates: Array, p: Array, exclude: Array, tol: float) -> Array | None:
    """The row of ``candidates`` nearest to point ``p`` (shape (1, dim)) among those not
    within ``tol`` of ``exclude``; None if none is left."""
    avail = min_distances(candidates, exclude) > tol
    if not avail.any():
        return None
    idx = np.flatnonzero(avail)
    return candidates[idx[np.argmin(min_distances(candidates[idx], p))]]


def random_point(
    rng: np.random.Generator,
    dim: int,
    exclude: Array,
    tol: float,
    candidates: Array | None,
    project: Callable[[Array], Array],
) -> Array:
    """A uniformly random valid point not within ``tol`` of ``exclude``.

    Raises
    ------
    SearchSpaceExhausted
        If no such point is left among the candidates (or among ``RANDOM_TRIES`` draws).
    """
    if candidates is not None:
        idx = np.flatnonzero(min_distances(candidates, exclude) > tol)
        if len(idx) == 0:
            raise SearchSpaceExhausted(
                f"all {len(candidates)} candidates have been observed or are pending"
            )
        return candidates[rng.choice(idx)]
    P = project(rng.random((RANDOM_TRIES, dim)))
    ok = np.flatnonzero(min_distances(P, exclude) > tol)
    if len(ok) == 0:
        raise SearchSpaceExhausted(
            f"{RANDOM_TRIES} random valid points all duplicate observed or pending points; "
            "the search space looks exhausted"
        )
    return P[ok[0]]


def maximize(
    acquisition: acq.Acquisition,
    *,
    options: MetaBOOptions,
    rng: np.random.Generator,
    fixed: Array,
    candidates: Array | None,
    exclude: Array,
    top: Array,
    project: Callable[[Array], Array],
    polish: bool,
) -> tuple[Array, float] | None:
    """The best point of ``acquisition`` and its value, not within ``duplicate_tol`` of
    ``exclude``; None if no point is left.

    With ``candidates`` the domain is finite. Otherwise: the fixed candidates, random points
    and points around the best observations ``top``, then L-BFGS-B polish of the best few
    (``polish`` False skips it).
    """
    if candidates is not None:
        avail = min_distances(candidates, exclude) > options.duplicate_tol
        found = maximize_finite(acquisition, candidates, avail)
        return None if found is None else (candidates[found[0]], found[1])
    dim = fixed.shape[1]
    extra = [rng.random((options.n_local // 2, dim))]
    if len(top):
        extra.append(local_points(top, max(1, options.n_local // 8), LOCAL_RADIUS, rng))
    return maximize_box(
        acquisition,
        fixed=fixed,
        extra=np.vstack(extra),
        exclude=exclude,
        project=project,
        tol=options.duplicate_tol,
        n_polish=options.n_polish if polish else 0,
        polish_maxiter=options.polish_maxiter,
    )
