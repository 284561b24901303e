import csv
from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_rf_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_rf_grid.__file__).resolve().parent / "data" / "rf-grid"


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_rf_grid.GRID, categorical=("criterion",))


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = {"criterion": "entropy", "max_features": 0.3, "max_depth": 4, "min_samples_leaf": 3}
    expected = shipped_value(DATA, "wine", config, categorical=("criterion",))
    assert make_rf_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_build_writes_one_csv_per_dataset_from_worker_processes(tmp_path, capsys):
    pytest.importorskip("sklearn")
    make_rf_grid.main(["--out", str(tmp_path), "--only", "iris,wine", "--processes", "2"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iris.csv", "wine.csv"]
    with open(tmp_path / "wine.csv") as fh:
        rows = list(csv.DictReader(fh))
    with open(DATA / "wine.csv") as fh:
        assert rows == list(csv.DictReader(fh))
    assert "iris: 128 configs" in capsys.readouterr().out


def test_build_names_an_unknown_dataset(tmp_path, capsys):
    with pytest.raises(SystemExit):
        make_rf_grid.main(["--out", str(tmp_path), "--only", "iris,nope"])
    assert "unknown dataset(s) ['nope']" in capsys.readouterr().err


def test_the_suite_encodes_the_criterion_as_one_hot_columns():
    bench = shipped_suite("rf")
    assert bench.encoding.categories["criterion"] == ["entropy", "gini"]
    assert "criterion=gini" in bench.encoding.features
    assert all(task.X.shape == (128, 5) for task in bench.tasks)
