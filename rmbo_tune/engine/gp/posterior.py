"""The exact GP posterior with fixed hyperparameters, and its standardized-output wrapper.

Notation
--------
X (n, d), y (n,)
    Training inputs in the unit cube and outputs (already on the engine's output scale).
m
    Constant prior mean (the mean of ``y`` by default).
K = k(X, X) + (noise + jitter) I,  L = chol(K),  alpha = K^{-1} (y - m)
mu(x) = m + k(x, X) alpha
sigma(x)^2 = s2 - ||L^{-1} k(X, x)||^2
    Latent-function posterior variance (no noise term), clamped at 0
    (Rasmussen & Williams 2006, eq. 2.25-2.26).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import linalg, stats

from rmbo_tune.engine.gp.likelihood import GPHyperparameters, fit_hyperparameters
from rmbo_tune.engine.gp.linalg import safe_cholesky
from rmbo_tune.engine.kernels import check_kernel, kernel, kernel_grad_x, kumaraswamy_grad_x
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array


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
        :class:`~rmbo_tune.engine.gp.factor.FixedPointFactor`); computed here otherwise.

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
        self._U = hyper.inputs(self.X)  # the kernel's inputs (warped, if hyper says so)
        if cholesky is None:
            K = kernel(self._U, self._U, hyper.lengthscales, hyper.signal_var, kind)
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

    def cross(self, Xs: Array) -> Array:
        """The kernel between ``Xs`` and the training inputs, shape (m, n)."""
        hp = self.hyper
        return kernel(hp.inputs(Xs), self._U, hp.lengthscales, hp.signal_var, self.kind)

    def cross_with_grad(self, x: Array) -> tuple[Array, Array]:
        """The kernel between one point and the training inputs (n,), and its gradient in
        the point (n, d)."""
        hp = self.hyper
        if hp.warp is None:
            return kernel_grad_x(x, self.X, hp.lengthscales, hp.signal_var, self.kind)
        k, dk = kernel_grad_x(hp.inputs(x), self._U, hp.lengthscales, hp.signal_var, self.kind)
        return k, dk * kumaraswamy_grad_x(x, hp.warp)

    def predict(self, Xs: Array, Ks: Array | None = None) -> tuple[Array, Array]:
        """Posterior mean and latent standard deviation, each of shape (m,); ``Ks`` is
        :meth:`cross` at ``Xs`` when the caller has it already."""
        hp = self.hyper
        if self.n_obs == 0:
            return np.full(len(Xs), self.mean), np.full(len(Xs), np.sqrt(hp.signal_var))
        Ks = self.cross(Xs) if Ks is None else Ks
        mu = self.mean + Ks @ self.alpha
        v = linalg.solve_triangular(self.L, Ks.T, lower=True, check_finite=False)
        var = np.maximum(hp.signal_var - np.einsum("ij,ij->j", v, v), 0.0)
        return mu, np.sqrt(var)

    def predict_with_grad(
        self, x: Array, kd: tuple[Array, Array] | None = None
    ) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients (d,) at one point ``x``; ``kd`` is
        :meth:`cross_with_grad` at ``x`` when the caller has it already."""
        hp = self.hyper
        if self.n_obs == 0:
            z = np.zeros_like(x)
            return self.mean, float(np.sqrt(hp.signal_var)), z, z
        k, dk = self.cross_with_grad(x) if kd is None else kd
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


# Along a dimension a GP's data did not record (infinite length scale) its mean is flat,
# and every value of that parameter ties. The tie is broken towards where the data sit (a
# meta-task's rows are placed at the cube's centre there): the mean falls off by this much
# per squared unit of distance, far below any other difference an acquisition sees.
UNRECORDED_PULL = 1e-9


def unrecorded_centre(hyper: GPHyperparameters, X: Array) -> Array | None:
    """Per dimension, where the inputs ``X`` sit along the dimensions ``hyper`` does not
    record (NaN along the others); None when it records them all."""
    mask = hyper.unrecorded
    if not mask.any():
        return None
    return np.where(mask, X[0], np.nan)


def unrecorded_pull(X: Array, centre: Array) -> tuple[Array, Array]:
    """The tie-break ``-UNRECORDED_PULL * sum_k (x_k - c_k)^2`` over the dimensions where
    ``centre`` (d,) is not NaN, for each row of ``X`` (n, d), and its gradient (n, d)."""
    diff = np.where(np.isnan(centre), 0.0, X - np.nan_to_num(centre))
    return -UNRECORDED_PULL * np.einsum("nd,nd->n", diff, diff), -2.0 * UNRECORDED_PULL * diff


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

    Parameters
    ----------
    gp : GaussianProcess
        The posterior of the standardized outputs ``z``.
    loc, scale : float
        The outer scale: ``y = loc + scale * z``.
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
        promising_restarts_only: bool = False,
        warp_inputs: bool = False,
        tied: Sequence[Sequence[int]] = (),
    ) -> ScaledGP:
        """Standardize ``y``, fit hyperparameters by type-II ML (MAP with ``prior``) and
        build the posterior (see :func:`~rmbo_tune.engine.gp.likelihood.fit_hyperparameters`
        for the arguments)."""
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
            promising_restarts_only=promising_restarts_only,
            warp_inputs=warp_inputs,
            tied=tied,
        )
        return cls(GaussianProcess(X, z, hyper, kind=kind, mean=0.0), loc, scale)

    @property
    def hyper(self) -> GPHyperparameters:
        """Hyperparameters of the inner (standardized) GP."""
        return self.gp.hyper

    def predict(self, Xs: Array, Ks: Array | None = None) -> tuple[Array, Array]:
        """Posterior mean and latent std on the outer scale, each (m,) (``Ks`` as for
        :meth:`GaussianProcess.predict`)."""
        mu, sigma = self.gp.predict(Xs, Ks)
        return self.loc + self.scale * mu, self.scale * sigma

    def predict_with_grad(
        self, x: Array, kd: tuple[Array, Array] | None = None
    ) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients at one point, on the outer scale (``kd`` as for
        :meth:`GaussianProcess.predict_with_grad`)."""
        mu, sigma, dmu, dsigma = self.gp.predict_with_grad(x, kd)
        s = self.scale
        return self.loc + s * mu, s * sigma, s * dmu, s * dsigma

    def rescaled(self, loc: float, scale: float) -> ScaledGP:
        """The same posterior reported on the scale ``(outer - loc) / scale``."""
        return ScaledGP(self.gp, (self.loc - loc) / scale, self.scale / scale)
