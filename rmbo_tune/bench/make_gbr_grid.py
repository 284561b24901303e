"""Build the ``gbr-grid`` tabular meta-dataset: gradient-boosted regression trees, many tasks.

``python -m rmbo_tune.bench.make_gbr_grid --out rmbo_tune/bench/data/gbr-grid --processes 2``
(needs scikit-learn; about 16 minutes on two cores) writes one CSV per dataset with the
columns ``loss, learning_rate, max_depth, subsample, value``: a 225-configuration grid of
scikit-learn's ``GradientBoostingRegressor`` with 50 trees (loss squared error, absolute
error or Huber; learning rate from 0.01 to 1, half a decade apart; depth 1, 2, 3, 5 or 8;
row subsample 0.5, 0.75 or 1) evaluated on the regression datasets of
:mod:`rmbo_tune.bench.make_mlp_grid` by 3-fold cross-validation, ``value`` = root mean
squared error over the target's standard deviation (lower is better: 1.0 is what predicting
the mean scores). A fit whose error is not finite or exceeds ``DIVERGED`` = 10 is recorded as
``DIVERGED``, as a failed trial's sentinel is in a user's records.

A fifteenth family of HPO meta-data, built after every engine default was fixed and used for
no choice (a second held-out check of the defaults, beside the kernel-ridge family): a
boosting model on regression tasks, where the loss is a categorical choice, the learning
rate and depth trade against each other at a fixed number of trees, and a large rate with
deep trees over-fits the training folds.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import build
from rmbo_tune.bench.make_mlp_grid import DIVERGED, datasets, relative_rmse

GRID: dict[str, list] = {
    "loss": ["squared_error", "absolute_error", "huber"],
    "learning_rate": [10.0 ** (-2 + 0.5 * k) for k in range(5)],
    "max_depth": [1, 2, 3, 5, 8],
    "subsample": [0.5, 0.75, 1.0],
}
__all__ = ["DIVERGED", "GRID", "evaluate", "main"]


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Root mean squared error over ``std(y)`` of one configuration by 3-fold CV (mean of
    the folds' errors), ``DIVERGED`` where the error is not finite or larger."""
    from sklearn.ensemble import GradientBoostingRegressor

    model = GradientBoostingRegressor(
        loss=config["loss"],
        learning_rate=float(config["learning_rate"]),
        max_depth=int(config["max_depth"]),
        subsample=float(config["subsample"]),
        n_estimators=50,
        random_state=0,
    )
    return relative_rmse(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0], datasets)


if __name__ == "__main__":
    main()
