"""Tests for trainables.storage (data directory, downloads, restricted unpickling)."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest

from trainables import storage


def test_data_dir_precedence(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(storage.ENV_VAR, str(tmp_path / "env"))
    assert storage.data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert storage.data_dir() == tmp_path / "env"
    monkeypatch.delenv(storage.ENV_VAR)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    assert storage.data_dir() == tmp_path / "kh" / "datasets"


def test_offline_error_names_file_and_directory(tmp_path) -> None:
    with pytest.raises(storage.DatasetNotFoundError) as err:
        storage.fetch(
            "MNIST", "mnist.npz", tmp_path, "https://example.org/mnist.npz", download=False
        )
    message = str(err.value)
    assert "mnist.npz" in message and str(tmp_path) in message
    assert "https://example.org/mnist.npz" in message and storage.ENV_VAR in message


def test_failed_download_becomes_clear_error(tmp_path) -> None:
    pytest.importorskip("keras")
    with pytest.raises(storage.DatasetNotFoundError, match="download failed") as err:
        storage.fetch("SVHN", "train_32x32.mat", tmp_path, "http://127.0.0.1:9/train_32x32.mat")
    assert str(tmp_path / "train_32x32.mat") in str(err.value)
    assert not (tmp_path / "train_32x32.mat").exists()


def test_download_and_extract_from_a_url(tmp_path) -> None:
    pytest.importorskip("keras")
    source = tmp_path / "source"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "data.txt").write_text("hello")
    archive = tmp_path / "pkg.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source / "pkg", arcname="pkg")
    target = tmp_path / "data"
    folder = storage.fetch_and_extract_tar("Demo", "pkg", target, archive.as_uri())
    assert folder == target / "pkg" and (folder / "data.txt").read_text() == "hello"
    assert (target / "pkg.tar.gz").is_file()
    assert not [p for p in target.iterdir() if p.name.startswith(".")]  # temp dirs cleaned


def test_restricted_unpickler_reads_numpy_batches() -> None:
    payload = {b"data": np.arange(6, dtype=np.uint8).reshape(2, 3), b"labels": [1, 2]}
    for protocol in (2, 4, 5):
        out = storage.load_legacy_pickle(io.BytesIO(pickle.dumps(payload, protocol=protocol)))
        np.testing.assert_array_equal(out[b"data"], payload[b"data"])
        assert out[b"labels"] == [1, 2]


class _Evil:
    def __reduce__(self):
        return (Path, ("/tmp/should-not-be-built",))


def test_restricted_unpickler_refuses_other_globals() -> None:
    with pytest.raises(pickle.UnpicklingError, match="pathlib"):
        storage.load_legacy_pickle(io.BytesIO(pickle.dumps({b"x": _Evil()})))
