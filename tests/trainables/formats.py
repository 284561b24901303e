"""Writers of tiny dataset files in the real on-disk formats (used by several test modules)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np


def write_mnist(directory: Path, n_train: int = 60, n_test: int = 20, seed: int = 0) -> None:
    """Keras's ``mnist.npz``: uint8 (n, 28, 28) images and uint8 labels."""
    rng = np.random.default_rng(seed)
    np.savez(
        directory / "mnist.npz",
        x_train=rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        y_train=(np.arange(n_train) % 10).astype(np.uint8),
        x_test=rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        y_test=(np.arange(n_test) % 10).astype(np.uint8),
    )


def _cifar_batch(path: Path, n: int, label_key: bytes, n_classes: int, rng) -> None:
    batch = {
        b"batch_label": b"tiny",
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        label_key: [int(v) for v in np.arange(n) % n_classes],
        b"filenames": [b"x.png"] * n,
    }
    with path.open("wb") as f:
        pickle.dump(batch, f, protocol=2)


def write_cifar10(directory: Path, per_batch: int = 12, n_test: int = 10, seed: int = 0) -> Path:
    """``cifar-10-batches-py/data_batch_1..5`` and ``test_batch`` (python pickles)."""
    rng = np.random.default_rng(seed)
    folder = directory / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for i in range(1, 6):
        _cifar_batch(folder / f"data_batch_{i}", per_batch, b"labels", 10, rng)
    _cifar_batch(folder / "test_batch", n_test, b"labels", 10, rng)
    return folder


def write_cifar100(directory: Path, n_train: int = 200, n_test: int = 20, seed: int = 0) -> Path:
    """``cifar-100-python/train`` and ``test`` with fine and coarse labels."""
    rng = np.random.default_rng(seed)
    folder = directory / "cifar-100-python"
    folder.mkdir(parents=True)
    for name, n in (("train", n_train), ("test", n_test)):
        batch = {
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"fine_labels": [int(v) for v in np.arange(n) % 100],
            b"coarse_labels": [int(v) for v in np.arange(n) % 20],
        }
        with (folder / name).open("wb") as f:
            pickle.dump(batch, f, protocol=2)
    return folder


def write_svhn(directory: Path, n_train: int = 50, n_test: int = 20, seed: int = 0) -> None:
    """SVHN format 2: X (32, 32, 3, n) uint8 and y (n, 1) with 10 meaning digit 0."""
    from scipy.io import savemat

    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("test", n_test)):
        x = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = (np.arange(n) % 10 + 1).astype(np.uint8).reshape(n, 1)  # labels 1..10
        savemat(directory / f"{split}_32x32.mat", {"X": x, "y": y})


def write_omniglot_layout(
    root: Path, alphabets: dict[str, int], drawings: int = 4, size: int = 105
) -> Path:
    """``root/<alphabet>/characterNN/<nnnn_nn>.png``: each character a distinct bar pattern."""
    from PIL import Image

    root.mkdir(parents=True)
    for alphabet, n_chars in alphabets.items():
        for c in range(n_chars):
            folder = root / alphabet / f"character{c + 1:02d}"
            folder.mkdir(parents=True)
            for d in range(drawings):
                img = np.full((size, size), 255, dtype=np.uint8)
                width = size // (n_chars + 1)
                img[:, c * width : (c + 1) * width] = 0  # black stroke on white
                img[d * 3 : d * 3 + 2, :] = 0
                Image.fromarray(img).convert("1").save(folder / f"{c:04d}_{d + 1:02d}.png")
    return root
