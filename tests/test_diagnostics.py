"""The per-suggestion trace of a finished search."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from rmbo_tune import diagnostics
from rmbo_tune.diagnostics import final_metrics, trace_lines


def _result(trial_id, value, error=None, metric="loss"):
    metrics = {"trial_id": trial_id} if value is None else {"trial_id": trial_id, metric: value}
    return SimpleNamespace(metrics=metrics, error=error)


def test_final_metrics_skips_errors_and_missing_metrics() -> None:
    results = [
        _result("a", 0.5),
        _result("b", 0.1, error=RuntimeError("boom")),
        _result("c", None),
        _result("d", 2),
    ]
    assert final_metrics(results, "loss") == {"a": 0.5, "d": 2.0}


def test_trace_lines_in_suggestion_order_with_best_so_far() -> None:
    history = [
        {"trial_id": "b", "nu": 1.0, "weights": {"near1": 0.25, "far": 0.5, "near2": 0.25}},
        {"trial_id": "a", "nu": 0.5, "weights": {"near1": 0.5, "far": 0.0, "near2": 0.5}},
        {"trial_id": "c", "nu": 0.25, "weights": None},
    ]
    values = {"a": 0.3, "b": 0.4}
    lines = trace_lines(history, values, metric="loss", mode="min", digits=2)
    assert lines == [
        "    1  loss=0.40  best=0.40  nu=1.000  near1=0.25, far=0.50, near2=0.25",
        "    2  loss=0.30  best=0.30  nu=0.500  near1=0.50, far=0.00, near2=0.50",
        "    3  loss=nan  best=0.30  nu=0.250",
    ]
    grouped = trace_lines(
        history, values, metric="loss", mode="max", group=lambda n: n.rstrip("12")
    )
    assert grouped[0].endswith("best=0.4000  nu=1.000  near=0.50, far=0.50")
    assert "best=0.4000" in grouped[1]  # max mode keeps the larger value


def test_best_so_far_respects_mode_and_skips_failures() -> None:
    np.testing.assert_array_equal(diagnostics.best_so_far([3, 1, 2, 0.5], "min"), [3, 1, 1, 0.5])
    np.testing.assert_array_equal(diagnostics.best_so_far([1, 3, 2, 4], "max"), [1, 3, 3, 4])
    out = diagnostics.best_so_far([math.nan, 2.0, math.inf, 1.0], "min")
    assert math.isnan(out[0])
    np.testing.assert_array_equal(out[1:], [2.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="mode"):
        diagnostics.best_so_far([1.0], "minimize")


def test_name_by_task_keys_per_task_lists_by_name() -> None:
    record = {"weights": [0.75, 0.25], "gaps": [0.1], "nu": 0.5}
    assert diagnostics.name_by_task(record, ["a", "b"]) is record
    assert record == {"weights": {"a": 0.75, "b": 0.25}, "gaps": [0.1], "nu": 0.5}


def test_write_history_writes_one_suggestion_a_line(tmp_path) -> None:
    path = tmp_path / diagnostics.HISTORY_FILE
    history = [{"trial_id": "a", "nu": 1.0}, {"trial_id": "b", "nu": 0.5}]
    counts = {"observed": 2}
    diagnostics.write_history(
        path, history, metric="loss", mode="min", meta_tasks=["t"], counts=counts
    )
    text = path.read_text()
    assert json.loads(text) == {
        "metric": "loss",
        "mode": "min",
        "meta_tasks": ["t"],
        "counts": counts,
        "space": None,
        "added": [],
        "fidelity": None,
        "suggestions": history,
    }
    assert text.splitlines()[1:3] == [json.dumps(history[0]) + ",", json.dumps(history[1])]
    assert not (tmp_path / (diagnostics.HISTORY_FILE + ".tmp")).exists()
    diagnostics.write_history(path, [], metric=None, mode=None, meta_tasks=[], counts={})
    assert json.loads(path.read_text())["suggestions"] == []


def test_read_history_returns_what_was_written_and_names_what_cannot_be_replayed(
    tmp_path,
) -> None:
    path = tmp_path / diagnostics.HISTORY_FILE
    history = [
        {"trial_id": "a", "x": [0.1], "outcome": "observed", "value": 0.5},
        {"trial_id": "b", "x": [0.2], "outcome": "failed"},
        {"trial_id": "c", "x": [0.3]},  # running
    ]
    space = {"dims": []}
    diagnostics.write_history(
        path, history, metric="l", mode="max", meta_tasks=[], counts={}, space=space
    )
    saved = diagnostics.read_history(path)
    assert saved["suggestions"] == history and saved["space"] == space
    bad = [{**history[0], "value": "0.5"}, {**history[1], "outcome": "lost"}, {"x": [0.1]}]
    for record in bad:
        diagnostics.write_history(path, [record], metric="l", mode="max", meta_tasks=[], counts={})
        with pytest.raises(ValueError, match="suggestion 0 cannot be replayed"):
            diagnostics.read_history(path)
    added = [{"x": [0.4], "outcome": "observed", "value": 0.1, "after": 1}]
    diagnostics.write_history(
        path, history, metric="l", mode="max", meta_tasks=[], counts={}, added=added
    )
    assert diagnostics.read_history(path)["added"] == added
    for record in ({**added[0], "after": None}, {**added[0], "value": None}, {"x": [0.4]}):
        diagnostics.write_history(
            path, [], metric="l", mode="max", meta_tasks=[], counts={}, added=[record]
        )
        with pytest.raises(ValueError, match="added result 0 cannot be replayed"):
            diagnostics.read_history(path)
    path.write_text('{"suggestions": []}')  # written before results given were kept
    assert diagnostics.read_history(path)["added"] == []
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a suggestion history"):
        diagnostics.read_history(path)


def test_diagnostics_imports_neither_ray_nor_the_bench() -> None:
    code = (
        "import sys, rmbo_tune.diagnostics; print(sorted(m for m in sys.modules "
        "if m == 'ray' or m.startswith('rmbo_tune.bench')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
