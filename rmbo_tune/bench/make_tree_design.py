"""Build the ``tree-design`` tabular meta-dataset: one decision tree, many datasets.

``python -m rmbo_tune.bench.make_tree_design --out rmbo_tune/bench/data/tree-design
--processes 2`` (needs scikit-learn; about a minute on two cores) writes one CSV per dataset
with the columns ``criterion, splitter, class_weight, max_depth, min_samples_split,
min_samples_leaf, max_features, ccp_alpha, value``: the same 256 configurations of
scikit-learn's ``DecisionTreeClassifier`` evaluated on the datasets of
:mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation, ``value`` =
mean balanced accuracy (higher is better).

A ninth family of HPO meta-data, built after every default of the engine was fixed and used
for no choice. Unlike the other families it is not a grid: the configurations are a
scrambled Sobol design over eight hyperparameters (:data:`DESIGN`), as a random or
quasi-random search of a Tune space of ranges would leave them, so no two share a value of
a numeric hyperparameter by construction, and the space is the widest of the shipped ones
(three categorical hyperparameters, one-hot, beside five log-scaled numeric ones: eleven
input columns).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import qmc

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

N_CONFIGS = 256
DESIGN_SEED = 2026
CATEGORICAL: dict[str, list[str]] = {
    "criterion": ["gini", "entropy"],
    "splitter": ["best", "random"],
    "class_weight": ["none", "balanced"],
}
# Numeric hyperparameters: (low, high, integer), each sampled log-uniformly.
NUMERIC: dict[str, tuple[float, float, bool]] = {
    "max_depth": (1.0, 32.0, True),
    "min_samples_split": (2.0, 128.0, True),
    "min_samples_leaf": (1.0, 64.0, True),
    "max_features": (0.05, 1.0, False),
    "ccp_alpha": (1e-5, 0.1, False),
}


def _significant(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits - 1}e}")


def design(n: int = N_CONFIGS, seed: int = DESIGN_SEED) -> list[dict[str, Any]]:
    """The configurations: a scrambled Sobol design in the unit cube of the eight
    hyperparameters, each categorical coordinate cut into equal parts and each numeric one
    mapped log-uniformly onto its range (integers rounded, fractions to three significant
    digits)."""
    points = qmc.Sobol(len(CATEGORICAL) + len(NUMERIC), scramble=True, seed=seed).random(n)
    cat, num = points[:, : len(CATEGORICAL)], points[:, len(CATEGORICAL) :]
    bounds = np.log([(low, high) for low, high, _ in NUMERIC.values()])
    numeric = np.exp(qmc.scale(num, bounds[:, 0], bounds[:, 1]))
    configs: list[dict[str, Any]] = []
    for u, x in zip(cat, numeric, strict=True):
        config: dict[str, Any] = {
            key: choices[min(int(v * len(choices)), len(choices) - 1)]
            for (key, choices), v in zip(CATEGORICAL.items(), u, strict=True)
        }
        for (key, (_, _, integer)), v in zip(NUMERIC.items(), x, strict=True):
            config[key] = round(float(v)) if integer else _significant(float(v))
        configs.append(config)
    return configs


DESIGN: list[dict[str, Any]] = design()


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.tree import DecisionTreeClassifier

    params = dict(config)
    weight = params.pop("class_weight")
    model = DecisionTreeClassifier(
        class_weight=None if weight == "none" else "balanced", random_state=0, **params
    )
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, DESIGN, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
