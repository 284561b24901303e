"""The per-suggestion trace of a finished search."""

from __future__ import annotations

import math
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
