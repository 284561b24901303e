"""Build the ``krr-grid`` tabular meta-dataset: kernel ridge regression, many regression tasks.

``python -m rmbo_tune.bench.make_krr_grid --out rmbo_tune/bench/data/krr-grid --processes 2``
(needs scikit-learn; about a minute on two cores) writes one CSV per dataset with the
columns ``kernel, alpha, gamma, value``: a 189-configuration grid of scikit-learn's
``KernelRidge`` (kernel RBF, Laplacian or cubic polynomial ``(gamma x.x' + 1)^3``; ridge
penalty ``alpha`` from 1e-4 to 100, a decade apart; ``gamma`` from 0.001 to 10, half a
decade apart; inputs and target standardized) evaluated on the regression datasets of
:mod:`rmbo_tune.bench.make_mlp_grid` by 3-fold cross-validation, ``value`` = root mean
squared error over the target's standard deviation (lower is better: 1.0 is what predicting
the mean scores). A fit whose error is not finite or exceeds ``DIVERGED`` = 10 is recorded
as ``DIVERGED``, as a failed trial's sentinel is in a user's records.

A fourteenth family of HPO meta-data, built after every engine default was fixed and used for
no choice (a held-out check of the defaults): a model class none of the other families has
(a kernel method with a closed-form fit, no stochastic training), three kernels whose best
bandwidths lie decades apart, a minimized metric, and a polynomial kernel whose large
``gamma`` with a small penalty fits the training folds' noise.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import build
from rmbo_tune.bench.make_mlp_grid import DIVERGED, datasets, relative_rmse, standardized

GRID: dict[str, list] = {
    "kernel": ["rbf", "laplacian", "polynomial"],
    "alpha": [10.0**k for k in range(-4, 3)],
    "gamma": [10.0 ** (-3 + 0.5 * k) for k in range(9)],
}
__all__ = ["DIVERGED", "GRID", "evaluate", "main"]


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Root mean squared error over ``std(y)`` of one configuration by 3-fold CV (mean of
    the folds' errors), ``DIVERGED`` where the error is not finite or larger."""
    from sklearn.kernel_ridge import KernelRidge

    ridge = KernelRidge(
        alpha=float(config["alpha"]),
        kernel=config["kernel"],
        gamma=float(config["gamma"]),
        degree=3,
        coef0=1.0,
    )
    # An ill-conditioned polynomial kernel falls back to least squares with a warning.
    return relative_rmse(standardized(ridge), X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0], datasets)


if __name__ == "__main__":
    main()
