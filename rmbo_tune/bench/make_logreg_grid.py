"""Build the ``logreg-grid`` tabular meta-dataset: one logistic-regression grid, many datasets.

``python -m rmbo_tune.bench.make_logreg_grid --out rmbo_tune/bench/data/logreg-grid
--processes 2`` (needs scikit-learn; about 10 minutes on two cores, most of it ``digits``,
whose L1 fits with a large ``C`` are slow) writes one CSV per dataset
with the columns ``scaler, penalty, class_weight, C, value``: the same 108-configuration grid
of a scikit-learn pipeline (a feature transform, then ``LogisticRegression`` with the
liblinear solver, one-vs-rest) evaluated on the datasets of
:mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation, ``value`` = mean
balanced accuracy (higher is better).

A sixth family of HPO meta-data, built after every default of the engine was fixed and used
for no choice: a linear model with one continuous hyperparameter, the inverse regularization
``C`` (log-scaled over eight decades), which saturates at both ends (a strong L1 penalty
predicts one class, a weak penalty L1 or L2 the same unregularized fit),
beside three categorical ones (one-hot encoded): the feature transform, the L1 or L2 penalty
and the class weighting, which matters on the imbalanced datasets.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "scaler": ["none", "standard", "quantile"],
    "penalty": ["l1", "l2"],
    "class_weight": ["none", "balanced"],
    "C": [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3, 1e4],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV.

    liblinear stops after scikit-learn's default 100 iterations: a configuration that needs
    more (an L1 penalty with a large ``C``) is scored as it stands, as a practitioner's run
    with default settings would be.
    """
    import sklearn
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import QuantileTransformer, StandardScaler

    scalers = {
        "none": "passthrough",
        "standard": StandardScaler(),
        "quantile": QuantileTransformer(
            n_quantiles=100, output_distribution="normal", random_state=0
        ),
    }
    # scikit-learn 1.8 names the penalty by l1_ratio and deprecates penalty=.
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    if (major, minor) >= (1, 8):
        penalty = {"l1_ratio": 1.0 if config["penalty"] == "l1" else 0.0}
    else:
        penalty = {"penalty": config["penalty"]}
    model = make_pipeline(
        scalers[config["scaler"]],
        OneVsRestClassifier(
            LogisticRegression(
                C=config["C"],
                class_weight=None if config["class_weight"] == "none" else "balanced",
                solver="liblinear",
                max_iter=100,
                random_state=0,
                **penalty,
            )
        ),
    )
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
