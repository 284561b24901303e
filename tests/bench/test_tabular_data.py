"""Tabular benchmark data: the file format and its errors, on small tables written into
tmp_path."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import tabular_data

XS = np.linspace(0.0, 10.0, 9)
LRS = np.logspace(-5, -1, 9)  # spans 4 decades: log-scaled automatically
KINDS = ("a", "b", "c")
# Task -> (optimum of u, optimum of v, penalty of each kind). The two "near" tasks share the
# target's optimum up to 0.05; "far" puts it in the opposite corner and prefers another kind.
SHIFTS = {
    "target": (0.3, 0.6, (0.0, 0.1, 0.2)),
    "near1": (0.35, 0.55, (0.0, 0.1, 0.2)),
    "near2": (0.25, 0.65, (0.0, 0.12, 0.2)),
    "far": (0.9, 0.1, (0.3, 0.0, 0.1)),
}


def _write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _loss(x: float, lr: float, kind: str, shift: tuple) -> float:
    a, b, penalty = shift
    u, v = x / 10.0, (np.log10(lr) + 5.0) / 4.0
    return float((u - a) ** 2 + (v - b) ** 2 + penalty[KINDS.index(kind)])


def write_grid(directory: Path, shifts: dict = SHIFTS) -> Path:
    """One CSV per task: 9 x 9 x 3 = 243 configs of a shared bowl, shifted per task."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, shift in shifts.items():
        rows = [
            [x, lr, k, f"{_loss(x, lr, k, shift):.6f}"] for x in XS for lr in LRS for k in KINDS
        ]
        _write_csv(directory / f"{name}.csv", ["x", "lr", "kind", "loss"], rows)
    return directory


@pytest.fixture
def grid(tmp_path: Path) -> Path:
    return write_grid(tmp_path / "grid")


def test_loads_and_encodes_the_grid(grid: Path) -> None:
    bench = tabular_data.load_tabular(grid, mode="min", metric="loss")
    assert [t.name for t in bench.tasks] == ["far", "near1", "near2", "target"]
    enc = bench.encoding
    assert enc.features == ["x", "lr", "kind=a", "kind=b", "kind=c"]
    assert enc.numeric["lr"][2] and not enc.numeric["x"][2]  # lr auto-logged, x linear
    target = bench.task("target")
    assert target.X.shape == (243, 5)
    assert target.X.min() == 0.0 and target.X.max() == 1.0
    # lr = 1e-3 is the middle of 1e-5 .. 1e-1 on a log scale.
    row = target.configs.index((5.0, float(LRS[4]), "b"))
    np.testing.assert_allclose(target.X[row], [0.5, 0.5, 0.0, 1.0, 0.0], atol=1e-12)
    assert target.best("min") == pytest.approx(_loss(2.5, 10**-2.5, "a", SHIFTS["target"]))
    assert (target.n_rows, target.n_dropped, target.n_merged) == (243, 0, 0)
    # The nearest config to a point near that row is the row, or the next nearest one
    # when the row is taken.
    assert target.nearest(target.X[row] + 0.01) == row
    free = np.ones(len(target.X), dtype=bool)
    free[row] = False
    other = target.nearest(target.X[row] + 0.01, free)
    assert other != row
    dist = ((target.X - target.X[row] - 0.01) ** 2).sum(axis=1)
    assert dist[other] == np.sort(dist)[1]
    with pytest.raises(ValueError, match=r"no task 'nope'; tasks are \['far'"):
        bench.task("nope")
    # Projection: the categorical block becomes one-hot at its largest coordinate, the
    # numeric ones stay; configs are fixed points.
    got = enc.project(np.array([[0.3, 0.7, 0.2, 0.1, 0.6], [0.3, 0.7, 0.5, 0.4, 0.0]]))
    np.testing.assert_array_equal(got, [[0.3, 0.7, 0, 0, 1], [0.3, 0.7, 1, 0, 0]])
    np.testing.assert_array_equal(enc.project(target.X), target.X)


def test_grid_interpolation_passes_through_the_configs_and_stays_within_them(
    grid: Path, tmp_path: Path
) -> None:
    bench = tabular_data.load_tabular(grid, mode="min", metric="loss")
    target = bench.task("target")
    value_at = tabular_data.GridInterpolation(target, bench.encoding)
    np.testing.assert_allclose([value_at(x) for x in target.X], target.values, rtol=1e-12)
    # Halfway between two neighbouring x values (same lr and kind): their mean.
    a, b = (target.configs.index((x, float(LRS[4]), "b")) for x in (XS[2], XS[3]))
    mid = (target.X[a] + target.X[b]) / 2
    assert value_at(mid) == pytest.approx(target.values[[a, b]].mean())
    points = bench.encoding.project(np.random.default_rng(0).random((200, 5)))
    values = np.array([value_at(x) for x in points])
    assert values.min() >= target.values.min() and values.max() <= target.values.max()
    # A table that is not a full grid is named.
    rows = [[x, lr, "a", 1.0] for x in XS for lr in LRS][:-1]
    (tmp_path / "holes").mkdir()
    for name in ("p", "q"):
        _write_csv(tmp_path / "holes" / f"{name}.csv", ["x", "lr", "kind", "loss"], rows)
    holes = tabular_data.load_tabular(tmp_path / "holes", mode="min", metric="loss")
    with pytest.raises(ValueError, match=r"p\.csv: configs are not a full grid over"):
        tabular_data.GridInterpolation(holes.task("p"), holes.encoding)


def test_mismatched_columns_name_the_file(tmp_path: Path) -> None:
    _write_csv(tmp_path / "a.csv", ["x", "y", "value"], [[1, 2, 0.5], [2, 1, 0.4]])
    _write_csv(tmp_path / "b.csv", ["x", "z", "value"], [[1, 2, 0.5], [2, 1, 0.4]])
    with pytest.raises(
        ValueError, match=r"b\.csv: hyperparameter columns differ from a\.csv"
    ) as e:
        tabular_data.load_tabular(tmp_path, mode="min")
    assert "missing ['y'], extra ['z']" in str(e.value)
    # Dropping the differing columns makes the files consistent.
    bench = tabular_data.load_tabular(tmp_path, mode="min", ignore_columns=["y", "z"])
    assert bench.encoding.columns == ["x"]


def test_missing_metric_names_it_and_lists_the_columns(grid: Path) -> None:
    with pytest.raises(ValueError, match=r"far\.csv has no metric column 'value'") as e:
        tabular_data.load_tabular(grid, mode="min")
    assert "['x', 'lr', 'kind', 'loss']" in str(e.value)


def test_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be a directory of task files"):
        tabular_data.load_tabular(tmp_path / "missing", mode="min")
    (tmp_path / "notes.txt").write_text("not a task")
    with pytest.raises(ValueError, match=r"no task files \(\*\.csv, \*\.jsonl\) in"):
        tabular_data.load_tabular(tmp_path, mode="min")
    _write_csv(tmp_path / "a.csv", ["x", "value"], [[1, 2]])
    with pytest.raises(ValueError, match="needs at least two"):
        tabular_data.load_tabular(tmp_path, mode="min")
    (tmp_path / "b.csv").write_text("")
    with pytest.raises(ValueError, match=r"b\.csv is empty"):
        tabular_data.load_tabular(tmp_path, mode="min")
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        tabular_data.load_tabular(tmp_path, mode="minimize")


def test_row_errors_name_file_and_line(tmp_path: Path) -> None:
    _write_csv(tmp_path / "a.csv", ["x", "opt", "value"], [[1, "adam", 0.5], [2, "", 0.4]])
    _write_csv(tmp_path / "b.csv", ["x", "opt", "value"], [[1, "sgd", 0.5]])
    with pytest.raises(ValueError, match=r"a\.csv line 3: hyperparameter 'opt' has no value"):
        tabular_data.load_tabular(tmp_path, mode="min")
    _write_csv(tmp_path / "a.csv", ["x", "opt", "value"], [[1, "adam", "oops"]])
    with pytest.raises(ValueError, match=r"a\.csv line 2: metric 'value' is 'oops'"):
        tabular_data.load_tabular(tmp_path, mode="min")
    # Configs closer than the engine's duplicate tolerance could never both be suggested.
    _write_csv(tmp_path / "a.csv", ["x", "opt", "value"], [[0, "sgd", 1], [1e-7, "sgd", 2]])
    with pytest.raises(ValueError, match=r"a\.csv: configs .* too close for the engine"):
        tabular_data.load_tabular(tmp_path, mode="min", auto_log=False)


def test_duplicates_averaged_and_nan_rows_dropped(tmp_path: Path) -> None:
    rows = [
        [1, "adam", 0.2],
        [1, "adam", 0.4],  # duplicate of the first row: merged, mean 0.3
        [1.0, "adam", 0.6],  # "1.0" is the same number as "1"
        [2, "adam", ""],  # NaN metric: dropped
        [2, "sgd", "nan"],  # dropped
        [2, "sgd", 0.9],
        [3, "sgd", "inf"],  # non-finite: dropped
    ]
    _write_csv(tmp_path / "a.csv", ["x", "opt", "value"], rows)
    _write_csv(tmp_path / "b.csv", ["x", "opt", "value"], [[3, "adam", 0.1]])
    bench = tabular_data.load_tabular(tmp_path, mode="min")
    a = bench.task("a")
    assert (a.n_rows, a.n_dropped, a.n_merged) == (7, 3, 2)
    assert dict(zip(a.configs, a.values.tolist(), strict=True)) == pytest.approx(
        {(1.0, "adam"): 0.4, (2.0, "sgd"): 0.9}
    )
    assert "3 dropped (NaN value), 2 duplicates merged" in tabular_data.describe(bench)


def test_log_scaling_forced_automatic_or_off(tmp_path: Path) -> None:
    header = ["depth", "lr", "value"]
    _write_csv(tmp_path / "a.csv", header, [[1, 1e-4, 0.1], [10, 1e-2, 0.2], [100, 1e-3, 0.3]])
    _write_csv(tmp_path / "b.csv", header, [[1, 1e-1, 0.1]])

    def column(bench: tabular_data.TabularBenchmark, j: int) -> list[float]:
        return bench.task("a").X[:, j].tolist()

    auto = tabular_data.load_tabular(tmp_path, mode="min")
    # depth spans 2 decades (linear), lr 3 decades exactly (not > 1000: linear too).
    np.testing.assert_allclose(column(auto, 0), [0.0, 9 / 99, 1.0])
    forced = tabular_data.load_tabular(tmp_path, mode="min", log_columns=["depth", "lr"])
    np.testing.assert_allclose(column(forced, 0), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(column(forced, 1), [0.0, 2 / 3, 1 / 3])
    _write_csv(tmp_path / "b.csv", header, [[1, 1e-6, 0.1]])  # lr now spans 4 decades
    np.testing.assert_allclose(
        column(tabular_data.load_tabular(tmp_path, mode="min"), 1), [0.5, 1.0, 0.75]
    )
    off = tabular_data.load_tabular(tmp_path, mode="min", auto_log=False)
    assert not off.encoding.numeric["lr"][2]
    _write_csv(tmp_path / "b.csv", header, [[0, 1e-5, 0.1]])
    with pytest.raises(ValueError, match="log column 'depth' has a value 0 <= 0"):
        tabular_data.load_tabular(tmp_path, mode="min", log_columns=["depth"])
    with pytest.raises(ValueError, match=r"unknown columns \['width'\]"):
        tabular_data.load_tabular(tmp_path, mode="min", log_columns=["width"])


def test_json_lines_tasks_mix_with_csv(tmp_path: Path) -> None:
    _write_csv(tmp_path / "a.csv", ["x", "opt", "value"], [[1, "adam", 0.5], [2, "sgd", 0.4]])
    lines = [
        {"x": 1, "opt": "adam", "value": 0.3},
        {"x": 2, "opt": "sgd", "value": None},
        {"x": 3, "opt": "sgd"},  # no metric: dropped like NaN
    ]
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n\n")
    bench = tabular_data.load_tabular(tmp_path, mode="max")
    b = bench.task("b")
    assert b.configs == [(1.0, "adam")] and b.n_dropped == 2
    assert bench.encoding.features == ["x", "opt=adam", "opt=sgd"]
    (tmp_path / "b.jsonl").write_text('{"x": 1, "opt": "adam", "value": 0.3}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"b\.jsonl line 2: expected a JSON object"):
        tabular_data.load_tabular(tmp_path, mode="max")
