"""Build the ``boost2d-grid`` tabular meta-dataset: AdaBoost's rounds against tree depth.

``python -m rmbo_tune.bench.make_boost2d_grid --out rmbo_tune/bench/data/boost2d-grid
--processes 2`` (needs scikit-learn; about 5 minutes on two cores) writes one CSV per
dataset with the columns ``n_estimators, max_depth, value``: a 9 x 12 grid of
scikit-learn's ``AdaBoostClassifier`` (SAMME, learning rate 1) over decision trees, the
number of boosting rounds (1 to 256, doubling) against the trees' depth (1 to 12), evaluated
on the datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified
cross-validation; ``value`` = mean balanced accuracy (higher is better).

An eleventh family of HPO meta-data, and the first of two columns: the shape of Wistuba
et al.'s AdaBoost meta-dataset (108 configurations of rounds against the weak learner's
complexity), where a cold GP-UCB covers the space in a few evaluations and the earlier tasks
have less to add. Built after every engine default was fixed. Every number of rounds of one
depth comes from one fit of 256 rounds (``staged_predict``), as a model trained for fewer
rounds is the same model stopped earlier; SAMME stops by itself when a tree fits its
weighted sample exactly, and the rounds after that score as the last one. A fold on which
SAMME cannot start, its first tree no better than chance, scores chance level.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import build

ROUNDS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
DEPTHS = list(range(1, 13))
GRID: dict[str, list] = {"n_estimators": ROUNDS, "max_depth": DEPTHS}

# Balanced accuracy per number of rounds of the last (dataset, depth) evaluated: the grid
# is walked depth by depth within one worker, so each (dataset, depth) is fitted once.
_STAGED: dict[tuple, dict[int, float]] = {}


def staged_scores(X: np.ndarray, y: np.ndarray, max_depth: int) -> dict[int, float]:
    """Mean balanced accuracy by 3-fold stratified CV (shuffled with seed 0) of AdaBoost
    with trees of ``max_depth``, for every number of rounds in ``ROUNDS``."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.tree import DecisionTreeClassifier

    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    chance = 1.0 / len(np.unique(y))
    scores = np.zeros(len(ROUNDS))
    for train, test in folds.split(X, y):
        model = AdaBoostClassifier(
            DecisionTreeClassifier(max_depth=max_depth, random_state=0),
            n_estimators=ROUNDS[-1],
            learning_rate=1.0,
            random_state=0,
        )
        try:
            model.fit(X[train], y[train])
        except ValueError:
            scores += chance  # SAMME could not start: its first tree is no better than chance
            continue
        staged = [balanced_accuracy_score(y[test], p) for p in model.staged_predict(X[test])]
        scores += [staged[min(r, len(staged)) - 1] for r in ROUNDS]
    return dict(zip(ROUNDS, (scores / 3).tolist(), strict=True))


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration (from its depth's staged fit)."""
    key = (X.shape, float(X.sum()), int(y.sum()), int(config["max_depth"]))
    if key not in _STAGED:
        _STAGED.clear()
        _STAGED[key] = staged_scores(X, y, int(config["max_depth"]))
    return _STAGED[key][int(config["n_estimators"])]


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    grid = [{"n_estimators": r, "max_depth": d} for d in DEPTHS for r in ROUNDS]
    build(argv, grid, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
