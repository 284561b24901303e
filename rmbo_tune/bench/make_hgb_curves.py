"""Build the ``hgb-curves`` learning-curve meta-dataset for the early-stopping benchmark.

``python -m rmbo_tune.bench.make_hgb_curves --out rmbo_tune/bench/data/hgb-curves`` (needs
scikit-learn; about 30 minutes on one core) trains the gradient-boosting grid of
:mod:`rmbo_tune.bench.make_hgb_grid` (same 240 configurations, same 24 datasets) for
``MAX_ITER`` boosting iterations and records each configuration's learning curve: the mean
balanced accuracy of 3-fold stratified cross-validation after each of ``FIDELITIES``
iterations (one boosting iteration is one unit of training, as an epoch is for a network).
One CSV per dataset, one row per configuration and fidelity, with the columns
``learning_rate, max_leaf_nodes, min_samples_leaf, l2_regularization, iterations, value``.

Replaying these curves lets the early-stopping benchmark (``rmbo-tune bench fidelity``) run
a scheduler and a searcher over many seeds in seconds, on real training runs: a slow
learning rate ranks low after 1 iteration and high after 81, so the low fidelities
mislead in part, as they do for networks.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import time
from pathlib import Path

import numpy as np

from rmbo_tune.bench.make_hgb_grid import GRID, datasets

MAX_ITER = 81
FIDELITIES = (1, 3, 9, 27, 81)


def curve(X: np.ndarray, y: np.ndarray, config: dict[str, float]) -> list[float]:
    """Mean balanced accuracy after each of ``FIDELITIES`` boosting iterations (3-fold CV)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import StratifiedKFold

    scores = np.zeros(len(FIDELITIES))
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    for train, test in folds.split(X, y):
        model = HistGradientBoostingClassifier(
            max_iter=MAX_ITER, early_stopping=False, random_state=0, **config
        ).fit(X[train], y[train])
        want = {f - 1: k for k, f in enumerate(FIDELITIES)}
        for i, pred in enumerate(model.staged_predict(X[test])):
            if i in want:
                scores[want[i]] += balanced_accuracy_score(y[test], pred) / 3
    return scores.tolist()


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder receiving one CSV per dataset")
    p.add_argument("--only", default="", help="comma-separated dataset names (default: all)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    loaders = datasets()
    names = [n for n in args.only.split(",") if n] or list(loaders)
    unknown = sorted(set(names) - set(loaders))
    if unknown:
        p.error(f"unknown dataset(s) {unknown}; known: {sorted(loaders)}")
    keys = list(GRID)
    configs = [dict(zip(keys, v, strict=True)) for v in itertools.product(*GRID.values())]
    for name in names:
        start = time.time()
        X, y = loaders[name]()
        rows = []
        for c in configs:
            for f, v in zip(FIDELITIES, curve(X, y, c), strict=True):
                rows.append([*c.values(), f, round(v, 6)])
        with open(args.out / f"{name}.csv", "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow([*keys, "iterations", "value"])
            writer.writerows(rows)
        print(f"{name}: {len(configs)} curves in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
