"""The overhead benchmark's engine-only mode (the Tune run itself is a benchmark, not a test)."""

from __future__ import annotations

import math

import pytest

from rmbo_tune.bench import overhead


def test_engine_only_runs_the_same_search_without_tune() -> None:
    for n_meta in (0, 2):
        r = overhead.engine_only(12, n_meta, seed=0)
        assert r["setup"] >= 0.0
        assert math.isfinite(r["per_trial_ms"]) and r["per_trial_ms"] > 0.0


def test_meta_tasks_are_in_the_space() -> None:
    tasks = overhead.meta_tasks(3, 5, seed=1)
    assert len(tasks) == 3
    for configs, values in tasks:
        assert len(configs) == len(values) == 5
        for c in configs:
            assert 0 <= c["a"] <= 1 and 1e-4 <= c["b"] <= 1 and c["c"] in range(10)


def test_engine_options_are_passed_to_the_engine() -> None:
    with pytest.raises(ValueError, match="n_polish"):
        overhead.engine_only(3, 0, seed=0, n_polish=-1)


def test_timed_searcher_times_every_tune_facing_call_and_the_first_suggestion() -> None:
    s = overhead.TimedSearcher(metric="loss", mode="min", seed=0)
    assert s.set_search_properties(None, None, overhead.SPACE)
    for i in range(3):
        config = s.suggest(str(i))
        s.on_trial_result(str(i), {"loss": overhead.objective(config)})
        s.on_trial_complete(str(i), {"loss": overhead.objective(config)})
    assert set(s.seconds) == {
        "set_search_properties",
        "suggest",
        "on_trial_result",
        "on_trial_complete",
    }
    assert 0.0 < s.first_suggest <= s.seconds["suggest"]
    assert s.cpu_seconds > 0.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repeats", "0"], "must be >= 1"),
        (["--trials", "0"], "must be >= 1"),
        (["--meta-tasks", "-1"], "must be >= 0"),
    ],
)
def test_bad_counts_are_refused_before_ray_starts(argv, message, capsys) -> None:
    with pytest.raises(SystemExit):
        overhead.main(argv)
    assert message in capsys.readouterr().err
