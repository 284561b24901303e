"""Tests for trainables.logreg (Pima logistic regression, non-stationary stages)."""

from __future__ import annotations

import numpy as np
import pytest
from ray import tune

from tests.trainables.conftest import crash_once, reports_after_restart, run_tuner
from trainables import logreg
from trainables.pima import load_pima


def test_stage_sizes_are_nested_prefixes_of_the_pool() -> None:
    pool = load_pima()
    for k, n in enumerate(logreg.STAGE_SIZES, start=1):
        x_tr, y_tr, x_val, y_val = logreg.stage_data(k)
        assert x_tr.shape == (n, 8) and y_tr.shape == (n,)
        assert x_val.shape == (77, 8) and set(np.unique(y_val)) <= {0, 1}
        np.testing.assert_array_equal(y_tr, pool.y_pool[:n])
        np.testing.assert_allclose(x_tr.mean(axis=0), 0.0, atol=1e-9)


@pytest.mark.parametrize("stage", [0, 6, 2.5])
def test_bad_stage_raises(stage: float) -> None:
    with pytest.raises(ValueError, match="stage"):
        logreg.stage_data(stage)  # type: ignore[arg-type]


def test_sgd_lowers_the_training_loss() -> None:
    x, y, _, _ = logreg.stage_data(5)
    w, b = np.zeros(8), 0.0
    before = logreg.log_loss(w, b, x, y)
    order = np.random.default_rng(0).permutation(len(x))
    w, b = logreg.sgd_epoch(w, b, x, y, order, 32, 0.05, 1e-4)
    assert logreg.log_loss(w, b, x, y) < before - 0.05


def test_search_space_matches_paper_ranges() -> None:
    space = logreg.search_space()
    assert space["batch_size"].lower == 20 and space["batch_size"].upper == 61
    assert (space["l2"].lower, space["l2"].upper) == (1e-6, 1e-2)
    assert (space["lr"].lower, space["lr"].upper) == (0.01, 0.1)


def test_every_stage_in_a_tuner(ray_cluster, tmp_path) -> None:
    grid = run_tuner(
        logreg.logreg_trainable,
        {"stage": tune.grid_search([1, 2, 3, 4, 5]), "epochs": 3, "lr": 0.05, "batch_size": 32},
        tmp_path,
    )
    seen = {}
    for result in grid:
        m = result.metrics
        assert m["epoch"] == 3
        assert m["n_train"] == logreg.STAGE_SIZES[m["stage"] - 1]
        assert 0.0 <= m["val_error"] < 0.4  # chance (always "no diabetes") is about 0.35
        assert m["val_loss"] < np.log(2)
        seen[m["stage"]] = m["val_error"]
    assert sorted(seen) == [1, 2, 3, 4, 5]


def test_same_seed_same_metric_and_seed_matters(ray_cluster, tmp_path) -> None:
    config = {"stage": 2, "epochs": 4, "lr": 0.08, "batch_size": 20, "l2": 1e-3}
    grid = run_tuner(
        logreg.logreg_trainable, {**config, "seed": tune.grid_search([7, 7, 8])}, tmp_path
    )
    losses = {}
    for result in grid:
        losses.setdefault(result.config["seed"], []).append(result.metrics["train_loss"])
    assert losses[7][0] == losses[7][1]
    assert losses[7][0] != losses[8][0]


def test_crashed_trial_resumes_from_checkpoint(ray_cluster, tmp_path) -> None:
    config = {"stage": 3, "epochs": 5, "lr": 0.05, "batch_size": 25, "seed": 3}
    marker = tmp_path / "crashed"
    grid = run_tuner(
        crash_once(logreg.logreg_trainable, after=2, marker=marker),
        config,
        tmp_path,
        max_failures=1,
        name="crash",
    )
    assert marker.exists()
    result = grid[0]
    assert reports_after_restart(marker) == 3 and result.metrics["epoch"] == 5  # resumed
    reference = run_tuner(logreg.logreg_trainable, config, tmp_path, name="clean")[0]
    assert result.metrics["train_loss"] == reference.metrics["train_loss"]


def test_unknown_config_key_fails_the_trial(ray_cluster, tmp_path) -> None:
    with pytest.raises(AssertionError, match="unknown config keys"):
        run_tuner(logreg.logreg_trainable, {"stage": 1, "learning_rate": 0.1}, tmp_path)
