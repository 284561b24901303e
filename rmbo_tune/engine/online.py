"""Online meta-tasks: meta-tasks of the current search that gain observations while it runs.

The results of the current search at a lower fidelity (an early-stopping scheduler's rungs:
every trial's value after 1, 3, 9 epochs) are another task, correlated with the target
(the full-fidelity results) but not equal to it. Treated as a meta-task, such a level gets
what every meta-task gets: a GP, a meta-weight learned from how well it ranks the target's
observations, and the overall weight nu that decays to 0 if it misleads.

An online task differs from an earlier experiment's task in two ways. Its data are replaced
between asks (a level gains a trial each time one reaches it), so its GP is rebuilt at the
next ask, its hyperparameters refitted once it has grown by ``REFIT_GROWTH`` since their last
fit (a rebuild with known hyperparameters is one Cholesky factorization). And it may join
after target observations were made: it then enters the meta-weights with the ranking gaps
it would have accrued had it been present from the first observation, so that a late task
is neither favoured nor penalized for arriving late.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rmbo_tune.engine.meta_weights import ranking_gaps
from rmbo_tune.engine.types import Array

REFIT_GROWTH = 1.2


@dataclass
class OnlineTask:
    """Bookkeeping of one online meta-task.

    Attributes
    ----------
    name : str
        The caller's name for it (for example ``"training_iteration=3"``).
    index : int
        Its position among the engine's meta-tasks.
    fit_size : int
        Observations at its last hyperparameter fit; 0 before the first.
    """

    name: str
    index: int
    fit_size: int = 0

    def needs_fit(self, n: int) -> bool:
        """Whether ``n`` observations call for a new hyperparameter fit."""
        return self.fit_size == 0 or n >= REFIT_GROWTH * self.fit_size

    def to_dict(self) -> dict[str, Any]:
        """Plain-value form for the engine's state."""
        return asdict(self)


def joining_gap(mu: Array, y: Array) -> float:
    """The cumulative ranking gap of a task joining after ``len(y)`` target observations.

    Parameters
    ----------
    mu : ndarray of shape (t,)
        The joining task's posterior mean at the target's observed inputs, in the order
        they were observed.
    y : ndarray of shape (t,)
        The target's observed outputs, in the same order.

    Returns
    -------
    float
        ``sum_{s=2..t} ranking_gap(mu[:s], y[:s])``: what the task would have accrued had it
        been a meta-task from the start (a single observation has gap 0).
    """
    mu = np.asarray(mu, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return float(sum(ranking_gaps(mu[None, :s], y[:s])[0] for s in range(2, len(y) + 1)))
