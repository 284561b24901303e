"""Function-gap bounds, FTRL meta-weights and the nu schedule (paper section 5).

Notation
--------
t
    Number of target observations so far.
mu_t, sigma_t
    Target GP posterior mean and latent std after t observations.
beta_{t+1}
    Confidence multiplier for the next iteration.
dbar_{i,t} = agg_j max(|y_ij - U_t(x_ij)|, |y_ij - L_t(x_ij)|)
           = agg_j (|y_ij - mu_t(x_ij)| + beta_{t+1} sigma_t(x_ij))
    Estimated function gap of meta-task i (Lemma 2 without the constant noise term, which
    cancels in the weights); ``agg`` is the mean over j by default (the paper's practice,
    section 6) or the max (the theory).
w_i ∝ exp(-eta N sum_{s<=t} dbar_{i,s})
    FTRL with an entropic regularizer (eq. 5); uniform before any target observation.
nu_1 = 1,  nu_{t+1} = nu_t min(r, (sum_i w_i dbar_{i,t})^(-epsilon))
    Overall weight of the meta-tasks; non-increasing, at least geometric decay ``r``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import special

from rmbo_tune.engine.types import Array


def beta_schedule(t: int, dim: int, *, beta: float | None, beta_scale: float) -> float:
    """Confidence multiplier for iteration ``t`` (1-based).

    ``beta`` fixes it; otherwise ``sqrt(beta_scale * dim * log(2 t))``, the form the authors
    ran (with ``beta_scale = 0.2``; the theoretical value is far too large in practice).
    """
    if beta is not None:
        return float(beta)
    return float(np.sqrt(beta_scale * dim * np.log(2.0 * max(t, 1))))


# nu's decay per observation in spaces of up to this many dimensions (the paper's r); in
# wider ones nu falls by that factor per dim / NU_DECAY_DIM observations.
NU_DECAY_R = 0.7
NU_DECAY_DIM = 6


def decay_rate(r: float | None, dim: int) -> float:
    """The minimum decay ``r`` of nu per observation: ``r`` when given; otherwise the
    paper's 0.7 up to six dimensions and ``0.7^(6 / dim)`` beyond, so that nu falls by 0.7
    per ``dim / 6`` observations (0.77 at 8 dimensions, 0.82 at 11).

    A target GP fitted to fewer observations than the space has dimensions knows little
    beyond them, and its confidence bound, wide wherever it has not looked, fills the space
    as a cold GP-UCB would; the meta-tasks' share of the acquisition decays more slowly in
    wide spaces, while meta-tasks that order the target's observations no better than
    chance still make nu fall by ``1.5^(-epsilon)`` (0.75) per observation and misleading
    ones faster. Any constant ``r < 1`` keeps ``nu_t <= r^t``.
    """
    if r is not None:
        return float(r)
    return NU_DECAY_R ** (NU_DECAY_DIM / max(dim, NU_DECAY_DIM))


def function_gaps(
    y_meta: Array,
    task_index: NDArray[np.intp],
    n_tasks: int,
    mu: Array,
    sigma: Array,
    beta: float,
    *,
    aggregation: str = "mean",
) -> Array:
    """Estimated function gaps ``dbar_{i,t}`` of every meta-task, shape (n_tasks,).

    Parameters
    ----------
    y_meta : ndarray of shape (n_meta_obs,)
        Meta-task outputs on the common scale, all tasks concatenated.
    task_index : ndarray of int, shape (n_meta_obs,)
        Task of each output.
    mu, sigma : ndarray of shape (n_meta_obs,)
        Target GP mean and latent std at the meta-task inputs.
    beta : float
        ``beta_{t+1}``.
    aggregation : {"mean", "max"}
    """
    per_obs = np.abs(y_meta - mu) + beta * sigma
    if aggregation == "max":
        out = np.full(n_tasks, -np.inf)
        np.maximum.at(out, task_index, per_obs)
        return out
    counts = np.bincount(task_index, minlength=n_tasks)
    return np.bincount(task_index, weights=per_obs, minlength=n_tasks) / np.maximum(counts, 1)


def ranking_gaps(meta_mu: Array, y: Array, *, scale: float = 3.0) -> Array:
    """Scale-free function gaps from ranking discordance at the target's observations.

    Parameters
    ----------
    meta_mu : ndarray of shape (n_tasks, t)
        Each meta-task's posterior mean at the target's observed inputs.
    y : ndarray of shape (t,)
        The target's observed outputs (any monotone scale).
    scale : float
        Gap of a task that orders every pair wrongly.

    Returns
    -------
    ndarray of shape (n_tasks,)
        ``scale * D_i``, with ``D_i`` the fraction of the target's pairs of observations
        (ties in ``y`` left out) that meta-task i orders the other way, a tie in its
        prediction counting one half; 0 while no pair can be compared.

    Notes
    -----
    The bound of Lemma 2 compares outputs on one scale; on real meta-data (another dataset,
    another training budget) tasks differ in level and spread far more than in shape, and
    the target's uncertainty at the meta-tasks' inputs (``beta sigma_t``, about 2-4 on a
    standardized scale) is the same for every task, so the bound neither separates similar
    from dissimilar tasks nor stays below 1. The discordance compares what transfers, the
    ordering of configurations, at the inputs where the target is actually known, and is
    invariant to monotone rescaling of any task (RGPE and TAF weigh tasks by the same
    count). With ``scale = 3`` a task no better than chance (``D = 1/2``) has gap 1.5, under
    ``r^(-1/epsilon) = 1.67`` for the default ``r = epsilon = 0.7``, so nu keeps its minimum
    decay ``r``; a task worse than chance makes nu fall faster (``D = 1``: ``3^(-0.7) = 0.46``
    per observation).
    """
    meta_mu = np.asarray(meta_mu, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    t = len(y)
    if t < 2:
        return np.zeros(len(meta_mu))
    upper = np.triu(np.ones((t, t), dtype=bool), 1)
    # Compared, not subtracted: the difference of two values near 1e308 overflows.
    sign_y = _order(y[:, None], y[None, :])[upper]  # (P,)
    keep = sign_y != 0
    if not keep.any():
        return np.zeros(len(meta_mu))
    sign_y = sign_y[keep]
    order = _order(meta_mu[:, :, None], meta_mu[:, None, :])[:, upper][:, keep]  # (M, P)
    disagree = 0.5 * (1.0 - order * sign_y)  # 1 wrong, 1/2 tie, 0 right
    return scale * disagree.mean(axis=1)


def _order(a: Array, b: Array) -> Array:
    """``sign(a - b)`` without computing ``a - b``."""
    return (a > b).astype(np.float64) - (a < b)


def comparison_information(p_above: Array, weights: Array, nu: float) -> Array:
    """What comparing the target at each point with a reference point tells about the tasks.

    Parameters
    ----------
    p_above : ndarray of shape (n_tasks, n)
        Each meta-task's probability that a point beats the reference.
    weights : ndarray of shape (n_tasks,)
        Meta-weights on the simplex.
    nu : float
        Overall meta-task weight.

    Returns
    -------
    ndarray of shape (n,)
        The mutual information (nats) between the comparison's outcome and which hypothesis
        holds: the target behaves like meta-task i (probability ``nu w_i``), like the mirror
        image of the tasks' weighted mixture (``(1 - nu) / 2``), or is unrelated to them
        (``(1 - nu) / 2``, a fair coin). Largest where the tasks split, which tells them
        apart, or where they agree with confidence, which tells them from their mirror
        image; smallest where every hypothesis expects a coin flip.
    """
    p_above = np.clip(np.asarray(p_above, dtype=np.float64), 0.0, 1.0)

    def entropy(p: Array) -> Array:
        return special.entr(p) + special.entr(1.0 - p)

    mixture = weights @ p_above
    other = 0.5 * (1.0 - nu)
    outcome = nu * mixture + other * (1.0 - mixture) + other * 0.5
    conditional = nu * (weights @ entropy(p_above)) + other * (entropy(mixture) + np.log(2.0))
    return entropy(outcome) - conditional


@dataclass
class MetaWeightState:
    """Online meta-weights and nu, updated once per target observation.

    Parameters
    ----------
    n_tasks : int
    eta_n : float
        ``eta * N``, the FTRL learning rate times the meta-task size (paper default 1).
    r : float
        Minimum decay factor of nu per observation, in (0, 1).
    epsilon : float
        Aggressiveness of the gap-driven decay of nu, > 0.
    learn_weights : bool
        False keeps uniform weights (the paper's "fixed weights" ablation); nu still adapts.
    nu_floor : float
        Once nu falls below this it is set to 0, the meta-tasks are ignored and gaps are no
        longer computed (they cannot change the acquisition any more).
    """

    n_tasks: int
    eta_n: float = 1.0
    r: float = NU_DECAY_R
    epsilon: float = 0.7
    learn_weights: bool = True
    nu_floor: float = 1e-6
    nu: float = 1.0
    cumulative_gaps: Array = field(default_factory=lambda: np.zeros(0))
    last_gaps: Array = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        if self.cumulative_gaps.size == 0:
            self.cumulative_gaps = np.zeros(self.n_tasks)
            self.last_gaps = np.full(self.n_tasks, np.nan)

    @property
    def log_weights(self) -> Array:
        """Log meta-weights (n_tasks,), normalized with log-sum-exp."""
        if self.n_tasks == 0:
            return np.zeros(0)
        if not self.learn_weights:
            return np.full(self.n_tasks, -np.log(self.n_tasks))
        logits = -self.eta_n * self.cumulative_gaps
        return logits - special.logsumexp(logits)

    @property
    def weights(self) -> Array:
        """Meta-weights on the simplex (n_tasks,)."""
        return np.exp(self.log_weights)

    @property
    def active(self) -> bool:
        """Whether the meta-tasks still influence the acquisition."""
        return self.n_tasks > 0 and self.nu > 0.0

    def update(self, gaps: Array, *, scheduled: bool = True) -> None:
        """Absorb the gaps ``dbar_{., t}`` of one new target observation.

        ``scheduled``: the observation counts as one of the search's iterations (a point it
        suggested; the engine counts given points too once the target's GP is fitted), and
        nu falls by ``min(r, g^-eps)`` for the weighted gap ``g``. An observation the
        search did not choose (given before it started, or evaluated elsewhere) is evidence
        only: nu falls by ``min(1, g^-eps)`` for the tasks' mean gap ``g``, so tasks that
        order the observations no better than chance still lose trust, but the schedule
        ``nu_t <= r^t`` counts the search's iterations, as the paper's regret bound does.
        The mean, not the weighted gap: the weights have just been learned from these same
        pairs and favour the tasks that happened to order them right (half the tasks right
        and half wrong on one pair: weighted gap 0.14, mean 1.5), so nu would hardly move.
        """
        gaps = np.asarray(gaps, dtype=np.float64)
        if gaps.shape != (self.n_tasks,) or not np.all(np.isfinite(gaps)):
            raise ValueError(f"gaps must be {self.n_tasks} finite numbers, got {gaps!r}")
        self.cumulative_gaps = self.cumulative_gaps + gaps
        self.last_gaps = gaps
        gap = float(self.weights @ gaps) if scheduled else float(np.mean(gaps))
        most = self.r if scheduled else 1.0
        # (g)^(-eps) with g <= 0 would be inf or undefined; min(most, .) makes it most.
        decay = most if gap <= 0 else min(most, gap ** (-self.epsilon))
        self.nu *= decay
        if self.nu < self.nu_floor:
            self.nu = 0.0

    def decay(self) -> None:
        """One target observation without meta-tasks: nu falls by ``r``, so that tasks
        joining later (online meta-tasks) still find ``nu_t <= r^t``."""
        self.nu *= self.r
        if self.nu < self.nu_floor:
            self.nu = 0.0

    def add_task(self, cumulative_gap: float) -> None:
        """A meta-task joins with the cumulative gap it is credited with (its weight is then
        the FTRL weight of a task with that loss)."""
        if not np.isfinite(cumulative_gap):
            raise ValueError(f"cumulative_gap must be finite, got {cumulative_gap!r}")
        self.n_tasks += 1
        self.cumulative_gaps = np.append(self.cumulative_gaps, float(cumulative_gap))
        self.last_gaps = np.append(self.last_gaps, np.nan)

    def state_dict(self) -> dict:
        """Plain-number state."""
        return {
            "nu": self.nu,
            "cumulative_gaps": self.cumulative_gaps.tolist(),
            "last_gaps": [None if np.isnan(g) else g for g in self.last_gaps.tolist()],
        }

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict`."""
        self.nu = float(state["nu"])
        self.cumulative_gaps = np.asarray(state["cumulative_gaps"], dtype=np.float64)
        self.n_tasks = len(self.cumulative_gaps)
        self.last_gaps = np.array(
            [np.nan if g is None else g for g in state["last_gaps"]], dtype=np.float64
        )
