"""Build the ``svc-grid`` tabular meta-dataset: one RBF support-vector grid, many datasets.

``python -m rmbo_tune.bench.make_svc_grid --out rmbo_tune/bench/data/svc-grid --processes 2``
(needs scikit-learn; about 5 minutes on one core) writes one CSV per dataset with the
columns ``scaler, class_weight, C, gamma, value``: the same 196-configuration grid of a
scikit-learn pipeline (a feature scaler, then ``SVC`` with an RBF kernel) evaluated on the
datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation,
``value`` = mean balanced accuracy (higher is better).

An eighth family of HPO meta-data, built after every engine default was fixed and used for
no choice: the classic cost-bandwidth problem, whose good configurations lie on a diagonal
ridge of ``log C`` against ``log gamma`` (the two log-scaled columns), beside two
categorical ones (one-hot encoded).
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "scaler": ["minmax", "standard"],
    "class_weight": ["none", "balanced"],
    "C": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0],
    "gamma": [0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.svm import SVC

    scalers = {"minmax": MinMaxScaler(), "standard": StandardScaler()}
    weight = None if config["class_weight"] == "none" else config["class_weight"]
    model = make_pipeline(
        scalers[config["scaler"]],
        SVC(C=config["C"], gamma=config["gamma"], class_weight=weight, max_iter=200_000),
    )
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
