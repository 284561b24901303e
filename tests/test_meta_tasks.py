"""Meta-tasks loaded from real Tune output (tiny experiments written once per module)."""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import shutil
import socket
from pathlib import Path

import pandas as pd
import pytest
import ray
from ray import tune

from rmbo_tune.meta_tasks import LoadReport, MetaTask, format_report, inspect_main, load_meta_tasks
from tests.meta_tasks_fixtures import (
    CASES,
    CURVE,
    expected,
    messy_space,
    other_space,
    pickle_bomb,
    plant_pickle_bombs,
    run_experiment,
    target_space,
)

pytestmark = pytest.mark.ray

# Drops per scope for messy_space() loaded with metric "score", mode "max".
DROPS = {
    "best": {"errored": 1, "missing_metric": 1, "no_results": 1, "nan": 1, "inf": 1},
    "last": {"errored": 1, "missing_metric": 1, "no_results": 1, "nan": 2, "inf": 1},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """runs/messy (10 trials, one per case) and runs/other (6 trials, older space)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        root = tmp_path_factory.mktemp("runs")
        grids = {
            "messy": run_experiment(root, "messy", messy_space()),
            "other": run_experiment(root, "other", other_space()),
        }
    finally:
        ray.shutdown()
    return {"root": root, "messy": root / "messy", "other": root / "other", "grids": grids}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _drop_state(exp: Path) -> Path:
    for f in exp.glob("experiment_state-*.json"):
        f.unlink()
    return exp


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def _pairs(task: MetaTask) -> list[tuple[str, float]]:
    return sorted(zip(map(_key, task.configs), task.values, strict=True))


def _assert_messy(task: MetaTask, scope: str) -> None:
    assert task.report.found == len(CASES)
    assert task.report.dropped == DROPS[scope]
    assert task.report.used == len(task.values) == len(CASES) - sum(DROPS[scope].values())
    assert task.metric == "score" and task.mode == "max"
    for config, value in zip(task.configs, task.values, strict=True):
        assert value == pytest.approx(expected(config, scope), rel=1e-12), config["case"]
    assert task.report.value_min == min(task.values)
    assert task.report.value_max == max(task.values)


# --- experiment directories -----------------------------------------------------------------


@pytest.mark.parametrize("scope", ["best", "last"])
def test_messy_experiment(runs, scope):
    (task,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    assert task.name == "messy" and task.source == str(runs["messy"])
    assert task.report.reader == "experiment_state"
    _assert_messy(task, scope)
    cases = {c["case"] for c in task.configs}
    assert {"ok_a", "ok_b", "ok_c", "nan_mid"} <= cases
    assert ("nan_last" in cases) == (scope == "best")
    nested = task.configs[0]["model"]
    assert nested["act"] == "relu" and nested["width"] in (8, 16, 32)


def _by_case(task: MetaTask) -> dict[str, float]:
    return {c["case"]: v for c, v in zip(task.configs, task.values, strict=True)}


def test_best_and_last_differ(runs):
    best, last = (
        _by_case(load_meta_tasks(runs["messy"], "score", "max", scope=s)[0])
        for s in ("best", "last")
    )
    for case in ("ok_a", "ok_b", "ok_c"):
        assert best[case] / last[case] == pytest.approx(CURVE[1] / CURVE[2])
    # nan_mid reported [x, nan, x/2]: Tune's running max forgets x, the loader does not.
    assert best["nan_mid"] / last["nan_mid"] == pytest.approx(2.0)
    (low,) = load_meta_tasks(runs["messy"], "score", "min", scope="best")
    assert _by_case(low)["ok_a"] / best["ok_a"] == pytest.approx(CURVE[0] / CURVE[1])


def test_nested_metric_and_metric_map(runs):
    (score,) = load_meta_tasks(runs["messy"], "score", "max")
    (loss,) = load_meta_tasks(runs["messy"], "aux/loss", "min")
    (mapped,) = load_meta_tasks(runs["messy"], "loss", "min", metric_map={"score": -1})
    assert mapped.report.metric_read == "-1 * score"
    assert mapped.metric == "loss" and mapped.mode == "min"
    assert [k for k, _ in _pairs(loss)] == [k for k, _ in _pairs(score)]
    assert [v for _, v in _pairs(loss)] == pytest.approx([-v for _, v in _pairs(score)])
    assert [v for _, v in _pairs(mapped)] == pytest.approx([-v for _, v in _pairs(score)])
    (affine,) = load_meta_tasks(runs["messy"], "err", "min", metric_map={"score": (-1, 1)})
    assert [v for _, v in _pairs(affine)] == pytest.approx([1 - v for _, v in _pairs(score)])
    # The target metric wins over mapped names when the experiment recorded it.
    (same,) = load_meta_tasks(runs["messy"], "score", "max", metric_map={"other": 2.0})
    assert _pairs(same) == _pairs(score)
    assert same.report.metric_read == "score"


def test_moved_copy(runs, tmp_path):
    first = _copy(runs["messy"], tmp_path / "a" / "messy")
    moved = _copy(first, tmp_path / "elsewhere" / "renamed")
    shutil.rmtree(first)
    for scope in ("best", "last"):
        (task,) = load_meta_tasks(moved, "score", "max", scope=scope)
        assert task.name == "renamed"
        _assert_messy(task, scope)


@pytest.mark.parametrize("scope", ["best", "last"])
def test_without_state_file(runs, tmp_path, scope):
    exp = _drop_state(_copy(runs["messy"], tmp_path / "messy"))
    (task,) = load_meta_tasks(exp, "score", "max", scope=scope)
    assert task.report.reader == "trial_files"
    assert task.report.notes["state_file_missing"] == 1
    _assert_messy(task, scope)
    (with_state,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    assert _pairs(task) == _pairs(with_state)


def test_unreadable_state_file(runs, tmp_path):
    exp = _copy(runs["messy"], tmp_path / "messy")
    for f in exp.glob("experiment_state-*.json"):
        f.write_text('{"trial_data": [["not json')
    (task,) = load_meta_tasks(exp, "score", "max")
    assert task.report.reader == "trial_files"
    assert task.report.notes["state_file_unreadable"] == 1
    _assert_messy(task, "best")


def test_trials_missing_from_state_are_read(runs, tmp_path):
    exp = _copy(runs["messy"], tmp_path / "messy")
    (state,) = exp.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    data["trial_data"] = data["trial_data"][:4]
    state.write_text(json.dumps(data))
    (task,) = load_meta_tasks(exp, "score", "max")
    assert task.report.notes["trials_not_in_state"] == len(CASES) - 4
    _assert_messy(task, "best")


def test_state_summaries_spare_result_files(runs, tmp_path):
    """Clean trials are read from the state file's metric summaries alone."""
    exp = _copy(runs["messy"], tmp_path / "messy")
    for case in ("ok_a", "ok_b", "ok_c"):
        for name in ("result.json", "progress.csv"):
            (_trial_dir(exp, case) / name).unlink()
    for scope in ("best", "last"):
        (task,) = load_meta_tasks(exp, "score", "max", scope=scope)
        _assert_messy(task, scope)


def test_state_in_other_json_layout(runs, tmp_path):
    exp = _copy(runs["messy"], tmp_path / "messy")
    (state,) = exp.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    data["trial_data"] = [[json.dumps(json.loads(x)) for x in t] for t in data["trial_data"]]
    state.write_text(json.dumps(data))
    for scope in ("best", "last"):
        (task,) = load_meta_tasks(exp, "score", "max", scope=scope)
        assert task.report.reader == "experiment_state"
        _assert_messy(task, scope)


def _trial_dir(exp: Path, case: str) -> Path:
    for d in exp.iterdir():
        if d.is_dir() and json.loads((d / "params.json").read_text())["case"] == case:
            return d
    raise AssertionError(case)


def test_truncated_result_json(runs, tmp_path):
    exp = _drop_state(_copy(runs["messy"], tmp_path / "messy"))
    cut = _trial_dir(exp, "ok_a") / "result.json"
    lines = cut.read_bytes().splitlines(keepends=True)
    cut.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    only = _trial_dir(exp, "ok_b") / "result.json"
    only.write_bytes(only.read_bytes()[:40])
    (task,) = load_meta_tasks(exp, "score", "max", scope="last")
    assert task.report.notes["truncated_result"] == 2
    assert task.report.dropped["truncated_result"] == 1
    assert task.report.found == len(CASES)
    by_case = {c["case"]: (c, v) for c, v in zip(*task, strict=True)}
    config, value = by_case["ok_a"]
    assert value == pytest.approx(config["lr"] * 10 * CURVE[1])  # iteration 2 of 3
    assert "ok_b" not in by_case


# --- alignment with the current search space ------------------------------------------------


def test_other_space_drop(runs):
    (task,) = load_meta_tasks(runs["other"], "score", "max", space=target_space())
    assert task.report.found == 6
    assert task.report.dropped == {
        "out_of_space:out_of_bounds": 2,
        "out_of_space:unknown_category": 2,
    }
    assert task.report.used == 2
    assert task.report.extra_keys == {"dropout": 6}
    assert sorted((c["lr"], c["model"]["width"]) for c in task.configs) == [(0.01, 16), (0.05, 16)]
    (unaligned,) = load_meta_tasks(runs["other"], "score", "max")
    assert unaligned.report.used == 6 and not unaligned.report.extra_keys


def test_other_space_clip(runs):
    from rmbo_tune.space import SearchSpace

    space = SearchSpace.from_tune(target_space())
    (task,) = load_meta_tasks(runs["other"], "score", "max", space=space, out_of_space="clip")
    assert task.report.used == 3
    assert task.report.notes["clipped"] == 1
    assert task.report.dropped == {"out_of_space:unknown_category": 3}
    clipped = [c for c in task.configs if c["lr"] > 0.05]
    assert len(clipped) == 1 and 0.099 < clipped[0]["lr"] < 0.1
    for c in task.configs:
        space.encode(c)  # every kept config is in the space
    assert clipped[0]["dropout"] == 0.1 and clipped[0]["model"]["act"] == "tanh"


def test_messy_with_space_reports_extra_keys(runs):
    (task,) = load_meta_tasks(runs["messy"], "score", "max", space=target_space())
    assert task.report.extra_keys == {"case": 5}
    _assert_messy(task, "best")


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


# --- other source types give the same tasks --------------------------------------------------


@pytest.mark.parametrize("scope", ["best", "last"])
def test_result_grid_and_analysis_match_directory(runs, scope):
    (directory,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    (grid,) = load_meta_tasks(runs["grids"]["messy"], "score", "max", scope=scope)
    (analysis,) = load_meta_tasks(
        tune.ExperimentAnalysis(str(runs["messy"])), "score", "max", scope=scope
    )
    for task, reader in ((grid, "ResultGrid"), (analysis, "ExperimentAnalysis")):
        assert task.report.reader == reader
        assert task.name == "messy"
        assert _pairs(task) == _pairs(directory)
        assert task.report.dropped == directory.report.dropped
        assert task.report.found == directory.report.found


def _iterations_frame(grid) -> pd.DataFrame:
    frames = []
    for result in grid:
        df = result.metrics_dataframe
        if df is not None and len(df):
            frames.append(df.assign(status="ERROR" if result.error else "TERMINATED"))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("scope", ["best", "last"])
def test_dataframe_and_csv_match_directory(runs, tmp_path, scope):
    (directory,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    frame = _iterations_frame(runs["grids"]["messy"])
    csv = tmp_path / "messy_runs.csv"
    frame.to_csv(csv, index=False)
    (from_frame,) = load_meta_tasks(frame, "score", "max", scope=scope)
    (from_csv,) = load_meta_tasks(str(csv), "score", "max", scope=scope)
    assert from_frame.report.reader == "DataFrame" and from_frame.name == "task_0"
    assert from_csv.report.reader == "CSV" and from_csv.name == "messy_runs"
    for task in (from_frame, from_csv):
        assert _pairs(task) == _pairs(directory)
        assert task.report.dropped["errored"] == 1
    if scope == "last":  # Tune's own per-trial frame: one row per trial, its last result
        last = runs["grids"]["messy"].get_dataframe()
        errored = {r.metrics["trial_id"] for r in runs["grids"]["messy"] if r.error}
        last["status"] = ["ERROR" if t in errored else "TERMINATED" for t in last["trial_id"]]
        (task,) = load_meta_tasks(last, "score", "max", scope="last")
        assert _pairs(task) == _pairs(directory)


# --- paths, globs, URIs -----------------------------------------------------------------------


def test_directory_of_experiments_glob_and_home(runs, tmp_path, monkeypatch):
    tasks = load_meta_tasks(runs["root"], "score", "max")
    assert [t.name for t in tasks] == ["messy", "other"]
    assert [t.report.used for t in tasks] == [5, 6]
    (only,) = load_meta_tasks(str(runs["root"] / "m*"), "score", "max")
    assert only.name == "messy"
    home = tmp_path / "home"
    _copy(runs["root"], home / "ray_results")
    monkeypatch.setenv("HOME", str(home))
    names = [t.name for t in load_meta_tasks("~/ray_results/*", "score", "max")]
    assert names == ["messy", "other"]
    both = load_meta_tasks([runs["messy"], runs["messy"]], "score", "max")
    assert [t.name for t in both] == ["messy", "messy#2"]


def test_directory_of_experiments_without_state(runs, tmp_path):
    root = tmp_path / "root"
    _drop_state(_copy(runs["messy"], root / "messy"))
    _copy(runs["other"], root / "other")
    tasks = load_meta_tasks(root, "score", "max")
    assert [(t.name, t.report.reader) for t in tasks] == [
        ("messy", "trial_files"),
        ("other", "experiment_state"),
    ]
    _assert_messy(tasks[0], "best")


def test_file_uri(runs):
    (task,) = load_meta_tasks("file://" + str(runs["messy"]), "score", "max")
    assert task.source == "file://" + str(runs["messy"])
    _assert_messy(task, "best")
    names = [t.name for t in load_meta_tasks(f"file://{runs['root']}/*", "score", "max")]
    assert names == ["messy", "other"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3(monkeypatch):
    moto_server = pytest.importorskip("moto.server")
    pafs = pytest.importorskip("pyarrow.fs")
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(k, v)
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        fs = pafs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            scheme="http",
            endpoint_override=f"127.0.0.1:{port}",
            allow_bucket_creation=True,
        )
        fs.create_dir("bucket")
        yield fs, f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()


def test_s3(runs, tmp_path, s3):
    from pyarrow import fs as pafs

    fs, query = s3
    pafs.copy_files(str(runs["messy"]), "bucket/runs/messy", destination_filesystem=fs)
    pafs.copy_files(str(runs["other"]), "bucket/runs/other", destination_filesystem=fs)
    stateless = _drop_state(_copy(runs["messy"], tmp_path / "stateless"))
    pafs.copy_files(str(stateless), "bucket/nostate/messy", destination_filesystem=fs)

    (task,) = load_meta_tasks("s3://bucket/runs/messy", "score", "max", filesystem=fs)
    assert task.source == "s3://bucket/runs/messy"
    _assert_messy(task, "best")
    (task,) = load_meta_tasks(f"s3://bucket/runs/messy?{query}", "score", "max", scope="last")
    _assert_messy(task, "last")
    tasks = load_meta_tasks(f"s3://bucket/runs?{query}", "score", "max")
    assert [t.name for t in tasks] == ["messy", "other"]
    (task,) = load_meta_tasks(f"s3://bucket/runs/m*?{query}", "score", "max")
    assert task.name == "messy" and task.source == "s3://bucket/runs/messy"
    (task,) = load_meta_tasks("bucket/nostate/messy", "score", "max", filesystem=fs)
    assert task.report.reader == "trial_files"
    _assert_messy(task, "best")
    with pytest.raises(FileNotFoundError, match="s3://bucket/runs/nope"):
        load_meta_tasks("s3://bucket/runs/nope", "score", "max", filesystem=fs)


# --- safety and errors ------------------------------------------------------------------------


def test_pickles_are_never_unpickled(runs, tmp_path, capsys):
    live = tmp_path / "live_marker"
    pickle.loads(pickle_bomb(live))  # the bomb works...
    assert live.exists()
    marker = tmp_path / "marker"
    exp = _copy(runs["messy"], tmp_path / "root" / "messy")
    stateless = _drop_state(_copy(runs["messy"], tmp_path / "root" / "stateless"))
    assert plant_pickle_bombs(exp, marker) and plant_pickle_bombs(stateless, marker)
    for scope in ("best", "last"):
        load_meta_tasks(exp, "score", "max", scope=scope)
        load_meta_tasks(stateless, "score", "max", scope=scope)
        load_meta_tasks(tmp_path / "root", "score", "max", scope=scope, space=target_space())
    assert inspect_main([str(tmp_path / "root"), "--metric", "score", "--mode", "max"]) == 0
    assert not marker.exists()  # ...and loading never set it off


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
    exp = _copy(runs["messy"], tmp_path / "with_state")
    (state,) = exp.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    data["trial_data"] = [t for t in data["trial_data"] if '"status": "ERROR"' in t[0]]
    state.write_text(json.dumps(data))
    errored = _trial_dir(exp, "error").name
    for d in exp.iterdir():
        if d.is_dir() and d.name != errored:
            shutil.rmtree(d)
    stateless = _drop_state(_copy(exp, tmp_path / "stateless"))
    for path in (exp, stateless):
        with pytest.raises(
            ValueError, match=re.escape(f"every trial errored in {path} (1 trials)")
        ):
            load_meta_tasks(path, "score", "max")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mode": "maximize"}, ValueError, "mode must be one of"),
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


# --- report and CLI ----------------------------------------------------------------------------


def test_format_report(runs):
    tasks = load_meta_tasks(runs["root"], "score", "max", space=target_space())
    text = format_report(tasks)
    lines = text.splitlines()
    assert lines[0].split() == [
        "task",
        "source",
        "read",
        "from",
        "metric",
        "found",
        "used",
        "dropped",
        "values",
    ]
    messy = next(line for line in lines if line.startswith("messy "))
    assert "experiment_state" in messy and " 10 " in messy and "errored 1" in messy
    assert "2 tasks" in text and "out_of_space:unknown_category 2" in text
    assert "config keys not in the search space (ignored): dropout (6)" in text
    assert isinstance(tasks[0].report, LoadReport)
    assert tasks[0].report.summary().startswith("found 10, used 5; dropped ")
    assert repr(tasks[0]).startswith("MetaTask(name='messy', n=5")


def test_inspect_cli(runs, capsys):
    code = inspect_main(
        [
            str(runs["messy"]),
            str(runs["other"]),
            "--metric",
            "loss",
            "--mode",
            "min",
            "--scope",
            "last",
            "--map",
            "score=-1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "-1 * score" in out and "nan 2" in out and "2 tasks" in out
    assert inspect_main([str(runs["messy"]), "--metric", "acc", "--mode", "max"]) == 1
    assert "metrics found: aux/loss, other, score" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        inspect_main([str(runs["messy"]), "--metric", "acc"])
    assert os.path.exists(runs["messy"])
