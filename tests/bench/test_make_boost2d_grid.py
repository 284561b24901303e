from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import make_boost2d_grid, make_hgb_grid
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_boost2d_grid.__file__).resolve().parent / "data" / "boost2d-grid"


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_boost2d_grid.GRID)


def test_evaluate_reproduces_shipped_values_of_one_staged_fit():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    for rounds in (1, 16, 256):
        config = {"n_estimators": rounds, "max_depth": 2}
        expected = shipped_value(DATA, "wine", config)
        assert make_boost2d_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_a_staged_fit_scores_as_a_fit_of_that_many_rounds():
    pytest.importorskip("sklearn")
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_hgb_grid.datasets()["moons-high-noise"]()
    staged = make_boost2d_grid.staged_scores(X, y, max_depth=3)
    model = AdaBoostClassifier(
        DecisionTreeClassifier(max_depth=3, random_state=0), n_estimators=8, random_state=0
    )
    assert staged[8] == pytest.approx(make_hgb_grid.balanced_accuracy(model, X, y), abs=1e-12)


def test_rounds_help_stumps_on_a_problem_no_stump_solves():
    # circles: no single split separates the rings (one stump is barely above chance),
    # boosting many of them does.
    rows = shipped_rows(DATA, "circles")
    stumps = {int(r["n_estimators"]): float(r["value"]) for r in rows if r["max_depth"] == "1"}
    assert stumps[1] < 0.65 and stumps[256] > 0.95


def test_the_suite_reads_two_numeric_columns():
    bench = shipped_suite("boost2d")
    assert len(bench.tasks) == 24
    assert all(task.X.shape == (108, 2) for task in bench.tasks)
    assert np.all((bench.tasks[0].X >= 0) & (bench.tasks[0].X <= 1))
