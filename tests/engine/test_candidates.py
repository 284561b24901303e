"""Where the engine looks: input checks, the fixed set, initial, random and probe points."""

from __future__ import annotations

import numpy as np
import pytest

from rmbo_tune.engine import SearchSpaceExhausted
from rmbo_tune.engine import candidates as cand
from rmbo_tune.engine.meta_models import fit_meta_models
from rmbo_tune.engine.optimize import identity
from rmbo_tune.engine.options import MetaBOOptions


def test_points_outside_the_cube_are_refused_and_rounding_is_clipped() -> None:
    with pytest.raises(ValueError, match=r"unit cube \[0, 1\]\^2; found values in \[0, 1.5\]"):
        cand.as_points([[0.0, 1.5]], 2, "X")
    np.testing.assert_array_equal(cand.as_points([[-1e-12, 1 + 1e-12]], 2, "X"), [[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"X must have shape \(n, 2\)"):
        cand.as_points([0.1, 0.2], 2, "X")


def test_meta_task_errors_name_the_task_and_rows() -> None:
    X = np.full((3, 1), 0.5)
    with pytest.raises(ValueError, match=r"meta_tasks\[1\] y contains NaN or inf at rows \[2\]"):
        cand.check_meta_tasks([(X, np.zeros(3)), (X, [0.0, 1.0, np.inf])], 1)
    with pytest.raises(ValueError, match=r"meta_tasks\[0\] must be an \(X, y\) pair"):
        cand.check_meta_tasks([5], 1)
    # a mapping of two keys would unpack into its key names
    with pytest.raises(ValueError, match=r"meta_tasks\[1\] must be an \(X, y\) pair, got dict"):
        cand.check_meta_tasks([(X, np.zeros(3)), {"X": X, "y": np.zeros(3)}], 1)


def test_fixed_candidates_include_each_meta_tasks_best_inputs() -> None:
    rng = np.random.default_rng(0)
    tasks = [(rng.random((20, 3)), rng.standard_normal(20)) for _ in range(2)]
    fixed = cand.fixed_candidates(3, 64, 0, tasks, identity)
    for X, y in tasks:
        for row in X[np.argsort(-y)[:3]]:
            assert np.any(np.all(fixed == row, axis=1))
    assert len(fixed) == len(np.unique(fixed, axis=0))


def test_initial_point_takes_the_nearest_free_candidate() -> None:
    cands = np.array([[0.0], [0.4], [0.5], [1.0]])
    design = np.array([[0.45]])
    got = cand.initial_point(0, None, design, np.array([[0.4]]), 1e-9, cands, identity)
    np.testing.assert_array_equal(got, [0.5])


def test_random_point_raises_once_every_candidate_is_used() -> None:
    cands = np.array([[0.2], [0.8]])
    rng = np.random.default_rng(0)
    assert cand.random_point(rng, 1, cands[:1], 1e-9, cands, identity)[0] == 0.8
    with pytest.raises(SearchSpaceExhausted, match="all 2 candidates"):
        cand.random_point(rng, 1, cands, 1e-9, cands, identity)


def test_lowest_skips_excluded_points() -> None:
    pts = np.array([[0.1], [0.2], [0.3]])
    score = np.array([0.0, 1.0, 2.0])
    np.testing.assert_array_equal(cand.lowest(pts, score, pts[:1], 1e-9), [0.2])
    assert cand.lowest(pts, score, pts, 1e-9) is None


def test_grid_levels_spread_a_columns_levels_evenly_over_their_range() -> None:
    levels = cand.GridLevels([[0.0, 1e-3, 1e-2, 1.0], np.linspace(0.2, 0.8, 4), [0.5]])
    X = np.array([[1e-3, 0.4, 0.5], [5.5e-3, 0.8, 0.5], [1.0, 0.2, 0.5]])
    Z = levels.forward(X)
    np.testing.assert_allclose(
        Z,
        [[1 / 3, 0.4, 0.5], [0.5, 0.8, 0.5], [1.0, 0.2, 0.5]],  # halfway between levels
    )
    # Outside the levels' range the map runs linearly to the cube's faces, so it inverts.
    np.testing.assert_allclose(levels.forward(np.array([[1e-2, 0.1, 0.9]])), [[2 / 3, 0.1, 0.9]])
    np.testing.assert_allclose(levels.inverse(Z), X)


def test_grid_levels_invert_exactly_at_the_levels() -> None:
    grid = np.random.default_rng(0).choice(np.geomspace(1e-4, 1.0, 9), size=(50, 2))
    grid[0] = 0.0
    levels = cand.GridLevels.of(grid)
    np.testing.assert_array_equal(levels.inverse(levels.forward(grid)), grid)


def test_a_column_nan_in_every_row_is_unrecorded_and_filled_at_the_centre() -> None:
    X = np.array([[0.1, np.nan, 0.3], [0.7, np.nan, 0.9]])
    [(filled, _)], [unrecorded] = cand.check_meta_tasks([(X, [1.0, 2.0])], 3)
    np.testing.assert_array_equal(unrecorded, [False, True, False])
    np.testing.assert_array_equal(filled[:, 1], [cand.UNRECORDED_FILL] * 2)
    np.testing.assert_array_equal(filled[:, [0, 2]], X[:, [0, 2]])


def test_nan_in_part_of_a_column_or_in_every_column_is_refused() -> None:
    X = np.array([[0.1, np.nan], [0.7, 0.2]])
    with pytest.raises(ValueError, match=r"meta_tasks\[0\] X has NaN in some rows of columns"):
        cand.check_meta_tasks([(X, [1.0, 2.0])], 2)
    with pytest.raises(ValueError, match=r"meta_tasks\[0\] X is NaN in every column"):
        cand.check_meta_tasks([(np.full((2, 2), np.nan), [1.0, 2.0])], 2)


def test_onehot_groups_are_the_columns_of_one_categorical_parameter() -> None:
    # Two categoricals (3 and 2 values), a binary parameter of its own and a number, as a
    # full grid.
    rows = [
        [*np.eye(3)[a], *np.eye(2)[b], flag, x]
        for a in range(3)
        for b in range(2)
        for flag in (0.0, 1.0)
        for x in (0.0, 0.5, 1.0)
    ]
    grid = np.array(rows)
    assert cand.onehot_groups(grid) == ((0, 1, 2), (3, 4))
    # A constant-zero column is no category; a set that sums to 2 is no one-hot group.
    assert cand.onehot_groups(np.column_stack([grid, np.zeros(len(grid))])) == (
        (0, 1, 2),
        (3, 4),
    )
    assert cand.onehot_groups(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])) == ()
    assert cand.onehot_groups(np.array([[0.3, 0.7]])) == ()


def _fitted(tasks):
    rng = np.random.default_rng(0)
    return fit_meta_models(tasks, [None] * len(tasks), MetaBOOptions(), rng, None)[0]


def test_range_values_put_a_task_back_on_its_own_observed_range() -> None:
    X = np.linspace(0.0, 1.0, 12)[:, None]
    # one task far from normal: a plateau and one failure far below it
    y = np.where(X[:, 0] > 0.05, 0.9 + 0.01 * X[:, 0], 0.1)
    values = cand.range_values([(X, y)], _fitted([(X, y)]), X)
    assert values.shape == (1, 12)
    assert values.min() >= 0.0 and values.max() <= 1.0
    # the order is kept, and the plateau sits near the top of the range, as in y itself
    assert np.all(np.diff(values[0, 1:]) >= -1e-9)
    assert values[0, 0] < 0.1 and values[0, 1:].min() > 0.8


def test_a_portfolio_covers_the_tasks_that_its_first_point_serves_badly() -> None:
    grid = np.linspace(0.0, 1.0, 51)[:, None]
    tasks = []
    for best in (0.3, 0.3, 0.3, 0.8):  # three tasks agree, one is best elsewhere
        tasks.append((grid, -np.abs(grid[:, 0] - best)))
    meta = _fitted(tasks)
    points = cand.portfolio_points(tasks, meta, grid, limit=3)
    # the first is the tasks' common best; the second is not beside it but the lone task's
    assert abs(points[0, 0] - 0.3) <= 0.04
    assert abs(points[1, 0] - 0.8) <= 0.04
    # the warm start ranks by the mean instead: its second point is no better for any task
    warm = cand.warm_start_points(tasks, meta, lambda P: P)
    assert abs(warm[0, 0] - 0.3) <= 0.04 and len(warm) == 2


def test_a_portfolio_stops_when_no_point_raises_the_tasks_mean() -> None:
    grid = np.linspace(0.0, 1.0, 21)[:, None]
    tasks = [(grid, -((grid[:, 0] - 0.5) ** 2))] * 2
    points = cand.portfolio_points(tasks, _fitted(tasks), grid)
    assert len(points) == 1 and abs(points[0, 0] - 0.5) <= 0.05
