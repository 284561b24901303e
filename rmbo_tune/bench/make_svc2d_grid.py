"""Build the ``svc2d-grid`` tabular meta-dataset: RBF SVM cost against bandwidth alone.

``python -m rmbo_tune.bench.make_svc2d_grid --out rmbo_tune/bench/data/svc2d-grid
--processes 2`` (needs scikit-learn; about 2 minutes on two cores) writes one CSV per
dataset with the columns ``C, gamma, value``: a 12 x 9 grid of scikit-learn's ``SVC`` with
an RBF kernel after standard scaling, ``C`` from 0.01 to about 3162 and ``gamma`` from
0.0001 to 100 (both log-spaced: half and three quarters of a decade), evaluated on the
datasets of :mod:`rmbo_tune.bench.make_hgb_grid` by 3-fold stratified cross-validation;
``value`` = mean balanced accuracy (higher is better).

A twelfth family of HPO meta-data, the second of two columns, built after every engine
default was fixed and used for no choice: the cost-bandwidth ridge of the RBF SVM family
(``make_svc_grid``) without its categorical columns and at a finer spacing, beside the
two-column AdaBoost family (``make_boost2d_grid``), so that what holds for two columns is
not judged on one model.
"""

from __future__ import annotations

import numpy as np

from rmbo_tune.bench.make_hgb_grid import balanced_accuracy, build

GRID: dict[str, list] = {
    "C": [10.0 ** (k / 2) for k in range(-4, 8)],
    "gamma": [10.0 ** (-4 + 0.75 * k) for k in range(9)],
}


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    model = make_pipeline(
        StandardScaler(),
        SVC(C=float(config["C"]), gamma=float(config["gamma"]), max_iter=200_000),
    )
    return balanced_accuracy(model, X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
