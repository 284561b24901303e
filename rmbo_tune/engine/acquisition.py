"""Acquisition functions: RM-GP-UCB, RM-GP-TS, GP-UCB, and the pending-point penalty.

Notation
--------
mu_t, sigma_t
    Target GP mean and latent std (pending points hallucinated, GP-BUCB).
mu_i, sigma_i, w_i
    Meta-task i's GP mean, latent std and meta-weight, on the common output scale.
nu, beta, tau
    Meta-task weight, target and meta confidence multipliers.

RM-GP-UCB (paper eq. 2):
    ``a(x) = nu sum_i w_i (mu_i + tau sigma_i) + (1 - nu)(mu_t + beta sigma_t)``
    or ``nu (sum_i w_i mu_i + s_c) + (1 - nu)(mu_t + beta sigma_t)`` with the
    committee's standard deviation ``s_c`` (:func:`committee_std`); in TAF's form (option
    ``meta_term="taf"``) ``nu sum_i w_i max(0, mu_i - inc_i) + (1 - nu) EI_t(x)``.
RM-GP-TS (paper eq. 3): with probability ``1 - nu`` maximize ``f ~ GP(mu_t, beta^2 sigma_t^2)``,
    otherwise ``sum_i w_i f_i`` with ``f_i ~ GP(mu_i, tau^2 sigma_i^2)``.

Every acquisition offers ``values(X, fixed=False)`` (vectorized; ``fixed=True`` says that
``X`` is the engine's fixed candidate set, whose meta-task predictions are cached) and
``value_and_grad(x)`` for gradient polishing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import stats

from rmbo_tune.engine.rff import RFFPosterior
from rmbo_tune.engine.types import Array


class Model(Protocol):
    """What an acquisition needs from a single GP."""

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Mean and latent std at ``Xs``."""
        ...

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients at one point."""
        ...


class MetaModels(Protocol):
    """What an acquisition needs from the stacked meta-task GPs."""

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Means and stds (M, m)."""
        ...

    def means(self, Xs: Array) -> Array:
        """Means (M, m), without the stds."""
        ...

    def predict_with_grad(self, x: Array) -> tuple[Array, Array, Array, Array]:
        """Means, stds (M,) and gradients (M, d) at one point."""
        ...

    @property
    def prior_var(self) -> Array:
        """Each task's prior variance ``k(x, x)`` on the common scale (M,)."""
        ...


class Acquisition(Protocol):
    """The interface the optimizer maximizes."""

    def values(self, X: Array, fixed: bool = False) -> Array:
        """Acquisition values (n,)."""
        ...

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        """Value and gradient (d,) at one point."""
        ...


@dataclass
class MetaCache:
    """Meta-task predictions at the fixed candidate set, computed once per run."""

    mu: Array  # (M, n_fixed)
    sigma: Array  # (M, n_fixed)


class CachedTarget:
    """The target GP with its predictions at the fixed candidate set precomputed (the
    engine maintains them incrementally, see ``FixedPointFactor``)."""

    def __init__(self, model: Model, fixed_mu: Array, fixed_sigma: Array) -> None:
        self.model, self.fixed_mu, self.fixed_sigma = model, fixed_mu, fixed_sigma

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        return self.model.predict(Xs)

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        return self.model.predict_with_grad(x)


def target_predictions(target: Model, X: Array, fixed: bool) -> tuple[Array, Array]:
    """Target mean and std at ``X``: precomputed when ``X`` is the fixed set."""
    if fixed and isinstance(target, CachedTarget):
        return target.fixed_mu, target.fixed_sigma
    return target.predict(X)


def meta_predictions(
    meta: MetaModels, cache: MetaCache | None, X: Array, fixed: bool
) -> tuple[Array, Array]:
    """Meta-task means and stds (M, n) at ``X``: from the cache when ``X`` is the fixed set."""
    if fixed and cache is not None:
        return cache.mu, cache.sigma
    return meta.predict(X)


class UCB:
    """GP-UCB on the target GP: ``mu_t + beta sigma_t`` (Srinivas et al. 2010)."""

    def __init__(self, target: Model, beta: float) -> None:
        self.target, self.beta = target, beta

    def values(self, X: Array, fixed: bool = False) -> Array:
        mu, sigma = target_predictions(self.target, X, fixed)
        return mu + self.beta * sigma

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        mu, sigma, dmu, dsigma = self.target.predict_with_grad(x)
        return mu + self.beta * sigma, dmu + self.beta * dsigma


def expected_improvement(mu: Array, sigma: Array, best: float) -> tuple[Array, Array, Array]:
    """Expected improvement over ``best`` of ``N(mu, sigma^2)``, and its partial derivatives
    in ``mu`` and ``sigma``."""
    s = np.maximum(sigma, 1e-12)
    z = (mu - best) / s
    cdf, pdf = stats.norm.cdf(z), stats.norm.pdf(z)
    return (mu - best) * cdf + s * pdf, cdf, pdf


def weighted_improvement(weights: Array, mu: Array, incumbents: Array) -> Array:
    """``sum_i w_i max(0, mu_i - incumbents_i)`` for task means ``mu`` (M, n): each task's
    predicted improvement over its incumbent, weighted (TAF's meta term)."""
    return weights @ np.maximum(mu - incumbents[:, None], 0.0)


def smoothed_improvement(weights: Array, mu: Array, incumbents: Array, scale: float) -> Array:
    """:func:`weighted_improvement` with each task's difference ``d_i = mu_i - incumbents_i``
    replaced by its expected improvement over zero under a discrepancy ``scale`` between the
    task and the target, less its value at ``d_i = 0``:
    ``sum_i w_i [d_i Phi(d_i / s) + s phi(d_i / s) - s phi(0)]``.

    It is zero where every task expects no change, rises with each ``d_i`` and tends to
    :func:`weighted_improvement` as ``s -> 0`` and to ``sum_i w_i d_i / 2`` (a weighted
    rating) as ``s`` grows, so one task's confident gain counts less where the tasks stray
    far from one another.
    """
    if scale <= 0.0:
        return weighted_improvement(weights, mu, incumbents)
    d = mu - incumbents[:, None]
    z = d / scale
    expected = d * stats.norm.cdf(z) + scale * (stats.norm.pdf(z) - stats.norm.pdf(0.0))
    return weights @ expected


def weighted_improvement_with_grad(
    weights: Array, mu: Array, dmu: Array, incumbents: Array
) -> tuple[float, Array]:
    """:func:`weighted_improvement` at one point (``mu`` (M,), ``dmu`` (M, d)) and its
    gradient."""
    active = (mu > incumbents) * weights
    return float(active @ (mu - incumbents)), active @ dmu


def committee_std(
    weights: Array, sigma: Array, task_var: Array, sigma_t: Array, target_var: float
) -> Array:
    """Standard deviation of the Bayesian committee machine (Tresp 2000) of the meta-task
    GPs and the target GP: how uncertain a model of everything observed so far, by the
    earlier tasks and by the target, still is at each point.

    Each GP contributes the precision it gained over its prior, ``1/sigma^2 - 1/var``; the
    committee's precision is the target's prior precision plus these gains,

        ``1/s_c^2 = 1/v_t + sum_i b_i (1/sigma_i^2 - 1/v_i)_+ + (1/sigma_t^2 - 1/v_t)_+``

    (``v_i``, ``v_t``: the prior variances), with each task's gain counted by its
    meta-weight relative to the largest, ``b_i = w_i / max_j w_j`` (a robust committee,
    Deisenroth and Ng 2015: a task the target has shown to be unrelated adds nothing). Where
    no one has observed, ``s_c`` is the target's prior standard deviation; where many tasks
    or the target have, it is small.

    Parameters
    ----------
    weights : ndarray of shape (M,)
        Meta-weights.
    sigma : ndarray of shape (M, n)
        The tasks' posterior standard deviations.
    task_var : ndarray of shape (M,)
        The tasks' prior variances.
    sigma_t : ndarray of shape (n,)
        The target's posterior standard deviation.
    target_var : float
        The target's prior variance.

    Returns
    -------
    ndarray of shape (n,)
    """
    return _committee_precision(weights, sigma, task_var, sigma_t, target_var)[0] ** -0.5


def _committee_precision(
    weights: Array, sigma: Array, task_var: Array, sigma_t: Array | float, target_var: float
) -> tuple[Array, Array, Array]:
    """The committee's precision, and the factors of its derivative in ``sigma`` (M, ...)
    and ``sigma_t``: ``d prec = -2 sum_i b_i [gain_i > 0] sigma_i^-3 d sigma_i - ...``."""
    top = float(weights.max()) if weights.size else 0.0
    b = weights / top if top > 0.0 else np.zeros_like(weights)
    s = np.maximum(sigma, _MIN_STD)
    gain = s**-2.0 - (1.0 / task_var).reshape((-1,) + (1,) * (s.ndim - 1))
    counts = (gain > 0.0) * b.reshape(gain.shape[:1] + (1,) * (s.ndim - 1))
    st = np.maximum(sigma_t, _MIN_STD)
    gain_t = st**-2.0 - 1.0 / target_var
    prec = 1.0 / target_var + np.einsum("m...,m...->...", counts, gain) + np.maximum(gain_t, 0.0)
    return prec, -2.0 * counts * s**-3.0, -2.0 * (gain_t > 0.0) * st**-3.0


# Standard deviations are floored here before they are inverted (a point observed without
# noise), so that the committee's precision stays finite.
_MIN_STD = 1e-12


class RMUCB:
    """RM-GP-UCB (paper eq. 2); the meta term is skipped once ``nu == 0``.

    With a number ``tau`` the meta term is the weighted mean of the tasks' upper bounds,
    ``sum_i w_i (mu_i + tau sigma_i)`` (the paper: ``tau = 1``); with ``tau=None`` it is the
    weighted mean of the tasks' means plus the committee's standard deviation
    (:func:`committee_std`; ``target_var`` is the target GP's prior variance). With
    ``incumbents`` (option ``meta_term="improvement"`` or ``"taf"``) it is each task's
    predicted improvement over its incumbent, ``sum_i w_i max(0, mu_i(x) - incumbents_i)``.
    With ``best_y`` (``meta_term="taf"``) the target's term is its expected improvement
    over ``best_y`` instead of its upper bound, as in TAF.
    """

    def __init__(
        self,
        target: Model,
        beta: float,
        meta: MetaModels,
        weights: Array,
        nu: float,
        tau: float | None,
        cache: MetaCache | None,
        incumbents: Array | None = None,
        target_var: float = 1.0,
        best_y: float | None = None,
    ) -> None:
        self.ucb = UCB(target, beta)
        self.meta, self.weights, self.nu, self.tau, self.cache = meta, weights, nu, tau, cache
        self.incumbents, self.target_var, self.best_y = incumbents, target_var, best_y

    def values(self, X: Array, fixed: bool = False) -> Array:
        mu_t, sigma_t = target_predictions(self.ucb.target, X, fixed)
        if self.best_y is None:
            out = (1.0 - self.nu) * (mu_t + self.ucb.beta * sigma_t)
        else:
            out = (1.0 - self.nu) * expected_improvement(mu_t, sigma_t, self.best_y)[0]
        if self.nu > 0.0:
            mu, sigma = meta_predictions(self.meta, self.cache, X, fixed)
            if self.incumbents is not None:
                out += self.nu * weighted_improvement(self.weights, mu, self.incumbents)
            elif self.tau is None:
                spread = committee_std(
                    self.weights, sigma, self.meta.prior_var, sigma_t, self.target_var
                )
                out += self.nu * (self.weights @ mu + spread)
            else:
                out += self.nu * (self.weights @ (mu + self.tau * sigma))
        return out

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        mu_t, sigma_t, dmu_t, dsigma_t = self.ucb.target.predict_with_grad(x)
        beta, keep = self.ucb.beta, 1.0 - self.nu
        if self.best_y is None:
            val, grad = keep * (mu_t + beta * sigma_t), keep * (dmu_t + beta * dsigma_t)
        else:
            ei, d_mu, d_sigma = expected_improvement(
                np.array([mu_t]), np.array([sigma_t]), self.best_y
            )
            val, grad = keep * float(ei[0]), keep * (d_mu[0] * dmu_t + d_sigma[0] * dsigma_t)
        if self.nu > 0.0:
            mu, sigma, dmu, dsigma = self.meta.predict_with_grad(x)
            if self.incumbents is not None:
                gain, dgain = weighted_improvement_with_grad(
                    self.weights, mu, dmu, self.incumbents
                )
                val += self.nu * gain
                grad = grad + self.nu * dgain
            elif self.tau is None:
                prec, d_sigma, d_sigma_t = _committee_precision(
                    self.weights, sigma, self.meta.prior_var, sigma_t, self.target_var
                )
                dprec = d_sigma @ dsigma + d_sigma_t * dsigma_t
                val += self.nu * (float(self.weights @ mu) + float(prec) ** -0.5)
                grad = grad + self.nu * (self.weights @ dmu - 0.5 * float(prec) ** -1.5 * dprec)
            else:
                val += self.nu * float(self.weights @ (mu + self.tau * sigma))
                grad = grad + self.nu * (self.weights @ (dmu + self.tau * dsigma))
        return val, grad


class SampledFunction:
    """One RFF posterior sample of the target GP (the RM-GP-TS target branch)."""

    def __init__(self, posterior: RFFPosterior, w: Array) -> None:
        self.posterior, self.w = posterior, w

    def values(self, X: Array, fixed: bool = False) -> Array:
        return self.posterior.evaluate(X, self.w)

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        return self.posterior.evaluate_with_grad(x, self.w)


class WeightedMetaSample:
    """``sum_i w_i f_i`` for meta-task samples ``f_i`` (the RM-GP-TS meta branch).

    The tasks' random features are stacked so that values and gradients are one batched
    computation, not a Python loop over meta-tasks.

    Parameters
    ----------
    posteriors : list of RFFPosterior
        One per meta-task with non-negligible weight.
    ws : ndarray of shape (n_used, m)
        The sampled RFF weights of those tasks.
    weights : ndarray of shape (n_used,)
    fixed_values : ndarray of shape (n_fixed,), optional
        The same sum precomputed at the fixed candidate set.
    """

    def __init__(
        self,
        posteriors: list[RFFPosterior],
        ws: Array,
        weights: Array,
        fixed_values: Array | None,
    ) -> None:
        self.W = np.stack([p.rff.W for p in posteriors])  # (U, m, d)
        self.b = np.stack([p.rff.b for p in posteriors])  # (U, m)
        amp_scale = np.array([p.rff.amp * p.scale for p in posteriors])
        self.coef = (weights * amp_scale)[:, None] * ws  # (U, m)
        self.const = float(
            sum(w * (p.loc + p.scale * p.mean) for w, p in zip(weights, posteriors, strict=True))
        )
        self.fixed_values = fixed_values

    def values(self, X: Array, fixed: bool = False) -> Array:
        if fixed and self.fixed_values is not None:
            return self.fixed_values
        phase = np.einsum("nd,umd->unm", X, self.W) + self.b[:, None, :]
        return self.const + np.einsum("unm,um->n", np.cos(phase), self.coef)

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        phase = self.W @ x + self.b  # (U, m)
        val = self.const + float(np.sum(np.cos(phase) * self.coef))
        return val, -np.einsum("um,umd->d", np.sin(phase) * self.coef, self.W)


class Penalized:
    """An acquisition minus Gaussian bumps at pending points.

    ``a(x) - h sum_p exp(-||(x - p) / rho||^2 / 2)``: keeps a batch of parallel suggestions
    apart even while nu is near 1, when GP-BUCB on the target alone cannot (the meta-task
    terms do not know about pending points). In the spirit of local penalization
    (Gonzalez et al. 2016), additive so that it works for acquisitions of any sign.
    """

    def __init__(
        self,
        base: Acquisition,
        centers: Array,
        rho: Array,
        height: float,
        base_fixed_values: Array | None = None,
    ) -> None:
        self.base, self.centers, self.rho, self.height = base, centers, rho, height
        self.base_fixed_values = base_fixed_values  # the base at the fixed set, if known

    def _bumps(self, X: Array) -> Array:
        z = (X[:, None, :] - self.centers[None, :, :]) / self.rho
        return np.exp(-0.5 * np.einsum("npd,npd->np", z, z))

    def values(self, X: Array, fixed: bool = False) -> Array:
        if fixed and self.base_fixed_values is not None:
            base = self.base_fixed_values
        else:
            base = self.base.values(X, fixed)
        return base - self.height * self._bumps(X).sum(1)

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        val, grad = self.base.value_and_grad(x)
        bumps = self._bumps(x[None, :])[0]  # (p,)
        z = (x[None, :] - self.centers) / self.rho**2
        return val - self.height * bumps.sum(), grad + self.height * (bumps @ z)


def pending_radius(lengthscales: Array) -> Array:
    """The per-dimension radius of the bump around a pending point: half the target's
    length scales, within [0.01, 0.1]."""
    return np.clip(0.5 * lengthscales, 0.01, 0.1)


def penalize(base: Acquisition, fixed: Array, pending: Array, lengthscales: Array) -> Penalized:
    """``base`` with bumps at the ``pending`` points: radius :func:`pending_radius`, height
    the range of ``base`` over the ``fixed`` candidates."""
    values = base.values(fixed, fixed=True)
    finite = values[np.isfinite(values)]
    height = float(finite.max() - finite.min()) if finite.size else 1.0
    return Penalized(base, pending, pending_radius(lengthscales), max(height, 1e-9), values)
