"""The placement report rates each evaluated configuration by the other datasets' tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import placement
from rmbo_tune.bench.tabular_data import load_tabular


def _grid(folder: Path, tables: dict[str, list[float]], mode: str = "max"):
    """One CSV per task over the configs a = 0..n-1 (a task may list fewer)."""
    folder.mkdir()
    for name, values in tables.items():
        rows = "".join(f"{a},{v}\n" for a, v in enumerate(values))
        (folder / f"{name}.csv").write_text("a,value\n" + rows)
    return load_tabular(folder, mode=mode)


def test_percentiles_average_the_other_tasks_ranks_ties_shared(tmp_path: Path) -> None:
    bench = _grid(
        tmp_path / "g",
        {"t": [0.0, 0.0, 0.0], "u": [1.0, 3.0, 2.0], "v": [5.0, 5.0, 4.0], "w": [9.0, 1.0]},
    )
    pct = placement.task_percentiles(bench)
    # For t: u rates the configs 0, 1, 0.5; v 0.75, 0.75, 0 (a tie shares its ranks); w,
    # which lists only configs 0 and 1, rates them 1 and 0.
    assert pct["t"] == pytest.approx([(0 + 0.75 + 1) / 3, (1 + 0.75 + 0) / 3, (0.5 + 0) / 2])
    # t's own table (all tied) rates every config 0.5 for the others.
    assert pct["w"] == pytest.approx([(0.5 + 0 + 0.75) / 3, (0.5 + 1 + 0.75) / 3])


def test_minimized_metrics_rate_the_lowest_value_best(tmp_path: Path) -> None:
    bench = _grid(tmp_path / "g", {"t": [1.0, 2.0], "u": [1.0, 2.0]}, mode="min")
    assert placement.task_percentiles(bench)["t"] == pytest.approx([1.0, 0.0])


def _doc(runs: dict) -> dict:
    return {"task": "tabular", "metric": "value", "mode": "max", "optimum": None, "runs": runs}


def _run(target: str, configs: list[int], values: list[float]) -> dict:
    return {"target": target, "seed": 0, "configs": configs, "values": values}


PCT = {"t": np.array([0.9, 0.1, 0.5]), "u": np.array([0.2, 0.8, np.nan])}


def test_each_step_averages_the_runs_and_counts_improvements() -> None:
    doc = _doc(
        {
            "a": [_run("t", [0, 1, 2], [1.0, 2.0, 2.0]), _run("u", [1, 0, 2], [3.0, 1.0, 4.0])],
            "b": [_run("t", [2, 0, 1], [0.0, 0.0, 0.0])],
        }
    )
    table = placement.placement(doc, PCT, steps=5)
    assert table["a"]["percentile"] == pytest.approx([(0.9 + 0.8) / 2, (0.1 + 0.2) / 2, 0.5])
    assert np.isnan(table["a"]["improved"][0])
    assert table["a"]["improved"][1:] == pytest.approx([0.5, 0.5])
    assert table["b"]["improved"][1:] == pytest.approx([0.0, 0.0])
    text = placement.markdown(table)
    assert "| a | 0.85 | 0.15 | 0.50 |" in text and "| b | - | 0.00 | 0.00 |" in text


def test_configurations_no_other_task_lists_are_left_unrated(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "t.csv").write_text("a,value\n0,1\n5,2\n")
    (folder / "u.csv").write_text("a,value\n0,1\n1,2\n")
    pct = placement.task_percentiles(load_tabular(folder, mode="max"))
    assert pct["t"][0] == pytest.approx(0.0) and np.isnan(pct["t"][1])
    doc = _doc({"a": [_run("t", [1, 0], [2.0, 1.0])]})
    table = placement.placement(doc, pct, steps=2)
    assert np.isnan(table["a"]["percentile"][0]) and table["a"]["percentile"][1] == 0.0
    assert "| a | - | 0.00 |" in placement.markdown(table)


def test_runs_of_another_grid_are_refused() -> None:
    doc = _doc({"a": [_run("x", [0], [1.0])]})
    with pytest.raises(ValueError, match="'x' of 'a' is not in the grid"):
        placement.placement(doc, PCT, steps=3)
    with pytest.raises(ValueError, match="'c' has no runs"):
        placement.placement(_doc({"a": [_run("t", [0], [1.0])]}), PCT, 3, methods=["c"])


def test_command_writes_the_tables_and_the_plot(tmp_path: Path, capsys) -> None:
    bench_dir = tmp_path / "g"
    _grid(bench_dir, {"t": [0.0, 1.0, 2.0], "u": [2.0, 1.0, 0.0]})
    doc = _doc({"rm": [_run("t", [2, 0], [2.0, 0.0])], "cold": [_run("u", [0, 1], [2.0, 1.0])]})
    doc["settings"] = {"data": str(bench_dir)}
    results = tmp_path / "results.json"
    results.write_text(json.dumps(doc))
    out = tmp_path / "out"
    placement.main([str(results), "--out", str(out), "--steps", "2"])
    text = (out / "placement.md").read_text()
    # u rates t's config 2 worst and config 0 best; t rates u's config 0 worst.
    assert "| rm | 0.00 | 1.00 |" in text and "| cold | 0.00 | 0.50 |" in text
    assert (out / "placement.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        placement.main([str(results), "--data", str(tmp_path / "missing")])
    doc["settings"]["fixed"] = {"a": 1.0}
    results.write_text(json.dumps(doc))
    with pytest.raises(SystemExit):
        placement.main([str(results)])
