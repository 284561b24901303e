"""Meta-tasks as the searcher holds them: compact columns, deferred sources, engine inputs."""

from __future__ import annotations

import logging
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from ray import tune

from rmbo_tune.meta_tasks import MetaTask
from rmbo_tune.meta_tasks._compact import (
    CompactTask,
    PendingMetaTasks,
    _same,
    engine_tasks,
    fixed_slice,
    load_deferred,
    split_sources,
    unrecorded_keys,
)
from rmbo_tune.space import SearchSpace

SPACE = SearchSpace.from_tune({"x": tune.uniform(0, 1), "m": {"k": tune.choice(["a", "b"])}})
CONFIGS = [{"x": 0.5, "m": {"k": "b"}}, {"x": 0.25, "m": {"k": "a"}}, {"x": 0.75}]


def test_configs_come_back_as_flat_dicts_without_the_missing_keys():
    task = CompactTask("t", CONFIGS, [1.0, 2.0, 3.0])
    assert task.configs() == [
        {("x",): 0.5, ("m", "k"): "b"},
        {("x",): 0.25, ("m", "k"): "a"},
        {("x",): 0.75},
    ]
    assert task.columns[("x",)].dtype == np.float64
    assert isinstance(task.columns[("m", "k")], list)
    ints = CompactTask("i", [{"n": 1}, {"n": 2}], [0.0, 0.0])
    assert ints.columns[("n",)].dtype == np.int64
    assert [type(c[("n",)]) for c in ints.configs()] == [int, int]
    again = pickle.loads(pickle.dumps(task))
    assert again.configs() == task.configs() and again.mode is None
    with pytest.raises(ValueError, match="meta-task 'bad': 2 configs but 1 values"):
        CompactTask("bad", CONFIGS[:2], [1.0])


def test_encode_drops_what_is_not_in_the_space_in_a_canonical_order():
    configs = [*CONFIGS, {"x": 5.0, "m": {"k": "a"}}, {"x": 0.1, "m": {"k": "a"}}]
    values = [1.0, 2.0, 3.0, 4.0, math.nan]
    X, y, dropped = CompactTask("t", configs, values).encode(SPACE)
    assert dropped == 3  # the missing key, x=5 and the NaN value
    assert X.shape == (2, SPACE.dim) and sorted(y) == [1.0, 2.0]
    order = [1, 0, 4, 3, 2]
    X2, y2, _ = CompactTask("t", [configs[i] for i in order], [values[i] for i in order]).encode(
        SPACE
    )
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_a_key_no_config_has_is_unrecorded_and_nan_in_every_row(caplog):
    older = CompactTask("older", [{"x": 0.5}, {"x": 0.25}], [1.0, 2.0])
    assert unrecorded_keys(SPACE, older.configs()) == {("m", "k")}
    X, y, dropped = older.encode(SPACE)
    assert dropped == 0 and X.shape == (2, SPACE.dim) and sorted(y) == [1.0, 2.0]
    np.testing.assert_allclose(X[:, 0], [0.25, 0.5])
    assert np.isnan(X[:, 1:]).all()
    # a key some configs have is recorded: the others are dropped, as before
    assert unrecorded_keys(SPACE, CompactTask("t", CONFIGS, [1.0, 2.0, 3.0]).configs()) == set()
    # a task of another space entirely is not a task of fewer keys
    other = CompactTask("other", [{"z": 1.0}], [1.0])
    assert unrecorded_keys(SPACE, other.configs()) == set()
    with caplog.at_level(logging.INFO, logger="rmbo_tune"):
        meta, names, _ = engine_tasks([older, other], SPACE, "max")
    assert names == ["older"] and np.isnan(meta[0][0][:, 1:]).all()
    assert "meta-task 'older' did not search m/k; its model is constant along it" in caplog.text


def test_a_key_searched_before_and_fixed_now_keeps_the_trials_at_the_new_value(caplog):
    space = SearchSpace.from_tune({"x": tune.uniform(0, 1), "bs": 64, "tag": "new"})
    # The earlier experiment searched bs (and ran with another constant tag: not searched).
    configs = [{"x": i / 12, "bs": [32, 64, 128][i % 3], "tag": "old"} for i in range(12)]
    task = CompactTask("older", configs, [float(i) for i in range(12)])
    sliced, keep = fixed_slice(space, task.configs())
    assert sliced == {("bs",): 64} and keep == [i % 3 == 1 for i in range(12)]
    with caplog.at_level(logging.INFO, logger="rmbo_tune"):
        X, y, dropped = task.encode(space)
    assert dropped == 8 and sorted(y) == [1.0, 4.0, 7.0, 10.0]
    np.testing.assert_allclose(X[:, 0], [1 / 12, 4 / 12, 7 / 12, 10 / 12])
    assert "meta-task 'older' searched bs (now 64); only its 4 trials" in caplog.text
    # No trial at the new value (or fewer than MIN_FIXED_TRIALS): every trial counts.
    for value, configs_at in ((48, configs), (64, configs[:4])):
        other = SearchSpace.from_tune({"x": tune.uniform(0, 1), "bs": value})
        assert (
            fixed_slice(other, CompactTask("t", configs_at, [0.0] * len(configs_at)).configs())[0]
            == {}
        )
    assert (
        CompactTask("t", configs, [0.0] * 12).encode(
            SearchSpace.from_tune({"x": tune.uniform(0, 1), "bs": 48})
        )[2]
        == 0
    )
    # A choice of one value is held constant too; a float matches to 1e-9 relative.
    one = SearchSpace.from_tune({"x": tune.uniform(0, 1), "bs": tune.choice([128])})
    assert fixed_slice(one, task.configs())[0] == {("bs",): 128}
    assert _same(1e-3, 1e-3 * (1 + 1e-12)) and not _same(1e-3, 1.1e-3)
    assert _same(64, 64.0) and not _same(True, 1) and _same("a", "a") and not _same([1], "a")


def test_split_sources_keeps_in_memory_tasks_and_defers_the_rest(tmp_path):
    assert split_sources(None) == ([], [])
    task = MetaTask("old", CONFIGS[:2], [1.0, 2.0], "score", "min", "mem")
    frame = pd.DataFrame({"config/x": [0.5], "score": [1.0]})
    ready, deferred = split_sources([(CONFIGS, [1.0, 2.0, 3.0]), task, tmp_path, frame])
    assert [(t.name, t.mode, t.n) for t in ready] == [("task_0", None, 3), ("old", "min", 2)]
    assert deferred == [(None, tmp_path), (None, frame)]
    ready, deferred = split_sources({"a": (CONFIGS, [1.0, 2.0, 3.0]), "b": task, "c": tmp_path})
    assert [t.name for t in ready] == ["a", "b"] and deferred == [("c", tmp_path)]
    with pytest.raises(ValueError, match="meta-task 0 is empty"):
        split_sources([([], [])])
    with pytest.raises(ValueError, match="meta-task 'e' is empty"):
        split_sources({"e": ([], [])})
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        split_sources(str(tmp_path / "missing"))
    # A pair is checked as load_meta_tasks checks it: no value coerced from text or a bool.
    for bad in ("0.5", True):
        with pytest.raises(TypeError, match="values must be numbers"):
            split_sources([(CONFIGS, [1.0, bad, 3.0])])
    # A non-finite value is left out and counted.
    (task,), _ = split_sources([(CONFIGS[:2], [1.0, math.nan])])
    _, y, dropped = task.encode(SPACE)
    assert len(y) == 1 and dropped == 1


def _csv(path, shift):
    rows = {"config/x": [0.2, 0.4, 0.6], "config/m/k": ["a", "b", "a"]}
    pd.DataFrame({**rows, "loss": [x + shift for x in rows["config/x"]]}).to_csv(path)
    return str(path)


def test_load_deferred_names_tasks_as_load_meta_tasks_does(tmp_path, caplog):
    first, second = _csv(tmp_path / "first.csv", 0.0), _csv(tmp_path / "second.csv", 1.0)
    kwargs = {"space": SPACE, "scope": "best", "metric_map": None}
    assert load_deferred([], "loss", "min", **kwargs) == []
    with caplog.at_level(logging.INFO):
        tasks = load_deferred([(None, first), (None, second)], "loss", "min", **kwargs)
    assert [(t.name, t.mode, list(t.values)) for t in tasks] == [
        ("first", "min", [0.2, 0.4, 0.6]),
        ("second", "min", [1.2, 1.4, 1.6]),
    ]
    assert "RMBOSearcher meta-task found 3, used 3" in caplog.text
    named = load_deferred([("one", first), (None, second)], "loss", "min", **kwargs)
    assert [t.name for t in named] == ["one", "source_1"]


def test_engine_tasks_maximize_and_leave_out_tasks_outside_the_space(caplog):
    tasks = [
        CompactTask("target_mode", CONFIGS[:2], [1.0, 2.0]),
        CompactTask("max_task", CONFIGS[:2], [1.0, 2.0], mode="max"),
        CompactTask("outside", [{"x": 2.0, "m": {"k": "a"}}], [1.0]),
    ]
    with caplog.at_level(logging.WARNING):
        meta, names, dropped = engine_tasks(tasks, SPACE, "min")
    assert names == ["target_mode", "max_task"] and dropped == 1
    assert sorted(meta[0][1]) == [-2.0, -1.0] and sorted(meta[1][1]) == [1.0, 2.0]
    assert "meta-task 'outside' has no config in the search space (the first: x=2" in caplog.text
    unusable = [tasks[2], CompactTask("nan", CONFIGS[:2], [math.nan, math.inf])]
    with pytest.raises(
        ValueError,
        match=r"no meta-task is usable: 'outside' has no config .*"
        r"'nan' has no finite value",
    ):
        engine_tasks(unusable, SPACE, "min")


def test_pending_meta_tasks(tmp_path):
    with pytest.raises(ValueError, match="meta_scope must be 'best' or 'last', got 'mean'"):
        PendingMetaTasks(None, "mean")
    pending = PendingMetaTasks(
        {"mem": (CONFIGS[:2], [1.0, 2.0]), "csv": _csv(tmp_path / "c.csv", 0.0)}, "last"
    )
    assert [t.name for t in pending.ready] == ["mem"] and len(pending.deferred) == 1
    meta, names, dropped = pending.for_engine(SPACE, "loss", "max")
    assert names == ["mem", "csv"] and dropped == 0
    assert [len(y) for _, y in meta] == [2, 3]


def test_a_task_that_searched_a_choice_among_dicts_recorded_it():
    adam, sgd = {"name": "adam", "beta": 0.9}, {"name": "sgd", "beta": 0.0}
    space = SearchSpace.from_tune({"x": tune.uniform(0, 1), "opt": tune.choice([adam, sgd])})
    configs = [{"x": 0.1 * i, "opt": (adam, sgd)[i % 2]} for i in range(4)]
    X, y, dropped = CompactTask("t", configs, [0.0, 1.0, 2.0, 3.0]).encode(space)
    assert dropped == 0 and not np.isnan(X).any()  # recorded, not "did not search opt"
    np.testing.assert_allclose(X[:, 1:].sum(1), 1.0)
    np.testing.assert_allclose(X[y == 1.0, 1:], [[0.0, 1.0]])
