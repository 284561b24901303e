"""Build the ``knn-grid`` tabular meta-dataset: one nearest-neighbour grid, many datasets.

``python -m rmbo_tune.bench.make_knn_grid --out rmbo_tune/bench/data/knn-grid --processes 2``
(needs scikit-learn; a few minutes on two cores) writes one CSV per dataset with the columns
``scaler, metric, weights, n_neighbors, value``: the same 162-configuration grid of a
scikit-learn pipeline (a feature scaler, then ``KNeighborsClassifier``) evaluated on the
datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation,
``value`` = mean balanced accuracy (higher is better).

A fourth family of HPO meta-data, built after the engine's defaults were fixed and kept out
of every choice since: a model with nothing to fit, three categorical hyperparameters
(one-hot encoded, eight of the nine input columns) beside one log-scaled integer.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "scaler": ["none", "minmax", "standard"],
    "metric": ["manhattan", "euclidean", "chebyshev"],
    "weights": ["uniform", "distance"],
    "n_neighbors": [1, 2, 3, 5, 8, 13, 21, 34, 55],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    scalers = {"none": "passthrough", "minmax": MinMaxScaler(), "standard": StandardScaler()}
    model = make_pipeline(
        scalers[config["scaler"]],
        KNeighborsClassifier(
            n_neighbors=config["n_neighbors"], weights=config["weights"], metric=config["metric"]
        ),
    )
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
