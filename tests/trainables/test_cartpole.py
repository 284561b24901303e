"""Tests for trainables.cartpole (linear softmax policy on CartPole-v1)."""

from __future__ import annotations

import numpy as np
import pytest
from ray import tune

from tests.trainables.conftest import crash_once, reports_after_restart, run_tuner

gym = pytest.importorskip("gymnasium")
from trainables import cartpole  # noqa: E402

# Push right when the pole leans/turns right: a decent but imperfect controller.
POLICY = {"w0": 0.0, "w1": 0.0, "w2": 0.0, "w3": 0.0, "w4": 0.0, "w5": 1.0, "w6": 0.0, "w7": 1.0}
UPRIGHT = [0.0, 0.0, 0.0, 0.0]
TILTED = [0.0, 0.0, 0.15, 0.5]


def test_policy_matrix_layout() -> None:
    config = {f"w{i}": float(i) for i in range(8)}
    w = cartpole.policy_matrix(config)
    assert w.shape == (4, 2) and w[2, 1] == 5.0 and w[3, 0] == 6.0


def test_missing_weight_raises() -> None:
    with pytest.raises(ValueError, match="w7"):
        cartpole.policy_matrix({f"w{i}": 0.0 for i in range(7)})


@pytest.mark.parametrize("state", [[0, 0, 0], [2.5, 0, 0, 0], [0, 0, 0.3, 0], [0, np.nan, 0, 0]])
def test_bad_initial_state_raises(state: list[float]) -> None:
    with pytest.raises(ValueError, match="initial_state"):
        cartpole.check_initial_state(state)


def test_episode_starts_from_the_task_state() -> None:
    env = gym.make("CartPole-v1")
    w = cartpole.policy_matrix(POLICY)
    # Without reset noise the episode is a deterministic function of the initial state.
    a = cartpole.run_episode(env, w, np.array(TILTED), 1, reset_noise=False)
    b = cartpole.run_episode(env, w, np.array(TILTED), 2, reset_noise=False)
    c = cartpole.run_episode(env, w, np.array(UPRIGHT), 1, reset_noise=False)
    assert a == b and a != c
    assert 1 <= a <= cartpole.MAX_STEPS and c == cartpole.MAX_STEPS
    env.close()


def test_search_space_has_eight_bounded_weights() -> None:
    space = cartpole.search_space()
    assert sorted(space) == [f"w{i}" for i in range(8)]
    assert all((d.lower, d.upper) == (-1.0, 1.0) for d in space.values())


def test_two_initial_states_give_different_returns(ray_cluster, tmp_path) -> None:
    grid = run_tuner(
        cartpole.cartpole_trainable,
        {**POLICY, "initial_state": tune.grid_search([UPRIGHT, TILTED, TILTED])},
        tmp_path,
        metric="normalized_return",
        mode="max",
    )
    by_state: dict[tuple, list[float]] = {}
    for result in grid:
        m = result.metrics
        assert m["episode"] == cartpole.N_EPISODES
        assert 0.0 < m["normalized_return"] <= 1.0
        assert m["normalized_return"] == pytest.approx(m["mean_return"] / 200)
        by_state.setdefault(tuple(result.config["initial_state"]), []).append(
            m["normalized_return"]
        )
    upright, tilted = by_state[tuple(UPRIGHT)], by_state[tuple(TILTED)]
    assert upright[0] == 1.0 and tilted[0] < 0.9
    assert tilted[0] == tilted[1]  # same seed and config: same metric


def test_crashed_trial_resumes_from_checkpoint(ray_cluster, tmp_path) -> None:
    config = {**POLICY, "initial_state": TILTED, "episodes": 6, "seed": 5}
    marker = tmp_path / "crashed"
    grid = run_tuner(
        crash_once(cartpole.cartpole_trainable, after=2, marker=marker),
        config,
        tmp_path,
        metric="normalized_return",
        mode="max",
        max_failures=1,
        name="crash",
    )
    assert marker.exists()
    assert reports_after_restart(marker) == 4 and grid[0].metrics["episode"] == 6  # resumed
    reference = run_tuner(
        cartpole.cartpole_trainable,
        config,
        tmp_path,
        metric="normalized_return",
        mode="max",
        name="clean",
    )[0]
    assert grid[0].metrics["normalized_return"] == reference.metrics["normalized_return"]
