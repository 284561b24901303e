"""Maximizing an acquisition over the unit cube or over a finite candidate set.

Notation
--------
Xf (n_fixed, d)
    Fixed candidates: a scrambled Sobol set plus the meta-tasks' best inputs, projected once
    per run so that meta-task predictions there can be cached.
Xe (n_extra, d)
    Candidates drawn per call: Gaussian perturbations of the best target observations.
project
    Maps arbitrary points of the cube to valid ones (integer, quantized or categorical
    dimensions); the acquisition is only ever evaluated at projected points.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import optimize
from scipy.stats import qmc

from rmbo_tune.engine.acquisition import Acquisition
from rmbo_tune.engine.types import Array

Projection = Callable[[Array], Array]
_DISTANCE_CHUNK = 32


def identity(X: Array) -> Array:
    """The default projection: every point of the cube is valid."""
    return X


def sobol_points(n: int, dim: int, seed: int) -> Array:
    """``n`` scrambled Sobol points in ``[0, 1]^dim`` from an integer seed.

    Seeded with an integer rather than a Generator so that a restored engine regenerates the
    very same points (a Generator-seeded Sobol keeps a counter outside its bit-generator state).
    """
    m = int(np.ceil(np.log2(max(n, 2))))
    return qmc.Sobol(dim, scramble=True, seed=seed).random_base2(m)[:n]


def local_points(
    centers: Array, n_per_center: int, scale: float, rng: np.random.Generator
) -> Array:
    """Gaussian perturbations of ``centers`` clipped to the cube, shape (n_c * n, d)."""
    if len(centers) == 0:
        return np.zeros((0, centers.shape[1]))
    noise = rng.normal(0.0, scale, size=(len(centers), n_per_center, centers.shape[1]))
    return np.clip(centers[:, None, :] + noise, 0.0, 1.0).reshape(-1, centers.shape[1])


def min_distances(X: Array, Z: Array) -> Array:
    """Distance from each row of ``X`` to its nearest row of ``Z`` (inf if ``Z`` is empty)."""
    if len(Z) == 0:
        return np.full(len(X), np.inf)
    d2 = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2.0 * X @ Z.T
    return np.sqrt(np.maximum(d2, 0.0)).min(1)


def _polish(acq: Acquisition, x0: Array, maxiter: int) -> Array:
    def neg(x: Array) -> tuple[float, Array]:
        val, grad = acq.value_and_grad(x)
        return -val, -grad

    res = optimize.minimize(
        neg,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * len(x0),
        options={"maxiter": maxiter},
    )
    return np.clip(res.x, 0.0, 1.0) if np.all(np.isfinite(res.x)) else x0


def maximize_box(
    acq: Acquisition,
    *,
    fixed: Array,
    extra: Array,
    exclude: Array,
    project: Projection,
    tol: float,
    n_polish: int = 1,
    polish_maxiter: int = 15,
) -> tuple[Array, float] | None:
    """Best valid point of the cube that is not within ``tol`` of an excluded point.

    Parameters
    ----------
    acq : Acquisition
    fixed : ndarray of shape (n_fixed, n_dims)
        Projected fixed candidates (evaluated with ``fixed=True`` so caches apply).
    extra : ndarray of shape (n_extra, n_dims)
        Further candidates for this call; projected here.
    exclude : ndarray of shape (n_excluded, n_dims)
        Observed and pending points.
    project : callable
    tol : float
        Euclidean duplicate tolerance in the cube.
    n_polish : int
        How many of the best distinct candidates to refine with L-BFGS-B.
    polish_maxiter : int
        L-BFGS-B iterations per refinement.

    Returns
    -------
    (x, value) or None
        None when every candidate duplicates an excluded point.
    """
    extra = project(extra) if len(extra) else extra
    X = np.vstack([fixed, extra])
    vals = np.concatenate([acq.values(fixed, fixed=True), acq.values(extra)])
    finite = np.flatnonzero(np.isfinite(vals))
    order = finite[np.argsort(-vals[finite], kind="stable")]
    # The best candidates that duplicate no observed or pending point, found by checking
    # distances in value order, a chunk at a time (the best few are usually all new).
    keep: list[int] = []
    want = max(n_polish, 1)
    for start in range(0, len(order), _DISTANCE_CHUNK):
        chunk = order[start : start + _DISTANCE_CHUNK]
        keep += chunk[min_distances(X[chunk], exclude) > tol].tolist()
        if len(keep) >= want:
            break
    if not keep:
        return None
    order = np.array(keep)
    polished = []
    for i in order[: max(n_polish, 0)]:
        xp = project(_polish(acq, X[i], polish_maxiter)[None, :])
        if min_distances(xp, exclude)[0] > tol:
            polished.append(xp[0])
    if polished:
        P = np.array(polished)
        pv = acq.values(P)
        best = int(np.nanargmax(pv)) if np.isfinite(pv).any() else None
        if best is not None and pv[best] > vals[order[0]]:
            return P[best], float(pv[best])
    return X[order[0]], float(vals[order[0]])


def maximize_finite(
    acq: Acquisition, candidates: Array, available: NDArray[np.bool_]
) -> tuple[int, float] | None:
    """Index and value of the best available row of ``candidates``; None if none is left."""
    if not available.any():
        return None
    vals = acq.values(candidates, fixed=True)
    vals = np.where(available & np.isfinite(vals), vals, -np.inf)
    best = int(np.argmax(vals)) if np.isfinite(vals).any() else int(np.flatnonzero(available)[0])
    return best, float(vals[best])
