"""Build the ``hgb-grid`` tabular meta-dataset: one gradient-boosting grid, many datasets.

``python -m rmbo_tune.bench.make_hgb_grid --out rmbo_tune/bench/data/hgb-grid`` (needs
scikit-learn; about 20 minutes on one core, ``--processes N`` runs N datasets at once)
writes one CSV per dataset with the columns ``learning_rate, max_leaf_nodes,
min_samples_leaf, l2_regularization, value``: the same 240-configuration grid of
scikit-learn's ``HistGradientBoostingClassifier`` (50 boosting iterations, no early
stopping) evaluated on every dataset by 3-fold stratified cross-validation, ``value`` =
mean balanced accuracy (higher is better).

The datasets are offline and reproducible: scikit-learn's bundled breast-cancer, wine, iris
and digits (as 10 classes and as "even vs odd"), the Pima diabetes data shipped with the
project, and generated problems of varied size, dimension, label noise, class balance and
geometry (``make_classification``, ``make_moons``, ``make_circles``,
``make_gaussian_quantiles``, ``make_hastie_10_2``), each from a fixed seed. It is a second,
independent family of real HPO meta-data beside the SVM grid of Wistuba et al.: another
model class, other datasets, integer and log-scaled hyperparameters and no one-hot columns.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import time
import warnings
from collections.abc import Callable, Sequence
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from rmbo_tune.bench.options import positive_int

GRID: dict[str, list] = {
    "learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0],
    "max_leaf_nodes": [3, 7, 15, 31],
    "min_samples_leaf": [2, 10, 40, 100],
    "l2_regularization": [0.001, 0.1, 10.0],
}


def _pima() -> tuple[np.ndarray, np.ndarray]:
    path = Path(__file__).resolve().parents[2] / "trainables" / "data"
    data = np.loadtxt(path / "pima-indians-diabetes.csv", delimiter=",", skiprows=1)
    return data[:, :-1], data[:, -1].astype(int)


def datasets() -> dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]]:
    """Name -> loader of (X, y) for every dataset of the family."""
    from sklearn import datasets as ds

    def digits_parity() -> tuple[np.ndarray, np.ndarray]:
        X, y = ds.load_digits(return_X_y=True)
        return X, y % 2

    out: dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]] = {
        "breast-cancer": lambda: ds.load_breast_cancer(return_X_y=True),
        "wine": lambda: ds.load_wine(return_X_y=True),
        "iris": lambda: ds.load_iris(return_X_y=True),
        "digits": lambda: ds.load_digits(return_X_y=True),
        "digits-parity": digits_parity,
        "pima": _pima,
        "moons-low-noise": lambda: ds.make_moons(600, noise=0.15, random_state=1),
        "moons-high-noise": lambda: ds.make_moons(600, noise=0.45, random_state=2),
        "circles": lambda: ds.make_circles(600, noise=0.1, factor=0.5, random_state=3),
        "gauss-quantiles": lambda: ds.make_gaussian_quantiles(
            n_samples=800, n_features=4, n_classes=3, random_state=4
        ),
        "hastie": lambda: ds.make_hastie_10_2(1000, random_state=5),
    }
    settings = [
        # n_samples, n_features, n_informative, flip_y, weights of class 0, class_sep, classes
        (300, 5, 3, 0.0, 0.5, 1.0, 2),
        (300, 20, 4, 0.1, 0.5, 0.8, 2),
        (500, 10, 8, 0.05, 0.8, 1.0, 2),
        (500, 30, 5, 0.2, 0.5, 1.5, 2),
        (800, 8, 6, 0.0, 0.9, 0.7, 2),
        (800, 15, 10, 0.3, 0.6, 1.2, 2),
        (1000, 25, 15, 0.05, 0.5, 0.5, 2),
        (1000, 6, 4, 0.1, 0.7, 2.0, 2),
        (400, 12, 6, 0.0, 0.5, 1.0, 4),
        (700, 20, 12, 0.1, 0.5, 0.8, 3),
        (1200, 10, 5, 0.02, 0.95, 1.0, 2),
        (250, 40, 8, 0.05, 0.5, 1.0, 2),
        (900, 5, 5, 0.25, 0.5, 2.0, 2),
    ]
    for k, (n, d, inf, flip, w0, sep, n_classes) in enumerate(settings):
        weights = [w0] if n_classes == 2 else None

        def make(n=n, d=d, inf=inf, flip=flip, weights=weights, sep=sep, c=n_classes, k=k):
            return ds.make_classification(
                n_samples=n,
                n_features=d,
                n_informative=inf,
                n_redundant=min(2, d - inf),
                n_classes=c,
                flip_y=flip,
                weights=weights,
                class_sep=sep,
                random_state=100 + k,
            )

        out[f"synth-{k:02d}-n{n}-d{d}-c{n_classes}"] = make
    return out


def balanced_accuracy(
    model: Any, X: np.ndarray, y: np.ndarray, failed: float = float("nan")
) -> float:
    """Mean balanced accuracy of a scikit-learn classifier by 3-fold stratified CV (shuffled
    with seed 0), the value of every classification grid. A fit that stops before it
    converges is scored as it stands, as a practitioner's run with default settings would
    be; a fold whose fit raises scores ``failed`` (without a warning unless it is NaN)."""
    from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if not np.isnan(failed):
            warnings.simplefilter("ignore", FitFailedWarning)
        try:
            scores = cross_val_score(
                model, X, y, cv=folds, scoring="balanced_accuracy", error_score=failed
            )
        except ValueError as exc:
            if np.isnan(failed) or "fits failed" not in str(exc):
                raise
            return float(failed)  # every fold's fit raised
    return float(scores.mean())


def evaluate(X: np.ndarray, y: np.ndarray, config: dict[str, float]) -> float:
    """Mean balanced accuracy of one configuration by 3-fold stratified CV."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(
        max_iter=50, early_stopping=False, random_state=0, **config
    )
    return balanced_accuracy(model, X, y)


Loaders = Callable[[], dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]]]


def _dataset_rows(job: tuple) -> tuple[str, list[list], float]:
    """Every configuration of one dataset evaluated (one job of :func:`build`)."""
    name, configs, evaluate, loaders = job
    start = time.time()
    X, y = loaders()[name]()
    return name, [[*c.values(), evaluate(X, y, c)] for c in configs], time.time() - start


def build(
    argv: list[str] | None,
    grid: dict[str, list] | Sequence[dict[str, Any]],
    evaluate: Callable[[np.ndarray, np.ndarray, dict], float],
    description: str,
    loaders: Loaders = datasets,
) -> None:
    """The command line of a grid builder: ``grid`` (every combination of its values, or a
    sequence of configurations, each evaluated as given) evaluated on every dataset of
    ``loaders()`` (or ``--only``) by ``evaluate``, one CSV per dataset written to ``--out``.
    ``evaluate`` and ``loaders`` must be module-level functions (worker processes are
    spawned)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, required=True, help="folder receiving one CSV per dataset")
    p.add_argument("--only", default="", help="comma-separated dataset names (default: all)")
    p.add_argument("--processes", type=positive_int, default=1, help="datasets evaluated at once")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    known = loaders()
    names = [n for n in args.only.split(",") if n] or list(known)
    unknown = sorted(set(names) - set(known))
    if unknown:
        p.error(f"unknown dataset(s) {unknown}; known: {sorted(known)}")
    if isinstance(grid, dict):
        keys = list(grid)
        configs = [dict(zip(keys, v, strict=True)) for v in itertools.product(*grid.values())]
    else:
        configs = [dict(c) for c in grid]
        keys = list(configs[0])
    jobs = [(name, configs, evaluate, loaders) for name in names]
    with get_context("spawn").Pool(args.processes) as pool:
        for name, rows, seconds in pool.imap_unordered(_dataset_rows, jobs):
            with open(args.out / f"{name}.csv", "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow([*keys, "value"])
                writer.writerows(rows)
            print(f"{name}: {len(configs)} configs in {seconds:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
