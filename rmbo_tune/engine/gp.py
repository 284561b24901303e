"""Exact Gaussian-process regression with type-II maximum-likelihood hyperparameters.

Notation
--------
X (n, d), y (n,)
    Training inputs in the unit cube and outputs (already on the engine's output scale).
m
    Constant prior mean (the mean of ``y`` by default).
theta = [log ell (d), log s2, log noise]
    Hyperparameters in log space, as optimized.
K = k(X, X) + (noise + jitter) I,  L = chol(K),  alpha = K^{-1} (y - m)
mu(x) = m + k(x, X) alpha
sigma(x)^2 = s2 - ||L^{-1} k(X, x)||^2
    Latent-function posterior variance (no noise term), clamped at 0
    (Rasmussen & Williams 2006, eq. 2.25-2.26).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize, stats
from scipy.linalg import lapack

from rmbo_tune.engine.kernels import (
    check_kernel,
    contract_grad_log_ell,
    kernel,
    kernel_from_r2,
    kernel_grad_x,
    scaled_sqdist,
)
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array, CholeskyError

LOG_ELL_BOUNDS = (np.log(1e-2), np.log(20.0))
LOG_S2_BOUNDS = (np.log(5e-2), np.log(20.0))
MAX_NOISE = 1.0
_MAX_JITTER_TRIES = 6
SCREEN_PER_RESTART = 32
SCREEN_MAX_ROWS = 64
# Above this many elements (64 MB) the squared differences are not kept during a fit.
_MAX_DIFFERENCE_ELEMENTS = 8_000_000
_LOG_2PI = float(np.log(2.0 * np.pi))


def safe_cholesky(K: Array, *, jitter: float = 1e-10) -> Array:
    """Lower Cholesky factor of ``K``, retrying with growing diagonal jitter.

    Raises
    ------
    CholeskyError
        If ``K + jitter * 10**k * mean(diag K) * I`` fails for every ``k < 6``.
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


@dataclass(frozen=True)
class GPHyperparameters:
    """Kernel length scales (d,), signal variance and noise variance."""

    lengthscales: Array
    signal_var: float
    noise_var: float

    @classmethod
    def default(cls, dim: int, *, noise_floor: float = 1e-6) -> GPHyperparameters:
        """Neutral starting values for standardized outputs in the unit cube."""
        return cls(np.full(dim, 0.3), 1.0, max(1e-3, noise_floor))

    def to_theta(self) -> Array:
        """Pack into ``[log ell, log s2, log noise]``."""
        return np.concatenate(
            [np.log(self.lengthscales), [np.log(self.signal_var), np.log(self.noise_var)]]
        )

    @classmethod
    def from_theta(cls, theta: Array) -> GPHyperparameters:
        """Unpack from ``[log ell, log s2, log noise]``."""
        theta = np.asarray(theta, dtype=np.float64)
        return cls(np.exp(theta[:-2]), float(np.exp(theta[-2])), float(np.exp(theta[-1])))

    def to_dict(self) -> dict:
        """Plain-number form for state dicts."""
        return {
            "lengthscales": self.lengthscales.tolist(),
            "signal_var": self.signal_var,
            "noise_var": self.noise_var,
        }

    @classmethod
    def from_dict(cls, d: dict) -> GPHyperparameters:
        """Inverse of :meth:`to_dict`."""
        return cls(
            np.asarray(d["lengthscales"], dtype=np.float64), d["signal_var"], d["noise_var"]
        )


def theta_bounds(dim: int, noise_floor: float) -> list[tuple[float, float]]:
    """L-BFGS-B bounds on ``theta`` for standardized outputs."""
    return [LOG_ELL_BOUNDS] * dim + [LOG_S2_BOUNDS, (np.log(noise_floor), np.log(MAX_NOISE))]


def squared_differences(X: Array) -> Array:
    """Per-dimension squared differences ``D[k, i, j] = (x_ik - x_jk)^2``, shape (d, n, n).

    Computed once per hyperparameter fit: every likelihood evaluation then gets
    ``r^2 = sum_k D_k / ell_k^2`` and the length-scale gradients from it.
    """
    diff = X.T[:, :, None] - X.T[:, None, :]
    return diff * diff


def _likelihood(
    theta: Array, X: Array, y: Array, kind: str, D: Array | None, with_grad: bool
) -> tuple[float, Array | None]:
    # LAPACK directly (potrs, potri; potrf in safe_cholesky): the scipy.linalg wrappers'
    # argument checks cost as much as the solves themselves at the sizes of a GP fit.
    n, d = X.shape
    ell = np.exp(theta[:d])
    s2, noise = float(np.exp(theta[d])), float(np.exp(theta[d + 1]))
    r2 = np.tensordot(1.0 / ell**2, D, axes=1) if D is not None else scaled_sqdist(X, X, ell)
    Kf, G = kernel_from_r2(r2, s2, kind)
    K = Kf.copy()
    K.flat[:: n + 1] += noise
    try:
        L = safe_cholesky(K)
    except CholeskyError:
        return -np.inf, (np.zeros_like(theta) if with_grad else None)
    alpha, _ = lapack.dpotrs(L, y, lower=1)
    lml = -0.5 * float(y @ alpha) - float(np.log(np.diagonal(L)).sum()) - 0.5 * n * _LOG_2PI
    if not with_grad:
        return lml, None
    Kinv, _ = lapack.dpotri(L, lower=1)
    Kinv = np.tril(Kinv)
    Kinv += np.tril(Kinv, -1).T
    W = np.outer(alpha, alpha)
    W -= Kinv
    grad = np.empty(d + 2)
    if D is not None:
        grad[:d] = 0.5 * np.tensordot(D, W * G, axes=2) / ell**2
    else:
        grad[:d] = 0.5 * contract_grad_log_ell(X, ell, W * G)
    grad[d] = 0.5 * float(np.vdot(W, Kf))
    grad[d + 1] = 0.5 * noise * float(np.trace(W))
    return lml, grad


def log_marginal_likelihood(
    theta: Array, X: Array, y: Array, kind: str, *, D: Array | None = None
) -> tuple[float, Array]:
    """Log marginal likelihood of centred outputs ``y`` and its gradient in ``theta``.

    Returns ``(-inf, zeros)`` when the covariance cannot be factorized, so that an
    optimizer steps away instead of failing (as scikit-learn does). ``D``: the
    :func:`squared_differences` of ``X``, if already computed.

    Notes
    -----
    ``log p(y) = -1/2 y^T alpha - sum log diag L - n/2 log 2 pi`` and
    ``d log p / d theta_j = 1/2 tr((alpha alpha^T - K^{-1}) dK/dtheta_j)``
    (Rasmussen & Williams 2006, eq. 5.8-5.9).
    """
    lml, grad = _likelihood(theta, X, y, kind, D, with_grad=True)
    assert grad is not None
    return lml, grad


def log_marginal_likelihood_value(
    theta: Array, X: Array, y: Array, kind: str, *, D: Array | None = None
) -> float:
    """:func:`log_marginal_likelihood` without the gradient (-inf if not factorizable)."""
    return _likelihood(theta, X, y, kind, D, with_grad=False)[0]


def fit_hyperparameters(
    X: Array,
    y: Array,
    *,
    kind: str,
    rng: np.random.Generator,
    n_restarts: int = 3,
    init: GPHyperparameters | None = None,
    noise_floor: float = 1e-6,
    maxiter: int = 100,
    prior: LogNormalPrior | None = None,
) -> GPHyperparameters:
    """Maximize the log marginal likelihood with multi-start, bounded L-BFGS-B.

    Parameters
    ----------
    X : ndarray of shape (n_obs, n_dims)
    y : ndarray of shape (n_obs,)
        Outputs, centred and roughly unit scale (the bounds assume this).
    kind : {"matern52", "se"}
    rng : numpy.random.Generator
        Draws the candidates of the random restarts (log-uniform inside the bounds).
    n_restarts : int
        Random starts besides ``init`` (or the default): the ``n_restarts`` most likely of
        ``SCREEN_PER_RESTART * n_restarts`` random hyperparameters (by likelihood value on
        at most ``SCREEN_MAX_ROWS`` observations, a fraction of the cost of a gradient-based
        run from each). 0 starts from ``init`` alone (or the default without ``init``): a
        cheap warm-started refit.
    init : GPHyperparameters, optional
        Warm start, typically the previous optimum.
    noise_floor : float
        Lower bound on the noise variance.
    prior : LogNormalPrior, optional
        Maximize the log posterior ``log p(y | theta) + log p(theta)`` (type-II MAP) instead
        of the likelihood alone.

    Returns
    -------
    GPHyperparameters
        The best optimum found; ``init`` (or the default) if every start failed.
    """
    dim = X.shape[1]
    bounds = theta_bounds(dim, noise_floor)
    lo, hi = np.array(bounds).T
    default = GPHyperparameters.default(dim, noise_floor=noise_floor).to_theta()
    starts = [default] if init is None else [init.to_theta()]
    if n_restarts > 0:
        pool = rng.uniform(lo, hi, size=(SCREEN_PER_RESTART * n_restarts, len(lo)))
        # Screening only ranks starting points: a random subset of a large data set does.
        rows = np.arange(len(X))
        if len(X) > SCREEN_MAX_ROWS:
            rows = np.sort(rng.choice(len(X), SCREEN_MAX_ROWS, replace=False))
        Xs, ys = X[rows], y[rows]
        Ds = squared_differences(Xs)
        values = np.array([log_marginal_likelihood_value(t, Xs, ys, kind, D=Ds) for t in pool])
        if prior is not None:
            values += np.array([prior.log_density(t)[0] for t in pool])
        starts += list(pool[np.argsort(-values, kind="stable")[:n_restarts]])
    D = squared_differences(X) if dim * len(X) ** 2 <= _MAX_DIFFERENCE_ELEMENTS else None

    def objective(theta: Array) -> tuple[float, Array]:
        lml, grad = log_marginal_likelihood(theta, X, y, kind, D=D)
        if not np.isfinite(lml):
            return 1e25, np.zeros_like(theta)
        if prior is not None:
            lp, dlp = prior.log_density(theta)
            lml, grad = lml + lp, grad + dlp
        return -lml, -grad

    best_theta, best_val = np.clip(starts[0], lo, hi), np.inf
    for theta0 in starts:
        res = optimize.minimize(
            objective,
            np.clip(theta0, lo, hi),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": maxiter},
        )
        if np.isfinite(res.fun) and res.fun < best_val:
            best_theta, best_val = res.x, float(res.fun)
    return GPHyperparameters.from_theta(best_theta)


class GaussianProcess:
    """An exact GP posterior with fixed hyperparameters.

    Parameters
    ----------
    X : ndarray of shape (n_obs, n_dims)
    y : ndarray of shape (n_obs,)
    hyper : GPHyperparameters
    kind : {"matern52", "se"}
    mean : float, optional
        Constant prior mean; the mean of ``y`` (0 with no data) if not given.
    cholesky : ndarray of shape (n_obs, n_obs), optional
        The lower Cholesky factor of ``k(X, X) + noise I`` when already known (see
        :class:`FixedPointFactor`); computed here otherwise.

    Examples
    --------
    >>> gp = GaussianProcess(X, y, GPHyperparameters.default(2), kind="matern52")
    >>> mu, sigma = gp.predict(X_new)
    """

    def __init__(
        self,
        X: Array,
        y: Array,
        hyper: GPHyperparameters,
        *,
        kind: str,
        mean: float | None = None,
        cholesky: Array | None = None,
    ) -> None:
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.hyper = hyper
        self.kind = check_kernel(kind)
        self.mean = float(np.mean(self.y)) if mean is None and len(self.y) else float(mean or 0.0)
        if cholesky is None:
            K = kernel(self.X, self.X, hyper.lengthscales, hyper.signal_var, kind)
            cholesky = safe_cholesky(K + hyper.noise_var * np.eye(len(self.y)))
        elif cholesky.shape != (len(self.y), len(self.y)):
            raise ValueError(
                f"cholesky must have shape ({len(self.y)}, {len(self.y)}), got {cholesky.shape}"
            )
        self.L = cholesky
        self.alpha = linalg.cho_solve((self.L, True), self.y - self.mean, check_finite=False)

    @property
    def n_obs(self) -> int:
        """Number of training points."""
        return len(self.y)

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Posterior mean and latent standard deviation, each of shape (m,)."""
        hp = self.hyper
        if self.n_obs == 0:
            return np.full(len(Xs), self.mean), np.full(len(Xs), np.sqrt(hp.signal_var))
        Ks = kernel(Xs, self.X, hp.lengthscales, hp.signal_var, self.kind)
        mu = self.mean + Ks @ self.alpha
        v = linalg.solve_triangular(self.L, Ks.T, lower=True, check_finite=False)
        var = np.maximum(hp.signal_var - np.einsum("ij,ij->j", v, v), 0.0)
        return mu, np.sqrt(var)

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients (d,) at one point ``x``."""
        hp = self.hyper
        if self.n_obs == 0:
            z = np.zeros_like(x)
            return self.mean, float(np.sqrt(hp.signal_var)), z, z
        k, dk = kernel_grad_x(x, self.X, hp.lengthscales, hp.signal_var, self.kind)
        vw = linalg.solve_triangular(
            self.L, np.column_stack([k, dk]), lower=True, check_finite=False
        )
        v, w = vw[:, 0], vw[:, 1:]
        var = max(hp.signal_var - v @ v, 0.0)
        sigma = float(np.sqrt(var))
        dsigma = -(v @ w) / sigma if sigma > 1e-12 else np.zeros_like(x)
        return float(self.mean + k @ self.alpha), sigma, dk.T @ self.alpha, dsigma

    def with_pending(self, X_pending: Array) -> GaussianProcess:
        """The GP-BUCB hallucination: pending points observed at their own mean.

        The posterior mean is unchanged everywhere; the variance shrinks around the
        pending points (Desautels et al. 2014).
        """
        if len(X_pending) == 0:
            return self
        mu, _ = self.predict(X_pending)
        return GaussianProcess(
            np.vstack([self.X, X_pending]),
            np.concatenate([self.y, mu]),
            self.hyper,
            kind=self.kind,
            mean=self.mean,
        )

    def loo(self) -> tuple[Array, Array]:
        """Leave-one-out predictive means and variances (noisy), each (n,).

        Notes
        -----
        ``mu_{-i} = y_i - alpha_i / [K^{-1}]_ii``, ``var_{-i} = 1 / [K^{-1}]_ii``
        (Rasmussen & Williams 2006, eq. 5.12).
        """
        Kinv_diag = np.einsum(
            "ij,ij->j", *(2 * [linalg.solve_triangular(self.L, np.eye(self.n_obs), lower=True)])
        )
        return self.y - self.alpha / Kinv_diag, 1.0 / Kinv_diag


class FixedPointFactor:
    """A GP's Cholesky factor and ``L^{-1} k(X, Z)`` at fixed points ``Z``, grown one
    observation at a time while the hyperparameters stay fixed.

    Rebuilding the posterior at ``m`` fixed points after every observation costs
    ``O(t^2 m)``; extending costs ``O(t (t + m))``: the new row of ``L`` is
    ``l = L^{-1} k(X, x)``, ``d = sqrt(k(x, x) + noise - l.l)``, and the new row of
    ``V = L^{-1} k(X, Z)`` is ``(k(x, Z) - l V) / d``.

    Parameters
    ----------
    X : ndarray of shape (t, n_dims)
        Training inputs factorized at once (LAPACK, with jitter if needed).
    Z : ndarray of shape (m, n_dims)
        The fixed points.
    hyper : GPHyperparameters
    kind : {"matern52", "se"}
    """

    def __init__(self, X: Array, Z: Array, hyper: GPHyperparameters, *, kind: str) -> None:
        self.Z, self.hyper, self.kind = Z, hyper, check_kernel(kind)
        self._rebuild(np.asarray(X, dtype=np.float64).reshape(-1, Z.shape[1]))

    def _k(self, A: Array, B: Array) -> Array:
        return kernel(A, B, self.hyper.lengthscales, self.hyper.signal_var, self.kind)

    def _rebuild(self, X: Array) -> None:
        self.X = X
        if len(X) == 0:
            self.L, V = np.zeros((0, 0)), np.zeros((0, len(self.Z)))
        else:
            self.L = safe_cholesky(self._k(X, X) + self.hyper.noise_var * np.eye(len(X)))
            V = linalg.solve_triangular(self.L, self._k(X, self.Z), lower=True, check_finite=False)
        # Rows of V live in a buffer with spare capacity, so that appending does not copy it.
        self._buf = np.empty((max(2 * len(X), 16), len(self.Z)))
        self._buf[: len(X)] = V
        self.vsq = np.einsum("ij,ij->j", V, V)

    @property
    def V(self) -> Array:
        """``L^{-1} k(X, Z)``, shape (t, m)."""
        return self._buf[: len(self.X)]

    def _rows(
        self, L: Array, X: Array, x: Array, blocks: list[Array]
    ) -> tuple[Array, float, Array] | None:
        """The new rows of ``L`` and ``V`` for input ``x``; ``blocks`` stack to ``V``."""
        k = self._k(X, x[None, :])[:, 0]
        row = linalg.solve_triangular(L, k, lower=True, check_finite=False) if len(X) else k
        d2 = self.hyper.signal_var + self.hyper.noise_var - float(row @ row)
        if not d2 > 1e-10 * (self.hyper.signal_var + self.hyper.noise_var):
            return None  # numerically a duplicate: refactorize with jitter instead
        d = np.sqrt(d2)
        v = self._k(x[None, :], self.Z)[0]
        start = 0
        for block in blocks:
            v -= row[start : start + len(block)] @ block
            start += len(block)
        return row, d, v / d

    @staticmethod
    def _grow(L: Array, row: Array, d: float) -> Array:
        t = len(L)
        out = np.zeros((t + 1, t + 1))
        out[:t, :t], out[t, :t], out[t, t] = L, row, d
        return out

    @property
    def n_obs(self) -> int:
        """Number of factorized training points."""
        return len(self.X)

    def append(self, x: Array) -> None:
        """Add the training input ``x`` (d,)."""
        rows = self._rows(self.L, self.X, x, [self.V])
        X = np.vstack([self.X, x[None, :]])
        if rows is None:
            self._rebuild(X)
            return
        row, d, v = rows
        t = len(self.X)
        if t == len(self._buf):
            grown = np.empty((2 * t, len(self.Z)))
            grown[:t] = self._buf
            self._buf = grown
        self._buf[t] = v
        self.L, self.X = self._grow(self.L, row, d), X
        self.vsq = self.vsq + v * v

    def keep_points(self, m: int) -> None:
        """Keep only the first ``m`` fixed points (the others are no longer needed)."""
        if m < len(self.Z):
            self.Z, self.vsq = self.Z[:m], self.vsq[:m]
            self._buf = np.ascontiguousarray(self._buf[:, :m])

    def gp(self, y: Array, *, mean: float = 0.0) -> GaussianProcess:
        """The posterior given outputs ``y`` at the factorized inputs, without refactorizing."""
        return GaussianProcess(self.X, y, self.hyper, kind=self.kind, mean=mean, cholesky=self.L)

    def predict(
        self, gp: GaussianProcess, pending: Array | None = None
    ) -> tuple[Array, Array, GaussianProcess]:
        """Posterior mean and latent std at ``Z``, optionally with ``pending`` points
        hallucinated at their posterior mean (GP-BUCB: the mean is unchanged, the variance
        shrinks around them).

        Parameters
        ----------
        gp : GaussianProcess
            The posterior built by :meth:`gp` from this factor.
        pending : ndarray of shape (p, n_dims), optional

        Returns
        -------
        (mu, sigma, gp) : ndarray (m,), ndarray (m,), GaussianProcess
            ``gp`` is the posterior with the pending points included.
        """
        if gp.L is not self.L:
            raise ValueError("gp was not built from this factor")
        z = linalg.solve_triangular(self.L, gp.y - gp.mean, lower=True, check_finite=False)
        mu = gp.mean + self.V.T @ z
        vsq = self.vsq
        if pending is not None and len(pending):
            L, X, blocks = self.L, self.X, [self.V]
            mu_p, _ = gp.predict(pending)
            for p in pending:
                rows = self._rows(L, X, p, blocks)
                X = np.vstack([X, p[None, :]])
                if rows is None:  # a pending point duplicates an observation: refactorize
                    grown = FixedPointFactor(X, self.Z, self.hyper, kind=self.kind)
                    L, blocks, vsq = grown.L, [grown.V], grown.vsq
                    continue
                row, d, v = rows
                L, vsq = self._grow(L, row, d), vsq + v * v
                blocks.append(v[None, :])
            gp = GaussianProcess(
                X,
                np.concatenate([gp.y, mu_p]),
                self.hyper,
                kind=self.kind,
                mean=gp.mean,
                cholesky=L,
            )
        sigma = np.sqrt(np.maximum(self.hyper.signal_var - vsq, 0.0))
        return mu, sigma, gp


def fit_gp(
    X: Array,
    y: Array,
    *,
    kind: str = "matern52",
    rng: np.random.Generator,
    n_restarts: int = 3,
    init: GPHyperparameters | None = None,
    noise_floor: float = 1e-6,
) -> GaussianProcess:
    """Fit hyperparameters by type-II ML on ``y - mean(y)`` and return the posterior.

    Outputs should be roughly unit scale; the engine standardizes them before calling this.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    hyper = fit_hyperparameters(
        X,
        y - y.mean(),
        kind=kind,
        rng=rng,
        n_restarts=n_restarts,
        init=init,
        noise_floor=noise_floor,
    )
    return GaussianProcess(X, y, hyper, kind=kind)


def normal_scores(y: Array) -> Array:
    """Normal scores of ``y``: ``Phi^{-1}((rank - 1/2) / n)``, ties sharing their mean rank.

    A monotone map onto a standard normal shape: tasks that differ in level, spread or
    skew (accuracy on an easy and a hard dataset; a few failed runs far below the rest)
    become comparable, and an outlier moves nothing but its own rank (Salinas, Shen and
    Perrone, ICML 2020, transfer across tasks through the same Gaussian copula).
    """
    y = np.asarray(y, dtype=np.float64)
    if len(y) == 0:
        return y.copy()
    return stats.norm.ppf((stats.rankdata(y) - 0.5) / len(y))


def standardization(y: Array) -> tuple[float, float]:
    """Location and scale that map ``y`` to zero mean, unit spread; scale never 0."""
    if len(y) == 0:
        return 0.0, 1.0
    loc = float(np.mean(y))
    std = float(np.std(y)) if len(y) > 1 else 0.0
    if not std > 1e-12 * max(1.0, abs(loc)):
        std = max(abs(loc), 1.0)
    return loc, std


class ScaledGP:
    """A GP fitted on standardized outputs, predicting on an outer output scale.

    ``mu = loc + scale * mu_z`` and ``sigma = scale * sigma_z``, where the inner GP models
    ``z = (y - loc) / scale``.
    """

    def __init__(self, gp: GaussianProcess, loc: float, scale: float) -> None:
        self.gp, self.loc, self.scale = gp, float(loc), float(scale)

    @classmethod
    def from_hyper(cls, X: Array, y: Array, hyper: GPHyperparameters, *, kind: str) -> ScaledGP:
        """Standardize ``y`` and build the posterior with given hyperparameters."""
        loc, scale = standardization(y)
        return cls(GaussianProcess(X, (y - loc) / scale, hyper, kind=kind, mean=0.0), loc, scale)

    @classmethod
    def fit(
        cls,
        X: Array,
        y: Array,
        *,
        kind: str,
        rng: np.random.Generator,
        n_restarts: int,
        init: GPHyperparameters | None = None,
        noise_floor: float = 1e-6,
        prior: LogNormalPrior | None = None,
    ) -> ScaledGP:
        """Standardize ``y``, fit hyperparameters by type-II ML (MAP with ``prior``) and
        build the posterior."""
        loc, scale = standardization(y)
        z = (np.asarray(y, dtype=np.float64) - loc) / scale
        hyper = fit_hyperparameters(
            X,
            z,
            kind=kind,
            rng=rng,
            n_restarts=n_restarts,
            init=init,
            noise_floor=noise_floor,
            prior=prior,
        )
        return cls(GaussianProcess(X, z, hyper, kind=kind, mean=0.0), loc, scale)

    @property
    def hyper(self) -> GPHyperparameters:
        """Hyperparameters of the inner (standardized) GP."""
        return self.gp.hyper

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Posterior mean and latent std on the outer scale, each (m,)."""
        mu, sigma = self.gp.predict(Xs)
        return self.loc + self.scale * mu, self.scale * sigma

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients at one point, on the outer scale."""
        mu, sigma, dmu, dsigma = self.gp.predict_with_grad(x)
        s = self.scale
        return self.loc + s * mu, s * sigma, s * dmu, s * dsigma

    def with_pending(self, X_pending: Array) -> ScaledGP:
        """GP-BUCB hallucination of pending points (see GaussianProcess.with_pending)."""
        return ScaledGP(self.gp.with_pending(X_pending), self.loc, self.scale)

    def rescaled(self, loc: float, scale: float) -> ScaledGP:
        """The same posterior reported on the scale ``(outer - loc) / scale``."""
        return ScaledGP(self.gp, (self.loc - loc) / scale, self.scale / scale)
