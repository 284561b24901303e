"""Benchmark tasks through real Ray Tune, each on a tiny budget, and the Tune-side runner."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest

from rmbo_tune.bench import tasks, tune_runner
from rmbo_tune.bench.search_algs import optuna_available

pytestmark = pytest.mark.ray


def _check_outputs(out: Path, doc: dict, methods: list[str], budget: int) -> None:
    for name in ("results.json", "results.md", "best_so_far.png"):
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "results.json").read_text())["task"] == doc["task"]
    assert list(doc["runs"]) == methods
    for method in methods:
        for run in doc["runs"][method]:
            assert len(run["values"]) == budget, method
            assert all(math.isfinite(v) for v in run["values"]), method
            assert len(run["seconds"]) == budget


def test_cartpole_all_tune_methods(ray_local, tmp_path) -> None:
    methods = ["rm-gp-ucb", "rm-gp-ts", "gp-ucb", "tune-random"]
    if optuna_available():
        methods += ["optuna", "optuna-warm"]
    out = tmp_path / "cartpole"
    doc = tasks.main(
        [
            "--seeds",
            "1",
            "--budget",
            "3",
            "--meta-samples",
            "4",
            "--n-meta",
            "1",
            "--methods",
            *methods,
            "--out",
            str(out),
        ],
        task_name="cartpole",
    )
    _check_outputs(out, doc, methods, 3)
    assert (out / "meta_weights.png").stat().st_size > 0
    # 3 similar + 1 random meta-tasks, each a real Tune experiment read back from disk
    assert len(list((out / "meta").glob("cartpole-meta-*"))) == 4
    run = doc["runs"]["rm-gp-ucb"][0]
    assert set(run["weights"][0]) == {"similar0", "similar1", "similar2", "random0"}
    assert all(0.0 <= v <= 1.0 for v in run["values"])
    assert "gp-ucb" in (out / "results.md").read_text()


def test_pima_and_meta_dirs_reused(ray_local, tmp_path) -> None:
    out = tmp_path / "pima"
    doc = tasks.main(
        [
            "--seeds",
            "2",
            "--budget",
            "2",
            "--meta-samples",
            "3",
            "--epochs",
            "2",
            "--methods",
            "rm-gp-ucb",
            "random",
            "--out",
            str(out),
            "--option",
            "n_polish=0",
        ],
        task_name="pima",
    )
    _check_outputs(out, doc, ["rm-gp-ucb", "random"], 2)
    assert doc["metric"] == "val_loss"
    assert doc["settings"]["options"] == {"n_polish": 0}
    assert len(doc["runs"]["rm-gp-ucb"]) == 2
    # an existing set of meta-task experiments can be reused without rerunning them
    dirs = {p.name.removeprefix("pima-meta-"): p for p in sorted((out / "meta").iterdir())}
    assert sorted(dirs) == ["stage1", "stage2", "stage3", "stage4"]
    again = tune_runner.run_benchmark(
        tasks.pima_task(epochs=2),
        methods=["rm-gp-ucb"],
        seeds=[0],
        budget=2,
        out_dir=tmp_path / "again",
        meta_dirs=dirs,
        progress=None,
        options={"n_polish": 0},
    )
    assert again["runs"]["rm-gp-ucb"][0]["values"] == pytest.approx(
        doc["runs"]["rm-gp-ucb"][0]["values"], rel=1e-5
    )
    assert not (tmp_path / "again" / "meta").exists()


def test_pima_beside_asha_spends_equal_epochs(ray_local, tmp_path) -> None:
    out = tmp_path / "pima-asha"
    budget, epochs = 2, 3
    doc = tasks.main(
        [
            "--seeds",
            "1",
            "--budget",
            str(budget),
            "--meta-samples",
            "2",
            "--epochs",
            str(epochs),
            "--methods",
            "rm-gp-ucb",
            "random",
            "--scheduler",
            "asha",
            "--option",
            "n_polish=0",
            "--out",
            str(out),
        ],
        task_name="pima",
    )
    names = ["rm-gp-ucb+asha", "random+asha", "rm-gp-ucb+asha-final"]
    assert list(doc["runs"]) == [*names, "rm-gp-ucb"]
    assert doc["settings"]["scheduler"] == "asha" and "full trainings" in doc["x_label"]
    assert len(doc["runs"]["rm-gp-ucb"][0]["values"]) == budget  # trials run to the end
    for name in names:
        run = doc["runs"][name][0]
        assert len(run["values"]) == budget
        # The experiment stops once budget x epochs epochs are spent (the trial running
        # then may have reported a little more); ASHA may stop any trial after 1 epoch.
        assert budget * epochs <= sum(run["epochs"]) < (budget + 1) * epochs, run["epochs"]
        # (a trial suggested as the budget ran out may not have trained at all)
        assert all(0 <= n <= epochs for n in run["epochs"]) and run["trials"] >= budget
        # ASHA never stops the first trial (nothing to compare it with): it trains fully.
        assert run["epochs"][0] == epochs and math.isfinite(run["values"][0])
    rmbo = doc["runs"]["rm-gp-ucb+asha"][0]
    assert rmbo["values"] == sorted(rmbo["values"], reverse=True)  # best so far, min mode
    with pytest.raises(SystemExit):
        tasks.main(["--scheduler", "asha"], task_name="cartpole")


def test_best_per_budget_counts_results_in_processing_order() -> None:
    # two trials interleaved (as under HyperBand), max_t 2: a full-length result counts from
    # the moment it was processed, whichever trial it came from
    log = [("a", 1, 0.5), ("b", 1, 0.4), ("a", 2, 0.3), ("b", 2, float("nan")), ("c", 1, 0.1)]
    values, epochs = tune_runner.best_per_budget(log, max_t=2, budget=3, mode="min")
    assert math.isnan(values[0])  # after 2 epochs: neither trial had trained fully
    assert values[1:] == [pytest.approx(0.3), pytest.approx(0.3)]  # b's full result is NaN
    assert epochs == {"a": 2, "b": 2, "c": 1}
    first, _ = tune_runner.best_per_budget(log[:2], max_t=2, budget=2, mode="max")
    assert math.isnan(first[0]) and math.isnan(first[1])  # no trial trained fully yet


@pytest.mark.slow
def test_bohb_beside_its_hyperband_spends_the_same_epochs(ray_local, tmp_path) -> None:
    from rmbo_tune.bench.search_algs import bohb_available

    if not bohb_available():
        pytest.skip("bohb needs hpbandster and ConfigSpace (not installed with the project)")
    budget, epochs = 3, 3
    doc = tasks.main(
        [
            "--seeds",
            "1",
            "--budget",
            str(budget),
            "--meta-samples",
            "2",
            "--epochs",
            str(epochs),
            "--methods",
            "bohb",
            "--scheduler",
            "asha",
            "--out",
            str(tmp_path / "bohb"),
        ],
        task_name="pima",
    )
    run = doc["runs"]["bohb"][0]
    assert len(run["values"]) == budget and math.isfinite(run["values"][-1])
    assert budget * epochs <= sum(run["epochs"])
    with pytest.raises(SystemExit):
        tasks.main(["--methods", "bohb"], task_name="pima")


@pytest.mark.slow
def test_cnn_digits_tiny(ray_local, tmp_path) -> None:
    pytest.importorskip("tensorflow")
    out = tmp_path / "cnn"
    doc = tasks.main(
        [
            "--seeds",
            "1",
            "--budget",
            "2",
            "--meta-samples",
            "2",
            "--epochs",
            "1",
            "--methods",
            "rm-gp-ucb",
            "tune-random",
            "--out",
            str(out),
        ],
        task_name="cnn-digits",
    )
    _check_outputs(out, doc, ["rm-gp-ucb", "tune-random"], 2)
    assert all(0.0 <= v <= 1.0 for v in doc["runs"]["rm-gp-ucb"][0]["values"])


@pytest.mark.slow
def test_omniglot_small_tiny(ray_local, tmp_path, monkeypatch) -> None:
    pytest.importorskip("tensorflow")
    # The task as the command line builds it, but each epoch one batch of 64 pairs instead of
    # 512: training the Siamese network on 512 pairs took ~10 s of each of the 8 trials, and
    # nothing here depends on how well it learns.
    factory, *defaults = tasks.TASKS["omniglot-small"]
    small = functools.partial(factory, pairs_per_epoch=64)
    monkeypatch.setitem(tasks.TASKS, "omniglot-small", (small, *defaults))
    out = tmp_path / "omniglot"
    doc = tasks.main(
        [
            "--seeds",
            "1",
            "--budget",
            "2",
            "--meta-samples",
            "2",
            "--epochs",
            "1",
            "--n-meta",
            "2",
            "--methods",
            "rm-gp-ucb",
            "gp-ucb",
            "--out",
            str(out),
        ],
        task_name="omniglot-small",
    )
    _check_outputs(out, doc, ["rm-gp-ucb", "gp-ucb"], 2)
    assert doc["settings"]["fixed"]["pairs_per_epoch"] == 64
    assert len(doc["runs"]["rm-gp-ucb"][0]["weights"][0]) == 2


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="source must be"):
        tune_runner.run_meta_experiments(
            tasks.pima_task(), storage_path="/nonexistent", num_samples=1, source="grid"
        )
    with pytest.raises(ValueError, match="budget must be >= 1"):
        tune_runner.run_benchmark(
            tasks.pima_task(), methods=["random"], seeds=[0], budget=0, out_dir="/nonexistent"
        )
    with pytest.raises(SystemExit):
        tasks.main(["--n-meta", "2"], task_name="pima")
    with pytest.raises(SystemExit) as exc:
        tasks.main(["--option", "n_polsh=0"], task_name="pima")
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        tasks.main(["--target-state", "0", "0", "0", "0"], task_name="pima")


def test_cartpole_target_state() -> None:
    task = tasks.cartpole_task((0.5, 0.0, 0.1, 0.0), n_similar=2, n_random=1)
    assert task.target == {"initial_state": [0.5, 0.0, 0.1, 0.0]}
    assert list(task.meta_tasks) == ["similar0", "similar1", "random0"]
    near = task.meta_tasks["similar0"]["initial_state"]
    assert max(abs(a - b) for a, b in zip(near, (0.5, 0.0, 0.1, 0.0), strict=True)) < 0.1


def test_rerun_into_the_same_directory_starts_afresh(ray_local, tmp_path) -> None:
    from rmbo_tune.meta_tasks import load_meta_tasks

    out = tmp_path / "pima"
    args = ["--seeds", "1", "--budget", "2", "--meta-samples", "2", "--epochs", "1",
            "--methods", "random", "--out", str(out)]  # fmt: skip
    tasks.main(args, task_name="pima")
    tasks.main(args, task_name="pima")
    loaded = load_meta_tasks(str(out / "meta" / "pima-meta-stage1"), metric="val_loss", mode="min")
    assert len(loaded[0].values) == 2  # not 4: the first run's trials are gone
    assert len(list((out / "runs").iterdir())) == 1


def test_foreign_output_directory_is_refused(tmp_path) -> None:
    (tmp_path / "runs").mkdir()
    with pytest.raises(ValueError, match="did not write"):
        tune_runner.run_benchmark(
            tasks.pima_task(), methods=["random"], seeds=[0], budget=1, out_dir=tmp_path,
            progress=None,
        )  # fmt: skip
