"""Search algorithms of the Tune benchmark: construction and the warm-start configs (no Ray
runtime started)."""

from __future__ import annotations

import pytest

from rmbo_tune.bench import search_algs
from rmbo_tune.searcher import RMBOSearcher


def test_warm_start_configs_are_each_tasks_best_ranked_by_the_meta_models() -> None:
    from ray import tune

    space = {"x": tune.uniform(0, 1), "c": tune.choice(["a", "b"])}
    a = ([{"x": 0.1, "c": "a"}, {"x": 0.5, "c": "b"}, {"x": 0.9, "c": "a"}], [1.0, 3.0, 2.0])
    b = ([{"x": 0.2, "c": "b"}, {"x": 0.7, "c": "a"}, {"x": 0.95, "c": "b"}], [0.5, 0.1, 0.9])
    configs = search_algs.warm_start_configs(space, "l", "min", {"a": a, "b": b}, seed=0)
    assert sorted(c["x"] for c in configs) == [0.1, 0.7]
    assert all(c["c"] == "a" for c in configs)
    # the engine's warm-start method suggests the same configs first
    s = RMBOSearcher(metric="l", mode="min", method="warm-start", meta_tasks=[a, b])
    s.set_search_properties("l", "min", space)
    assert [s.suggest(f"t{i}") for i in range(2)] == configs


def test_unknown_method_is_named() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        search_algs.make_search_alg("hyperband", "m", "min", seed=0)


def test_bohb_without_its_dependencies_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setattr(search_algs, "bohb_available", lambda: False)
    with pytest.raises(ImportError, match="pip install hpbandster ConfigSpace"):
        search_algs.make_search_alg("bohb", "m", "min", seed=0)
