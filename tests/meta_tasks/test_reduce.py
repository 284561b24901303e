"""A trial's value: best or last, nested metrics, metrics mapped from other names and units."""

from __future__ import annotations

import math

import pytest

from rmbo_tune.meta_tasks import LoadReport, load_meta_tasks
from rmbo_tune.meta_tasks._reduce import MetricReader, candidates, keep_finite
from rmbo_tune.meta_tasks._storage import TrialRecord
from tests.meta_tasks.helpers import by_case, sorted_pairs
from tests.meta_tasks_fixtures import CURVE


@pytest.mark.ray
def test_best_and_last_differ(runs):
    best, last = (
        by_case(load_meta_tasks(runs["messy"], "score", "max", scope=s)[0])
        for s in ("best", "last")
    )
    for case in ("ok_a", "ok_b", "ok_c"):
        assert best[case] / last[case] == pytest.approx(CURVE[1] / CURVE[2])
    # nan_mid reported [x, nan, x/2]: Tune's running max forgets x, the loader does not.
    assert best["nan_mid"] / last["nan_mid"] == pytest.approx(2.0)
    (low,) = load_meta_tasks(runs["messy"], "score", "min", scope="best")
    assert by_case(low)["ok_a"] / best["ok_a"] == pytest.approx(CURVE[0] / CURVE[1])


@pytest.mark.ray
def test_nested_metric_and_metric_map(runs):
    (score,) = load_meta_tasks(runs["messy"], "score", "max")
    (loss,) = load_meta_tasks(runs["messy"], "aux/loss", "min")
    (mapped,) = load_meta_tasks(runs["messy"], "loss", "min", metric_map={"score": -1})
    assert mapped.report.metric_read == "-1 * score"
    assert mapped.metric == "loss" and mapped.mode == "min"
    assert [k for k, _ in sorted_pairs(loss)] == [k for k, _ in sorted_pairs(score)]
    assert [v for _, v in sorted_pairs(loss)] == pytest.approx(
        [-v for _, v in sorted_pairs(score)]
    )
    assert [v for _, v in sorted_pairs(mapped)] == pytest.approx(
        [-v for _, v in sorted_pairs(score)]
    )
    (affine,) = load_meta_tasks(runs["messy"], "err", "min", metric_map={"score": (-1, 1)})
    assert [v for _, v in sorted_pairs(affine)] == pytest.approx(
        [1 - v for _, v in sorted_pairs(score)]
    )
    # The target metric wins over mapped names when the experiment recorded it.
    (same,) = load_meta_tasks(runs["messy"], "score", "max", metric_map={"other": 2.0})
    assert sorted_pairs(same) == sorted_pairs(score)
    assert same.report.metric_read == "score"


def test_candidates_put_the_target_metric_first():
    assert [c.name for c in candidates("loss", None)] == ["loss"]
    cands = candidates("err", {"acc": (-1, 1), "err": None, "neg": -2})
    assert [(c.name, c.describe()) for c in cands] == [
        ("err", "err"),
        ("acc", "-1 * acc + 1"),
        ("neg", "-2 * neg"),
    ]
    assert cands[1](0.25) == 0.75


def _reader(scope, mode="max"):
    return MetricReader("score", mode, scope, candidates("score", {"aux/neg": -1}))


def test_trial_values_by_scope_from_summaries_and_rows():
    rows = [{"score": 1.0}, {"score": math.nan}, {"score": 3.0}, {"score": 2.0}]
    rec = TrialRecord("t", {"x": 1}, False, _rows=rows)
    for scope, mode, value in (("best", "max", 3.0), ("best", "min", 1.0), ("last", "max", 2.0)):
        assert (
            _reader(scope, mode).value(rec, candidates("score", None)[0], LoadReport("s")) == value
        )
    summary = {"score": {"last": 2.0, "max": 3.0, "min": 1.0, "avg": 2.0}}
    summarized = TrialRecord("t", {"x": 1}, False, summary=summary)
    assert _reader("best").value(summarized, candidates("score", None)[0], LoadReport("s")) == 3.0
    nested = TrialRecord("n", {"x": 1}, False, _rows=[{"aux": {"neg": 4.0}}])
    reader = _reader("best")
    cand = reader.pick([nested], "src")
    assert cand.name == "aux/neg" and reader.value(nested, cand, LoadReport("s")) == -4.0


def test_a_summary_whose_extremes_restarted_after_a_nan_is_noted():
    # 10, NaN, 1 reported, no result file: Tune's running max restarted after the NaN.
    summary = {"score": {"last": 1.0, "max": 1.0, "min": 1.0, "avg": math.nan}}
    rec = TrialRecord("t", {"x": 1}, False, summary=summary, _rows=[])
    report = LoadReport("s")
    assert _reader("best").value(rec, candidates("score", None)[0], report) == 1.0
    assert report.notes == {"best_since_a_nan": 1}


def test_a_trial_known_only_by_its_last_result_keeps_it_for_best_too():
    rec = TrialRecord("t", {"x": 1}, False, last_result={"score": 0.8}, _rows=[])
    report = LoadReport("s")
    assert _reader("best").value(rec, candidates("score", None)[0], report) == 0.8
    assert report.notes == {"best_from_last_result": 1} and not report.dropped


def test_dropped_trials_are_counted_by_reason():
    report = LoadReport("s")
    reader, cand = _reader("last"), candidates("score", None)[0]
    records = [
        TrialRecord("e", {}, True),
        TrialRecord("n", {}, False, _rows=[{"score": 1.0}, {"score": math.nan}]),
        TrialRecord("i", {}, False, _rows=[{"score": math.inf}]),
        TrialRecord("m", {}, False, _rows=[{"other": 1.0}]),
        TrialRecord("s", {}, False, _rows=[]),
    ]
    assert [reader.value(r, cand, report) for r in records] == [None] * 5
    assert report.dropped == {
        "errored": 1,
        "nan": 1,
        "inf": 1,
        "missing_metric": 1,
        "no_results": 1,
    }
    assert keep_finite(1.5, report) == 1.5
    with pytest.raises(ValueError, match=r"metrics found: other\. Map one of them to 'score'"):
        reader.pick(records[3:4], "src")


def test_trials_below_the_fidelity_are_dropped():
    cand = candidates("score", None)[0]
    reader = MetricReader("score", "max", "last", [cand], ("training_iteration", 9))
    rows = [{"score": 0.1 * k, "training_iteration": k} for k in (1, 2, 3)]
    stopped = TrialRecord("s", {"x": 1}, False, _rows=rows)
    full_rows = [{"score": 0.1 * k, "training_iteration": k} for k in range(1, 10)]
    full = TrialRecord("f", {"x": 2}, False, _rows=full_rows)
    summary = {"score": {"last": 0.9, "max": 0.9, "min": 0.1, "avg": 0.5}}
    summarized = TrialRecord(
        "u", {"x": 3}, False, summary={**summary, "training_iteration": {"max": 9, "last": 9}}
    )
    no_key = TrialRecord("k", {"x": 4}, False, _rows=[{"score": 1.0}])
    report = LoadReport("s")
    values = [reader.value(r, cand, report) for r in (stopped, full, summarized, no_key)]
    assert values == [None, pytest.approx(0.9), 0.9, None]
    assert report.dropped == {"below_fidelity": 2}
    assert MetricReader("score", "max", "last", [cand]).value(
        stopped, cand, report
    ) == pytest.approx(0.3)


def test_load_meta_tasks_checks_the_fidelity_argument():
    with pytest.raises(ValueError, match="fidelity must be"):
        load_meta_tasks([([{"x": 1}], [1.0])], "score", "max", fidelity=9)
