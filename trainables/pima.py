"""The Pima Indians diabetes table, shipped in ``trainables/data`` (CC0, via Kaggle).

768 rows, 8 diagnostic features (pregnancies, glucose, blood pressure, skin thickness, insulin,
BMI, pedigree function, age) and a 0/1 outcome (268 positives). A fixed seeded permutation holds
out 77 validation rows; the other 691 form the ordered pool from which
:mod:`trainables.logreg` draws its growing stages.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainables import storage

__all__ = ["PIMA_CSV", "PimaData", "load_pima"]

PIMA_CSV = storage.PACKAGE_DATA / "pima-indians-diabetes.csv"


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class PimaData:
    """The Pima diabetes table split for the non-stationary experiment.

    Attributes
    ----------
    x_pool, y_pool : numpy.ndarray
        The 691 training rows in a fixed seeded order; stage ``k`` trains on the first
        ``STAGE_SIZES[k - 1]`` of them. Features are raw (float64, 8 columns).
    x_val, y_val : numpy.ndarray
        The 77 held-out validation rows. Labels are 0/1 int64.
    """

    x_pool: np.ndarray
    y_pool: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


@functools.lru_cache(maxsize=4)
def _load_pima_cached(path: str, split_seed: int, n_val: int) -> PimaData:
    with open(path, encoding="utf-8") as f:
        first = f.readline().split(",")
    try:
        [float(v) for v in first]
        header = 0
    except ValueError:  # the Kaggle copy starts with a header row
        header = 1
    table = np.loadtxt(path, delimiter=",", dtype=np.float64, skiprows=header, ndmin=2)
    if table.ndim != 2 or table.shape[1] != 9:
        raise ValueError(f"{path}: expected 9 comma-separated columns, got shape {table.shape}")
    x, y = table[:, :8], table[:, 8].astype(np.int64)
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"{path}: the outcome column must be 0/1")
    order = np.random.default_rng(split_seed).permutation(len(x))
    val, pool = order[:n_val], order[n_val:]
    return PimaData(
        x_pool=_readonly(x[pool]),
        y_pool=_readonly(y[pool]),
        x_val=_readonly(x[val]),
        y_val=_readonly(y[val]),
    )


def load_pima(path: str | Path | None = None, *, split_seed: int = 0, n_val: int = 77) -> PimaData:
    """Load the Pima Indians diabetes table (768 rows, 8 features, 0/1 outcome).

    The CSV may start with a header row (as the shipped Kaggle copy does) or not.

    Parameters
    ----------
    path : str or path-like, optional
        CSV without header; defaults to the copy shipped in ``trainables/data``.
    split_seed : int
        Seed of the row permutation that fixes the validation rows and the stage order.
    n_val : int
        Rows held out for validation (paper: 77).

    Returns
    -------
    PimaData
        Training pool and validation rows.
    """
    path = Path(path) if path is not None else PIMA_CSV
    if not path.is_file():
        raise storage.DatasetNotFoundError(
            f"Pima CSV '{path}' not found; it ships as trainables/data/{PIMA_CSV.name} "
            "(https://www.kaggle.com/uciml/pima-indians-diabetes-database)"
        )
    if int(n_val) < 1:
        raise ValueError(f"n_val must be >= 1, got {n_val!r}")
    return _load_pima_cached(str(path.resolve()), int(split_seed), int(n_val))
