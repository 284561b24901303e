"""Stationary kernels with ARD length scales, and the derivatives the engine needs.

Notation
--------
X (n, d), Z (m, d)
    Inputs in the unit cube.
ell (d,)
    Length scales, one per dimension (automatic relevance determination).
s2
    Signal variance: ``k(x, x) = s2``.
r = ||(x - z) / ell||
    Scaled distance.
g(r)
    The factor shared by both derivatives below, so that
    ``dk/dx = -g * (x - z) / ell**2`` and ``dk/dlog(ell_k) = g * (x_k - z_k)**2 / ell_k**2``.
    Matern-5/2: ``g = s2 * 5/3 * (1 + sqrt(5) r) exp(-sqrt(5) r)``; SE: ``g = k``.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.engine.types import Array

KERNELS = ("matern52", "se")
_SQRT5 = np.sqrt(5.0)


def check_kernel(kind: str) -> str:
    """Return ``kind`` if it names a supported kernel, else raise ``ValueError``."""
    if kind not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kind!r}")
    return kind


def scaled_sqdist(X: Array, Z: Array, ell: Array) -> Array:
    """Squared scaled distances ``r**2`` of shape (n, m), clamped at 0."""
    A = X / ell
    B = Z / ell
    r2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.maximum(r2, 0.0)


def kernel_from_r2(r2: Array, s2: float | Array, kind: str) -> tuple[Array, Array]:
    """Kernel values and the derivative factor ``g`` from squared scaled distances."""
    if kind == "se":
        k = s2 * np.exp(-0.5 * r2)
        return k, k
    # In place: this runs thousands of times per hyperparameter fit, and each temporary of
    # an n x n array costs about as much as the exponential.
    a = np.sqrt(r2)
    a *= _SQRT5  # sqrt(5) r
    e = np.exp(-a)
    a += 1.0  # 1 + sqrt(5) r
    k = np.multiply(r2, 5.0 / 3.0)
    k += a
    k *= e
    a *= e
    if np.ndim(s2) == 0:
        k *= s2
        a *= s2 * (5.0 / 3.0)
        return k, a
    return s2 * k, (s2 * (5.0 / 3.0)) * a


def kernel(X: Array, Z: Array, ell: Array, s2: float, kind: str) -> Array:
    """Kernel matrix ``k(X, Z)`` of shape (n, m)."""
    return kernel_from_r2(scaled_sqdist(X, Z, ell), s2, kind)[0]


def kernel_grad_x(x: Array, Z: Array, ell: Array, s2: float, kind: str) -> tuple[Array, Array]:
    """Kernel values ``k(x, Z)`` (m,) and their gradients in ``x``, shape (m, d)."""
    diff = x[None, :] - Z
    r2 = ((diff / ell) ** 2).sum(1)
    k, g = kernel_from_r2(r2, s2, kind)
    return k, -g[:, None] * diff / ell**2


def contract_grad_log_ell(X: Array, ell: Array, WG: Array) -> Array:
    """``sum_ij WG_ij (x_ik - x_jk)^2 / ell_k^2`` for every k, shape (d,).

    With ``WG = W * g`` this is ``tr(W dK/dlog(ell_k))`` for symmetric ``W``, computed in
    O(n^2 d) with matrix products instead of materializing the (d, n, n) derivative.
    """
    rows = WG.sum(1)
    sq = (X * X).T @ rows
    cross = np.einsum("ik,ik->k", X, WG @ X)
    return 2.0 * (sq - cross) / ell**2


def kumaraswamy(X: Array, warp: Array) -> Array:
    """Inputs warped by the Kumaraswamy CDF per dimension, ``1 - (1 - x^a)^b``, shape of X.

    ``warp`` (2, d) holds ``a`` and ``b`` (both 1: the identity). A monotone bijection of
    [0, 1] that fixes both ends, so a binary column is left as it is. With ``a < 1`` the
    low end is stretched and the high end compressed: a parameter whose effect saturates
    (a penalty beyond which the fit no longer changes) becomes stationary enough for one
    length scale (Snoek, Swersky, Zemel and Adams, ICML 2014).
    """
    a, b = warp
    x = np.clip(X, 0.0, 1.0)
    return 1.0 - (1.0 - x**a) ** b


def kumaraswamy_grad_x(x: Array, warp: Array) -> Array:
    """Derivative of :func:`kumaraswamy` in each coordinate of one point ``x`` (d,); inside
    ``[1e-6, 1 - 1e-6]``, as the derivative is unbounded at an end where ``a`` or ``b`` is
    below 1."""
    a, b = warp
    x = np.clip(x, 1e-6, 1.0 - 1e-6)
    xa = x**a
    return a * b * xa / x * (1.0 - xa) ** (b - 1.0)


def kumaraswamy_grad_log_params(X: Array, warp: Array) -> tuple[Array, Array]:
    """Derivatives of :func:`kumaraswamy` at ``X`` (n, d) in ``log a`` and ``log b``, each
    (n, d) (0 at both ends, which no warp moves)."""
    a, b = warp
    x = np.clip(X, 0.0, 1.0)
    inside = (x > 0.0) & (x < 1.0)
    xs = np.where(inside, x, 0.5)
    xa = xs**a
    rest = 1.0 - xa
    d_log_a = a * b * rest ** (b - 1.0) * xa * np.log(xs)
    d_log_b = -b * rest**b * np.log(rest)
    return np.where(inside, d_log_a, 0.0), np.where(inside, d_log_b, 0.0)
