"""Cholesky factorization of GP covariance matrices, with diagonal jitter when needed."""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from rmbo_tune.engine.types import Array, CholeskyError

_MAX_JITTER_TRIES = 6


def safe_cholesky(K: Array, *, jitter: float = 1e-10) -> Array:
    """Lower Cholesky factor of ``K``, retrying with growing diagonal jitter.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric covariance matrix.
    jitter : float
        Relative size of the first jitter tried, in units of ``mean(diag K)``.

    Returns
    -------
    ndarray of shape (n, n)
        Lower-triangular ``L`` with ``L L^T = K`` (plus the jitter that made it work).

    Raises
    ------
    CholeskyError
        If ``K`` contains NaN or inf, or if ``K + jitter * 10**k * mean(diag K) * I``
        fails for every ``k < 6``.
    """
    if not np.all(np.isfinite(K)):
        raise CholeskyError(f"covariance matrix of size {len(K)} contains NaN or inf")
    # LAPACK's potrf directly (what scipy.linalg.cholesky calls): at the sizes of a GP fit,
    # where this runs thousands of times, the wrapper's argument checks cost as much as the
    # factorization itself.
    L, info = lapack.dpotrf(K, lower=1, clean=1)
    if info == 0:
        return L
    scale = float(np.mean(np.diag(K))) if K.size else 1.0
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    tried = 0.0
    for attempt in range(1, _MAX_JITTER_TRIES):
        tried = jitter * 10.0 ** (attempt - 1) * scale
        L, info = lapack.dpotrf(K + tried * np.eye(len(K)), lower=1, clean=1)
        if info == 0:
            return L
    raise CholeskyError(
        f"covariance matrix of size {len(K)} is not positive definite even with jitter "
        f"{tried:.3g}; the inputs may contain many duplicates"
    )
