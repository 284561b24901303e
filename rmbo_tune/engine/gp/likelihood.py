"""GP hyperparameters, the log marginal likelihood and its maximization (type-II ML or MAP).

Notation
--------
X (n, d), y (n,)
    Training inputs in the unit cube and centred outputs of roughly unit scale.
theta = [log ell (d), log s2, log noise]
    Hyperparameters in log space, as optimized; with warped inputs followed by
    ``[log a (d), log b (d)]``, the Kumaraswamy warp's parameters
    (:func:`~rmbo_tune.engine.kernels.kumaraswamy`), and the kernel is taken between the
    warped inputs ``U = w(X)``.
K = k(X, X) + noise I,  L = chol(K),  alpha = K^{-1} y
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize
from scipy.linalg import lapack

from rmbo_tune.engine.gp.linalg import safe_cholesky
from rmbo_tune.engine.kernels import (
    contract_grad_log_ell,
    kernel_from_r2,
    kumaraswamy,
    kumaraswamy_grad_log_params,
    scaled_sqdist,
)
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.types import Array, CholeskyError, Mask

LOG_ELL_BOUNDS = (np.log(1e-2), np.log(20.0))
# A dimension a GP's data do not vary along (a meta-task whose experiment did not search
# that parameter) has an infinite length scale: the kernel is exactly constant along it.
# State dicts write it as this (JSON has no infinity); a fit never reaches it.
UNRECORDED_LENGTHSCALE = 1e6
LOG_S2_BOUNDS = (np.log(5e-2), np.log(20.0))
LOG_WARP_BOUNDS = (-2.0, 2.0)
MAX_NOISE = 1.0
SCREEN_PER_RESTART = 32
SCREEN_MAX_ROWS = 64
# Above this many elements (64 MB) the squared differences are not kept during a fit.
_MAX_DIFFERENCE_ELEMENTS = 8_000_000
_LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class GPHyperparameters:
    """Kernel length scales, signal variance and noise variance.

    Parameters
    ----------
    lengthscales : ndarray of shape (n_dims,)
    signal_var : float
    noise_var : float
    warp : ndarray of shape (2, n_dims), optional
        The Kumaraswamy input warp's ``a`` and ``b`` per dimension
        (:func:`~rmbo_tune.engine.kernels.kumaraswamy`); None: inputs as they are.
    """

    lengthscales: Array
    signal_var: float
    noise_var: float
    warp: Array | None = None

    @property
    def unrecorded(self) -> Mask:
        """Boolean mask of the dimensions the kernel ignores (see :meth:`expanded`)."""
        return np.asarray(self.lengthscales) >= UNRECORDED_LENGTHSCALE

    def expanded(self, recorded: Mask) -> GPHyperparameters:
        """These hyperparameters, fitted on the ``recorded`` (boolean mask) dimensions
        only, as those of the full space: the other dimensions take an infinite length
        scale, so the kernel ignores them (a warp is kept on the recorded dimensions, the
        identity elsewhere)."""
        recorded = np.asarray(recorded, dtype=bool)
        ell = np.full(len(recorded), np.inf)
        ell[recorded] = self.lengthscales
        warp = None
        if self.warp is not None:
            warp = np.ones((2, len(recorded)))
            warp[:, recorded] = self.warp
        return GPHyperparameters(ell, self.signal_var, self.noise_var, warp)

    def inputs(self, X: Array) -> Array:
        """The inputs the kernel is taken between: ``X`` warped, or ``X`` itself."""
        return X if self.warp is None else kumaraswamy(X, self.warp)

    @classmethod
    def default(cls, dim: int, *, noise_floor: float = 1e-6) -> GPHyperparameters:
        """Neutral starting values for standardized outputs in the unit cube."""
        return cls(np.full(dim, 0.3), 1.0, max(1e-3, noise_floor))

    def to_theta(self) -> Array:
        """Pack into ``[log ell, log s2, log noise]`` (and ``log a, log b`` if warped)."""
        parts = [
            np.log(self.lengthscales),
            np.array([np.log(self.signal_var), np.log(self.noise_var)]),
        ]
        if self.warp is not None:
            parts.append(np.log(self.warp).ravel())
        return np.concatenate(parts)

    @classmethod
    def from_theta(cls, theta: Array, *, warped: bool = False) -> GPHyperparameters:
        """Unpack from ``[log ell, log s2, log noise]`` (and ``log a, log b`` if
        ``warped``)."""
        theta = np.asarray(theta, dtype=np.float64)
        d = (len(theta) - 2) // 3 if warped else len(theta) - 2
        warp = np.exp(theta[d + 2 :]).reshape(2, d) if warped else None
        return cls(np.exp(theta[:d]), float(np.exp(theta[d])), float(np.exp(theta[d + 1])), warp)

    def with_identity_warp(self) -> GPHyperparameters:
        """These hyperparameters with the identity warp if they have none."""
        if self.warp is not None:
            return self
        return dataclasses.replace(self, warp=np.ones((2, len(self.lengthscales))))

    def to_dict(self) -> dict:
        """Plain-number form for state dicts."""
        out = {
            "lengthscales": np.minimum(self.lengthscales, UNRECORDED_LENGTHSCALE).tolist(),
            "signal_var": self.signal_var,
            "noise_var": self.noise_var,
        }
        if self.warp is not None:
            out["warp"] = self.warp.tolist()
        return out

    @classmethod
    def from_dict(cls, d: dict) -> GPHyperparameters:
        """Inverse of :meth:`to_dict`."""
        warp = d.get("warp")
        ell = np.asarray(d["lengthscales"], dtype=np.float64)
        return cls(
            np.where(ell >= UNRECORDED_LENGTHSCALE, np.inf, ell),
            d["signal_var"],
            d["noise_var"],
            None if warp is None else np.asarray(warp, dtype=np.float64),
        )


def theta_bounds(
    dim: int, noise_floor: float, *, warped: bool = False
) -> list[tuple[float, float]]:
    """L-BFGS-B bounds on ``theta`` for standardized outputs.

    Parameters
    ----------
    dim : int
        Number of input dimensions.
    noise_floor : float
        Lower bound on the noise variance.
    warped : bool
        With the input warp's ``2 dim`` parameters last.

    Returns
    -------
    list of (float, float)
        ``dim + 2`` (``3 dim + 2`` warped) pairs ``(lo, hi)`` in log space.
    """
    bounds = [LOG_ELL_BOUNDS] * dim + [LOG_S2_BOUNDS, (np.log(noise_floor), np.log(MAX_NOISE))]
    return bounds + [LOG_WARP_BOUNDS] * (2 * dim if warped else 0)


@dataclass(frozen=True)
class Tying:
    """Length scales that share one value: ``theta`` entries in a group are one parameter.

    A categorical parameter encoded one-hot has one column per category; with a length
    scale per column, the distance between two categories depends on which two they are,
    so a category whose column got a short length scale is the least correlated with the
    rest and the widest part of a confidence bound wherever it has not been observed.
    With the group's length scales tied, every two categories are equally far apart: the
    kernel of one length scale per categorical parameter (BoTorch's categorical kernel,
    Optuna's GP sampler), on the same inputs.

    ``position[j]`` is the index of ``theta[j]`` in the reduced vector ``phi`` that the
    optimizer sees (``theta = phi[position]``); an untied entry is its own group.
    """

    position: NDArray[np.intp]

    @classmethod
    def of(cls, n_theta: int, groups: Sequence[Sequence[int]]) -> Tying:
        """The tying of ``n_theta`` entries with each of ``groups`` (indices of length
        scales, each group at least two) sharing a value."""
        rep = np.arange(n_theta)
        for group in groups:
            members = np.asarray(group, dtype=np.intp)
            if len(members) < 2 or members.min() < 0 or members.max() >= n_theta:
                raise ValueError(f"a tied group needs two of 0..{n_theta - 1}, got {group!r}")
            if np.any(rep[members] != members):
                raise ValueError(f"tied groups overlap at {group!r}")
            rep[members] = members.min()
        return cls(np.unique(rep, return_inverse=True)[1])

    @property
    def sizes(self) -> Array:
        """Members of each reduced entry's group (1 where untied), float."""
        return np.bincount(self.position).astype(np.float64)

    def reduce(self, theta: Array) -> Array:
        """``phi`` from ``theta``: the mean over each group's entries."""
        return np.bincount(self.position, weights=theta) / self.sizes

    def expand(self, phi: Array) -> Array:
        """``theta`` from ``phi``."""
        return phi[self.position]

    def gradient(self, grad_theta: Array) -> Array:
        """The gradient with respect to ``phi``: the sum over each group's entries."""
        return np.bincount(self.position, weights=grad_theta).astype(np.float64)

    def prior_weights(self) -> Array:
        """Per ``theta`` entry, ``1 / group size``: each group's prior counts once."""
        return 1.0 / self.sizes[self.position]


def squared_differences(X: Array) -> Array:
    """Per-dimension squared differences ``D[k, i, j] = (x_ik - x_jk)^2``, shape (d, n, n).

    Computed once per hyperparameter fit: every likelihood evaluation then gets
    ``r^2 = sum_k D_k / ell_k^2`` and the length-scale gradients from it.
    """
    diff = X.T[:, :, None] - X.T[:, None, :]
    return diff * diff


def _likelihood(
    theta: Array,
    X: Array,
    y: Array,
    kind: str,
    D: Array | None,
    with_grad: bool,
    warped: bool = False,
) -> tuple[float, Array | None]:
    # LAPACK directly (potrs, potri; potrf in safe_cholesky): the scipy.linalg wrappers'
    # argument checks cost as much as the solves themselves at the sizes of a GP fit.
    n, d = X.shape
    X_raw, warp = X, None
    if warped:
        warp = np.exp(theta[d + 2 :]).reshape(2, d)
        X, D = kumaraswamy(X_raw, warp), None  # the squared differences change with it
    ell = np.exp(theta[:d])
    s2, noise = float(np.exp(theta[d])), float(np.exp(theta[d + 1]))
    D2 = None if D is None else D.reshape(d, n * n)  # a view: (d, n^2)
    if D2 is not None:
        r2 = (ell**-2 @ D2).reshape(n, n)
    else:
        r2 = scaled_sqdist(X, X, ell)
    K, G = kernel_from_r2(r2, s2, kind)
    # K is a fresh array, the noiseless kernel is not kept (for the SE kernel G is K: no
    # gradient term reads G's diagonal, where every squared difference is 0).
    K.ravel()[:: n + 1] += noise
    try:
        L = safe_cholesky(K)
    except CholeskyError:
        return -np.inf, (np.zeros_like(theta) if with_grad else None)
    alpha, _ = lapack.dpotrs(L, y, lower=1)
    lml = -0.5 * float(y @ alpha) - float(np.log(np.diagonal(L)).sum()) - 0.5 * n * _LOG_2PI
    if not with_grad:
        return lml, None
    # The gradient is 1/2 tr(W dK) with W = alpha alpha^T - K^-1 and every dK symmetric, so
    # K^-1 may stand folded onto its lower triangle (off-diagonal entries doubled, the upper
    # triangle zero, as potri leaves it after a clean potrf): the traces are the same, and
    # mirroring the triangle cost a fifth of an evaluation. contract_grad_log_ell needs the
    # symmetric W.
    Kinv, _ = lapack.dpotri(L, lower=1)
    if D2 is not None:
        Kinv *= _fold_mask(n)
    else:
        Kinv = np.tril(Kinv)
        Kinv += np.tril(Kinv, -1).T
    W = np.outer(alpha, alpha)
    W -= Kinv
    grad = np.empty(len(theta))
    trace_w = float(np.trace(W))
    if D2 is not None:
        grad[:d] = 0.5 * (D2 @ (W * G).ravel()) / ell**2
    else:
        WG = W * G
        grad[:d] = 0.5 * contract_grad_log_ell(X, ell, WG)
    grad[d] = 0.5 * (float(np.vdot(W, K)) - noise * trace_w)  # tr(W dK/dlog s2), K noiseless
    grad[d + 1] = 0.5 * noise * trace_w
    if warp is not None:
        # dK_ij/dp = -G_ij sum_k (u_ik - u_jk)(du_ik/dp - du_jk/dp) / ell_k^2 for a warp
        # parameter p of dimension k; with WG symmetric, 1/2 tr(W dK/dp) is
        # -(sum_i u_ik P_ik R_i - sum_ij WG_ij u_ik P_jk) / ell_k^2, R the row sums of WG.
        rows = WG.sum(1)
        for j, P in enumerate(kumaraswamy_grad_log_params(X_raw, warp)):
            part = (X * P).T @ rows - np.einsum("ik,ik->k", X, WG @ P)
            grad[d + 2 + j * d : d + 2 + (j + 1) * d] = -part / ell**2
    return lml, grad


@functools.lru_cache(maxsize=8)
def _fold_mask(n: int) -> Array:
    """2 below the diagonal, 1 on it, 0 above: folds a symmetric matrix's upper triangle
    onto its lower one (read-only; one per size used in a fit)."""
    mask = np.tril(np.full((n, n), 2.0), -1) + np.eye(n)
    mask.setflags(write=False)
    return mask


def _screened_restarts(
    X: Array,
    y: Array,
    kind: str,
    rng: np.random.Generator,
    n_restarts: int,
    first: Array | None,
    lo: Array,
    hi: Array,
    log_prior: Callable[[Array], tuple[float, Array]] | None,
    warped: bool = False,
) -> list[Array]:
    """The random starts worth a gradient-based run: of ``SCREEN_PER_RESTART * n_restarts``
    log-uniform draws inside the bounds, the ``n_restarts`` most likely, keeping only those
    more likely than ``first`` unless it is None (all by value on at most
    ``SCREEN_MAX_ROWS`` rows).

    Why the comparison with ``first``: a restart that screens worse than the first start
    mostly climbs to the same optimum or a worse one. Over the meta-task fits of the latency
    benchmark (60 tasks x 130 observations, D = 8) the default start screened better than
    every draw for all 60 tasks, and the restarts then improved the optimum by more than 0.5
    nats in 3 of them (6 nats in all) at 1.4 times the default run's likelihood evaluations.
    On the SVM, boosting and nearest-neighbour grids' tasks (50 observations; two targets'
    meta-tasks each, 190 fits) a draw screened better for 151, and 11 of the 12 restarts
    that improved an optimum by more than 0.5 nats were among them.
    """
    pool = rng.uniform(lo, hi, size=(SCREEN_PER_RESTART * n_restarts, len(lo)))
    # Screening only ranks starting points: a random subset of a large data set does.
    rows = np.arange(len(X))
    if len(X) > SCREEN_MAX_ROWS:
        rows = np.sort(rng.choice(len(X), SCREEN_MAX_ROWS, replace=False))
    Xs, ys = X[rows], y[rows]
    Ds = None if warped else squared_differences(Xs)

    def screen(theta: Array) -> float:
        value = log_marginal_likelihood_value(theta, Xs, ys, kind, D=Ds, warped=warped)
        return value if log_prior is None else value + log_prior(theta)[0]

    values = np.array([screen(t) for t in pool])
    bar = -np.inf if first is None else screen(np.clip(first, lo, hi))
    order = np.argsort(-values, kind="stable")[:n_restarts]
    return [pool[i] for i in order if values[i] > bar]


def log_marginal_likelihood(
    theta: Array,
    X: Array,
    y: Array,
    kind: str,
    *,
    D: Array | None = None,
    warped: bool = False,
) -> tuple[float, Array]:
    """Log marginal likelihood of centred outputs ``y`` and its gradient in ``theta``.

    Returns ``(-inf, zeros)`` when the covariance cannot be factorized, so that an
    optimizer steps away instead of failing (as scikit-learn does). ``D``: the
    :func:`squared_differences` of ``X``, if already computed (ignored when ``warped``:
    ``theta`` then ends with the input warp's parameters, module docstring).

    Notes
    -----
    ``log p(y) = -1/2 y^T alpha - sum log diag L - n/2 log 2 pi`` and
    ``d log p / d theta_j = 1/2 tr((alpha alpha^T - K^{-1}) dK/dtheta_j)``
    (Rasmussen & Williams 2006, eq. 5.8-5.9).
    """
    lml, grad = _likelihood(theta, X, y, kind, D, with_grad=True, warped=warped)
    assert grad is not None
    return lml, grad


def log_marginal_likelihood_value(
    theta: Array,
    X: Array,
    y: Array,
    kind: str,
    *,
    D: Array | None = None,
    warped: bool = False,
) -> float:
    """:func:`log_marginal_likelihood` without the gradient (-inf if not factorizable)."""
    return _likelihood(theta, X, y, kind, D, with_grad=False, warped=warped)[0]


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
    promising_restarts_only: bool = False,
    warp_inputs: bool = False,
    tied: Sequence[Sequence[int]] = (),
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
    maxiter : int
        L-BFGS-B iterations per start.
    prior : LogNormalPrior, optional
        Maximize the log posterior ``log p(y | theta) + log p(theta)`` (type-II MAP) instead
        of the likelihood alone.
    promising_restarts_only : bool
        Run only the random starts more likely than the first start on the screening rows
        (:func:`_screened_restarts`): where the first start screens better than every random
        one, the restarts rarely find a better optimum and cost as much as the fit itself.
        Used for meta-tasks of more than ``meta_models.ALWAYS_RESTART_ROWS`` observations,
        whose fits dominate the engine's build; smaller tasks and the target keep every
        restart, which costs milliseconds there.
    warp_inputs : bool
        Fit a Kumaraswamy warp of each input dimension too (starting from the identity),
        under ``prior``'s independent normal priors on ``log a`` and ``log b`` (at 0, the
        identity, unless it is centred elsewhere); the result has a ``warp``. False: the
        result has none.
    tied : sequence of sequences of int
        Groups of input dimensions whose length scales are one parameter (:class:`Tying`;
        the columns of one one-hot categorical parameter). Each group's prior term counts
        once; starts are averaged over each group.

    Returns
    -------
    GPHyperparameters
        The best optimum found; ``init`` (or the default) if every start failed.
    """
    dim = X.shape[1]
    bounds = theta_bounds(dim, noise_floor, warped=warp_inputs)
    lo, hi = np.array(bounds).T
    first = GPHyperparameters.default(dim, noise_floor=noise_floor) if init is None else init
    if warp_inputs and first.warp is None and prior is not None and prior.log_warp_loc:
        # Start where the prior is centred (a warp transferred from earlier tasks).
        first = dataclasses.replace(first, warp=np.exp(prior.log_warp_loc).reshape(2, dim))
    first = first.with_identity_warp() if warp_inputs else dataclasses.replace(first, warp=None)
    starts = [first.to_theta()]
    tying = Tying.of(len(lo), tied)
    # A tied group's prior counts once: each member's term weighs 1 / its group's size.
    weights = tying.prior_weights()[: dim + 2] if tied else None
    log_prior = None
    if prior is not None:

        def log_prior(theta: Array) -> tuple[float, Array]:
            lp, grad = prior.log_density(theta[: dim + 2], weights)
            lw, dlw = prior.log_warp_density(theta[dim + 2 :])
            return lp + lw, np.concatenate([grad, dlw])

    if n_restarts > 0:
        starts += _screened_restarts(
            X,
            y,
            kind,
            rng,
            n_restarts,
            starts[0] if promising_restarts_only else None,
            lo,
            hi,
            log_prior,
            warp_inputs,
        )
    small = dim * len(X) ** 2 <= _MAX_DIFFERENCE_ELEMENTS
    D = squared_differences(X) if small and not warp_inputs else None

    def objective(phi: Array) -> tuple[float, Array]:
        theta = tying.expand(phi)
        lml, grad = log_marginal_likelihood(theta, X, y, kind, D=D, warped=warp_inputs)
        if not np.isfinite(lml):
            return 1e25, np.zeros_like(phi)
        if log_prior is not None:
            lp, dlp = log_prior(theta)
            lml, grad = lml + lp, grad + dlp
        return -lml, -tying.gradient(grad)

    lo_phi, hi_phi = tying.reduce(lo), tying.reduce(hi)
    best_phi, best_val = np.clip(tying.reduce(starts[0]), lo_phi, hi_phi), np.inf
    for theta0 in starts:
        res = optimize.minimize(
            objective,
            np.clip(tying.reduce(theta0), lo_phi, hi_phi),
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(lo_phi, hi_phi, strict=True)),
            options={"maxiter": maxiter},
        )
        if np.isfinite(res.fun) and res.fun < best_val:
            best_phi, best_val = res.x, float(res.fun)
    return GPHyperparameters.from_theta(tying.expand(best_phi), warped=warp_inputs)
