"""Tests for trainables.datasets: real-format files written here are read correctly."""

from __future__ import annotations

import numpy as np
import pytest

from tests.trainables import formats
from trainables import datasets, storage


def _check(ds: datasets.ImageDataset, shape: tuple, n_classes: int, n_train_total: int) -> None:
    for x in (ds.x_train, ds.x_val, ds.x_test):
        assert x.dtype == np.float32 and x.shape[1:] == shape
        assert 0.0 <= x.min() and x.max() <= 1.0
    for y in (ds.y_train, ds.y_val, ds.y_test):
        assert y.dtype == np.int64 and 0 <= y.min() and y.max() < n_classes
    assert ds.num_classes == n_classes and ds.input_shape == shape
    assert len(ds.x_train) + len(ds.x_val) == n_train_total  # validation comes from training
    assert not ds.x_train.flags.writeable


def test_mnist_npz(tmp_path) -> None:
    formats.write_mnist(tmp_path, n_train=60, n_test=20)
    ds = datasets.load_dataset("mnist", tmp_path, val_fraction=0.25, download=False)
    _check(ds, (28, 28, 1), 10, 60)
    assert (len(ds.x_val), len(ds.x_test)) == (15, 20)
    with np.load(tmp_path / "mnist.npz") as raw:
        np.testing.assert_allclose(ds.x_test[3, :, :, 0], raw["x_test"][3] / 255.0, rtol=1e-6)
        np.testing.assert_array_equal(ds.y_test, raw["y_test"])


def test_cifar10_python_batches(tmp_path) -> None:
    folder = formats.write_cifar10(tmp_path, per_batch=12, n_test=10)
    ds = datasets.load_dataset("cifar10", tmp_path, download=False)
    _check(ds, (32, 32, 3), 10, 60)
    # Row-major CHW bytes -> HWC floats.
    raw = storage.load_legacy_pickle((folder / "test_batch").open("rb"))[b"data"]
    np.testing.assert_allclose(ds.x_test[0, 1, 2], raw[0].reshape(3, 32, 32)[:, 1, 2] / 255.0)


def test_cifar10_in_keras_cache_layout(tmp_path) -> None:
    formats.write_cifar10(tmp_path / "cifar-10-batches-py-target")
    ds = datasets.load_dataset("cifar10", tmp_path, download=False)
    assert ds.x_test.shape == (10, 32, 32, 3)


def test_cifar100_fine_labels(tmp_path) -> None:
    formats.write_cifar100(tmp_path, n_train=200, n_test=20)
    ds = datasets.load_dataset("cifar100", tmp_path, download=False)
    _check(ds, (32, 32, 3), 100, 200)
    assert ds.y_test.tolist() == list(range(20))


def test_svhn_mat_label_ten_is_zero(tmp_path) -> None:
    formats.write_svhn(tmp_path, n_train=50, n_test=20)
    ds = datasets.load_dataset("svhn", tmp_path, download=False)
    _check(ds, (32, 32, 3), 10, 50)
    assert ds.y_test.tolist() == [(i % 10 + 1) % 10 for i in range(20)]
    from scipy.io import loadmat

    raw = loadmat(tmp_path / "test_32x32.mat")["X"]
    np.testing.assert_allclose(ds.x_test[4], raw[..., 4] / 255.0, rtol=1e-6)


def test_digits_offline() -> None:
    pytest.importorskip("sklearn")
    ds = datasets.load_dataset("digits", val_fraction=0.2)
    _check(ds, (8, 8, 1), 10, 1797 - 359)
    assert len(ds.x_test) == 359 and ds.x_train.max() == 1.0


def test_split_is_seeded_and_cached(tmp_path) -> None:
    formats.write_mnist(tmp_path)
    a = datasets.load_dataset("mnist", tmp_path, download=False)
    assert datasets.load_dataset("mnist", str(tmp_path), download=False) is a
    b = datasets.load_dataset("mnist", tmp_path, split_seed=1, download=False)
    assert not np.array_equal(a.y_val, b.y_val) or not np.array_equal(a.x_val, b.x_val)
    c = datasets.load_dataset("mnist", tmp_path, max_train_samples=7, download=False)
    assert len(c.x_train) == 7 and np.array_equal(c.x_val, a.x_val)


@pytest.mark.parametrize(
    ("name", "missing"),
    [
        ("mnist", "mnist.npz"),
        ("cifar10", "cifar-10-batches-py"),
        ("cifar100", "cifar-100-python"),
        ("svhn", "train_32x32.mat"),
    ],
)
def test_missing_file_offline_names_it(tmp_path, name: str, missing: str) -> None:
    with pytest.raises(storage.DatasetNotFoundError) as err:
        datasets.load_dataset(name, tmp_path / "empty", download=False)
    assert missing in str(err.value) and str(tmp_path / "empty") in str(err.value)


def test_env_var_selects_directory(tmp_path, monkeypatch) -> None:
    formats.write_svhn(tmp_path, n_train=30, n_test=10)
    monkeypatch.setenv(storage.ENV_VAR, str(tmp_path))
    assert len(datasets.load_dataset("svhn", download=False).x_test) == 10


@pytest.mark.parametrize(
    "kwargs",
    [{"name": "imagenet"}, {"val_fraction": 0.0}, {"val_fraction": 1.5}, {"max_train_samples": 0}],
)
def test_bad_arguments_raise(tmp_path, kwargs: dict) -> None:
    args = {"name": "mnist", "data_dir": tmp_path, **kwargs}
    with pytest.raises(ValueError, match=str(next(iter(kwargs.values())))):
        datasets.load_dataset(**args)


def test_out_of_range_labels_rejected(tmp_path) -> None:
    formats.write_mnist(tmp_path)
    with np.load(tmp_path / "mnist.npz") as raw:
        arrays = dict(raw)
    arrays["y_train"][0] = 12
    np.savez(tmp_path / "mnist.npz", **arrays)
    with pytest.raises(ValueError, match="labels"):
        datasets.load_dataset("mnist", tmp_path, split_seed=5, download=False)
