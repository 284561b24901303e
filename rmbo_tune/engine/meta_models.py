"""The meta-tasks' GPs, fixed after fitting and predicted together.

Notation
--------
M, N
    Number of meta-tasks; largest number of observations in one (arrays are padded to N).
Xm (M, N, d), alpha (M, N), Linv (M, N, N)
    Padded training inputs, ``K^{-1} z`` and ``L^{-1}`` of every task; padding rows and
    columns are zero so that they contribute nothing.
ell (M, d), s2 (M,)
    Per-task kernel hyperparameters.
loc (M,), scale (M,)
    Map each task's standardized predictions to the engine's common output scale:
    ``mu_i = loc_i + scale_i * mu_z``, ``sigma_i = scale_i * sigma_z``.

Predicting all M tasks at m points costs O(M N m (d + N)) in batched BLAS, with no
Python loop over tasks or points; the engine caches predictions at its fixed candidate
set, so this cost is paid once per run (paper section 3: the meta-tasks' matrix inversions
are computed once).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import linalg, stats
from scipy.spatial import KDTree
from scipy.spatial.distance import cdist

from rmbo_tune.engine.gp import GPHyperparameters, ScaledGP, normal_scores
from rmbo_tune.engine.gp.likelihood import log_marginal_likelihood_value
from rmbo_tune.engine.gp.posterior import unrecorded_centre, unrecorded_pull
from rmbo_tune.engine.kernels import kernel_from_r2
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array, Mask

# Points per chunk of predict() are chosen so that each (M, chunk, N) temporary holds about
# this many elements (512 KB): temporaries that stay in cache made the prediction at the
# fixed candidates two to three times faster than chunks of 2 million elements.
_CHUNK_ELEMENTS = 65_536
# How many point sets' tasks' means MetaTaskModels.means keeps (a suggestion asks for the
# observations', the candidates' and the polish's points in turn).
_MEANS_KEPT = 4
# A meta-task GP of at most this many observations runs every random restart of its fit; a
# larger one only those that screen more likely than the default start
# (fit_hyperparameters' promising_restarts_only). Where a restart costs milliseconds there
# is little to save, and on the SVM, boosting, random-forest and nearest-neighbour grids
# (meta-tasks of 50) skipping them moved RM-GP-UCB's regret at 25 by +0.0006 +- 0.0004
# (random forest and nearest neighbours, paired over 24 targets x 10 seeds) and -0.0024 +-
# 0.0024 (boosting). At the paper's scale, 60 tasks of 130, they were half the build: 5.6
# -> 2.5 s.
ALWAYS_RESTART_ROWS = 64
# input_warp="tasks": the median warp of this many meta-tasks, and the spread of the
# target's log-normal prior around it (log a, log b). Narrow: the search's own clustered
# observations are what misled a warp fitted to the target; with 0.25 they moved it enough
# to stall the warm start on one of the paper's 1-D functions (regret 0.333 at 50).
# With fewer tasks than WARP_MIN_TASKS their agreement cannot be judged: no warp.
WARP_TASKS = 8
WARP_MIN_TASKS = 3
WARP_STREAM = 7  # the warp's generator: default_rng([candidates' seed, WARP_STREAM])
SPACING_STREAM = 11  # grid_levels="tasks": default_rng([candidates' seed, SPACING_STREAM])
SPACING_ROWS = 128  # rows of a meta-task whose evidence judges a column's spacing
TASK_WARP_PRIOR_SCALE = 0.05


# A meta-task's rows look searched when their values rise with how crowded each row's
# neighbourhood is (minus the distance to its CROWDING_NEIGHBOURS-th nearest row): a
# model-based search evaluates more where the task is good. The median of that Spearman
# correlation over the tasks, at 50 rows a task, was -0.03 to 0.24 for random rows and 0.52
# to 0.72 for the rows of GP-UCB searches on every shipped tabular grid
# (docs/benchmarks.md, "Earlier tasks that were searched"). A task of fewer than
# SEARCH_MIN_ROWS rows is not counted: the correlation's standard error over n rows is
# about 1 / sqrt(n - 1), 0.33 at 10, so 0.4 would not tell a search from chance there, and a
# search of a few trials has hardly begun to return to where it did well.
CROWDING_NEIGHBOURS = 5
SEARCHED_CROWDING = 0.4
SEARCH_MIN_ROWS = 20


def crowding_correlation(X: Array, y: Array, k: int = CROWDING_NEIGHBOURS) -> float:
    """Spearman correlation between a task's values ``y`` and how crowded each row's
    neighbourhood is, minus the Euclidean distance from ``X``'s row to its ``k``-th nearest
    other row: near 0 for rows sampled independently of their values, positive for the
    rows of a search that returned to where the task was good. 0 when it is undefined
    (at most ``k + 1`` rows, constant values or distances)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(y) <= k + 1:
        return 0.0
    dist = KDTree(X).query(X, k=k + 1)[0][:, k]
    if np.ptp(y) == 0.0 or np.ptp(dist) == 0.0:
        return 0.0
    return float(stats.spearmanr(y, -dist)[0])


def searched_score(tasks: list[tuple[Array, Array]]) -> float:
    """The median of :func:`crowding_correlation` over the meta-tasks of at least
    ``SEARCH_MIN_ROWS`` rows (0 without any)."""
    scores = [crowding_correlation(X, y) for X, y in tasks if len(y) >= SEARCH_MIN_ROWS]
    return float(np.median(scores)) if scores else 0.0


# A second configuration that lifts fewer tasks than this, in effect, serves one task's own
# optimum (or a noisy task's chance peak), not a group of tasks.
GROUP_TASKS = 3.0


def disagreement(mu: Array) -> float:
    """How much the meta-tasks fall into groups with different optima, from their means
    ``mu`` (M, n) at a common pool of n points: what a second point adds to the tasks' mean
    percentile of a greedy portfolio's first point, when it serves a group.

    Each task's means become percentiles of the pool (its best point 1, its worst 0); the
    first point is the one of highest mean percentile, the consensus; the second is the one
    whose rise of the tasks' mean of the better of the two, over the first alone, is
    largest, and that rise is the score. It is 0 unless at least ``GROUP_TASKS`` tasks
    share the rise in effect (``(sum g)^2 / sum g^2`` of the tasks' rises ``g``): the best
    region of a single task is not a group's, and with a few tasks one of pure noise would
    otherwise decide (the paper's synthetic tasks: 4, two of them noise). Tasks that rate
    the same region best leave little for a second point: 0.04-0.08 on the shipped grids
    whose tasks agree (SVM, boosting, random forest, decision trees); tasks in groups leave
    more: 0.09-0.11 on nearest neighbours, logistic regression, SGD, networks
    (docs/benchmarks.md, "Earlier tasks that disagree"). Order only, so each task's output
    scale does not matter. 0 with fewer than two tasks or points.
    """
    mu = np.asarray(mu, dtype=np.float64)
    if mu.ndim != 2 or mu.shape[0] < 2 or mu.shape[1] < 2:
        return 0.0
    pct = (stats.rankdata(mu, axis=1) - 1.0) / (mu.shape[1] - 1.0)
    first = int(np.argmax(pct.mean(axis=0)))
    rise = np.maximum(pct - pct[:, [first]], 0.0)
    second = int(np.argmax(rise.mean(axis=0)))
    g = rise[:, second]
    if g.sum() == 0.0 or g.sum() ** 2 < GROUP_TASKS * float(np.sum(g**2)):
        return 0.0
    return float(g.mean())


class MetaTaskModels:
    """M fixed GPs (one per meta-task) with vectorized prediction.

    Parameters
    ----------
    models : list of ScaledGP
        Fitted GPs, already reporting on the common output scale.
    output_maps : list of (float, float), optional
        Each task's own output map (location, spread) before it was put on that scale, as
        :func:`fit_meta_models` found it; what :func:`meta_output_scale` takes the medians
        of.
    """

    def __init__(
        self, models: list[ScaledGP], output_maps: Sequence[tuple[float, float]] | None = None
    ) -> None:
        self.models = models
        self.output_maps = None if output_maps is None else list(output_maps)
        self.n_tasks = M = len(models)
        self.kind = models[0].gp.kind if models else "matern52"
        dim = models[0].gp.X.shape[1] if models else 0
        N = max((m.gp.n_obs for m in models), default=0)
        self.sizes = np.array([m.gp.n_obs for m in models], dtype=int)
        self.Xm = np.zeros((M, N, dim))
        self.alpha = np.zeros((M, N))
        self.Linv = np.zeros((M, N, N))
        self.ell = np.ones((M, dim))
        self.s2 = np.ones(M)
        self.loc = np.array([m.loc for m in models], dtype=np.float64)
        self.scale = np.array([m.scale for m in models], dtype=np.float64)
        for i, m in enumerate(models):
            n = m.gp.n_obs
            self.Xm[i, :n] = m.gp.X
            self.alpha[i, :n] = m.gp.alpha
            self.Linv[i, :n, :n] = linalg.solve_triangular(m.gp.L, np.eye(n), lower=True)
            self.ell[i] = m.hyper.lengthscales
            self.s2[i] = m.hyper.signal_var
        # Inputs scaled per task, and their squared norms, for the r^2 expansion.
        self._A = self.Xm / self.ell[:, None, :]
        self._A2 = np.einsum("mnd,mnd->mn", self._A, self._A)
        self.X_all = np.concatenate([m.gp.X for m in models]) if models else np.zeros((0, dim))
        self.y_all = (
            np.concatenate([m.loc + m.scale * m.gp.y for m in models]) if models else np.zeros(0)
        )
        self.task_index = np.repeat(np.arange(M), self.sizes)
        # Tasks that did not record a dimension: their tie-break along it.
        self._centres = [
            (i, c)
            for i, m in enumerate(models)
            if (c := unrecorded_centre(m.hyper, m.gp.X)) is not None
        ]
        # Where the tasks' rows sit along the columns some task did not record (NaN along
        # the others; None when every task recorded every column).
        self.unrecorded_centre: Array | None = None
        if self._centres:
            self.unrecorded_centre = np.full(dim, np.nan)
            for _, c in self._centres:
                self.unrecorded_centre = np.where(np.isnan(c), self.unrecorded_centre, c)
        self._last_with_grad: tuple[bytes, tuple[Array, Array, Array, Array]] | None = None
        # The means at the last few point sets asked for, most recent last.
        self._means_kept: OrderedDict[bytes, Array] = OrderedDict()

    @property
    def prior_var(self) -> Array:
        """Each task's prior variance ``k(x, x)`` on the common scale, shape (M,)."""
        return self.scale**2 * self.s2

    def _kernel(self, Xs: Array) -> tuple[Array, Array]:
        B = Xs[None, :, :] / self.ell[:, None, :]  # (M, m, d)
        r2 = (
            np.einsum("mkd,mkd->mk", B, B)[:, :, None]
            + self._A2[:, None, :]
            - 2.0 * B @ self._A.transpose(0, 2, 1)
        )
        return kernel_from_r2(np.maximum(r2, 0.0), self.s2[:, None, None], self.kind)

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Means and latent stds of every task on the common scale, each (M, m)."""
        mu, sigma = self._predict(Xs, with_std=True)
        assert sigma is not None
        return mu, sigma

    def means(self, Xs: Array) -> Array:
        """Means of every task on the common scale (M, m): :meth:`predict`'s first part,
        without the stds, whose ``O(N^2)`` products per point dominate its cost.

        The results at the last :data:`_MEANS_KEPT` point sets are kept (read-only): each
        repeat escalation of a suggestion asks for the tasks' means at the same
        observations again, with the acquisition's own points asked for in between.
        """
        Xs = np.asarray(Xs, dtype=np.float64)
        key = Xs.tobytes() + str(Xs.shape).encode()
        kept = self._means_kept
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
        mu = self._predict(Xs, with_std=False)[0]
        mu.flags.writeable = False
        kept[key] = mu
        if len(kept) > _MEANS_KEPT:
            kept.popitem(last=False)
        return mu

    def _predict(self, Xs: Array, with_std: bool) -> tuple[Array, Array | None]:
        M, N = self.alpha.shape
        m = len(Xs)
        mu = np.empty((M, m))
        sigma = np.empty((M, m)) if with_std else None
        step = max(1, _CHUNK_ELEMENTS // max(1, M * max(N, 1)))
        for start in range(0, m, step):
            sl = slice(start, start + step)
            K, _ = self._kernel(Xs[sl])  # (M, c, N)
            mu[:, sl] = np.einsum("mcn,mn->mc", K, self.alpha)
            if sigma is not None:
                V = K @ self.Linv.transpose(0, 2, 1)  # (M, c, N) = (L^{-1} k)^T
                var = self.s2[:, None] - np.einsum("mcn,mcn->mc", V, V)
                sigma[:, sl] = np.sqrt(np.maximum(var, 0.0))
        for i, c in self._centres:
            mu[i] += unrecorded_pull(Xs, c)[0] / self.scale[i]
        mu = self.loc[:, None] + self.scale[:, None] * mu
        return mu, None if sigma is None else self.scale[:, None] * sigma

    def predict_with_grad(self, x: Array) -> tuple[Array, Array, Array, Array]:
        """Means, stds (M,) and their gradients (M, d) at one point ``x`` (read-only).

        The last point's result is kept: one evaluation of RM-GP-UCB's acquisition asks for
        the same point twice, for the meta term and for the target GP's meta basis, and
        these predictions were half the time of its polish at 60 meta-tasks x 130.
        """
        key = np.asarray(x, dtype=np.float64).tobytes()
        if self._last_with_grad is not None and self._last_with_grad[0] == key:
            return self._last_with_grad[1]
        diff = x[None, None, :] - self.Xm  # (M, N, d)
        r2 = np.einsum("mnd,mnd->mn", diff / self.ell[:, None, :], diff / self.ell[:, None, :])
        k, g = kernel_from_r2(r2, self.s2[:, None], self.kind)
        mask = np.arange(self.Xm.shape[1])[None, :] < self.sizes[:, None]
        k, g = k * mask, g * mask
        dk = -g[:, :, None] * diff / self.ell[:, None, :] ** 2  # (M, N, d)
        mu = np.einsum("mn,mn->m", k, self.alpha)
        dmu = np.einsum("mnd,mn->md", dk, self.alpha)
        for i, c in self._centres:
            pull, grad = unrecorded_pull(x[None, :], c)
            mu[i] += pull[0] / self.scale[i]
            dmu[i] += grad[0] / self.scale[i]
        v = (self.Linv @ k[:, :, None])[:, :, 0]  # L^{-1} k
        u = (self.Linv.transpose(0, 2, 1) @ v[:, :, None])[:, :, 0]  # K^{-1} k
        sigma = np.sqrt(np.maximum(self.s2 - np.einsum("mi,mi->m", v, v), 0.0))
        safe = np.where(sigma > 1e-12, sigma, np.inf)
        # d sigma^2 / dx = -2 k^T K^{-1} dk: one matrix-vector product per task, not N x d.
        dsigma = -np.einsum("mn,mnd->md", u, dk) / safe[:, None]
        s = self.scale
        out = (self.loc + s * mu, s * sigma, s[:, None] * dmu, s[:, None] * dsigma)
        for a in out:
            a.flags.writeable = False
        self._last_with_grad = (key, out)
        return out

    def joint_posterior(self, Xt: Array) -> tuple[Array, Array]:
        """Joint posterior means (M, T) and latent covariances (M, T, T) at ``Xt``."""
        K, _ = self._kernel(Xt)  # (M, T, N)
        mu = np.einsum("mtn,mn->mt", K, self.alpha)
        for i, c in self._centres:
            mu[i] += unrecorded_pull(Xt, c)[0] / self.scale[i]
        V = K @ self.Linv.transpose(0, 2, 1)
        r2 = np.stack([((Xt[:, None] - Xt[None]) / e) ** 2 for e in self.ell]).sum(-1)
        Kt, _ = kernel_from_r2(r2, self.s2[:, None, None], self.kind)
        cov = Kt - V @ V.transpose(0, 2, 1)
        s = self.scale
        return self.loc[:, None] + s[:, None] * mu, (s**2)[:, None, None] * cov


OUTLIER_SCALES = 20.0


def clip_outliers(y: Array) -> tuple[Array, int]:
    """``y`` with values beyond ``OUTLIER_SCALES`` robust scales of its median clipped there,
    and how many were clipped.

    The robust scale is 1.4826 x the median absolute deviation (the IQR / 1.349 or the mean
    absolute deviation when that is 0). One diverged run at 1e300 would otherwise overflow
    the standardization of "shared" and "per-task" output scaling and make every gap NaN.
    """
    med = float(np.median(y))
    dev = np.abs(y - med)
    q75, q25 = np.percentile(y, [75, 25])
    for scale in (1.4826 * float(np.median(dev)), float(q75 - q25) / 1.349, float(dev.mean())):
        if np.isfinite(scale) and scale > 0:
            break
    else:
        return y, 0
    lo, hi = med - OUTLIER_SCALES * scale, med + OUTLIER_SCALES * scale
    n = int(np.count_nonzero((y < lo) | (y > hi)))
    return (np.clip(y, lo, hi) if n else y), n


def thin(X: Array, y: Array, limit: int | None) -> NDArray[np.intp]:
    """Sorted indices of at most ``limit`` rows of a meta-task, the rows its GP is fitted to.

    The best ``limit // 4`` rows by ``y`` (the region of the task's optimum, which the
    acquisition's meta-term needs sharply), then, one at a time, the row farthest (Euclidean,
    in the unit cube) from every row chosen so far: a space-filling subset of the rest, from
    which the GP still predicts the whole space. Deterministic (ties go to the first row),
    so a restored engine fits the very same rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Larger is better.
    limit : int or None
        None keeps every row.

    Returns
    -------
    ndarray of int, shape (min(n, limit),)
    """
    n = len(y)
    if limit is None or n <= limit:
        return np.arange(n)
    best = np.argsort(-y, kind="stable")[: limit // 4]
    dist = cdist(X, X[best]).min(axis=1)
    dist[best] = -1.0  # chosen: never again
    rest = np.empty(limit - len(best), dtype=int)
    for k in range(len(rest)):
        i = int(np.argmax(dist))
        rest[k] = i
        dist = np.minimum(dist, np.sqrt(((X - X[i]) ** 2).sum(axis=1)))
        dist[i] = -1.0
    return np.sort(np.concatenate([best, rest]))


def _task_outputs(y: Array, options: MetaBOOptions) -> tuple[Array, int]:
    """A meta-task's outputs as its GP is fitted to them, and how many were clipped:
    normal scores with ``output_scaling="rank"`` (outliers only move their own rank),
    else :func:`clip_outliers`."""
    if options.output_scaling == "rank":
        return normal_scores(y), 0
    return clip_outliers(y)


def fit_task_warps(
    tasks: list[tuple[Array, Array]],
    options: MetaBOOptions,
    rng: np.random.Generator,
    prior: LogNormalPrior,
    unrecorded: Sequence[Mask] | None = None,
) -> Array:
    """The input warp of ``input_warp="tasks"``, as ``[log a; log b]`` of shape (2, d): the
    median over up to ``WARP_TASKS`` meta-tasks (drawn by ``rng``) of the warp fitted to
    each, shrunk towards the identity where the tasks disagree.

    The tasks' observations are what earlier experiments sampled, not where this search has
    looked, so a warp fitted to them does not read the search's own clustering as a
    faster-varying function (the failure of a warp fitted to the target's observations).
    Each parameter's median is shrunk by :func:`agreed_warp`: kept where the tasks agree on
    the warp's direction, towards 0 as far as their warps are what noise would fit
    (meta-tasks of pure noise, or datasets that differ in where a parameter matters). Fewer
    than ``WARP_MIN_TASKS`` tasks give the identity (zeros). A task's warp is fitted on the
    columns it recorded (``unrecorded``: per task, a boolean mask of the others; see
    :func:`~rmbo_tune.engine.candidates.check_meta_tasks`); a column recorded by fewer than
    ``WARP_MIN_TASKS`` of the tasks drawn keeps the identity. Outputs as for
    :func:`fit_meta_models` (:func:`_task_outputs`), then standardized.
    """
    dim = tasks[0][0].shape[1]
    if len(tasks) < WARP_MIN_TASKS:
        return np.zeros((2, dim))
    chosen = sorted(rng.choice(len(tasks), min(WARP_TASKS, len(tasks)), replace=False))
    logs = np.full((len(chosen), 2, dim), np.nan)
    for row, i in enumerate(chosen):
        X, y = tasks[int(i)]
        cols = _recorded(unrecorded, int(i), dim)
        y = _task_outputs(y, options)[0]
        keep = thin(X, y, options.max_meta_observations)
        gp = ScaledGP.fit(
            X[np.ix_(keep, cols)],
            y[keep],
            kind=options.kernel,
            rng=rng,
            n_restarts=0,
            noise_floor=options.noise_floor,
            prior=prior.restricted(cols),
            warp_inputs=True,
        )
        assert gp.hyper.warp is not None
        logs[row][:, cols] = np.log(gp.hyper.warp)
    return agreed_warp(logs)


def _recorded(unrecorded: Sequence[Mask] | None, i: int, dim: int) -> Mask:
    """The boolean mask of the columns task ``i`` recorded."""
    if unrecorded is None:
        return np.ones(dim, dtype=bool)
    return np.logical_not(np.asarray(unrecorded[i], dtype=bool))


def _recorded_groups(tied: Sequence[Sequence[int]], cols: Mask) -> list[list[int]]:
    """The groups of ``tied`` whose columns ``cols`` all keeps, renumbered among them."""
    index = np.cumsum(cols) - 1
    return [[int(index[j]) for j in group] for group in tied if np.all(cols[list(group)])]


def spacing_evidence(
    tasks: list[tuple[Array, Array]],
    spaced: Callable[[Array], Array],
    columns: list[int],
    options: MetaBOOptions,
    rng: np.random.Generator,
    prior: LogNormalPrior | None,
    unrecorded: Sequence[Mask] | None = None,
) -> tuple[Array, Array]:
    """How much better up to ``WARP_TASKS`` meta-tasks (drawn by ``rng``) are described
    with each of ``columns`` in another spacing: per column, the summed gain in log
    evidence (the fitted GP's log marginal likelihood, plus the log prior density of its
    hyperparameters with ``prior``) when that column alone takes its values from
    ``spaced`` (which maps inputs to the other spacing) instead of the task's own inputs,
    and how many of the tasks drawn recorded that column (``unrecorded`` as for
    :func:`fit_task_warps`; a task is fitted on the columns it recorded).

    Each task is fitted to at most ``SPACING_ROWS`` of its rows (:func:`thin`), without a
    warp: the spacing is judged by a stationary kernel. Outputs as for
    :func:`fit_meta_models`.
    """
    chosen = sorted(rng.choice(len(tasks), min(WARP_TASKS, len(tasks)), replace=False))
    gain = np.zeros(len(columns))
    counts = np.zeros(len(columns), dtype=int)

    def evidence(X: Array, z: Array, cols: Mask) -> float:
        restricted = None if prior is None else prior.restricted(cols)
        X = X[:, cols]
        gp = ScaledGP.fit(
            X,
            z,
            kind=options.kernel,
            rng=rng,
            n_restarts=0,
            noise_floor=options.noise_floor,
            prior=restricted,
        )
        theta = gp.hyper.to_theta()
        value = log_marginal_likelihood_value(theta, X, (z - gp.loc) / gp.scale, options.kernel)
        return value + (restricted.log_density(theta)[0] if restricted is not None else 0.0)

    for i in chosen:
        X, y = tasks[int(i)]
        cols = _recorded(unrecorded, int(i), X.shape[1])
        z = _task_outputs(y, options)[0]
        keep = thin(X, z, SPACING_ROWS)
        X, z = X[keep], z[keep]
        Z = spaced(X)
        base = evidence(X, z, cols)
        for k, j in enumerate(columns):
            if not cols[j]:
                continue
            Xj = X.copy()
            Xj[:, j] = Z[:, j]
            gain[k] += evidence(Xj, z, cols) - base
            counts[k] += 1
    return gain, counts


def agreed_warp(log_warps: Array) -> Array:
    """The median of ``k >= 2`` warps ``log_warps`` (shape (k, ...)), each entry times
    ``max(0, 1 - (s / m)^2)``: ``m`` its median, ``s`` the median's standard error
    ``1.2533 sd / sqrt(k)`` (the positive-part James-Stein factor towards 0, the identity
    warp). A median of 0 stays 0. NaN entries (a column a task did not record) are left
    out of their entry's median; an entry with fewer than ``WARP_MIN_TASKS`` others is 0."""
    log_warps = np.asarray(log_warps, dtype=np.float64)
    flat = log_warps.reshape(len(log_warps), -1)
    out = np.zeros(flat.shape[1])
    for j, column in enumerate(flat.T):
        values = column[~np.isnan(column)]
        if np.isnan(column).any() and len(values) < WARP_MIN_TASKS:
            continue
        median = float(np.median(values))
        if median == 0.0:
            continue
        se = 1.2533 * np.std(values, ddof=1) / np.sqrt(len(values))
        out[j] = median * max(0.0, 1.0 - (se / abs(median)) ** 2)
    return out.reshape(log_warps.shape[1:])


def meta_output_scale(maps: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Median location and spread of the meta-tasks' own output maps (None without tasks):
    the scale the target borrows (``output_scaling`` "shared" and "per-task")."""
    if not maps:
        return None
    return (
        float(np.median([loc for loc, _ in maps])),
        float(np.median([scale for _, scale in maps])),
    )


def fit_meta_models(
    tasks: list[tuple[Array, Array]],
    hypers: list[GPHyperparameters | None],
    options: MetaBOOptions,
    rng: np.random.Generator | None,
    prior: LogNormalPrior | None,
    unrecorded: Sequence[Mask] | None = None,
    tied: Sequence[Sequence[int]] = (),
) -> tuple[MetaTaskModels, list[GPHyperparameters], tuple[float, float] | None]:
    """Fit one GP per meta-task and put them on one output scale.

    Parameters
    ----------
    tasks : list of (X, y)
    hypers : list
        Known hyperparameters per task (a restored engine); ``None`` entries are fitted.
    options : MetaBOOptions
        ``output_scaling`` ("rank": outputs replaced by normal scores, each task on its own
        scale; "shared": one map for all; "per-task": each standardized), ``kernel``,
        ``n_restarts``, ``noise_floor``, ``max_meta_observations`` (a larger task is fitted
        to the rows :func:`thin` keeps, after its outputs were scaled in full).
    rng : numpy.random.Generator or None
        Restarts of the fits (unused when every hyperparameter is known).
    prior : LogNormalPrior or None
        Hyperparameter prior (type-II MAP) or None (maximum likelihood).
    unrecorded : list of bool arrays, optional
        Per task, the columns it did not record
        (:func:`~rmbo_tune.engine.candidates.check_meta_tasks`): its GP is fitted on the
        others and constant along these (``GPHyperparameters.expanded``).
    tied : sequence of sequences of int
        Groups of columns whose length scales are one parameter
        (:class:`~rmbo_tune.engine.gp.likelihood.Tying`); each task fits the groups it
        recorded in full.

    Returns
    -------
    models : MetaTaskModels
    hypers : list of GPHyperparameters
        The hyperparameters of every task, fitted or given.
    scale : (float, float) or None
        Median location and spread of the tasks' outputs (None without tasks).
    """
    fitted = []
    for i, ((X, y), hyper) in enumerate(zip(tasks, hypers, strict=True)):
        y, n_clipped = _task_outputs(y, options)
        if n_clipped:
            warnings.warn(
                f"meta_tasks[{i}]: {n_clipped} of {len(y)} values lie more than "
                f"{OUTLIER_SCALES:g} robust scales from the median and were clipped",
                RuntimeWarning,
                stacklevel=3,
            )
        keep = thin(X, y, options.max_meta_observations)
        X, y = X[keep], y[keep]
        if hyper is not None:
            fitted.append(ScaledGP.from_hyper(X, y, hyper, kind=options.kernel))
            continue
        assert rng is not None, "fitting a meta-task GP needs a random generator"
        cols = _recorded(unrecorded, i, X.shape[1])
        gp = ScaledGP.fit(
            X[:, cols],
            y,
            kind=options.kernel,
            rng=rng,
            n_restarts=options.n_restarts,
            noise_floor=options.noise_floor,
            prior=None if prior is None else prior.restricted(cols),
            promising_restarts_only=len(X) > ALWAYS_RESTART_ROWS,
            tied=_recorded_groups(tied, cols),
        )
        if not cols.all():
            gp = ScaledGP.from_hyper(X, y, gp.hyper.expanded(cols), kind=options.kernel)
        fitted.append(gp)
    maps = [(m.loc, m.scale) for m in fitted]
    scale = meta_output_scale(maps)
    if scale is None:
        return MetaTaskModels([]), [], None
    known = [m.hyper for m in fitted]
    if options.output_scaling == "shared":
        fitted = [m.rescaled(*scale) for m in fitted]
    else:
        fitted = [m.rescaled(m.loc, m.scale) for m in fitted]
    return MetaTaskModels(fitted, maps), known, scale
