import csv
from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_mlp_grid, tabular
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_mlp_grid.__file__).resolve().parent / "data" / "mlp-grid"
CONFIG = {"hidden_units": 8, "activation": "relu", "alpha": 0.001, "learning_rate_init": 0.01}


def _config(row: dict[str, str]) -> tuple:
    return tuple(row[k] if k == "activation" else float(row[k]) for k in make_mlp_grid.GRID)


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(
        DATA,
        make_mlp_grid.GRID,
        categorical=("activation",),
        names=set(make_mlp_grid.datasets()),
        values=(0.0, make_mlp_grid.DIVERGED),
    )


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_mlp_grid.datasets()["iris-petal-width"]()
    expected = shipped_value(DATA, "iris-petal-width", CONFIG, categorical=("activation",))
    assert make_mlp_grid.evaluate(X, y, CONFIG) == pytest.approx(expected, abs=1e-6)


def test_build_runs_another_family_of_datasets_in_worker_processes(tmp_path):
    pytest.importorskip("sklearn")
    grid = {k: [v] for k, v in CONFIG.items()}
    argv = ["--out", str(tmp_path), "--only", "iris-petal-width,wine-alcohol", "--processes", "2"]
    make_hgb_grid.build(argv, grid, make_mlp_grid.evaluate, "test", make_mlp_grid.datasets)
    for name in ("iris-petal-width", "wine-alcohol"):
        with open(tmp_path / f"{name}.csv") as fh:
            (built,) = list(csv.DictReader(fh))
        shipped = shipped_value(DATA, name, CONFIG, categorical=("activation",))
        assert float(built["value"]) == pytest.approx(shipped, abs=1e-6)


def test_every_dataset_is_learnable_and_the_best_settings_differ():
    best = {}
    for name in make_mlp_grid.datasets():
        rows = shipped_rows(DATA, name)
        top = min(rows, key=lambda r: float(r["value"]))
        # Some configuration beats predicting the mean (error 1) on every dataset.
        assert float(top["value"]) < 1.0, name
        best[name] = _config(top)
    assert len(set(best.values())) >= 5


def test_the_suite_minimizes_and_encodes_the_activation_as_one_hot():
    assert tabular.SUITES["mlp"]["mode"] == "min"
    bench = shipped_suite("mlp")
    assert bench.encoding.categories["activation"] == ["relu", "tanh"]
    assert all(task.X.shape == (96, 5) for task in bench.tasks)
