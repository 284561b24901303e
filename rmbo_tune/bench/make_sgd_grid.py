"""Build the ``sgd-grid`` tabular meta-dataset: one linear model trained by SGD, many datasets.

``python -m rmbo_tune.bench.make_sgd_grid --out rmbo_tune/bench/data/sgd-grid --processes 2``
(needs scikit-learn; a few minutes on two cores) writes one CSV per dataset with the columns
``loss, penalty, averaging, class_weight, alpha, value``: the same 216-configuration grid of
a scikit-learn pipeline (standardized features, then ``SGDClassifier``) evaluated on the
datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation,
``value`` = mean balanced accuracy (higher is better).

A seventh family of HPO meta-data, built after every default of the engine was fixed and used
for no choice: the widest search space of the shipped grids (eleven input columns: four
categorical hyperparameters one-hot encoded, beside the log-scaled penalty strength
``alpha`` over six decades), and stochastic training whose result still depends on the
combination (the hinge loss without averaging is noisy at a small ``alpha``, every loss
underfits at a large one).
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "loss": ["hinge", "log_loss", "modified_huber"],
    "penalty": ["l2", "l1", "elasticnet"],
    "averaging": ["none", "asgd"],
    "class_weight": ["none", "balanced"],
    "alpha": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV.

    SGD runs with scikit-learn's defaults otherwise (at most 1000 epochs, the "optimal"
    learning-rate schedule, a fixed seed); a configuration that stops before converging is
    scored as it stands, as a practitioner's run with default settings would be.
    """
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(
        StandardScaler(),
        SGDClassifier(
            loss=config["loss"],
            penalty=config["penalty"],
            alpha=config["alpha"],
            average=config["averaging"] == "asgd",
            class_weight=None if config["class_weight"] == "none" else "balanced",
            random_state=0,
        ),
    )
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
