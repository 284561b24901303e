from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_knn_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_knn_grid.__file__).resolve().parent / "data" / "knn-grid"
CATEGORICAL = ("scaler", "metric", "weights")


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_knn_grid.GRID, categorical=CATEGORICAL)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = {"scaler": "none", "metric": "manhattan", "weights": "distance", "n_neighbors": 8}
    expected = shipped_value(DATA, "wine", config, categorical=CATEGORICAL)
    assert make_knn_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_the_scaler_matters_where_features_have_different_units():
    # wine's features span 0.1 to 1000: unscaled distances follow one column.
    rows = shipped_rows(DATA, "wine")

    def best(scaler: str) -> float:
        return max(float(r["value"]) for r in rows if r["scaler"] == scaler)

    assert best("standard") > best("none") + 0.1


def test_the_suite_encodes_three_categorical_columns_as_one_hot():
    bench = shipped_suite("knn")
    assert bench.encoding.categories["scaler"] == ["minmax", "none", "standard"]
    assert "weights=distance" in bench.encoding.features
    assert all(task.X.shape == (162, 9) for task in bench.tasks)
