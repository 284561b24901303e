from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_svc2d_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_svc2d_grid.__file__).resolve().parent / "data" / "svc2d-grid"


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_svc2d_grid.GRID)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = {"C": 1.0, "gamma": make_svc2d_grid.GRID["gamma"][3]}
    expected = shipped_value(DATA, "wine", config)
    assert make_svc2d_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_the_narrowest_kernel_is_near_chance_and_the_ridge_is_not():
    # gamma = 100 on standardized features: each training point its own island, about
    # chance on held-out data (1 / 3 for wine's three classes) whatever C.
    rows = shipped_rows(DATA, "wine")
    assert max(float(r["value"]) for r in rows if float(r["gamma"]) == 100.0) < 0.5
    assert max(float(r["value"]) for r in rows) > 0.95


def test_the_suite_reads_two_log_scaled_columns():
    bench = shipped_suite("svc2d")
    assert len(bench.tasks) == 24
    assert all(task.X.shape == (108, 2) for task in bench.tasks)
