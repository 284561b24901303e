"""Tests for trainables.experiments and examples/make_meta_tasks.py."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from ray import tune

from tests.trainables.conftest import ROOT
from trainables import experiments


def test_cnn_sources_exclude_the_target() -> None:
    assert sorted(experiments.cnn_tasks("mnist")) == ["cifar10", "cifar100", "svhn"]
    with pytest.raises(ValueError, match="imagenet"):
        experiments.cnn_tasks("imagenet")


def test_logreg_sources_are_the_four_smaller_stages() -> None:
    tasks = experiments.logreg_tasks()
    assert [t["stage"] for t in tasks.values()] == [1, 2, 3, 4]


def test_cartpole_sources_similar_and_random() -> None:
    target = [0.1, 0.0, 0.05, 0.0]
    tasks = experiments.cartpole_tasks(target, seed=4)
    states = {k: np.array(v["initial_state"]) for k, v in tasks.items()}
    assert len(states) == 10 and sum(k.startswith("similar") for k in states) == 3
    for key, state in states.items():
        if key.startswith("similar"):
            assert np.abs(state - target).max() < 0.1
    assert tasks == experiments.cartpole_tasks(target, seed=4)


def test_siamese_sources_from_packaged_split() -> None:
    tasks = experiments.siamese_tasks("background_small2", n_alphabets=3)
    assert len(tasks) == 3 and all(t["split"] == "background_small2" for t in tasks.values())


def test_unknown_workload() -> None:
    with pytest.raises(ValueError, match="'svm'"):
        experiments.default_tasks("svm")
    with pytest.raises(ValueError, match="'svm'"):
        experiments.run_meta_tasks("svm", {}, storage_path=".", num_samples=1)


def test_runs_leave_readable_experiments(ray_cluster, tmp_path) -> None:
    tasks = {k: v for k, v in experiments.logreg_tasks().items() if k in ("stage1", "stage2")}
    dirs = experiments.run_meta_tasks(
        "logreg", tasks, storage_path=tmp_path, num_samples=3, fixed={"epochs": 2}, verbose=0
    )
    assert sorted(dirs) == ["stage1", "stage2"]
    for task, path in dirs.items():
        assert path == tmp_path / f"logreg-{task}"
        frame = tune.ExperimentAnalysis(str(path)).dataframe(metric="val_error", mode="min")
        assert len(frame) == 3 and (frame["config/stage"] == int(task[-1])).all()
        assert frame["config/lr"].between(0.01, 0.1).all() and frame["val_error"].le(1).all()


def test_storage_uri_is_passed_to_tune_as_it_is(ray_cluster, tmp_path) -> None:
    from rmbo_tune.meta_tasks import load_meta_tasks

    uri = f"file://{tmp_path}/runs/"
    dirs = experiments.run_meta_tasks(
        "logreg",
        {"stage1": {"stage": 1}},
        storage_path=uri,
        num_samples=2,
        fixed={"epochs": 1},
        verbose=0,
    )
    assert dirs == {"stage1": f"file://{tmp_path}/runs/logreg-stage1"}
    assert (tmp_path / "runs" / "logreg-stage1").is_dir()
    (loaded,) = load_meta_tasks(dirs["stage1"], metric="val_error", mode="min")
    assert len(loaded.values) == 2


@pytest.mark.slow
def test_example_script(ray_cluster, tmp_path, capsys, monkeypatch) -> None:
    pytest.importorskip("gymnasium")
    script = ROOT / "examples" / "make_meta_tasks.py"
    monkeypatch.syspath_prepend(str(script.parent))  # as `python examples/...` does
    spec = importlib.util.spec_from_file_location("make_meta_tasks", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    code = module.main(
        [
            "cartpole",
            "--storage-path",
            str(tmp_path),
            "--num-samples",
            "2",
            "--epochs",
            "2",
            "--set",
            "max_steps=50",
            "--n-similar",
            "1",
            "--n-random",
            "2",
            "--verbose",
            "0",
        ]
    )
    assert code == 0
    printed = [ln for ln in capsys.readouterr().out.splitlines() if "\t" in ln]
    assert sorted(ln.split("\t")[0] for ln in printed) == ["random0", "random1", "similar0"]
    for line in printed:
        task, path = line.split("\t")
        assert path == str(tmp_path / f"cartpole-{task}")
        results = sorted((tmp_path / f"cartpole-{task}").glob("*/result.json"))
        assert len(results) == 2
        last = json.loads(results[0].read_text().strip().splitlines()[-1])
        assert last["episode"] == 2 and 0.0 <= last["normalized_return"] <= 1.0
        assert last["config"]["max_steps"] == 50
