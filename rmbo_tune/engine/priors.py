"""Priors on GP hyperparameters: type-II maximum a posteriori instead of maximum likelihood.

Notation
--------
theta = [log ell (d), log s2, log noise]
    Hyperparameters in log space, of a GP on standardized outputs in the unit cube.
log p(theta) = sum_k log N(theta_k; m_k, s_k^2)
    Independent normal priors in log space (log-normal on ell, s2 and noise).

Why: maximum likelihood on a handful of observations chosen by the search itself (clustered
near one optimum, often on a grid) drives the noise to its floor and the length scales to
their bounds: a length scale of 0.02 on a binary column, 13 on a smooth one. The GP then
interpolates, is over-confident away from its data, and GP-UCB stalls. A weak prior keeps
the estimates in a plausible range until the data say otherwise, as Optuna's GP sampler and
BoTorch's default models do.

The length-scale prior's median grows as ``sqrt(d)`` (Hvarfner, Hellsten and Nardi, ICML
2024): in more dimensions, a function of the same complexity has longer length scales per
dimension. Its median ``0.5 sqrt(d)`` and log-space spread 1.0 put 0.07-3.7 within two
standard deviations in 1-D and 0.17-9.1 in 6-D. The noise prior (median 0.01 of the
standardized variance, spread 1.5) lets the data choose between a deterministic table and
a noisy training run, and the signal-variance prior keeps standardized outputs near unit
variance.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from rmbo_tune.engine.types import Array, Mask

# Prior spread of the input warp's log a and log b, as BoTorch's input warping
# (LogNormal(0, 0.75^0.5)).
WARP_PRIOR_SCALE = float(np.sqrt(0.75))


@dataclass(frozen=True)
class LogNormalPrior:
    """Independent normal priors on ``theta = [log ell (d), log s2, log noise]``.

    Parameters
    ----------
    log_ell_loc : float or tuple of float
        Mean of every ``log ell_k``, or one mean per dimension.
    log_ell_scale : float
        Standard deviation of every ``log ell_k``.
    log_s2_loc, log_s2_scale : float
        Of ``log s2``.
    log_noise_loc, log_noise_scale : float
        Of ``log noise``.
    log_warp_loc : tuple of float, optional
        Means of the input warp's ``[log a (d), log b (d)]`` when the GP's inputs are warped
        (None: 0, the identity).
    log_warp_scale : float
        Standard deviation of each ``log a`` and ``log b`` (BoTorch's input warping:
        ``0.75^0.5``).
    """

    log_ell_loc: float | tuple[float, ...]
    log_ell_scale: float = 1.0
    log_s2_loc: float = 0.0
    log_s2_scale: float = 1.0
    log_noise_loc: float = float(np.log(1e-2))
    log_noise_scale: float = 1.5
    log_warp_loc: tuple[float, ...] | None = None
    log_warp_scale: float = WARP_PRIOR_SCALE

    @classmethod
    def default(cls, dim: int) -> LogNormalPrior:
        """The engine's default prior for ``dim`` input dimensions (module docstring)."""
        return cls(log_ell_loc=float(np.log(0.5) + 0.5 * np.log(dim)))

    @classmethod
    def centred_on(cls, log_lengthscales: Array, base: LogNormalPrior) -> LogNormalPrior:
        """``base`` with its length-scale means moved to ``log_lengthscales`` (d,)."""
        return dataclasses.replace(
            base, log_ell_loc=tuple(float(v) for v in np.asarray(log_lengthscales))
        )

    def restricted(self, columns: Mask) -> LogNormalPrior:
        """This prior on the dimensions ``columns`` (boolean mask) only."""
        columns = np.asarray(columns, dtype=bool)
        ell = self.log_ell_loc
        if not isinstance(ell, float | int):
            ell = tuple(float(v) for v in np.asarray(ell)[columns])
        warp = self.log_warp_loc
        if warp is not None:
            warp = tuple(float(v) for v in np.asarray(warp).reshape(2, -1)[:, columns].ravel())
        return dataclasses.replace(self, log_ell_loc=ell, log_warp_loc=warp)

    def centred_warp(self, log_warp: Array, scale: float) -> LogNormalPrior:
        """This prior with the input warp's means at ``log_warp`` (2, d) and spread
        ``scale``."""
        loc = tuple(float(v) for v in np.asarray(log_warp).ravel())
        return dataclasses.replace(self, log_warp_loc=loc, log_warp_scale=scale)

    def log_warp_density(self, log_warp: Array) -> tuple[float, Array]:
        """Log prior density of the warp's ``[log a, log b]`` (flat, 2 d) and its gradient."""
        if len(log_warp) == 0 or self.log_warp_loc is None:
            loc: Array | float = 0.0
        else:
            loc = np.asarray(self.log_warp_loc)
        z = (log_warp - loc) / self.log_warp_scale
        return -0.5 * float(z @ z), -z / self.log_warp_scale

    def _loc_scale(self, dim: int) -> tuple[Array, Array]:
        ell = np.broadcast_to(np.asarray(self.log_ell_loc, dtype=np.float64), (dim,))
        loc = np.concatenate([ell, [self.log_s2_loc, self.log_noise_loc]])
        scale = np.concatenate(
            [np.full(dim, self.log_ell_scale), [self.log_s2_scale, self.log_noise_scale]]
        )
        return loc, scale

    def log_density(self, theta: Array, weights: Array | None = None) -> tuple[float, Array]:
        """Log prior density of ``theta`` (up to a constant) and its gradient; with
        ``weights``, each entry's term multiplied by its weight (length scales tied in
        groups, each member weighing ``1 / group size``)."""
        loc, scale = self._loc_scale(len(theta) - 2)
        z = (theta - loc) / scale
        if weights is None:
            return -0.5 * float(z @ z), -z / scale
        return -0.5 * float((weights * z) @ z), -weights * z / scale
