"""Experiment directories read through pyarrow filesystems: with or without a state file,
moved, truncated, globbed, under file:// and s3:// URIs, and never a pickle opened."""

from __future__ import annotations

import json
import pickle
import shutil

import pyarrow.fs as pafs
import pytest

from rmbo_tune.meta_tasks import inspect_main, load_meta_tasks
from tests.meta_tasks.helpers import assert_messy, copy_tree, drop_state, sorted_pairs, trial_dir
from tests.meta_tasks_fixtures import CASES, CURVE, pickle_bomb, plant_pickle_bombs, target_space
from tests.s3_server import CREDENTIALS, moto_s3

pytestmark = pytest.mark.ray


def test_moved_copy(runs, tmp_path):
    first = copy_tree(runs["messy"], tmp_path / "a" / "messy")
    moved = copy_tree(first, tmp_path / "elsewhere" / "renamed")
    shutil.rmtree(first)
    for scope in ("best", "last"):
        (task,) = load_meta_tasks(moved, "score", "max", scope=scope)
        assert task.name == "renamed"
        assert_messy(task, scope)


@pytest.mark.parametrize("scope", ["best", "last"])
def test_without_state_file(runs, tmp_path, scope):
    exp = drop_state(copy_tree(runs["messy"], tmp_path / "messy"))
    (task,) = load_meta_tasks(exp, "score", "max", scope=scope)
    assert task.report.reader == "trial_files"
    assert task.report.notes["state_file_missing"] == 1
    assert_messy(task, scope)
    (with_state,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    assert sorted_pairs(task) == sorted_pairs(with_state)


def test_unreadable_state_file(runs, tmp_path):
    exp = copy_tree(runs["messy"], tmp_path / "messy")
    for f in exp.glob("experiment_state-*.json"):
        f.write_text('{"trial_data": [["not json')
    (task,) = load_meta_tasks(exp, "score", "max")
    assert task.report.reader == "trial_files"
    assert task.report.notes["state_file_unreadable"] == 1
    assert_messy(task, "best")


def test_trials_missing_from_state_are_read(runs, tmp_path):
    exp = copy_tree(runs["messy"], tmp_path / "messy")
    (state,) = exp.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    data["trial_data"] = data["trial_data"][:4]
    state.write_text(json.dumps(data))
    (task,) = load_meta_tasks(exp, "score", "max")
    assert task.report.notes["trials_not_in_state"] == len(CASES) - 4
    assert_messy(task, "best")


def test_state_summaries_spare_result_files(runs, tmp_path):
    """Clean trials are read from the state file's metric summaries alone."""
    exp = copy_tree(runs["messy"], tmp_path / "messy")
    for case in ("ok_a", "ok_b", "ok_c"):
        for name in ("result.json", "progress.csv"):
            (trial_dir(exp, case) / name).unlink()
    for scope in ("best", "last"):
        (task,) = load_meta_tasks(exp, "score", "max", scope=scope)
        assert_messy(task, scope)


def test_state_in_other_json_layout(runs, tmp_path):
    exp = copy_tree(runs["messy"], tmp_path / "messy")
    (state,) = exp.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    data["trial_data"] = [[json.dumps(json.loads(x)) for x in t] for t in data["trial_data"]]
    state.write_text(json.dumps(data))
    for scope in ("best", "last"):
        (task,) = load_meta_tasks(exp, "score", "max", scope=scope)
        assert task.report.reader == "experiment_state"
        assert_messy(task, scope)


def test_truncated_result_json(runs, tmp_path):
    exp = drop_state(copy_tree(runs["messy"], tmp_path / "messy"))
    cut = trial_dir(exp, "ok_a") / "result.json"
    lines = cut.read_bytes().splitlines(keepends=True)
    cut.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    only = trial_dir(exp, "ok_b") / "result.json"
    only.write_bytes(only.read_bytes()[:40])
    (task,) = load_meta_tasks(exp, "score", "max", scope="last")
    assert task.report.notes["truncated_result"] == 2
    assert task.report.dropped["truncated_result"] == 1
    assert task.report.found == len(CASES)
    by_case = {c["case"]: (c, v) for c, v in zip(*task, strict=True)}
    config, value = by_case["ok_a"]
    assert value == pytest.approx(config["lr"] * 10 * CURVE[1])  # iteration 2 of 3
    assert "ok_b" not in by_case


def test_directory_of_experiments_glob_and_home(runs, tmp_path, monkeypatch):
    tasks = load_meta_tasks(runs["root"], "score", "max")
    assert [t.name for t in tasks] == ["messy", "other"]
    assert [t.report.used for t in tasks] == [5, 6]
    (only,) = load_meta_tasks(str(runs["root"] / "m*"), "score", "max")
    assert only.name == "messy"
    home = tmp_path / "home"
    copy_tree(runs["root"], home / "ray_results")
    monkeypatch.setenv("HOME", str(home))
    names = [t.name for t in load_meta_tasks("~/ray_results/*", "score", "max")]
    assert names == ["messy", "other"]
    both = load_meta_tasks([runs["messy"], runs["messy"]], "score", "max")
    assert [t.name for t in both] == ["messy", "messy#2"]


def test_a_patterns_matches_that_are_no_source_are_left_out(runs, tmp_path):
    root = copy_tree(runs["root"], tmp_path / "root")
    (root / "notes.txt").write_text("not an experiment")
    (root / "plots").mkdir()
    names = [t.name for t in load_meta_tasks(str(root / "*"), "score", "max")]
    assert names == ["messy", "other"]
    with pytest.raises(ValueError, match=r"no match of .* is a meta-task source"):
        load_meta_tasks(str(root / "[np]*"), "score", "max")  # notes.txt and plots only
    with pytest.raises(ValueError, match="not a CSV"):
        load_meta_tasks(root / "notes.txt", "score", "max")  # named alone, it is an error
    # A pattern read through a given filesystem (S3 with an endpoint, say) is one too.
    fs = pafs.LocalFileSystem()
    names = [t.name for t in load_meta_tasks(f"{root}/*", "score", "max", filesystem=fs)]
    assert names == ["messy", "other"]
    names = [t.name for t in load_meta_tasks(f"file://{root}/o*", "score", "max", filesystem=fs)]
    assert names == ["other"]


def test_directory_of_experiments_without_state(runs, tmp_path):
    root = tmp_path / "root"
    drop_state(copy_tree(runs["messy"], root / "messy"))
    copy_tree(runs["other"], root / "other")
    tasks = load_meta_tasks(root, "score", "max")
    assert [(t.name, t.report.reader) for t in tasks] == [
        ("messy", "trial_files"),
        ("other", "experiment_state"),
    ]
    assert_messy(tasks[0], "best")


def test_file_uri(runs):
    (task,) = load_meta_tasks("file://" + str(runs["messy"]), "score", "max")
    assert task.source == "file://" + str(runs["messy"])
    assert_messy(task, "best")
    names = [t.name for t in load_meta_tasks(f"file://{runs['root']}/*", "score", "max")]
    assert names == ["messy", "other"]


@pytest.fixture
def s3(monkeypatch):
    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    with moto_s3() as server:
        yield server


def test_s3(runs, tmp_path, s3):
    from pyarrow import fs as pafs

    fs, query = s3
    pafs.copy_files(str(runs["messy"]), "bucket/runs/messy", destination_filesystem=fs)
    pafs.copy_files(str(runs["other"]), "bucket/runs/other", destination_filesystem=fs)
    stateless = drop_state(copy_tree(runs["messy"], tmp_path / "stateless"))
    pafs.copy_files(str(stateless), "bucket/nostate/messy", destination_filesystem=fs)

    (task,) = load_meta_tasks("s3://bucket/runs/messy", "score", "max", filesystem=fs)
    assert task.source == "s3://bucket/runs/messy"
    assert_messy(task, "best")
    (task,) = load_meta_tasks(f"s3://bucket/runs/messy?{query}", "score", "max", scope="last")
    assert_messy(task, "last")
    tasks = load_meta_tasks(f"s3://bucket/runs?{query}", "score", "max")
    assert [t.name for t in tasks] == ["messy", "other"]
    (task,) = load_meta_tasks(f"s3://bucket/runs/m*?{query}", "score", "max")
    assert task.name == "messy" and task.source == "s3://bucket/runs/messy"
    (task,) = load_meta_tasks("bucket/nostate/messy", "score", "max", filesystem=fs)
    assert task.report.reader == "trial_files"
    assert_messy(task, "best")
    with pytest.raises(FileNotFoundError, match="s3://bucket/runs/nope"):
        load_meta_tasks("s3://bucket/runs/nope", "score", "max", filesystem=fs)


def test_pickles_are_never_unpickled(runs, tmp_path, capsys):
    live = tmp_path / "live_marker"
    pickle.loads(pickle_bomb(live))  # the bomb works...
    assert live.exists()
    marker = tmp_path / "marker"
    exp = copy_tree(runs["messy"], tmp_path / "root" / "messy")
    stateless = drop_state(copy_tree(runs["messy"], tmp_path / "root" / "stateless"))
    assert plant_pickle_bombs(exp, marker) and plant_pickle_bombs(stateless, marker)
    for scope in ("best", "last"):
        load_meta_tasks(exp, "score", "max", scope=scope)
        load_meta_tasks(stateless, "score", "max", scope=scope)
        load_meta_tasks(tmp_path / "root", "score", "max", scope=scope, space=target_space())
    assert inspect_main([str(tmp_path / "root"), "--metric", "score", "--mode", "max"]) == 0
    assert not marker.exists()  # ...and loading never set it off
