"""Tests for trainables.siamese (Omniglot one-shot, 2-way validation error)."""

from __future__ import annotations

import numpy as np
import pytest
from ray import tune

from tests.trainables import formats
from tests.trainables.conftest import crash_once, reports_after_restart, run_tuner

pytest.importorskip("tensorflow")
pytest.importorskip("PIL")
from trainables import siamese


def test_split_characters_75_25() -> None:
    train, val = siamese.split_characters(24, split_seed=3)
    assert (len(train), len(val)) == (18, 6)
    assert sorted(np.concatenate([train, val]).tolist()) == list(range(24))
    again = siamese.split_characters(24, split_seed=3)
    assert np.array_equal(again[1], val)
    assert len(siamese.split_characters(5)[1]) == 2  # at least two validation characters
    with pytest.raises(ValueError, match="3"):
        siamese.split_characters(3)


def test_two_way_trials_cover_every_image() -> None:
    trials = siamese.two_way_trials(5, 4, np.random.default_rng(0))
    assert trials.shape == (20, 3, 2)
    anchors = sorted(map(tuple, trials[:, 0].tolist()))
    assert anchors == [(c, d) for c in range(5) for d in range(4)]
    assert np.all(trials[:, 1, 0] == trials[:, 0, 0])  # same character ...
    assert np.all(trials[:, 1, 1] != trials[:, 0, 1])  # ... another drawing
    assert np.all(trials[:, 2, 0] != trials[:, 0, 0])  # a different character


def test_sample_pairs_balanced() -> None:
    left, right, label = siamese.sample_pairs(6, 4, 100, np.random.default_rng(1))
    assert label.sum() == 50 and label.dtype == np.float32
    same = label == 1
    assert np.all(left[same, 0] == right[same, 0]) and np.all(left[:, 1] != right[:, 1])
    assert np.all(left[~same, 0] != right[~same, 0])
    assert left.max(axis=0).tolist() <= [5, 3]


class _Scorer:
    """A stand-in network scoring a pair by the closeness of the images' mean intensity."""

    def __init__(self, sign: float) -> None:
        self.sign = sign

    def predict(self, pair, batch_size: int, verbose: int) -> np.ndarray:
        left, right = pair
        diff = np.abs(left.mean(axis=(1, 2, 3)) - right.mean(axis=(1, 2, 3)))
        return (-self.sign * diff)[:, None]


def test_two_way_error_definition() -> None:
    images = np.repeat(np.linspace(0.1, 0.9, 4)[:, None], 3, axis=1)[..., None, None, None]
    images = np.broadcast_to(images, (4, 3, 5, 5, 1))
    trials = siamese.two_way_trials(4, 3, np.random.default_rng(0))
    assert siamese.two_way_error(_Scorer(1.0), images, trials) == 0.0
    assert siamese.two_way_error(_Scorer(-1.0), images, trials) == 1.0
    assert siamese.two_way_error(_Scorer(0.0), images, trials) == 1.0  # ties count as errors


def test_network_is_shared_and_regularised() -> None:
    import keras

    model = siamese.build_siamese(28, 1e-4)
    assert len(model.inputs) == 2 and tuple(model.output.shape) == (None, 1)
    encoders = [la for la in model.layers if isinstance(la, keras.Model)]
    assert len(encoders) == 1  # one encoder applied to both inputs
    kernels = [la for la in encoders[0].layers if hasattr(la, "kernel_regularizer")]
    assert len(kernels) == 5 and all(la.kernel_regularizer is not None for la in kernels)
    x = np.random.default_rng(0).random((2, 28, 28, 1)).astype(np.float32)
    scores = model.predict([x, x[::-1]], verbose=0)
    assert np.all((scores > 0) & (scores < 1))


@pytest.mark.slow
def test_tiny_omniglot_layout_in_a_tuner(ray_cluster, tmp_path) -> None:
    formats.write_omniglot_layout(tmp_path / "images_background", {"Tiny": 8}, drawings=4)
    config = {
        "alphabet": "Tiny",
        "data_dir": str(tmp_path),
        "download": False,
        "image_size": 20,
        "epochs": 2,
        "pairs_per_epoch": 96,
        "batch_size": 32,
        "lr": 1e-3,
        "l2": 1e-5,
        "deterministic": True,
    }
    clean = run_tuner(
        siamese.siamese_trainable, {**config, "seed": tune.grid_search([1, 1])}, tmp_path / "r"
    )
    a, b = clean[0].metrics, clean[1].metrics
    assert a["epoch"] == 2 and a["n_val_trials"] == 2 * 4
    assert 0.0 <= a["val_error"] <= 1.0
    assert (a["val_error"], a["train_loss"]) == (b["val_error"], b["train_loss"])

    marker = tmp_path / "crashed"
    crashed = run_tuner(
        crash_once(siamese.siamese_trainable, after=1, marker=marker),
        {**config, "seed": 1},
        tmp_path / "r",
        max_failures=1,
        name="crash",
    )[0]
    assert marker.exists()
    assert reports_after_restart(marker) == 1 and crashed.metrics["epoch"] == 2  # resumed
    assert crashed.metrics["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)


@pytest.mark.slow
def test_packaged_alphabet_learns(ray_cluster, tmp_path) -> None:
    grid = run_tuner(
        siamese.siamese_trainable,
        {
            "alphabet": "Greek",
            "split": "background_small1",
            "image_size": 28,
            "epochs": 3,
            "pairs_per_epoch": 512,
            "batch_size": 64,
            "lr": 3e-4,
            "seed": 0,
            "deterministic": True,
        },
        tmp_path,
    )
    m = grid[0].metrics
    assert m["n_val_trials"] == 6 * 20  # 25% of Greek's 24 characters, 20 drawings each
    assert m["val_error"] < 0.4  # chance is 0.5


def test_alphabet_required() -> None:
    with pytest.raises(ValueError, match="alphabet"):
        siamese.siamese_trainable({"split": "background"})
