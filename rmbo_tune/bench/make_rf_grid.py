"""Build the ``rf-grid`` tabular meta-dataset: one random-forest grid, many datasets.

``python -m rmbo_tune.bench.make_rf_grid --out rmbo_tune/bench/data/rf-grid --processes 2``
(needs scikit-learn; about 15 minutes on two cores) writes one CSV per dataset with the
columns ``criterion, max_features, max_depth, min_samples_leaf, value``: the same
128-configuration grid of scikit-learn's ``RandomForestClassifier`` (40 trees) evaluated on
the datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation,
``value`` = mean balanced accuracy (higher is better).

A third family of HPO meta-data, built after the engine's defaults were chosen on the SVM
and gradient-boosting grids: another model class (bagged, fully randomized trees rather
than boosting), a categorical hyperparameter (the split criterion, one-hot encoded) beside
integer and fractional ones.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "criterion": ["gini", "entropy"],
    "max_features": [0.1, 0.3, 0.6, 1.0],
    "max_depth": [2, 4, 8, 16],
    "min_samples_leaf": [1, 3, 10, 30],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.ensemble import RandomForestClassifier

    model = RandomForestClassifier(n_estimators=40, n_jobs=1, random_state=0, **config)
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
