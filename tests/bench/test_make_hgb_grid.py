import csv
import itertools
from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import make_hgb_grid, tabular
from rmbo_tune.bench.tabular_data import TabularBenchmark, load_tabular

DATA = Path(make_hgb_grid.__file__).resolve().parent / "data" / "hgb-grid"


def assert_shipped_grid(
    folder: Path,
    grid: dict[str, list],
    categorical: tuple = (),
    names: set[str] | None = None,
    values: tuple[float, float] = (0.0, 1.0),
) -> None:
    """Every dataset of the family (``names``, default the boosting grid's) has one CSV in
    ``folder`` holding each config of ``grid`` once (numeric columns compared as floats),
    with values in the closed range ``values``."""
    files = sorted(folder.glob("*.csv"))
    assert {f.stem for f in files} == (names or set(make_hgb_grid.datasets()))

    def config(row) -> tuple:
        return tuple(v if k in categorical else float(v) for k, v in zip(grid, row, strict=True))

    configs = {config(c) for c in itertools.product(*grid.values())}
    for f in files:
        with open(f) as fh:
            rows = list(csv.DictReader(fh))
        assert sorted(config([r[k] for k in grid]) for r in rows) == sorted(configs), f
        assert all(values[0] <= float(r["value"]) <= values[1] for r in rows), f


def shipped_rows(folder: Path, dataset: str) -> list[dict[str, str]]:
    """The rows of ``folder/dataset.csv``, as read by ``csv.DictReader``."""
    with open(folder / f"{dataset}.csv") as fh:
        return list(csv.DictReader(fh))


def shipped_suite(name: str) -> TabularBenchmark:
    """A shipped suite's meta-dataset, read as ``rmbo-tune bench tabular --suite NAME`` reads
    it (its folder, direction and log-scaled columns)."""
    suite = tabular.SUITES[name]
    return load_tabular(
        tabular.DATA_DIR / suite["folder"],
        mode=suite.get("mode", "max"),
        log_columns=[c for c in suite["log_columns"].split(",") if c],
    )


def shipped_value(folder: Path, dataset: str, config: dict, categorical: tuple = ()) -> float:
    """The value ``folder/dataset.csv`` holds for ``config`` (numeric columns compared as
    floats)."""
    row = next(
        r
        for r in shipped_rows(folder, dataset)
        if all((r[k] if k in categorical else float(r[k])) == v for k, v in config.items())
    )
    return float(row["value"])


def test_shipped_files_hold_the_whole_grid_for_every_dataset():
    assert_shipped_grid(DATA, make_hgb_grid.GRID)


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["iris"]()
    config = {"learning_rate": 0.1, "max_leaf_nodes": 7, "min_samples_leaf": 10}
    config["l2_regularization"] = 0.1
    expected = shipped_value(DATA, "iris", config)
    assert make_hgb_grid.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_a_fold_whose_fit_raises_scores_the_value_given_for_failures():
    sklearn_base = pytest.importorskip("sklearn.base")

    class FailsOnFewRows(sklearn_base.ClassifierMixin, sklearn_base.BaseEstimator):
        """Predicts the first class; its fit raises on training folds under 100 rows."""

        def fit(self, X, y):
            if len(X) < 100:
                raise ValueError("too few rows")
            self.classes_ = np.unique(y)
            return self

        def predict(self, X):
            return np.full(len(X), self.classes_[0])

    X, y = make_hgb_grid.datasets()["iris"]()  # 150 rows: training folds of 100
    assert make_hgb_grid.balanced_accuracy(FailsOnFewRows(), X, y) == pytest.approx(1 / 3)
    few = X[::2], y[::2]  # 75 rows: every fit raises
    assert make_hgb_grid.balanced_accuracy(FailsOnFewRows(), *few, failed=0.25) == 0.25
    with pytest.raises(ValueError, match="All the 3 fits failed"):
        make_hgb_grid.balanced_accuracy(FailsOnFewRows(), *few)
