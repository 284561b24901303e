"""load_meta_tasks end to end: each kind of source, task names, and the errors it raises."""

from __future__ import annotations

import json
import math
import re
import shutil

import pandas as pd
import pytest
from ray import tune

from rmbo_tune.meta_tasks import format_report, load_meta_tasks
from tests.meta_tasks.helpers import assert_messy, copy_tree, drop_state, trial_dir
from tests.meta_tasks_fixtures import target_space

pytestmark = pytest.mark.ray


@pytest.mark.parametrize("scope", ["best", "last"])
def test_messy_experiment(runs, scope):
    (task,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    assert task.name == "messy" and task.source == str(runs["messy"])
    assert task.report.reader == "experiment_state"
    assert_messy(task, scope)
    cases = {c["case"] for c in task.configs}
    assert {"ok_a", "ok_b", "ok_c", "nan_mid"} <= cases
    assert ("nan_last" in cases) == (scope == "best")
    nested = task.configs[0]["model"]
    assert nested["act"] == "relu" and nested["width"] in (8, 16, 32)


def test_pairs_and_metatask_sources():
    configs = [
        {"lr": 0.01, "model": {"width": 8}},
        {"lr": 0.02},
        {"lr": 0.03, "model": {"width": 8}},
    ]
    tasks = load_meta_tasks(
        [(configs, [1.0, 2.0, math.nan]), (configs[:1], [5.0])],
        "score",
        "max",
        space=target_space(),
    )
    assert [t.name for t in tasks] == ["task_0", "task_1"]
    assert tasks[0].report.dropped == {"nan": 1, "out_of_space:missing_key": 1}
    assert tasks[0].values == [1.0] and tasks[0].report.reader == "pairs"
    configs_out, values_out = tasks[0]  # a MetaTask unpacks as a (configs, values) pair
    assert values_out == [1.0] and configs_out == configs[:1]
    (single,) = load_meta_tasks((configs[:2], [1.0, 2.0]), "score", "max")
    assert single.values == [1.0, 2.0]
    again = load_meta_tasks({"renamed": tasks[0]}, "loss", "min", metric_map={"score": -1})
    assert again[0].name == "renamed" and again[0].values == [-1.0]
    assert again[0].report.dropped == tasks[0].report.dropped
    assert again[0].report.notes["realigned"] == 1
    with pytest.raises(ValueError, match="holds 'score', not 'loss'"):
        load_meta_tasks(tasks[0], "loss", "min")


def test_a_key_the_earlier_experiment_did_not_search_keeps_its_configs():
    configs = [{"lr": 0.01}, {"lr": 0.02}]  # searched before model/width was added
    (task,) = load_meta_tasks((configs, [1.0, 2.0]), "score", "max", space=target_space())
    assert task.report.used == 2 and not task.report.dropped
    assert task.report.unrecorded_keys == ["model/width"]
    assert "did not search model/width (its model is constant along them)" in format_report([task])


def test_a_key_searched_before_and_fixed_now_keeps_the_trials_at_its_value():
    # The earlier experiment searched the activation, which the new space fixes at "relu".
    configs = [
        {"lr": 0.01 * (i + 1), "model": {"width": 8, "act": ["relu", "tanh"][i % 2]}}
        for i in range(8)
    ]
    (task,) = load_meta_tasks((configs, list(range(8))), "score", "max", space=target_space())
    assert task.report.fixed_keys == ["model/act"]
    assert task.report.used == 4 and task.report.dropped == {"out_of_space:other_fixed_value": 4}
    assert task.values == [0, 2, 4, 6]
    assert "searched model/act; only its trials at this search's value" in format_report([task])


def test_errors_name_the_path(runs, tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        load_meta_tasks(missing, "score", "max")
    with pytest.raises(FileNotFoundError, match="no meta-task path matches"):
        load_meta_tasks(str(tmp_path / "exp_*"), "score", "max")
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    with pytest.raises(ValueError, match=re.escape(f"no Tune experiment under {empty}")):
        load_meta_tasks(empty, "score", "max")
    with pytest.raises(ValueError, match="metrics found: aux/loss, other, score") as info:
        load_meta_tasks(runs["messy"], "accuracy", "max")
    assert str(runs["messy"]) in str(info.value)
    trial = next(d for d in runs["messy"].iterdir() if d.is_dir())
    with pytest.raises(ValueError, match="is a trial directory"):
        load_meta_tasks(trial, "score", "max")
    with pytest.raises(ValueError, match="not a CSV"):
        load_meta_tasks(trial / "params.json", "score", "max")
    with pytest.raises(ValueError, match=r"no usable trial in .*other.*unknown_category 6"):
        load_meta_tasks(
            runs["other"],
            "score",
            "max",
            space={"lr": tune.uniform(0, 1), "model": {"width": tune.choice([1, 2])}},
        )


def test_every_trial_errored(runs, tmp_path):
    exp = copy_tree(runs["messy"], tmp_path / "with_state")
    (state,) = exp.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    data["trial_data"] = [t for t in data["trial_data"] if '"status": "ERROR"' in t[0]]
    state.write_text(json.dumps(data))
    errored = trial_dir(exp, "error").name
    for d in exp.iterdir():
        if d.is_dir() and d.name != errored:
            shutil.rmtree(d)
    stateless = drop_state(copy_tree(exp, tmp_path / "stateless"))
    for path in (exp, stateless):
        with pytest.raises(
            ValueError, match=re.escape(f"every trial errored in {path} (1 trials)")
        ):
            load_meta_tasks(path, "score", "max")


def _unusable_beside_good(runs, tmp_path):
    root = tmp_path / "runs"
    copy_tree(runs["messy"], root / "good")
    bad = drop_state(copy_tree(runs["messy"], root / "bad"))
    for result in bad.glob("*/result.json"):
        result.write_text("")  # trials that never reported anything
    return root


def test_an_unusable_experiment_is_skipped_with_a_warning_when_asked(runs, tmp_path, caplog):
    root = _unusable_beside_good(runs, tmp_path)
    with pytest.raises(ValueError, match="bad"):
        load_meta_tasks(root, "score", "max")  # on_error="raise" by default
    tasks = load_meta_tasks(root, "score", "max", on_error="skip")
    assert [t.name for t in tasks] == ["good"]
    assert_messy(tasks[0], "best")
    assert "bad skipped" in caplog.text


def test_nothing_usable_is_still_an_error_that_names_each_source(runs, tmp_path):
    root = _unusable_beside_good(runs, tmp_path)
    shutil.rmtree(root / "good")
    with pytest.raises(ValueError, match=r"no usable meta-task source: .*bad"):
        load_meta_tasks(root, "score", "max", on_error="skip")


def test_the_searcher_searches_with_the_usable_experiments(runs, tmp_path):
    from rmbo_tune import RMBOSearcher

    root = _unusable_beside_good(runs, tmp_path)
    searcher = RMBOSearcher(meta_tasks=str(root), metric="score", mode="max", seed=0)
    searcher.set_search_properties("score", "max", target_space())
    assert isinstance(searcher.suggest("t0"), dict)
    assert searcher.engine is not None and searcher.engine.n_meta_tasks == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mode": "maximize"}, ValueError, "mode must be one of"),
        ({"on_error": "ignore"}, ValueError, "on_error must be one of"),
        ({"scope": "mean"}, ValueError, "scope must be one of"),
        ({"out_of_space": "keep"}, ValueError, "out_of_space must be one of"),
        ({"metric_map": {"acc": "flip"}}, TypeError, r"metric_map\['acc'\]"),
        ({"metric_map": {"acc": 0}}, ValueError, "non-zero scale"),
        ({"metric_map": ["acc"]}, TypeError, "metric_map must be a dict"),
        ({"space": [1]}, TypeError, "space must be"),
        ({"filesystem": "s3"}, TypeError, "filesystem must be"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    args = {"mode": "max", **kwargs}
    mode = args.pop("mode")
    with pytest.raises(error, match=match):
        load_meta_tasks(([{"x": 1}], [1.0]), "score", mode, **args)


def test_bad_sources():
    with pytest.raises(TypeError, match="got int"):
        load_meta_tasks(3, "score", "max")
    with pytest.raises(ValueError, match="2 configs but 1 values"):
        load_meta_tasks(([{"x": 1}, {"x": 2}], [1.0]), "score", "max")
    with pytest.raises(ValueError, match="no config/<key> columns"):
        load_meta_tasks(pd.DataFrame({"score": [1.0]}), "score", "max")
