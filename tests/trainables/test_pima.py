"""Tests for trainables.pima (the shipped diabetes table)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainables import pima, storage


def test_pima_shipped_copy() -> None:
    data = pima.load_pima()
    assert data.x_pool.shape == (691, 8) and data.x_val.shape == (77, 8)
    rows = np.concatenate([data.x_pool, data.x_val])
    labels = np.concatenate([data.y_pool, data.y_val])
    assert labels.sum() == 268  # 268 positives in the 768 rows
    first = np.array([6, 148, 72, 35, 0, 33.6, 0.627, 50])
    assert np.any(np.all(np.isclose(rows, first), axis=1))
    again = pima.load_pima(split_seed=1)
    assert not np.array_equal(again.y_val, data.y_val) or not np.array_equal(
        again.x_val, data.x_val
    )


def test_pima_headerless_csv(tmp_path) -> None:
    rows = np.loadtxt(pima.PIMA_CSV, delimiter=",", skiprows=1)
    path = tmp_path / "pima.csv"
    np.savetxt(path, rows[:100], delimiter=",", fmt="%g")
    data = pima.load_pima(path, n_val=10)
    assert data.x_pool.shape == (90, 8) and data.x_val.shape == (10, 8)


def test_pima_missing_file(tmp_path: Path) -> None:
    with pytest.raises(storage.DatasetNotFoundError, match=r"nope\.csv"):
        pima.load_pima(tmp_path / "nope.csv")
