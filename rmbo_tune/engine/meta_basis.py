"""The target GP with the meta-tasks' weighted mean as one more basis function.

Once the overall meta-task weight nu is spent, RM-GP-UCB is GP-UCB on the target alone, and
the earlier tasks no longer tell it anything. This module keeps their shape in the model: their
weighted mean ``m(x)`` (the meta-weights' combination of the meta-task GPs, standardized over
the fixed candidates) as a basis function of the target model, beside an intercept, both
with Gaussian coefficients,

    ``f(x) = g(x) + c + b m(x)``,  ``g ~ GP(0, k)``,  ``c ~ N(0, v)``,  ``b ~ N(0, s2)``,

on the target GP's standardized outputs: a GP with kernel ``k + v + s2 m m^T`` (Rasmussen
and Williams 2006, section 2.7). The data decide ``b``: near 1 when the target follows the
tasks, near 0 when they are unrelated, negative when the target is their mirror image.
With the columns ``H = [1, m]`` scaled to unit-variance coefficients,
``A = I + H(X)^T K^{-1} H(X)``, ``beta_bar = A^{-1} H(X)^T K^{-1} y`` and
``R(x) = H(x) - k(x, X) K^{-1} H(X)``, the posterior is the target GP's plus
``R(x) beta_bar`` in the mean and ``R(x) A^{-1} R(x)^T`` in the variance.

The intercept is there because a search's observations are not a sample of the space: once
they cluster where the tasks' mean is high, ``m(X)`` sits well above its average over the
candidates while the standardized outputs average zero. Without an intercept ``b`` has to
carry that difference in level too and is pulled towards zero, and the model forgets where
the tasks rate the space worst (``docs/algorithm.md``, "What the robust default changes").

With ``task_var`` > 0 (option ``meta_basis_tasks``) each task's deviation from the mean,
``D_i = (mu_i - sum_j w_j mu_j) / scale``, is one more column with coefficient
``N(0, task_var / M)``: the kernel gains ``task_var`` times the tasks' own covariance about
``m``, ``(1/M) sum_i D_i(x) D_i(x')``, the prior that an estimate of the GP from the
earlier tasks gives (Wang et al., NeurIPS 2018; HyperBO, Wang et al. 2024): the target may
depart from the tasks' mean as much, and where, they depart from each other. A target that
follows one task the weights rate low is then within the model's reach, and the bound is
wide where the tasks disagree and the target has not looked.

With ``coefficient_mean`` = 1 and ``bound=False`` (option ``meta_prior_mean``) the model is
a GP whose prior mean is the tasks' mean: ``b ~ N(1, s2)``, so that where the target has not
been observed its mean is ``c + b m`` with ``b`` pulled towards 1 (the posterior's
``beta_bar = A^{-1} (H(X)^T K^{-1} y + prior mean)``, Rasmussen and Williams 2006, eq.
2.42), and the bound is ``g``'s own: the coefficients enter as their posterior mean, an
empirical-Bayes mean function. Their uncertainty, ``R(x) A^{-1} R(x)^T``, grows with
``|m(x) - m(X)|`` and is largest where the tasks rate the space worst when the observations
sit where they rate it best; counted in the bound, it rewards evaluating there.

GP-UCB keeps its guarantee on the new kernel: the RKHS norm of ``f`` under
``k + v + s2 m m^T (+ the tasks' term)`` is at most its norm under ``k``, and a rank-``C``
term (``C`` columns ``H``) adds at most ``log det(I + H(X)^T H(X) / noise) / 2`` to the
maximum information gain.

Pending points (GP-BUCB) are hallucinated at this model's own mean, not at the target GP's:
the coefficients are fitted to the observations alone, the variance shrinks at the pending
inputs. Hallucinating them at ``g``'s mean would hand the coefficients made-up outputs that
disagree with ``m`` exactly where the search is heading.

RM-GP-TS samples the same model (:class:`MetaBasisSample`): the columns are more features,
with N(0, 1) weights, of the random-feature regression that draws the target's function
samples. A flat ``m`` (no information) leaves the target GP unchanged.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from rmbo_tune.engine.acquisition import MetaModels
from rmbo_tune.engine.gp import GaussianProcess, ScaledGP
from rmbo_tune.engine.rff import RFFPosterior
from rmbo_tune.engine.types import Array

# Prior variances of the basis coefficient and of the intercept, on the scale where both the
# target's outputs and ``m`` over the candidates have unit spread.
COEFFICIENT_VAR = 1.0
INTERCEPT_VAR = 1.0
# The coefficient's prior mean with the tasks' mean as the target's prior mean (option
# ``meta_prior_mean``): the target follows the tasks at their spread until it shows otherwise.
PRIOR_MEAN_COEFFICIENT = 1.0
# The tasks' deviations' prior variances ``task_var="evidence"`` chooses among.
TASK_VAR_GRID = (0.0, 0.25, 1.0, 4.0)


def evidence_gain(H: Array, L: Array, alpha: Array) -> float:
    """How much the basis columns ``H`` (n, C; N(0, 1) coefficients) raise the log marginal
    likelihood of a GP with Cholesky factor ``L`` of its kernel matrix and ``alpha = K^-1 y``:
    by Woodbury and the determinant lemma, ``(H^T alpha)^T A^-1 (H^T alpha) / 2 - log det A
    / 2`` with ``A = I + H^T K^-1 H``."""
    a = linalg.cho_solve((L, True), H, check_finite=False)
    A = linalg.cho_factor(np.eye(H.shape[1]) + H.T @ a, lower=True)
    b = H.T @ alpha
    return float(b @ linalg.cho_solve(A, b) - 2.0 * np.log(np.diag(A[0])).sum()) / 2.0


class _Basis:
    """The basis columns: the intercept, ``m`` (the meta-weights' mean of the meta-task
    means, standardized over the fixed candidates: a flat mean carries nothing, spread 1
    leaves it near zero) and, with ``task_var`` > 0, each task's deviation from ``m`` on
    the same scale. Each column is scaled by its prior spread ``sd`` so that the
    coefficients are N(0, 1); a flat ``m`` gets none (the target GP stays as it is).
    ``task_var="evidence"`` takes the value of :data:`TASK_VAR_GRID` under which the
    observations ``evidence`` (the observed target GP) are the most likely."""

    def __init__(
        self,
        meta: MetaModels,
        weights: Array,
        fixed_meta_mu: Array,
        coefficient_var: float,
        task_var: float | str = 0.0,
        evidence: GaussianProcess | None = None,
    ) -> None:
        self.meta, self.weights = meta, weights
        m_fixed = weights @ fixed_meta_mu
        spread = float(m_fixed.std())
        flat = spread <= 1e-9
        self.loc, self.scale = float(m_fixed.mean()), 1.0 if flat else spread
        choose = task_var == "evidence"
        q = 1.0 if choose else float(task_var)
        self.tasks = q > 0.0 and not flat and len(weights) > 1
        sd = [0.0, 0.0] if flat else [np.sqrt(INTERCEPT_VAR), np.sqrt(coefficient_var)]
        if self.tasks:
            # Each task's deviation from the weighted mean with variance q / M: the term's
            # prior covariance is q times the tasks' covariance around m.
            sd += [np.sqrt(q / len(weights))] * len(weights)
        self.sd = np.asarray(sd)
        self.task_var = q if self.tasks else 0.0
        if choose and self.tasks:
            if evidence is None:
                raise ValueError('task_var="evidence" needs the observed target GP')
            self._choose(evidence)
        self.fixed = self.of_means(fixed_meta_mu)

    def _choose(self, gp: GaussianProcess) -> None:
        """Set the deviations' variance to the grid value the observations favour."""
        H1 = self.at(gp.X)  # deviations at unit variance
        gains = []
        for q in TASK_VAR_GRID:
            c = np.ones(H1.shape[1])
            c[2:] = np.sqrt(q)
            gains.append(evidence_gain(H1 * c, gp.L, gp.alpha))
        q = TASK_VAR_GRID[int(np.argmax(gains))]
        self.task_var = q
        if q == 0.0:
            self.tasks, self.sd = False, self.sd[:2]
        else:
            self.sd[2:] *= np.sqrt(q)

    def of_means(self, meta_mu: Array) -> Array:
        """The scaled columns from the meta-task means (M, n): (n, C)."""
        mw = self.weights @ meta_mu
        cols = [np.ones_like(mw), (mw - self.loc) / self.scale]
        if self.tasks:
            cols.extend((meta_mu - mw) / self.scale)
        return np.column_stack(cols) * self.sd

    def at(self, X: Array) -> Array:
        """The scaled columns at ``X``: (n, C)."""
        return self.of_means(self.meta.means(X))

    def with_grad(self, x: Array) -> tuple[Array, Array]:
        """The scaled columns at one point (C,) and their gradients (d, C)."""
        mu_i, _, dmu_i, _ = self.meta.predict_with_grad(x)
        dmw = self.weights @ dmu_i
        grads = [np.zeros_like(dmw), dmw / self.scale]
        if self.tasks:
            grads.extend((dmu_i - dmw) / self.scale)
        return self.of_means(mu_i[:, None])[0], np.column_stack(grads) * self.sd


def _coefficients(
    gp: GaussianProcess,
    H: Array,
    basis: _Basis,
    coefficient_mean: float,
    known: tuple[Array, tuple[Array, bool]] | None = None,
) -> tuple[Array, Array]:
    """``K^-1 H`` and the coefficients' posterior mean ``beta_bar`` (unit scale) from the
    observations of ``gp`` (its first ``n_obs`` rows of ``H``); ``known``: ``K^-1 H`` and
    the Cholesky factor of ``I + H^T K^-1 H`` when the caller has them."""
    H = H[: gp.n_obs]
    if known is not None:
        a, A_chol = known
    else:
        a = linalg.cho_solve((gp.L, True), H, check_finite=False)
        A_chol = linalg.cho_factor(np.eye(H.shape[1]) + H.T @ a, lower=True)
    # The coefficients' prior mean on their unit scale (none for a flat m: no column).
    prior_mean = np.zeros(H.shape[1])
    if basis.sd[1] > 0.0:
        prior_mean[1] = coefficient_mean / basis.sd[1]
    return a, linalg.cho_solve(A_chol, H.T @ gp.alpha + prior_mean)


class MetaBasisGP:
    """The posterior of ``g + c + b m`` (module docstring) from the target GP ``model``.

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
    observed : ScaledGP, optional
        The target GP of the observations alone, when ``model`` adds pending points to
        them (its inputs are ``model``'s first rows): the mean is this one's with the basis.
    task_var : float or "evidence"
        Prior variance of the tasks' deviations from ``m`` (module docstring); 0 leaves
        them out; "evidence" takes the value of :data:`TASK_VAR_GRID` under which the
        observations are the most likely.
    coefficient_mean : float
        Prior mean of the coefficient ``b`` (0: the tasks' mean may as well be unrelated;
        :data:`PRIOR_MEAN_COEFFICIENT`: the target's prior mean).
    bound : bool
        Whether the coefficients' uncertainty adds to the standard deviation (False: the
        target GP's own, module docstring).
    """

    def __init__(
        self,
        model: ScaledGP,
        meta: MetaModels,
        weights: Array,
        fixed: Array,
        fixed_meta_mu: Array,
        coefficient_var: float = COEFFICIENT_VAR,
        observed: ScaledGP | None = None,
        task_var: float | str = 0.0,
        coefficient_mean: float = 0.0,
        bound: bool = True,
    ) -> None:
        self.model = model
        g = model.gp
        o = g if observed is None else observed.gp
        self.basis = _Basis(meta, weights, fixed_meta_mu, coefficient_var, task_var, o)
        H = self.basis.at(g.X)
        C = H.shape[1]
        self.a = linalg.cho_solve((g.L, True), H, check_finite=False)  # K^-1 H, (n, C)
        self._A_chol = linalg.cho_factor(np.eye(C) + H.T @ self.a, lower=True)
        # The mean's terms, from the observations alone (the first n_obs rows).
        self.n_obs = o.n_obs
        if self.n_obs < g.n_obs:
            self.a_obs, self.beta_bar = _coefficients(o, H, self.basis, coefficient_mean)
        else:  # no pending points: g's own factors
            known = (self.a, self._A_chol)
            self.a_obs, self.beta_bar = _coefficients(g, H, self.basis, coefficient_mean, known)
        self.coef = float(self.beta_bar[1] * self.basis.sd[1])  # b_bar
        self.fixed, self.bound = fixed, bound

    def _add(self, columns: Array, Ks: Array) -> tuple[Array, Array]:
        """Mean and variance the basis adds at rows of basis ``columns`` (n, C) with
        cross-kernel ``Ks`` to the GP's inputs (outer scale)."""
        s = self.model.scale
        R = columns - Ks @ self.a  # (n, C)
        R_obs = R if self.n_obs == len(self.a) else columns - Ks[:, : self.n_obs] @ self.a_obs
        if not self.bound:
            return s * (R_obs @ self.beta_bar), np.zeros(len(R))
        v = linalg.cho_solve(self._A_chol, R.T)  # (C, n)
        return s * (R_obs @ self.beta_bar), s**2 * np.einsum("ij,ji->i", R, v)

    def fixed_predictions(self, fixed_mu: Array, fixed_sigma: Array) -> tuple[Array, Array]:
        """Mean and std at the fixed candidates from the target GP's own (outer scale)."""
        dm, dv = self._add(self.basis.fixed, self.model.gp.cross(self.fixed))
        return fixed_mu + dm, np.sqrt(fixed_sigma**2 + dv)

    def predict(self, Xs: Array) -> tuple[Array, Array]:
        """Posterior mean and latent std at ``Xs`` (outer scale), each (n,)."""
        Ks = self.model.gp.cross(Xs)
        mu, sigma = self.model.predict(Xs, Ks)
        dm, dv = self._add(self.basis.at(Xs), Ks)
        return mu + dm, np.sqrt(sigma**2 + dv)

    def predict_with_grad(self, x: Array) -> tuple[float, float, Array, Array]:
        """Mean, std and their gradients at one point (outer scale)."""
        k, dk = self.model.gp.cross_with_grad(x)
        mu, sigma, dmu, dsigma = self.model.predict_with_grad(x, (k, dk))
        h, dh = self.basis.with_grad(x)
        s = self.model.scale
        R, dR = s * (h - k @ self.a), s * (dh - dk.T @ self.a)  # (C,), (d, C)
        n = self.n_obs
        R_obs, dR_obs = s * (h - k[:n] @ self.a_obs), s * (dh - dk[:n].T @ self.a_obs)
        mean, dmean = mu + float(R_obs @ self.beta_bar), dmu + dR_obs @ self.beta_bar
        if not self.bound:
            return mean, sigma, dmean, dsigma
        v = linalg.cho_solve(self._A_chol, R)
        sd = float(np.sqrt(sigma**2 + R @ v))
        dsd = (sigma * dsigma + dR @ v) / sd if sd > 1e-12 else np.zeros_like(x)
        return mean, sd, dmean, dsd


class MetaBasisSample:
    """One function sample of ``g + c + b m`` (module docstring), RM-GP-TS's target branch.

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
    n_observed : int, optional
        How many of ``model``'s inputs are observations; the rest are pending points,
        hallucinated at this model's own mean.
    task_var : float or "evidence"
        As for :class:`MetaBasisGP`.
    observed : ScaledGP, optional
        The target GP of the observations alone ("evidence" weighs them only).
    coefficient_mean : float or None
        None: the coefficients are sampled with ``g`` (prior mean 0). A number: the prior
        mean of ``b`` (option ``meta_prior_mean``), and the coefficients are taken at their
        posterior mean, as :class:`MetaBasisGP` with ``bound=False`` takes them: ``g`` is
        sampled from the GP of the residuals ``y - H(X) beta_bar``, so the sample's mean is
        that model's mean and its spread the target GP's own.
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
        n_observed: int | None = None,
        task_var: float | str = 0.0,
        observed: ScaledGP | None = None,
        coefficient_mean: float | None = None,
    ) -> None:
        o = model.gp if observed is None else observed.gp
        self.basis = _Basis(meta, weights, fixed_meta_mu, COEFFICIENT_VAR, task_var, o)
        columns = self.basis.at(model.gp.X)
        C = columns.shape[1]
        if coefficient_mean is not None:
            self.basis_w = _coefficients(o, columns, self.basis, coefficient_mean)[1]
            self.post = RFFPosterior(
                model,
                n_features=n_features,
                rng=rng,
                n_observed=n_observed,
                offset=columns @ self.basis_w,
            )
            self.w = self.post.sample_weights(rng, scale=scale)[0]
        else:
            # The basis columns as more features with unit normal weights: N(0, v), N(0, s2)
            # and N(0, task_var / M) coefficients.
            self.post = RFFPosterior(
                model, n_features=n_features, rng=rng, basis=columns, n_observed=n_observed
            )
            w = self.post.sample_weights(rng, scale=scale)[0]
            self.w, self.basis_w = w[:-C], w[-C:]
        self.intercept, self.coef = (float(v) for v in self.basis_w[:2] * self.basis.sd[:2])

    def values(self, X: Array, fixed: bool = False) -> Array:
        """The sample at ``X`` (``fixed``: ``X`` is the fixed candidate set)."""
        H = self.basis.fixed if fixed else self.basis.at(X)
        return self.post.evaluate(X, self.w) + self.post.scale * (H @ self.basis_w)

    def value_and_grad(self, x: Array) -> tuple[float, Array]:
        """The sample and its gradient at one point."""
        val, grad = self.post.evaluate_with_grad(x, self.w)
        h, dh = self.basis.with_grad(x)
        s = self.post.scale
        return val + s * float(h @ self.basis_w), grad + s * (dh @ self.basis_w)
