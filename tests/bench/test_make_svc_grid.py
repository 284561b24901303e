from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_svc_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_svc_grid.__file__).resolve().parent / "data" / "svc-grid"
CATEGORICAL = ("scaler", "class_weight")


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_svc_grid.GRID, categorical=CATEGORICAL)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = {"scaler": "standard", "class_weight": "balanced", "C": 10.0, "gamma": 0.01}
    expected = shipped_value(DATA, "wine", config, categorical=CATEGORICAL)
    assert make_svc_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_the_narrowest_kernel_memorizes_the_training_points():
    # gamma = 100 on scaled features: every training point its own island, about chance
    # level on held-out data (balanced accuracy 1 / 3 for wine's three classes), whatever C.
    rows = [r for r in shipped_rows(DATA, "wine") if float(r["gamma"]) == 100.0]
    assert max(float(r["value"]) for r in rows) < 0.5
    best = max(float(r["value"]) for r in shipped_rows(DATA, "wine"))
    assert best > 0.95


def test_the_suite_encodes_two_categorical_columns_as_one_hot():
    bench = shipped_suite("svc")
    assert bench.encoding.categories["scaler"] == ["minmax", "standard"]
    assert "class_weight=balanced" in bench.encoding.features
    assert len(bench.tasks) == 24
    assert all(task.X.shape == (196, 6) for task in bench.tasks)
