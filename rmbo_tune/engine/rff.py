"""Random Fourier features and approximate GP posterior function samples.

Notation
--------
m
    Number of features.
W (m, d), b (m,)
    Frequencies and phases: ``phi(x) = sqrt(2 s2 / m) cos(W x + b)``, so that
    ``E[phi(x)^T phi(z)] = k(x, z)`` (Rahimi & Recht 2008).
    ARD: frequency component j is divided by ``ell_j`` (per-dimension frequencies).
    SE: rows of ``W * ell`` are standard normal. Matern-5/2: they are multivariate
    Student-t with 5 degrees of freedom (the Matern spectral density).
Phi (n, m)
    Features of the training inputs.
A = Phi^T Phi + noise I
    Weight posterior: ``w ~ N(A^{-1} Phi^T z, noise A^{-1})``; a posterior function sample
    is ``f(x) = phi(x)^T w`` (paper appendix "More details on RM-GP-TS", m = 120 there).
    Scaling the deviation of ``w`` from its mean by ``c`` samples from
    ``GP(mu, c^2 sigma^2)`` approximately, which is how beta_t and tau enter.
basis (n, q)
    Optional: q more feature columns with unit normal weights, basis functions ``h`` (those
    of :mod:`~rmbo_tune.engine.meta_basis`) at the training inputs (the kernel becomes
    ``k + h h^T``); the caller adds ``h`` at the evaluated points times their weights.
n_observed
    Optional: the training inputs after the first ``n_observed`` are pending points,
    hallucinated at the regression's own mean (GP-BUCB): the weights' mean is that of the
    observations alone, ``A_obs^{-1} Phi_obs^T z_obs``, the covariance ``noise A^{-1}`` of all
    rows (the hallucinated outputs ``Phi_p w_mean`` leave ``A^{-1} Phi^T z`` at that mean).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from rmbo_tune.engine.gp import ScaledGP
from rmbo_tune.engine.gp.posterior import unrecorded_centre, unrecorded_pull
from rmbo_tune.engine.kernels import kumaraswamy, kumaraswamy_grad_x
from rmbo_tune.engine.types import Array


class RandomFourierFeatures:
    """Random features approximating a stationary ARD kernel.

    Parameters
    ----------
    lengthscales : ndarray of shape (n_dims,)
    signal_var : float
    kind : {"matern52", "se"}
    n_features : int
    rng : numpy.random.Generator
    warp : ndarray of shape (2, n_dims), optional
        The kernel's input warp (:func:`~rmbo_tune.engine.kernels.kumaraswamy`): the
        features are taken of the warped inputs.
    """

    def __init__(
        self,
        lengthscales: Array,
        signal_var: float,
        *,
        kind: str,
        n_features: int,
        rng: np.random.Generator,
        warp: Array | None = None,
    ) -> None:
        self.warp = warp
        d = len(lengthscales)
        Z = rng.standard_normal((n_features, d))
        if kind == "matern52":
            # Student-t(nu = 5) rows: z / sqrt(chi2_5 / 5).
            Z /= np.sqrt(rng.chisquare(5.0, size=(n_features, 1)) / 5.0)
        self.W = Z / np.asarray(lengthscales)[None, :]
        self.b = rng.uniform(0.0, 2.0 * np.pi, size=n_features)
        self.amp = np.sqrt(2.0 * signal_var / n_features)

    @property
    def n_features(self) -> int:
        """Number of features m."""
        return len(self.b)

    def features(self, X: Array) -> Array:
        """Feature matrix of shape (n, m)."""
        U = X if self.warp is None else kumaraswamy(X, self.warp)
        return self.amp * np.cos(U @ self.W.T + self.b)

    def features_grad(self, x: Array) -> Array:
        """Jacobian of ``phi(x)`` in ``x``, shape (m, d)."""
        if self.warp is None:
            return -self.amp * np.sin(self.W @ x + self.b)[:, None] * self.W
        u = kumaraswamy(x, self.warp)
        jac = -self.amp * np.sin(self.W @ u + self.b)[:, None] * self.W
        return jac * kumaraswamy_grad_x(x, self.warp)


class RFFPosterior:
    """Bayesian linear regression on random features: draws posterior function samples.

    Built from a fitted :class:`ScaledGP`, using its hyperparameters and standardized data;
    samples are reported on the GP's outer scale. With ``basis`` (the values of q more
    features at the GP's inputs, module docstring) the weights have q more entries, the
    basis functions' coefficients, last. With ``n_observed`` the GP's inputs after the first
    ``n_observed`` are pending points (module docstring); their outputs are not read.
    With ``offset`` (values at the GP's inputs, on its standardized scale) the features are
    fitted to the outputs minus it: the caller adds the function it stands for.
    """

    def __init__(
        self,
        model: ScaledGP,
        *,
        n_features: int,
        rng: np.random.Generator,
        basis: Array | None = None,
        n_observed: int | None = None,
        offset: Array | None = None,
    ) -> None:
        gp = model.gp
        hp = gp.hyper
        self.loc, self.scale, self.mean = model.loc, model.scale, gp.mean
        self.rff = RandomFourierFeatures(
            hp.lengthscales,
            hp.signal_var,
            kind=gp.kind,
            n_features=n_features,
            rng=rng,
            warp=hp.warp,
        )
        Phi = self.rff.features(gp.X)
        if basis is not None:
            Phi = np.column_stack([Phi, basis])
        noise = hp.noise_var * np.eye(Phi.shape[1])
        self._L = linalg.cholesky(Phi.T @ Phi + noise, lower=True)
        n = len(Phi) if n_observed is None else n_observed
        L_obs = (
            self._L if n == len(Phi) else linalg.cholesky(Phi[:n].T @ Phi[:n] + noise, lower=True)
        )
        y = gp.y[:n] - gp.mean
        if offset is not None:
            y = y - offset[:n]
        self.w_mean = linalg.cho_solve((L_obs, True), Phi[:n].T @ y)
        self._noise_sd = np.sqrt(hp.noise_var)
        # Dimensions the GP's data did not record: the samples' tie-break along them.
        self._centre = unrecorded_centre(hp, gp.X)

    def sample_weights(
        self, rng: np.random.Generator, *, scale: float = 1.0, size: int = 1
    ) -> Array:
        """Weight samples of shape (size, m), or (size, m + q) with q basis columns (their
        coefficients last); deviations from the mean scaled by ``scale``."""
        z = rng.standard_normal((self._L.shape[0], size))
        dev = linalg.solve_triangular(self._L.T, z, lower=False) * self._noise_sd
        return (self.w_mean[:, None] + scale * dev).T

    def evaluate(self, X: Array, w: Array) -> Array:
        """Sampled functions at ``X``: shape (n,) for one ``w`` (m,), (n, s) for (s, m); the
        random features' part only (the basis functions' part is the caller's)."""
        out = self.loc + self.scale * (self.mean + self.rff.features(X) @ np.asarray(w).T)
        if self._centre is not None:
            pull = unrecorded_pull(X, self._centre)[0]
            out = out + (pull if out.ndim == 1 else pull[:, None])
        return out

    def evaluate_with_grad(self, x: Array, w: Array) -> tuple[float, Array]:
        """Value and gradient (d,) of the sampled function ``w`` (m,) at one point."""
        phi = self.rff.features(x[None, :])[0]
        val = self.loc + self.scale * (self.mean + phi @ w)
        grad = self.scale * (self.rff.features_grad(x).T @ w)
        if self._centre is not None:
            pull, dpull = unrecorded_pull(x[None, :], self._centre)
            val, grad = val + pull[0], grad + dpull[0]
        return float(val), grad
