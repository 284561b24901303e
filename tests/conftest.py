"""Shared fixtures."""

from __future__ import annotations

import numpy as np
import pytest


def finite_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite-difference gradient of a scalar function."""
    g = np.zeros_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
