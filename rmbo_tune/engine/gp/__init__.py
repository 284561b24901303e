"""Exact Gaussian-process regression with type-II maximum-likelihood hyperparameters.

Modules: :mod:`.linalg` (Cholesky with jitter), :mod:`.likelihood` (hyperparameters, the
log marginal likelihood and its maximization), :mod:`.posterior` (the exact posterior and
its standardized-output wrapper) and :mod:`.factor` (a Cholesky factor grown one
observation at a time). The names the rest of the engine uses are re-exported here.
"""

from rmbo_tune.engine.gp.factor import FixedPointFactor
from rmbo_tune.engine.gp.likelihood import (
    GPHyperparameters,
    fit_hyperparameters,
    log_marginal_likelihood,
)
from rmbo_tune.engine.gp.linalg import safe_cholesky
from rmbo_tune.engine.gp.posterior import (
    GaussianProcess,
    ScaledGP,
    normal_scores,
    standardization,
)

__all__ = [
    "FixedPointFactor",
    "GPHyperparameters",
    "GaussianProcess",
    "ScaledGP",
    "fit_hyperparameters",
    "log_marginal_likelihood",
    "normal_scores",
    "safe_cholesky",
    "standardization",
]
