"""Tests for trainables.runtime (config checks, Keras checkpoint round trip, seeding)."""

from __future__ import annotations

import numpy as np
import pytest

from trainables import runtime


def test_get_float_and_int_validate() -> None:
    cfg = {"a": "0.5", "b": 3, "c": "x", "d": 2.5, "e": float("nan")}
    assert runtime.get_float(cfg, "a") == 0.5
    assert runtime.get_int(cfg, "b", low=1) == 3
    assert runtime.get_float(cfg, "missing", 1.5) == 1.5
    with pytest.raises(ValueError, match="'x'"):
        runtime.get_float(cfg, "c")
    with pytest.raises(ValueError, match=r"2\.5"):
        runtime.get_int(cfg, "d")
    with pytest.raises(ValueError, match="nan"):
        runtime.get_float(cfg, "e")
    with pytest.raises(ValueError, match="required"):
        runtime.get_float(cfg, "missing")
    with pytest.raises(ValueError, match="outside"):
        runtime.get_int(cfg, "b", high=2)


def test_check_keys_names_unknown() -> None:
    runtime.check_keys({"a": 1}, {"a", "b"}, "t")
    with pytest.raises(ValueError, match="'typo'"):
        runtime.check_keys({"a": 1, "typo": 2}, {"a"}, "t")


def test_epoch_rng_depends_on_seed_and_epoch_only() -> None:
    a = runtime.epoch_rng(1, 3).permutation(10)
    assert np.array_equal(a, runtime.epoch_rng(1, 3).permutation(10))
    assert not np.array_equal(a, runtime.epoch_rng(1, 4).permutation(10))
    assert not np.array_equal(a, runtime.epoch_rng(2, 3).permutation(10))


def test_state_round_trip(tmp_path) -> None:
    runtime.write_state(tmp_path, {"epoch": 4, "w": [0.1, 1 / 3]})
    assert runtime.read_state(tmp_path) == {"epoch": 4, "w": [0.1, 1 / 3]}


def test_keras_checkpoint_restores_weights_and_optimizer(tmp_path) -> None:
    pytest.importorskip("tensorflow")
    import keras

    from trainables.cnn import make_optimizer

    def build():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        opt = make_optimizer(0.1, 0.5)
        model.compile(optimizer=opt, loss="mse")
        return model, opt

    keras.utils.set_random_seed(0)
    model, opt = build()
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    model.fit(x, y, epochs=3, verbose=0, batch_size=4)
    runtime.save_keras(tmp_path, model, opt)

    keras.utils.set_random_seed(1)
    other, other_opt = build()
    runtime.load_keras(tmp_path, other, other_opt)
    assert int(other_opt.iterations.numpy()) == 3  # lr decay continues where it stopped
    for a, b in zip(model.get_weights(), other.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    model.fit(x, y, epochs=1, verbose=0, batch_size=4)
    other.fit(x, y, epochs=1, verbose=0, batch_size=4)
    np.testing.assert_allclose(model.get_weights()[0], other.get_weights()[0], rtol=1e-6)


def test_setup_tensorflow_outside_ray_reports_the_device_it_will_use(monkeypatch) -> None:
    tf = pytest.importorskip("tensorflow")
    # Outside a Tune trial no GPU is assigned or withheld: every visible GPU is used.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    expected = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    assert runtime.setup_tensorflow(0) == expected
