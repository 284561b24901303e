import csv
import math
from pathlib import Path

import pytest

from rmbo_tune.bench import make_hgb_grid, make_tree_design
from tests.bench.test_make_hgb_grid import (
    shipped_rows,
    shipped_suite,
    shipped_value,
)

DATA = Path(make_tree_design.__file__).resolve().parent / "data" / "tree-design"
CATEGORICAL = tuple(make_tree_design.CATEGORICAL)


def _key(config: dict) -> tuple:
    return tuple(
        str(config[k]) if k in CATEGORICAL else float(config[k])
        for k in [*make_tree_design.CATEGORICAL, *make_tree_design.NUMERIC]
    )


def test_the_design_is_distinct_configs_within_the_ranges():
    design = make_tree_design.design()
    assert design == make_tree_design.DESIGN  # the seed fixes it
    assert len(design) == make_tree_design.N_CONFIGS
    assert len({_key(c) for c in design}) == len(design)
    for key, choices in make_tree_design.CATEGORICAL.items():
        assert {c[key] for c in design} == set(choices)
    for key, (low, high, integer) in make_tree_design.NUMERIC.items():
        values = [c[key] for c in design]
        assert all(low <= v <= high for v in values), key
        assert all(isinstance(v, int) for v in values) == integer, key
        # Log-uniform: about half of the values lie below the range's geometric middle.
        below = sum(v < math.sqrt(low * high) for v in values) / len(values)
        assert 0.4 < below < 0.6, (key, below)


def test_shipped_files_hold_the_design_for_every_dataset():
    files = sorted(DATA.glob("*.csv"))
    assert {f.stem for f in files} == set(make_hgb_grid.datasets())
    expected = sorted(_key(c) for c in make_tree_design.DESIGN)
    for f in files:
        rows = shipped_rows(DATA, f.stem)
        assert sorted(_key(r) for r in rows) == expected, f
        assert all(0.0 <= float(r["value"]) <= 1.0 for r in rows), f


def test_evaluate_reproduces_a_shipped_value():
    pytest.importorskip("sklearn")
    X, y = make_hgb_grid.datasets()["wine"]()
    config = make_tree_design.DESIGN[7]
    expected = shipped_value(DATA, "wine", config, categorical=CATEGORICAL)
    assert make_tree_design.evaluate(X, y, config) == pytest.approx(expected, abs=1e-9)


def test_build_writes_the_design_in_order(tmp_path, capsys):
    pytest.importorskip("sklearn")
    make_tree_design.main(["--out", str(tmp_path), "--only", "iris"])
    with open(tmp_path / "iris.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows == shipped_rows(DATA, "iris")
    assert [_key(r) for r in rows] == [_key(c) for c in make_tree_design.DESIGN]
    assert "iris: 256 configs" in capsys.readouterr().out


def test_the_suite_encodes_three_categorical_columns_and_five_log_scaled_ones():
    bench = shipped_suite("tree")
    assert bench.encoding.categories["splitter"] == ["best", "random"]
    assert all(bench.encoding.numeric[k][2] for k in make_tree_design.NUMERIC)
    assert len(bench.tasks) == 24
    assert all(task.X.shape == (256, 11) for task in bench.tasks)
