"""Transfer-learning baselines RGPE and TAF, as acquisitions over the same models.

Notation
--------
T, y_t (T,)
    Target observations on the common output scale.
mu_i, sigma_i
    Meta-task GP i; ``mu_t, sigma_t`` the target GP.
loss(f) = #{(j, k): (f_j < f_k) xor (y_j < y_k)}
    Ranking loss of function values ``f`` at the target inputs.

RGPE (Feurer et al. 2018): weight of model i = share of posterior samples in which it has
the lowest ranking loss over ordered pairs of target observations (ties broken at random);
the target model's loss compares its leave-one-out sample at ``x_j`` with the observed
``y_k``; a meta-task whose median loss exceeds the target's 95th percentile is dropped
(weight dilution prevention). Ensemble ``mu = sum w mu``, ``sigma^2 = sum w^2 sigma^2``,
maximized with the same UCB as RM-GP-UCB so comparisons isolate the weighting.

TAF-R (Wistuba et al. 2018): ``a(x) = (w_t EI_t(x) + sum_i w_i I_i(x)) / (w_t + sum_i w_i)``
with predicted improvements ``I_i(x) = max(mu_i(x) - max_j mu_i(x_j), 0)`` over each
meta-task's predicted incumbent, and Epanechnikov weights
``w_i = 3/4 (1 - (xi_i / rho)^2)`` for ranking discordance ``xi_i <= rho``, ``w_t = 3/4``.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine.acquisition import (
    MetaCache,
    MetaModels,
    Model,
    expected_improvement,
    meta_predictions,
)
from rmbo_tune.engine.gp import GaussianProcess, safe_cholesky
from rmbo_tune.engine.types import Array


def ranking_losses(F: Array, y: Array) -> Array:
    """Ranking losses of samples ``F`` (..., T) against ``y`` (T,); shape ``F.shape[:-1]``."""
    T = len(y)
    upper = np.triu(np.ones((T, T), dtype=bool), 1)
    wrong = (F[..., :, None] < F[..., None, :]) ^ (y[:, None] < y[None, :])
    return (wrong & upper).sum((-2, -1))


def loo_ranking_losses(F: Array, y: Array) -> Array:
    """The target model's ranking losses from leave-one-out samples (Feurer et al. 2018).

    ``F[..., j]`` is a sample of the model fitted without observation j, at ``x_j``; it is
    compared with the *observed* ``y_k`` of every other observation:
    ``#{(j, k), j != k: (F_j < y_k) xor (y_j < y_k)}`` over ordered pairs.
    """
    wrong = (F[..., :, None] < y[None, :]) ^ (y[:, None] < y[None, :])
    off_diagonal = ~np.eye(len(y), dtype=bool)
    return (wrong & off_diagonal).sum((-2, -1))


def rgpe_weights(
    meta: MetaModels,
    target_gp: GaussianProcess,
    X_t: Array,
    y_t: Array,
    *,
    n_samples: int,
    rng: np.random.Generator,
) -> tuple[Array, float]:
    """RGPE weights of the meta-tasks (M,) and of the target model.

    Uniform over all M + 1 models while fewer than 2 target observations exist.
    """
    M = meta.n_tasks  # type: ignore[attr-defined]
    T = len(y_t)
    if T < 2:
        return np.full(M, 1.0 / (M + 1)), 1.0 / (M + 1)
    mu, cov = meta.joint_posterior(X_t)  # type: ignore[attr-defined]
    losses = np.empty((M + 1, n_samples))
    for i in range(M):
        L = safe_cholesky(cov[i] + 1e-10 * np.eye(T))
        F = mu[i][None, :] + rng.standard_normal((n_samples, T)) @ L.T
        losses[i] = 2 * ranking_losses(F, y_t)  # ordered pairs, as the target's loss
    loo_mu, loo_var = target_gp.loo()
    F = loo_mu + np.sqrt(loo_var) * rng.standard_normal((n_samples, T))
    losses[M] = loo_ranking_losses(F, y_t)
    threshold = np.percentile(losses[M], 95)
    dropped = np.median(losses[:M], axis=1) > threshold
    losses[:M][dropped] = np.inf
    jittered = losses + rng.uniform(0.0, 0.5, size=losses.shape)  # random tie-breaking
    counts = np.bincount(np.argmin(jittered, axis=0), minlength=M + 1)
    w = counts / n_samples
    return w[:M], float(w[M])


class RGPE:
    """UCB on the RGPE ensemble of the meta-task GPs and the target GP."""

    def __init__(
        self,
        target: Model,
        beta: float,
        meta: MetaModels,
        weights: Array,
        target_weight: float,
        cache: MetaCache | None,
    ) -> None:
        self.target, self.beta, self.meta = target, beta, meta
        self.w, self.wt, self.cache = weights, target_weight, cache
        self.used = weights > 0

    def values(self, X: Array, fixed: bool = False) -> Array:
        mu_t, s_t = acq.target_predictions(self.target, X, fixed)
        mean, var = self.wt * mu_t, (self.wt * s_t) ** 2
        if self.used.any():
            mu, s = meta_predictions(self.meta, self.cache, X, fixed)
            mean = mean + self.w @ mu
            var = var + (self.w**2) @ (s**2)
        return mean + self.beta * np.sqrt(var)

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        mu_t, s_t, dmu_t, ds_t = self.target.predict_with_grad(x)
        mean: float | Array = self.wt * mu_t
        var: float | Array = (self.wt * s_t) ** 2
        dmean, dvar = self.wt * dmu_t, 2 * self.wt**2 * s_t * ds_t
        if self.used.any():
            mu, s, dmu, ds = self.meta.predict_with_grad(x)
            mean, dmean = mean + self.w @ mu, dmean + self.w @ dmu
            var, dvar = var + (self.w**2) @ (s**2), dvar + 2 * (self.w**2 * s) @ ds
        sd = np.sqrt(var)
        dsd = dvar / (2 * sd) if sd > 1e-12 else np.zeros_like(x)
        return float(mean + self.beta * sd), dmean + self.beta * dsd


def taf_weights(meta_mu_at_t: Array, y_t: Array, *, bandwidth: float) -> Array:
    """TAF-R Epanechnikov weights (M,) from ranking discordance at the target inputs."""
    M, T = meta_mu_at_t.shape
    if T < 2:
        return np.full(M, 0.75)
    xi = ranking_losses(meta_mu_at_t, y_t) / (T * (T - 1) / 2)
    return np.where(xi < bandwidth, 0.75 * (1.0 - (xi / bandwidth) ** 2), 0.0)


class TAF:
    """The transfer acquisition function TAF-R."""

    def __init__(
        self,
        target: Model,
        best_y: float | None,
        meta: MetaModels,
        weights: Array,
        incumbents: Array,
        cache: MetaCache | None,
    ) -> None:
        self.target, self.best_y, self.meta = target, best_y, meta
        self.w, self.inc, self.cache = weights, incumbents, cache
        self.wt = 0.75 if best_y is not None else 0.0
        self.norm = max(self.wt + float(weights.sum()), 1e-12)

    def values(self, X: Array, fixed: bool = False) -> Array:
        out = np.zeros(len(X))
        if self.best_y is not None:
            ei, _, _ = expected_improvement(
                *acq.target_predictions(self.target, X, fixed), self.best_y
            )
            out += self.wt * ei
        if self.w.any():
            mu = meta_predictions(self.meta, self.cache, X, fixed)[0]
            out += acq.weighted_improvement(self.w, mu, self.inc)
        return out / self.norm

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        val, grad = 0.0, np.zeros_like(x)
        if self.best_y is not None:
            mu, s, dmu, ds = self.target.predict_with_grad(x)
            ei, dei_dmu, dei_ds = expected_improvement(np.array([mu]), np.array([s]), self.best_y)
            val += self.wt * float(ei[0])
            grad += self.wt * (dei_dmu[0] * dmu + dei_ds[0] * ds)
        if self.w.any():
            mu_m, _, dmu_m, _ = self.meta.predict_with_grad(x)
            gain, dgain = acq.weighted_improvement_with_grad(self.w, mu_m, dmu_m, self.inc)
            val += gain
            grad += dgain
        return val / self.norm, grad / self.norm
