import numpy as np

from rmbo_tune.engine.optimize import (
    local_points,
    maximize_box,
    maximize_finite,
    min_distances,
    sobol_points,
)


class Quadratic:
    """-||x - c||^2, maximized at c."""

    def __init__(self, c):
        self.c = np.asarray(c)

    def values(self, X, fixed=False):
        return -((X - self.c) ** 2).sum(1)

    def value_and_grad(self, x):
        return float(-((x - self.c) ** 2).sum()), -2 * (x - self.c)


def test_sobol_points_are_reproducible_from_an_integer_seed():
    a, b = sobol_points(100, 3, 7), sobol_points(100, 3, 7)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (100, 3) and a.min() >= 0 and a.max() <= 1
    assert not np.array_equal(a, sobol_points(100, 3, 8))


def test_box_maximizer_polishes_to_the_optimum(rng):
    c = np.array([0.3137, 0.7771])
    fixed = sobol_points(64, 2, 0)
    x, _val = maximize_box(
        Quadratic(c),
        fixed=fixed,
        extra=np.zeros((0, 2)),
        exclude=np.zeros((0, 2)),
        project=lambda X: X,
        tol=1e-6,
    )
    np.testing.assert_allclose(x, c, atol=1e-5)


def test_box_maximizer_respects_exclusions_and_projection(rng):
    c = np.array([0.5, 0.5])
    grid = lambda X: np.round(X * 10) / 10  # noqa: E731  - a 0.1 grid
    fixed = grid(sobol_points(256, 2, 1))
    x, _ = maximize_box(
        Quadratic(c),
        fixed=fixed,
        extra=rng.random((10, 2)),
        exclude=np.array([[0.5, 0.5]]),
        project=grid,
        tol=1e-6,
    )
    np.testing.assert_allclose(x, grid(x[None])[0])
    assert np.abs(x - c).sum() == 0.1 or np.isclose(np.abs(x - c).sum(), 0.1)


def test_box_maximizer_reports_when_everything_is_excluded():
    fixed = np.array([[0.0], [1.0]])
    res = maximize_box(
        Quadratic([0.5]),
        fixed=fixed,
        extra=np.zeros((0, 1)),
        exclude=fixed,
        project=lambda X: np.round(X),
        tol=1e-6,
    )
    assert res is None


def test_finite_maximizer_skips_unavailable_rows():
    C = np.array([[0.1], [0.5], [0.9]])
    idx, _ = maximize_finite(Quadratic([0.5]), C, np.array([True, False, True]))
    assert idx in (0, 2)
    assert maximize_finite(Quadratic([0.5]), C, np.zeros(3, bool)) is None


def test_helpers(rng):
    P = local_points(np.array([[0.5, 0.5]]), 100, 0.05, rng)
    assert P.shape == (100, 2) and np.all((P >= 0) & (P <= 1))
    assert np.abs(P - 0.5).max() < 0.5
    d = min_distances(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0], [1.0, 0.0]]))
    assert d[0] == 1.0
    assert np.isinf(min_distances(np.zeros((1, 2)), np.zeros((0, 2))))[0]
