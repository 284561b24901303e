from pathlib import Path

import pytest

from rmbo_tune.bench import make_ada_grid, make_hgb_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_ada_grid.__file__).resolve().parent / "data" / "ada-grid"
CATEGORICAL = ("class_weight",)


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_ada_grid.GRID, categorical=CATEGORICAL)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = {"class_weight": "balanced", "learning_rate": 0.3, "n_estimators": 30, "max_depth": 2}
    expected = shipped_value(DATA, "wine", config, categorical=CATEGORICAL)
    assert make_ada_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_a_tree_that_fits_the_training_folds_makes_rate_and_rounds_irrelevant():
    # Depth-8 trees fit 400 training points of the two moons exactly; SAMME stops after the
    # first tree, so the learning rate and the number of rounds change nothing (a plateau
    # of 36 configurations per class weighting), while stumps need both.
    rows = shipped_rows(DATA, "moons-low-noise")
    for weight in ("none", "balanced"):
        deep = {r["value"] for r in rows if r["max_depth"] == "8" and r["class_weight"] == weight}
        assert len(deep) == 1
    stumps = [float(r["value"]) for r in rows if r["max_depth"] == "1"]
    assert max(stumps) - min(stumps) > 0.4
    assert max(stumps) > float(deep.pop())


def test_the_suite_encodes_three_log_columns_and_one_categorical():
    bench = shipped_suite("ada")
    assert bench.encoding.categories["class_weight"] == ["balanced", "none"]
    assert all(bench.encoding.numeric[c][2] for c in ("learning_rate", "n_estimators"))
    assert len(bench.tasks) == 24
    assert all(task.X.shape == (144, 5) for task in bench.tasks)
