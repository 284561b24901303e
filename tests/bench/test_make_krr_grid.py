from pathlib import Path

import pytest

from rmbo_tune.bench import make_krr_grid, make_mlp_grid, tabular
from tests.bench.test_make_hgb_grid import (
    assert_shipped_grid,
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_krr_grid.__file__).resolve().parent / "data" / "krr-grid"


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(
        DATA,
        make_krr_grid.GRID,
        categorical=("kernel",),
        names=set(make_mlp_grid.datasets()),
        values=(0.0, make_krr_grid.DIVERGED),
    )


@pytest.mark.parametrize("kernel", ["rbf", "polynomial"])
def test_evaluate_reproduces_a_shipped_value(kernel):
    pytest.importorskip("sklearn")
    X, y = make_mlp_grid.datasets()["iris-petal-width"]()
    config = {"kernel": kernel, "alpha": 0.1, "gamma": make_krr_grid.GRID["gamma"][3]}
    expected = shipped_value(DATA, "iris-petal-width", config, categorical=("kernel",))
    assert make_krr_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-6)


def test_a_wide_heavily_penalized_kernel_predicts_about_the_mean_and_the_best_do_not():
    best_kernels = set()
    for name in make_mlp_grid.datasets():
        rows = shipped_rows(DATA, name)
        (wide,) = [
            r
            for r in rows
            if r["kernel"] == "rbf" and float(r["alpha"]) == 100.0 and float(r["gamma"]) == 1e-3
        ]
        # A penalty of 100 on a nearly constant kernel shrinks the fit to the (standardized)
        # target's mean, whose error over std(y) is about 1.
        assert float(wide["value"]) == pytest.approx(1.0, abs=0.03), name
        top = min(rows, key=lambda r: float(r["value"]))
        assert float(top["value"]) < 0.96, name
        best_kernels.add(top["kernel"])
    assert best_kernels == set(make_krr_grid.GRID["kernel"])


def test_the_suite_minimizes_and_encodes_the_kernel_as_one_hot():
    assert tabular.SUITES["krr"]["mode"] == "min"
    bench = shipped_suite("krr")
    assert bench.encoding.categories["kernel"] == sorted(make_krr_grid.GRID["kernel"])
    assert all(task.X.shape == (189, 5) for task in bench.tasks)
