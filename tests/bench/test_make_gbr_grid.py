from pathlib import Path

import pytest

from rmbo_tune.bench import make_gbr_grid, make_mlp_grid, tabular
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_gbr_grid.__file__).resolve().parent / "data" / "gbr-grid"
CONFIG = {"loss": "huber", "learning_rate": 0.1, "max_depth": 3, "subsample": 0.75}


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(
        DATA,
        make_gbr_grid.GRID,
        categorical=("loss",),
        names=set(make_mlp_grid.datasets()),
        values=(0.0, make_gbr_grid.DIVERGED),
    )


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_mlp_grid.datasets()["iris-petal-width"]()
    expected = shipped_value(DATA, "iris-petal-width", CONFIG, categorical=("loss",))
    assert make_gbr_grid.evaluate(X, y, CONFIG) == pytest.approx(expected, abs=1e-6)


def test_fifty_stumps_at_the_smallest_rate_underfit_and_the_best_configs_differ():
    best = set()
    for name in make_mlp_grid.datasets():
        rows = shipped_rows(DATA, name)
        values = {
            (r["loss"], float(r["learning_rate"]), int(r["max_depth"]), float(r["subsample"])): (
                float(r["value"])
            )
            for r in rows
        }
        top = min(values, key=values.__getitem__)
        # 50 stumps at rate 0.01 move the prediction about 40% of the way from its start
        # (the training median or mean) towards the data: worse than the best on every task.
        assert values[("squared_error", 0.01, 1, 1.0)] > values[top] + 0.02, name
        assert values[top] < 0.96, name
        best.add(top)
    assert len(best) >= 5


def test_the_suite_minimizes_and_encodes_the_loss_as_one_hot():
    assert tabular.SUITES["gbr"]["mode"] == "min"
    bench = shipped_suite("gbr")
    assert bench.encoding.categories["loss"] == sorted(make_gbr_grid.GRID["loss"])
    assert all(task.X.shape == (225, 6) for task in bench.tasks)
