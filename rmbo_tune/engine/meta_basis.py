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

RM-GP-TS samples the same model (:class:`MetaBasisSample`): ``m`` is one more feature, with a
N(0, s2) weight, of the random-feature regression that draws the target's function samples.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from rmbo_tune.engine.acquisition import MetaModels
from rmbo_tune.engine.gp import ScaledGP
from rmbo_tune.engine.kernels import kernel, kernel_grad_x
from rmbo_tune.engine.rff import RFFPosterior
from rmbo_tune.engine.types import Array

# Prior variance of the basis coefficient, on the scale where both the target's outputs and
# ``m`` over the candidates have unit spread.
COEFFICIENT_VAR = 1.0


class _Basis:
    """``m``: the meta-weights' mean of the meta-task means, standardized over the fixed
    candidates (a flat mean carries nothing: spread 1 leaves it near zero)."""

    def __init__(self, meta: MetaModels, weights: Array, fixed_meta_mu: Array) -> None:
        self.meta, self.weights = meta, weights
        m_fixed = weights @ fixed_meta_mu
        spread = float(m_fixed.std())
        self.loc, self.scale = float(m_fixed.mean()), spread if spread > 1e-9 else 1.0
        self.fixed = (m_fixed - self.loc) / self.scale

    def of_means(self, meta_mu: Array) -> Array:
        """``m`` from the meta-task means (M, ...)."""
        return (self.weights @ meta_mu - self.loc) / self.scale

    def at(self, X: Array) -> Array:
        """``m`` at ``X``, shape (n,)."""
        return self.of_means(self.meta.predict(X)[0])

    def with_grad(self, x: Array) -> tuple[float, Array]:
        """``m`` and its gradient at one point."""
        mu_i, _, dmu_i, _ = self.meta.predict_with_grad(x)
        return float(self.of_means(mu_i)), (self.weights @ dmu_i) / self.scale


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
        self.model = model
        g = model.gp
        self.basis = _Basis(meta, weights, fixed_meta_mu)
        m_obs = self.basis.at(g.X)
        self.a = linalg.cho_solve((g.L, True), m_obs, check_finite=False)  # K^-1 m(X)
        self.A = 1.0 / coefficient_var + float(m_obs @ self.a)
        self.coef = float(m_obs @ g.alpha) / self.A  # b_bar
        self.fixed = fixed

    def _residual(self, m: Array, Ks: Array) -> Array:
        return m - Ks @ self.a

    def fixed_predictions(self, fixed_mu: Array, fixed_sigma: Array) -> tuple[Array, Array]:
        """Mean and std at the fixed candidates from the target GP's own (outer scale)."""
        s = self.model.scale
        R = self._residual(self.basis.fixed, self._kernel(self.fixed))
        return fixed_mu + s * R * self.coef, np.sqrt(fixed_sigma**2 + (s * R) ** 2 / self.A)

    def _kernel(self, Xs: Array) -> Array:
        g = self.model.gp
        return kernel(Xs, g.X, g.hyper.lengthscales, g.hyper.signal_var, g.kind)

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Posterior mean and latent std at ``Xs`` (outer scale), each (n,)."""
        mu, sigma = self.model.predict(Xs)
        R = self.model.scale * self._residual(self.basis.at(Xs), self._kernel(Xs))
        return mu + R * self.coef, np.sqrt(sigma**2 + R**2 / self.A)

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients at one point (outer scale)."""
        mu, sigma, dmu, dsigma = self.model.predict_with_grad(x)
        m, dm = self.basis.with_grad(x)
        g, s = self.model.gp, self.model.scale
        k, dk = kernel_grad_x(x, g.X, g.hyper.lengthscales, g.hyper.signal_var, g.kind)
        R, dR = s * (m - float(k @ self.a)), s * (dm - dk.T @ self.a)
        sd = float(np.sqrt(sigma**2 + R**2 / self.A))
        dsd = (sigma * dsigma + R * dR / self.A) / sd if sd > 1e-12 else np.zeros_like(x)
        return mu + R * self.coef, sd, dmu + dR * self.coef, dsd


class MetaBasisSample:
    """One function sample of ``g + b m`` (module docstring), RM-GP-TS's target branch.

    Parameters
    ----------
    model : ScaledGP
        The target GP (pending points hallucinated), on the engine's outer scale.
    meta, weights, fixed_meta_mu
        As for :class:`MetaBasisGP`.
    n_features : int
        Random Fourier features of ``g``.
    rng : numpy.random.Generator
    scale : float
        Deviations of the sample from the posterior mean are scaled by this (``beta`` or 1,
        option ``ts_scale``, times a repeat escalation's factor).
    """

    def __init__(
        self,
        model: ScaledGP,
        meta: MetaModels,
        weights: Array,
        fixed_meta_mu: Array,
        *,
        n_features: int,
        rng: np.random.Generator,
        scale: float,
    ) -> None:
        self.basis = _Basis(meta, weights, fixed_meta_mu)
        # The feature sqrt(s2) m has a unit normal weight: a N(0, s2) coefficient of m.
        c = np.sqrt(COEFFICIENT_VAR)
        self.post = RFFPosterior(
            model, n_features=n_features, rng=rng, basis=c * self.basis.at(model.gp.X)
        )
        w = self.post.sample_weights(rng, scale=scale)[0]
        self.w, self.coef = w[:-1], float(w[-1]) * c

    def values(self, X: Array, fixed: bool = False) -> Array:
        """The sample at ``X`` (``fixed``: ``X`` is the fixed candidate set)."""
        m = self.basis.fixed if fixed else self.basis.at(X)
        return self.post.evaluate(X, self.w) + self.post.scale * self.coef * m

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        """The sample and its gradient at one point."""
        val, grad = self.post.evaluate_with_grad(x, self.w)
        m, dm = self.basis.with_grad(x)
        s = self.post.scale * self.coef
        return val + s * m, grad + s * dm
