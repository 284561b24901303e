"""The target task's GP: its observations, output scaling, hyperparameters and refit schedule.

The GP's Cholesky factor over the observations (and its cross-covariances with a fixed set of
cached points: candidates and, for the "bound" gap, the meta-tasks' inputs) is grown by one
row per observation between hyperparameter refits (:class:`FixedPointFactor`), so that a
``tell`` costs O(t^2) instead of O(t^3) most of the time.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

import numpy as np

from rmbo_tune.engine.gp import (
    FixedPointFactor,
    GPHyperparameters,
    ScaledGP,
    fit_hyperparameters,
    normal_scores,
    standardization,
)
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array

# Hyperparameters are refitted after every observation up to REFIT_ALWAYS_UNTIL, then once
# the observations have grown by REFIT_GROWTH since the last refit; random restarts run when
# a size RESTART_BASE * 2^k was passed. A fit costs O(t^3) per likelihood evaluation:
# refitting at every step would dominate a long search.
REFIT_ALWAYS_UNTIL = 20
REFIT_GROWTH = 1.2
RESTART_BASE = 10
# A failed evaluation is imputed this far (in standardized units) below the worst success.
FAILURE_MARGIN = 1.0


def initial_hyper(
    meta_hypers: list[GPHyperparameters], dim: int, noise_floor: float
) -> GPHyperparameters:
    """The target's hyperparameters until its first fit.

    With meta-tasks: their median length scales (how fast the response varies with each
    parameter, over the tasks that recorded it) but not their signal variance: the
    target's outputs are on a unit scale, and a meta GP fitted to a smooth bowl runs its
    amplitude up to the bound, which would make the target GP wildly uncertain away from
    its first points. Without: the defaults.
    """
    if not meta_hypers:
        return GPHyperparameters.default(dim, noise_floor=noise_floor)
    logs = np.array([h.to_theta() for h in meta_hypers])
    median = GPHyperparameters.from_theta(np.median(logs, axis=0))
    ell = median.lengthscales
    unrecorded = np.array([h.unrecorded for h in meta_hypers])
    if unrecorded.any():
        # Per column, over the tasks that recorded it (the default where none did).
        ell = GPHyperparameters.default(dim).lengthscales
        for j in np.flatnonzero(~unrecorded.all(axis=0)):
            ell[j] = np.exp(np.median(logs[~unrecorded[:, j], j]))
    return GPHyperparameters(ell, 1.0, float(np.clip(median.noise_var, noise_floor, 0.1)))


def warps_at(input_warp: int | str | None, t: int, prior: LogNormalPrior | None) -> bool:
    """Whether the target GP's inputs are warped at ``t`` observations: from the
    ``input_warp``-th, or with "tasks" from the first fit when the meta-tasks gave the
    prior a warp to centre on (without them, never)."""
    if input_warp == "tasks":
        return prior is not None and prior.log_warp_loc is not None
    return input_warp is not None and t >= int(input_warp)


class TargetModel:
    """Observations of the target task and the GP fitted to them.

    Parameters
    ----------
    dim : int
    options : MetaBOOptions
    hyper : GPHyperparameters
        Hyperparameters until the first fit (the meta-tasks' median or neutral defaults).
    prior : LogNormalPrior or None
        Hyperparameter prior of the MAP fits (None: maximum likelihood).
    meta_scale : (float, float) or None
        Location and spread of the meta-tasks' outputs, borrowed by "shared" and (for the
        first observations) "per-task" output scaling; None without meta-tasks.
    cached_points : ndarray of shape (n_cached, dim)
        Points at which the posterior is maintained incrementally; the first ``n_fixed``
        are the candidates, the rest the meta-tasks' inputs.
    n_fixed : int
    tied : sequence of sequences of int
        Groups of columns whose length scales the fits tie (option
        ``onehot_lengthscales="group"``).
    """

    def __init__(
        self,
        dim: int,
        options: MetaBOOptions,
        *,
        hyper: GPHyperparameters,
        prior: LogNormalPrior | None,
        meta_scale: tuple[float, float] | None,
        cached_points: Array,
        n_fixed: int,
        tied: Sequence[Sequence[int]] = (),
    ) -> None:
        self.dim, self.options, self.tied = dim, options, tied
        self.hyper, self.prior, self.meta_scale = hyper, prior, meta_scale
        self.cached_points, self.n_fixed = cached_points, n_fixed
        # Every evaluated point in arrival order; NaN marks a failed evaluation.
        self.X_list: list[Array] = []
        self.y_list: list[float] = []
        # The factor is grown per observation between refits; it was last rebuilt from the
        # first ``factor_base`` observations (kept in the state so that a restored engine
        # grows the very same factor).
        self.factor_base = 0
        self._factor: FixedPointFactor | None = None
        # The factors of shrunk copies (:meth:`shrunk`), by factor, with the base and length
        # scales they were built for: grown by the new observations between suggestions.
        self._shrunk: dict[float, tuple[tuple[int, bytes], FixedPointFactor]] = {}
        self._model: ScaledGP | None = None
        # scaled_y's last result, by the number of observations it was computed from.
        self._scaled: tuple[int, Array] | None = None

    # ------------------------------------------------------------------ data
    @property
    def X_fit(self) -> Array:
        """Inputs the GP is fitted to, failed ones included, shape (n, dim)."""
        return np.array(self.X_list).reshape(-1, self.dim)

    @property
    def failed(self) -> Array:
        """Inputs whose evaluation failed, shape (n_failed, dim)."""
        return self.X_fit[np.isnan(self.y_list)] if self.y_list else self.X_fit

    @property
    def X(self) -> Array:
        """Successfully observed inputs, shape (t, dim)."""
        return self.X_fit[~np.isnan(self.y_list)] if self.y_list else self.X_fit

    @property
    def y(self) -> Array:
        """Successfully observed outputs as told, shape (t,)."""
        y = np.array(self.y_list, dtype=np.float64)
        return y[~np.isnan(y)]

    def add(self, x: Array, y: float) -> None:
        """Record one evaluation, NaN for a failed one (the model is refreshed lazily)."""
        self.X_list.append(x)
        self.y_list.append(y)
        self._model = None

    def remove(self, index: int) -> None:
        """Forget the evaluation at ``index`` of :attr:`X_list` (the factor is rebuilt from
        the observations before it when next used)."""
        del self.X_list[index]
        del self.y_list[index]
        self.factor_base = min(self.factor_base, index)
        self._factor, self._model, self._scaled = None, None, None
        self._shrunk = {}

    def borrows_meta_scale(self) -> bool:
        """Whether the outputs are put on the meta-tasks' scale instead of their own.

        The target's own mean and spread are meaningless for its first few observations,
        which cluster near one optimum when the meta-tasks guide the search: standardizing
        by them makes the GP overconfident away from the cluster. "per-task" scaling borrows
        the meta-tasks' scale until ``min_fit_observations``; "shared" always does.
        """
        if self.meta_scale is None or self.options.output_scaling == "rank":
            return False
        return (
            self.options.output_scaling == "shared"
            or len(self.y_list) < self.options.min_fit_observations
        )

    def scaled_y(self) -> Array:
        """Outputs on the GP's scale (warped and standardized, or on the meta-tasks'), for
        every point of :attr:`X_fit`.

        A failed evaluation counts as worse than every success, by ``FAILURE_MARGIN`` on
        this scale (or at ``-FAILURE_MARGIN`` before any success): the GP learns to avoid
        the region instead of proposing it again.

        The result is kept until the next observation (read-only): every acquisition's
        context and every repeat escalation asks for it again.
        """
        if self._scaled is not None and self._scaled[0] == len(self.y_list):
            return self._scaled[1]
        out = self._scaled_y()
        out.flags.writeable = False
        self._scaled = (len(self.y_list), out)
        return out

    def _scaled_y(self) -> Array:
        y = np.array(self.y_list, dtype=np.float64)
        ok = ~np.isnan(y)
        out = np.full(len(y), -FAILURE_MARGIN)
        if not ok.any():
            return out
        z = y[ok]
        if self.borrows_meta_scale():
            assert self.meta_scale is not None
            c, a = self.meta_scale
            z = (z - c) / a  # the meta-tasks' scale: no warp of its own
        else:
            if self.options.target_warp == "rank" and len(z) > 2:
                z = normal_scores(z)
            loc, scale = standardization(z)
            z = (z - loc) / scale
        out[ok] = z
        out[~ok] = z.min() - FAILURE_MARGIN
        return out

    def _standardization(self, yc: Array) -> tuple[float, float]:
        return (0.0, 1.0) if self.borrows_meta_scale() else standardization(yc)

    def set_meta_scale(self, meta_scale: tuple[float, float] | None) -> None:
        """Replace the meta-tasks' output scale (online meta-tasks changed); outputs that
        borrow it are put on it again when next read."""
        if meta_scale != self.meta_scale:
            self.meta_scale = meta_scale
            self._scaled, self._model = None, None

    def set_cached_points(self, points: Array) -> None:
        """Replace the cached points beyond the first ``n_fixed`` (the meta-tasks' inputs,
        after online meta-tasks changed); the factor is rebuilt when next used."""
        self.cached_points = points
        self._factor, self._model = None, None

    # ------------------------------------------------------------------ GP
    def _base_factor(self, n_points: int) -> FixedPointFactor:
        """The factor of the first ``factor_base`` observations at the first ``n_points``
        cached points, from which :meth:`_grown_factor` grows the rest."""
        return FixedPointFactor(
            self.X_fit[: self.factor_base],
            self.cached_points[:n_points],
            self.hyper,
            kind=self.options.kernel,
        )

    def _grown_factor(self, with_meta_inputs: bool) -> FixedPointFactor:
        n_points = len(self.cached_points) if with_meta_inputs else self.n_fixed
        f = self._factor
        if f is None:
            f = self._base_factor(n_points)
        f.keep_points(n_points)
        for x in self.X_list[f.n_obs :]:
            f.append(x)
        self._factor = f
        return f

    def model(self, with_meta_inputs: bool = False) -> ScaledGP:
        """The GP of the observations, with its output map."""
        if self._model is None:
            yc = self.scaled_y()
            loc, scale = self._standardization(yc)
            gp = self._grown_factor(with_meta_inputs).gp((yc - loc) / scale)
            self._model = ScaledGP(gp, loc, scale)
        return self._model

    def posterior(
        self, pending: Array | None, *, with_meta_inputs: bool
    ) -> tuple[Array, Array, ScaledGP]:
        """Mean and std at the cached points (on the scale of :meth:`scaled_y`) and the GP,
        with the ``pending`` points hallucinated at their posterior mean.

        ``with_meta_inputs`` False drops the meta-tasks' inputs from the cached points (once
        no gaps are computed any more).
        """
        model = self.model(with_meta_inputs)
        factor = self._grown_factor(with_meta_inputs)
        mu, sigma, gp = factor.predict(model.gp, pending)
        return (
            model.loc + model.scale * mu,
            model.scale * sigma,
            ScaledGP(gp, model.loc, model.scale),
        )

    def shrunk(self, factor: float) -> TargetModel:
        """A copy of this model with every length scale divided by ``factor`` (a repeat
        escalation's, option ``escalation``): the same observations and output scaling, its
        own factor, nothing refitted."""
        other = copy.copy(self)
        ell = np.asarray(self.hyper.lengthscales, dtype=np.float64) / factor
        other.hyper = dataclasses.replace(self.hyper, lengthscales=ell)
        # Its posterior is read at the candidates only, not at the meta-tasks' inputs.
        other.cached_points = self.cached_points[: self.n_fixed]
        other._model = None
        # The factor is built from the same base as this model's and grown by the later
        # observations, so the one kept from an earlier suggestion (same base, same length
        # scales) only needs the new ones: the same operations, hence the same numbers.
        key = (self.factor_base, ell.tobytes())
        kept = self._shrunk.get(factor)
        if kept is None or kept[0] != key:
            kept = (key, other._base_factor(other.n_fixed))
            self._shrunk[factor] = kept
        other._factor = kept[1]
        return other

    def refit(self, rng: np.random.Generator) -> None:
        """Refit the hyperparameters if the schedule says so (after each observation)."""
        t, base, opt = len(self.y_list), self.factor_base, self.options
        self._model = None
        if t < opt.min_fit_observations or (t > REFIT_ALWAYS_UNTIL and t < REFIT_GROWTH * base):
            return
        yc = self.scaled_y()
        loc, scale = self._standardization(yc)
        size = RESTART_BASE * 2 ** int(np.log2(t / RESTART_BASE)) if t >= RESTART_BASE else None
        full = t == opt.min_fit_observations or (size is not None and base < size)
        self.hyper = fit_hyperparameters(
            self.X_fit,
            (yc - loc) / scale,
            kind=opt.kernel,
            rng=rng,
            n_restarts=opt.n_restarts if full else 0,
            init=self.hyper,
            noise_floor=opt.noise_floor,
            prior=self.prior,
            warp_inputs=warps_at(opt.input_warp, t, self.prior),
            tied=self.tied,
        )
        self._factor, self.factor_base = None, t
