"""Tests for trainables.cnn (the paper's CNN) inside real Tuner.fit() runs."""

from __future__ import annotations

import pytest
from ray import tune

from tests.trainables import formats
from tests.trainables.conftest import crash_once, reports_after_restart, run_tuner

pytest.importorskip("tensorflow")
pytest.importorskip("sklearn")
from trainables import cnn

DIGITS = {
    "dataset": "digits",
    "lr": 1e-2,
    "lr_decay": 1e-4,
    "l2": 1e-4,
    "batch_size": 32,
    "max_train_samples": 1000,
    "deterministic": True,
}


def test_architecture_matches_paper() -> None:
    import keras

    model = cnn.build_cnn((28, 28, 1), 10, 1e-3)
    convs = [la for la in model.layers if isinstance(la, keras.layers.Conv2D)]
    pools = [la for la in model.layers if isinstance(la, keras.layers.MaxPooling2D)]
    dense = [la for la in model.layers if isinstance(la, keras.layers.Dense)]
    assert [(c.filters, c.kernel_size) for c in convs] == [(32, (3, 3))] * 2
    assert [p.pool_size for p in pools] == [(3, 3)] * 2
    assert [d.units for d in dense] == [64, 64, 10]
    assert all(la.activation.__name__ == "relu" for la in convs + dense[:2])
    assert dense[-1].activation.__name__ == "softmax"
    assert all(la.kernel_regularizer is not None for la in convs + dense)
    assert model.count_params() == 320 + 9248 + 512 * 64 + 64 + 64 * 64 + 64 + 650


def test_optimizer_decays_learning_rate() -> None:
    opt = cnn.make_optimizer(0.01, 0.5)
    assert float(opt.learning_rate) == pytest.approx(0.01)  # before any step
    assert float(opt._learning_rate(4)) == pytest.approx(0.01 / 3)


def test_search_space_is_paper_range() -> None:
    space = cnn.search_space()
    assert sorted(space) == ["l2", "lr", "lr_decay"]
    assert all((d.lower, d.upper) == (1e-7, 1e-2) for d in space.values())
    with pytest.raises(ValueError, match="low"):
        cnn.search_space(1e-2, 1e-7)


@pytest.mark.slow
def test_digits_deterministic_and_resumable(ray_cluster, tmp_path) -> None:
    config = {**DIGITS, "epochs": 3}
    clean = run_tuner(cnn.cnn_trainable, {**config, "seed": tune.grid_search([0, 0])}, tmp_path)
    first, second = clean[0].metrics, clean[1].metrics
    assert first["epoch"] == 3 and first["device"] == "CPU"
    assert 0.0 <= first["val_error"] < 0.5  # 10 classes: chance is 0.9
    assert first["val_error"] == second["val_error"]
    assert first["train_loss"] == second["train_loss"]

    marker = tmp_path / "crashed"
    crashed = run_tuner(
        crash_once(cnn.cnn_trainable, after=1, marker=marker),
        {**config, "seed": 0},
        tmp_path,
        max_failures=1,
        name="crash",
    )[0]
    assert marker.exists()
    assert reports_after_restart(marker) == 2 and crashed.metrics["epoch"] == 3  # resumed
    assert crashed.metrics["train_loss"] == pytest.approx(first["train_loss"], rel=1e-5)
    assert crashed.metrics["val_error"] == pytest.approx(first["val_error"], abs=1e-9)


@pytest.mark.slow
def test_real_file_formats_in_a_tuner(ray_cluster, tmp_path) -> None:
    formats.write_mnist(tmp_path, n_train=80, n_test=10)
    formats.write_cifar10(tmp_path, per_batch=16, n_test=10)
    formats.write_cifar100(tmp_path, n_train=100, n_test=10)
    formats.write_svhn(tmp_path, n_train=80, n_test=10)
    grid = run_tuner(
        cnn.cnn_trainable,
        {
            "dataset": tune.grid_search(["mnist", "cifar10", "cifar100", "svhn"]),
            "data_dir": str(tmp_path),
            "download": False,
            "epochs": 1,
            "batch_size": 32,
            "val_fraction": 0.25,
        },
        tmp_path / "runs",
    )
    assert sorted(r.config["dataset"] for r in grid) == ["cifar10", "cifar100", "mnist", "svhn"]
    for result in grid:
        assert 0.0 <= result.metrics["val_error"] <= 1.0
        assert result.metrics["val_loss"] > 0.0 and result.checkpoint is not None


def test_missing_dataset_fails_trial_with_clear_error(ray_cluster, tmp_path) -> None:
    with pytest.raises(AssertionError, match=r"mnist\.npz"):
        run_tuner(
            cnn.cnn_trainable,
            {"dataset": "mnist", "data_dir": str(tmp_path), "download": False, "epochs": 1},
            tmp_path / "runs",
        )
