"""Dataset loaders for the paper's workloads.

Image datasets (MNIST, CIFAR-10, CIFAR-100, SVHN, sklearn's digits) come back as an
:class:`ImageDataset`: float32 pixels in [0, 1] with a channel axis, int64 labels, and a fixed,
seeded validation split carved out of the *training* set (the test set is never used for
validation). The Pima diabetes table ships with the package (:mod:`trainables.pima`) and Omniglot
lives in :mod:`trainables.omniglot`; both loaders are re-exported here.

Files are looked up in :func:`trainables.storage.data_dir` (``data_dir`` argument, then
``$RMBO_TUNE_DATA_DIR``, then the Keras cache ``~/.keras/datasets``) under their standard names:

* MNIST: ``mnist.npz`` (Keras's file);
* CIFAR-10: folder ``cifar-10-batches-py`` (``data_batch_1..5``, ``test_batch``);
* CIFAR-100: folder ``cifar-100-python`` (``train``, ``test``; fine labels);
* SVHN: ``train_32x32.mat`` and ``test_32x32.mat`` (format 2, cropped digits).

Missing files are downloaded from the standard sources when ``download=True``; offline, a
:class:`~trainables.storage.DatasetNotFoundError` names the file and where to put it.

Loaded datasets are cached per process (:func:`load_dataset`), so a Ray worker that runs many
trials reads them once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainables import storage
from trainables.omniglot import OmniglotAlphabet, list_omniglot_alphabets, load_omniglot
from trainables.pima import PIMA_CSV, PimaData, load_pima

__all__ = [
    "IMAGE_DATASETS",
    "PIMA_CSV",
    "ImageDataset",
    "OmniglotAlphabet",
    "PimaData",
    "list_omniglot_alphabets",
    "load_dataset",
    "load_omniglot",
    "load_pima",
    "read_cifar10",
    "read_cifar100",
    "read_digits",
    "read_mnist",
    "read_svhn",
]

MNIST_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
MNIST_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
CIFAR10_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
CIFAR100_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
CIFAR100_SHA256 = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"
SVHN_ORIGIN = "http://ufldl.stanford.edu/housenumbers/"

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class ImageDataset:
    """An image classification dataset with train / validation / test splits.

    Attributes
    ----------
    name : str
        Dataset name.
    x_train, x_val, x_test : numpy.ndarray
        float32 images, shape (n, height, width, channels), values in [0, 1].
    y_train, y_val, y_test : numpy.ndarray
        int64 class labels in ``[0, num_classes)``.
    num_classes : int
        Number of classes.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """Shape of one image, ``(height, width, channels)``."""
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]


def _scaled(x: np.ndarray, max_value: float) -> np.ndarray:
    return (np.asarray(x, dtype=np.float32) / np.float32(max_value)).astype(np.float32)


def read_mnist(directory: Path, *, download: bool = True) -> Arrays:
    """Read Keras's ``mnist.npz`` (uint8 28x28 images, labels 0-9).

    Parameters
    ----------
    directory : pathlib.Path
        Dataset directory.
    download : bool
        Fetch the file from Keras's mirror when absent.

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``, images float32 (n, 28, 28, 1) in [0, 1].
    """
    path = storage.fetch(
        "MNIST", "mnist.npz", directory, MNIST_ORIGIN, download=download, file_hash=MNIST_SHA256
    )
    with np.load(path, allow_pickle=False) as f:
        x_tr, y_tr, x_te, y_te = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    return _scaled(x_tr[..., None], 255), y_tr, _scaled(x_te[..., None], 255), y_te


def _cifar_folder(directory: Path, folder: str) -> Path | None:
    # Own layout, then the layouts keras.datasets.cifar*.load_data() leaves in its cache.
    for candidate in (
        directory / folder,
        directory / f"{folder}-target" / folder,
        directory / f"{folder}_extracted" / folder,
        directory / f"{folder}-target_extracted" / folder,
    ):
        if candidate.is_dir():
            return candidate
    return None


def _read_cifar_batch(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise storage.missing_file_error("CIFAR", path.name, path.parent, "the CIFAR archive")
    with path.open("rb") as f:
        batch = storage.load_legacy_pickle(f)
    batch = {k.encode() if isinstance(k, str) else k: v for k, v in batch.items()}
    data = np.asarray(batch[b"data"], dtype=np.uint8)
    labels = np.asarray(batch[label_key], dtype=np.int64)
    images = data.reshape(len(data), 3, 32, 32).transpose(0, 2, 3, 1)
    return images, labels


def _read_cifar(
    directory: Path,
    folder: str,
    origin: str,
    sha: str,
    train_files: list[str],
    test_file: str,
    label_key: bytes,
    name: str,
    download: bool,
) -> Arrays:
    path = _cifar_folder(directory, folder)
    if path is None:
        path = storage.fetch_and_extract_tar(
            name, folder, directory, origin, download=download, file_hash=sha
        )
    parts = [_read_cifar_batch(path / f, label_key) for f in train_files]
    x_te, y_te = _read_cifar_batch(path / test_file, label_key)
    x_tr = np.concatenate([p[0] for p in parts])
    y_tr = np.concatenate([p[1] for p in parts])
    return _scaled(x_tr, 255), y_tr, _scaled(x_te, 255), y_te


def read_cifar10(directory: Path, *, download: bool = True) -> Arrays:
    """Read the CIFAR-10 "python version" batches in ``cifar-10-batches-py``.

    The batch files are pickles; they are read with a restricted unpickler and only from the
    dataset directory the user designates (see :func:`trainables.storage.load_legacy_pickle`).

    Parameters
    ----------
    directory : pathlib.Path
        Dataset directory holding ``cifar-10-batches-py/``.
    download : bool
        Fetch and unpack the official archive when absent.

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``, images float32 (n, 32, 32, 3) in [0, 1].
    """
    train = [f"data_batch_{i}" for i in range(1, 6)]
    return _read_cifar(
        directory,
        "cifar-10-batches-py",
        CIFAR10_ORIGIN,
        CIFAR10_SHA256,
        train,
        "test_batch",
        b"labels",
        "CIFAR-10",
        download,
    )


def read_cifar100(directory: Path, *, download: bool = True) -> Arrays:
    """Read the CIFAR-100 "python version" files ``cifar-100-python/{train,test}``.

    Uses the 100 fine labels. Same pickle caveat as :func:`read_cifar10`.

    Parameters
    ----------
    directory : pathlib.Path
        Dataset directory holding ``cifar-100-python/``.
    download : bool
        Fetch and unpack the official archive when absent.

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``, images float32 (n, 32, 32, 3) in [0, 1].
    """
    return _read_cifar(
        directory,
        "cifar-100-python",
        CIFAR100_ORIGIN,
        CIFAR100_SHA256,
        ["train"],
        "test",
        b"fine_labels",
        "CIFAR-100",
        download,
    )


def _read_svhn_mat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import loadmat

    mat = loadmat(path)
    x = np.asarray(mat["X"], dtype=np.uint8).transpose(3, 0, 1, 2)
    y = np.asarray(mat["y"], dtype=np.int64).reshape(-1)
    y = np.where(y == 10, 0, y)  # SVHN stores digit 0 as label 10
    return x, y


def read_svhn(directory: Path, *, download: bool = True) -> Arrays:
    """Read SVHN format 2 (``train_32x32.mat``, ``test_32x32.mat``; label 10 means digit 0).

    Parameters
    ----------
    directory : pathlib.Path
        Dataset directory.
    download : bool
        Fetch the files from http://ufldl.stanford.edu/housenumbers/ when absent.

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``, images float32 (n, 32, 32, 3) in [0, 1],
        labels 0-9.
    """
    out = []
    for split in ("train", "test"):
        fname = f"{split}_32x32.mat"
        path = storage.fetch("SVHN", fname, directory, SVHN_ORIGIN + fname, download=download)
        x, y = _read_svhn_mat(path)
        out += [_scaled(x, 255), y]
    return out[0], out[1], out[2], out[3]


def read_digits(directory: Path | None = None, *, download: bool = True) -> Arrays:
    """sklearn's bundled 8x8 digits (1,797 images; offline MNIST-like task).

    The data has no official test set; a fixed 20% (seed 0) is held out as test data.

    Parameters
    ----------
    directory, download
        Ignored (the data ships with scikit-learn); present for a uniform signature.

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``, images float32 (n, 8, 8, 1) in [0, 1].
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = _scaled(digits.images[..., None], 16)
    y = np.asarray(digits.target, dtype=np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


IMAGE_DATASETS = {
    "mnist": (read_mnist, 10),
    "cifar10": (read_cifar10, 10),
    "cifar100": (read_cifar100, 100),
    "svhn": (read_svhn, 10),
    "digits": (read_digits, 10),
}


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@functools.lru_cache(maxsize=2)
def _load_cached(
    name: str,
    directory: str,
    val_fraction: float,
    split_seed: int,
    max_train_samples: int | None,
    download: bool,
) -> ImageDataset:
    reader, num_classes = IMAGE_DATASETS[name]
    x_tr, y_tr, x_te, y_te = reader(Path(directory), download=download)
    y_tr = np.asarray(y_tr, dtype=np.int64).reshape(-1)
    y_te = np.asarray(y_te, dtype=np.int64).reshape(-1)
    for labels, split in ((y_tr, "train"), (y_te, "test")):
        if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
            raise ValueError(
                f"{name} {split} labels must lie in [0, {num_classes}); got range "
                f"[{labels.min()}, {labels.max()}]"
            )
    order = np.random.default_rng(split_seed).permutation(len(x_tr))
    n_val = max(1, round(val_fraction * len(x_tr)))
    val, train = order[:n_val], order[n_val:]
    if max_train_samples is not None:
        train = train[:max_train_samples]
    return ImageDataset(
        name=name,
        x_train=_readonly(x_tr[train]),
        y_train=_readonly(y_tr[train]),
        x_val=_readonly(x_tr[val]),
        y_val=_readonly(y_tr[val]),
        x_test=_readonly(x_te),
        y_test=_readonly(y_te),
        num_classes=num_classes,
    )


def load_dataset(
    name: str,
    data_dir: str | Path | None = None,
    *,
    val_fraction: float = 0.1,
    split_seed: int = 0,
    max_train_samples: int | None = None,
    download: bool = True,
) -> ImageDataset:
    """Load an image dataset, with a seeded validation split held out from training.

    The result is cached per process (up to two datasets), so repeated calls from trials that
    run in the same Ray worker do not re-read the files. Arrays are read-only.

    Parameters
    ----------
    name : {"mnist", "cifar10", "cifar100", "svhn", "digits"}
        Dataset.
    data_dir : str or path-like, optional
        Dataset directory; see :func:`trainables.storage.data_dir`.
    val_fraction : float
        Fraction of the training set held out for validation, in (0, 1).
    split_seed : int
        Seed of the train/validation permutation.
    max_train_samples : int, optional
        Keep only this many training images (after the split; for quick runs).
    download : bool
        Download missing files from the standard sources.

    Returns
    -------
    ImageDataset
        The splits.

    Raises
    ------
    ValueError
        Unknown ``name`` or out-of-range options.
    trainables.storage.DatasetNotFoundError
        Files missing and not downloadable.
    """
    if name not in IMAGE_DATASETS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(IMAGE_DATASETS)}")
    if not 0.0 < float(val_fraction) < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    if max_train_samples is not None and int(max_train_samples) < 1:
        raise ValueError(f"max_train_samples must be >= 1, got {max_train_samples!r}")
    directory = str(storage.data_dir(data_dir))
    return _load_cached(
        name,
        directory,
        float(val_fraction),
        int(split_seed),
        None if max_train_samples is None else int(max_train_samples),
        bool(download),
    )
