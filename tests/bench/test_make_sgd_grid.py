import csv
from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import make_hgb_grid, make_sgd_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_sgd_grid.__file__).resolve().parent / "data" / "sgd-grid"
CATEGORICAL = ("loss", "penalty", "averaging", "class_weight")


def _mean(name: str, **match: str) -> float:
    with open(DATA / f"{name}.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if all(r[k] == v for k, v in match.items())]
    return float(np.mean([float(r["value"]) for r in rows]))


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_sgd_grid.GRID, categorical=CATEGORICAL)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["pima"]()
    config = {
        "loss": "hinge",
        "penalty": "l2",
        "averaging": "asgd",
        "class_weight": "balanced",
        "alpha": 1e-5,
    }
    expected = shipped_value(DATA, "pima", config, categorical=CATEGORICAL)
    assert make_sgd_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_averaging_steadies_the_hinge_loss_with_a_weak_penalty():
    # Plain SGD on the hinge loss with alpha = 1e-6 ends wherever its last steps left it;
    # the averaged iterate does not (means over penalty and class weighting).
    none = _mean("pima", loss="hinge", alpha="1e-06", averaging="none")
    averaged = _mean("pima", loss="hinge", alpha="1e-06", averaging="asgd")
    assert averaged > none + 0.08


def test_the_suite_encodes_four_categorical_columns_as_one_hot():
    bench = shipped_suite("sgd")
    assert bench.encoding.categories["loss"] == ["hinge", "log_loss", "modified_huber"]
    assert "averaging=asgd" in bench.encoding.features
    assert len(bench.tasks) == 24
    assert all(task.X.shape == (216, 11) for task in bench.tasks)
