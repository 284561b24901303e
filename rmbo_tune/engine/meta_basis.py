"""The target GP with the meta-tasks' weighted mean as one more basis function.

Once the overall meta-task weight nu is spent, RM-GP-UCB is GP-UCB on the target alone, and
the earlier tasks no longer tell it anything. This module keeps one thing from them: their
weighted mean ``m(x)`` (the meta-weights' combination of the meta-task GPs, standardized over
the fixed candidates) as a basis function of the target model with a Gaussian coefficient,

    ``f(x) = g(x) + b m(x)``,  ``g ~ GP(c, k)``,  ``b ~ N(0, s2)``,

which is a GP with kernel ``k + s2 m m^T`` (Rasmussen and Williams 2006, section 2.7). The
data decide ``b``: near 1 when the target follows the tasks, near 0 when they are unrelated,
negative when the target is their mirror image. With ``A = 1 / s2 + m(X)^T K^{-1} m(X)``,
``b_bar = m(X)^T K^{-1} (y - c) / A`` and ``R(x) = m(x) - k(x, X) K^{-1} m(X)``, the posterior
is the target GP's plus ``R(x) b_bar`` in the mean and ``R(x)^2 / A`` in the variance.

GP-UCB keeps its guarantee on the new kernel: the RKHS norm of ``f`` under ``k + s2 m m^T``
is at most its norm under ``k``, and a rank-one term adds at most
``log(1 + s2 ||m(X)||^2 / noise) / 2`` to the maximum information gain.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from rmbo_tune.engine.acquisition import MetaModels
from rmbo_tune.engine.gp import ScaledGP
from rmbo_tune.engine.kernels import kernel, kernel_grad_x
from rmbo_tune.engine.types import Array

# Prior variance of the basis coefficient, on the scale where both the target's outputs and
# ``m`` over the candidates have unit spread.
COEFFICIENT_VAR = 1.0


class MetaBasisGP:
    """The posterior of ``g + b m`` (module docstring) from the target GP ``model``.

    Parameters
    ----------
    model : ScaledGP
        The target GP (pending points hallucinated), on the engine's outer scale.
    meta : MetaModels
        The meta-task GPs.
    weights : ndarray of shape (M,)
        Meta-weights defining ``m = sum_i w_i mu_i``.
    fixed : ndarray of shape (n_fixed, dim)
        The candidates over which ``m`` is standardized.
    fixed_meta_mu : ndarray of shape (M, n_fixed)
        The meta-task means at ``fixed``.
    coefficient_var : float
        Prior variance ``s2`` of the coefficient.
    """

    def __init__(
        self,
        model: ScaledGP,
        meta: MetaModels,
        weights: Array,
        fixed: Array,
        fixed_meta_mu: Array,
        coefficient_var: float = COEFFICIENT_VAR,
    ) -> None:
        self.model, self.meta, self.weights = model, meta, weights
        g = model.gp
        m_fixed = weights @ fixed_meta_mu
        # A flat mean carries nothing: scale 1 leaves it (near) zero, and the GP unchanged.
        spread = float(m_fixed.std())
        self.m_loc, self.m_scale = float(m_fixed.mean()), spread if spread > 1e-9 else 1.0
        self.m_fixed = (m_fixed - self.m_loc) / self.m_scale
        m_obs = self._m(meta.predict(g.X)[0])
        self.a = linalg.cho_solve((g.L, True), m_obs, check_finite=False)  # K^-1 m(X)
        self.A = 1.0 / coefficient_var + float(m_obs @ self.a)
        self.coef = float(m_obs @ g.alpha) / self.A  # b_bar
        self.fixed = fixed

    def _m(self, meta_mu: Array) -> Array:
        """``m`` from the meta-task means (M, ...): weighted and standardized."""
        return (self.weights @ meta_mu - self.m_loc) / self.m_scale

    def _residual(self, m: Array, Ks: Array) -> Array:
        return m - Ks @ self.a

    def fixed_predictions(self, fixed_mu: Array, fixed_sigma: Array) -> tuple[Array, Array]:
        """Mean and std at the fixed candidates from the target GP's own (outer scale)."""
        s = self.model.scale
        R = self._residual(self.m_fixed, self._kernel(self.fixed))
        return fixed_mu + s * R * self.coef, np.sqrt(fixed_sigma**2 + (s * R) ** 2 / self.A)

    def _kernel(self, Xs: Array) -> Array:
        g = self.model.gp
        return kernel(Xs, g.X, g.hyper.lengthscales, g.hyper.signal_var, g.kind)

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Posterior mean and latent std at ``Xs`` (outer scale), each (n,)."""
        mu, sigma = self.model.predict(Xs)
        m = self._m(self.meta.predict(Xs)[0])
        R = self.model.scale * self._residual(m, self._kernel(Xs))
        return mu + R * self.coef, np.sqrt(sigma**2 + R**2 / self.A)

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients at one point (outer scale)."""
        mu, sigma, dmu, dsigma = self.model.predict_with_grad(x)
        mu_i, _, dmu_i, _ = self.meta.predict_with_grad(x)
        m = float(self._m(mu_i))
        dm = (self.weights @ dmu_i) / self.m_scale
        g, s = self.model.gp, self.model.scale
        k, dk = kernel_grad_x(x, g.X, g.hyper.lengthscales, g.hyper.signal_var, g.kind)
        R, dR = s * (m - float(k @ self.a)), s * (dm - dk.T @ self.a)
        sd = float(np.sqrt(sigma**2 + R**2 / self.A))
        dsd = (sigma * dsigma + R * dR / self.A) / sd if sd > 1e-12 else np.zeros_like(x)
        return mu + R * self.coef, sd, dmu + dR * self.coef, dsd
