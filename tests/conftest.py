"""Shared fixtures."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests import ray_runtime


def finite_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite-difference gradient of a scalar function."""
    g = np.zeros_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def bowl(X: np.ndarray) -> np.ndarray:
    """A task peaked at 0.3 in every coordinate: ``-||x - 0.3||^2`` per row."""
    return -np.sum((X - 0.3) ** 2, axis=1)


def searched_rows(rng: np.random.Generator, n: int = 50, dim: int = 3) -> np.ndarray:
    """Rows as a model-based search of :func:`bowl` leaves them: a quarter spread out, the
    rest ever closer to its optimum at 0.3."""
    spread = rng.random((n // 4, dim))
    near = (
        0.3 + rng.normal(0.0, 1.0, (n - n // 4, dim)) * np.linspace(0.2, 0.02, n - n // 4)[:, None]
    )
    return np.clip(np.vstack([spread, near]), 0.0, 1.0)


def saturating_tasks(rng: np.random.Generator, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` meta-tasks of 30 random points in 2-D that saturate along x0 (``min(10 x0, 1)``,
    the shape the tasks' input warp learns) beside a quadratic in x1 whose peak shifts by
    0.05 per task."""
    tasks = []
    for i in range(n):
        X = rng.random((30, 2))
        tasks.append((X, np.minimum(10 * X[:, 0], 1.0) - (X[:, 1] - 0.3 - 0.05 * i) ** 2))
    return tasks


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="module")
def ray_local():
    """A 2-CPU local Ray runtime (shared with the next modules that use one: see
    tests/ray_runtime.py); workers can import ``trainables`` and the suite's progress lines
    are not buried under Tune's per-experiment boxes."""
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    ray_runtime.start()
    yield


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


_RAY_MODULES: set[str] = set()  # modules with a test that uses the shared Ray runtime


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _RAY_MODULES.clear()
    _RAY_MODULES.update(
        _module(item)
        for item in items
        if ray_runtime.FIXTURES & set(getattr(item, "fixturenames", ()))
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Shut the shared Ray runtime down where a module-scoped one would have been, unless
    the next test's module uses it too."""
    yield
    if nextitem is None or (
        _module(nextitem) != _module(item) and _module(nextitem) not in _RAY_MODULES
    ):
        ray_runtime.stop()
