"""Build the ``ada-grid`` tabular meta-dataset: one AdaBoost grid, many datasets.

``python -m rmbo_tune.bench.make_ada_grid --out rmbo_tune/bench/data/ada-grid --processes 2``
(needs scikit-learn; about 12 minutes on two cores) writes one CSV per dataset with the
columns ``class_weight, learning_rate, n_estimators, max_depth, value``: the same
144-configuration grid of scikit-learn's ``AdaBoostClassifier`` (SAMME) over decision trees
evaluated on the datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified
cross-validation, ``value`` = mean balanced accuracy (higher is better). A fold on which
SAMME cannot start, its first tree no better than chance, scores chance level (``1 / K``
for ``K`` classes).

A tenth family of HPO meta-data, built after every engine default was fixed and used for no
choice: boosting's classic trade between the learning rate, the number of rounds and the
weak learner's depth (a small rate needs more rounds or deeper trees), three log-scaled
columns beside the weak learner's class weighting (one-hot encoded).
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "class_weight": ["none", "balanced"],
    "learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
    "n_estimators": [10, 30, 100],
    "max_depth": [1, 2, 4, 8],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    weight = None if config["class_weight"] == "none" else config["class_weight"]
    tree = DecisionTreeClassifier(
        max_depth=int(config["max_depth"]), class_weight=weight, random_state=0
    )
    model = AdaBoostClassifier(
        tree,
        n_estimators=int(config["n_estimators"]),
        learning_rate=float(config["learning_rate"]),
        random_state=0,
    )
    # SAMME cannot start when its first tree is no better than chance (a stump with balanced
    # class weights on an imbalanced problem): such a fold scores chance level, as the
    # constant prediction of a model that never fits would.
    return balanced_accuracy(model, X, y, failed=1.0 / len(np.unique(y)))


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
