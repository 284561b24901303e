from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_logreg_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_logreg_grid.__file__).resolve().parent / "data" / "logreg-grid"
CATEGORICAL = ("scaler", "penalty", "class_weight")


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_logreg_grid.GRID, categorical=CATEGORICAL)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = {"scaler": "standard", "penalty": "l2", "class_weight": "balanced", "C": 0.1}
    expected = shipped_value(DATA, "wine", config, categorical=CATEGORICAL)
    assert make_logreg_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_class_weighting_matters_where_one_class_is_rare():
    # synth-10: 95% of the samples in one class; with scaled features and a strong L2
    # penalty the unweighted model predicts that class alone (balanced accuracy 0.5), the
    # balanced weighting does not.
    rows = {
        (r["scaler"], r["penalty"], r["class_weight"], float(r["C"])): float(r["value"])
        for r in shipped_rows(DATA, "synth-10-n1200-d10-c2")
    }
    for scaler in ("standard", "quantile"):
        assert rows[scaler, "l2", "none", 1e-4] == pytest.approx(0.5)
        assert rows[scaler, "l2", "balanced", 1e-4] > 0.6


def test_the_suite_encodes_three_categorical_columns_as_one_hot():
    bench = shipped_suite("logreg")
    assert bench.encoding.categories["penalty"] == ["l1", "l2"]
    assert "class_weight=balanced" in bench.encoding.features
    assert all(task.X.shape == (108, 8) for task in bench.tasks)
