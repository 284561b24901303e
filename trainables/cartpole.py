"""Policy search on gymnasium's CartPole-v1 with a linear softmax policy (paper, sec. 5).

The policy maps the 4-dimensional state ``s`` to action scores ``s @ W`` with ``W`` a 4x2 matrix
of the 8 tuned weights, ``W[i, a] = config[f"w{2 * i + a}"]``; the action with the largest
softmax probability (the largest score, ties to action 0) is taken. A *task* is an initial
state: after each ``env.reset`` the cart-pole is moved to ``initial_state`` plus gymnasium's
usual uniform(-0.05, 0.05) reset noise (``reset_noise=False`` starts exactly there). The metric
``normalized_return`` is the episode return divided by ``max_steps`` (episodes capped at 200
steps), averaged over the episodes run so far; a trial runs ``episodes`` (10) episodes, each
reported as one Tune iteration with a checkpoint. Episode ``k`` is seeded from
``(seed, k)``, so results do not depend on resumption.

Weights are searched in ``[-1, 1]`` by default (:func:`search_space`); the policy only depends
on their direction, so a bounded box loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from ray import tune

from trainables import runtime

N_WEIGHTS = 8
MAX_STEPS = 200
N_EPISODES = 10
WEIGHT_RANGE = (-1.0, 1.0)
DEFAULT_INITIAL_STATE = (0.0, 0.0, 0.0, 0.0)
CONFIG_KEYS = {
    *(f"w{i}" for i in range(N_WEIGHTS)),
    "initial_state",
    "episodes",
    "max_steps",
    "seed",
    "reset_noise",
    "checkpoint_every",
}


def search_space(low: float = WEIGHT_RANGE[0], high: float = WEIGHT_RANGE[1]) -> dict[str, Any]:
    """Uniform search space for the 8 policy weights ``w0..w7``.

    Parameters
    ----------
    low, high : float
        Bounds for every weight.

    Returns
    -------
    dict
        Tune search-space entries to merge into ``param_space``.
    """
    if not low < high:
        raise ValueError(f"need low < high, got low={low!r}, high={high!r}")
    return {f"w{i}": tune.uniform(low, high) for i in range(N_WEIGHTS)}


def policy_matrix(config: dict[str, Any]) -> np.ndarray:
    """The 4x2 weight matrix from config keys ``w0..w7`` (row = state component).

    Parameters
    ----------
    config : dict
        Holds ``w0`` ... ``w7``.

    Returns
    -------
    numpy.ndarray
        float64 array of shape (4, 2).
    """
    weights = [runtime.get_float(config, f"w{i}") for i in range(N_WEIGHTS)]
    return np.asarray(weights, dtype=np.float64).reshape(4, 2)


def check_initial_state(state: Sequence[float]) -> np.ndarray:
    """Validate a task's initial state ``(x, x_dot, theta, theta_dot)``.

    Parameters
    ----------
    state : sequence of 4 floats
        Must be finite and inside CartPole's termination bounds (|x| < 2.4,
        |theta| < 12 degrees).

    Returns
    -------
    numpy.ndarray
        float64 array of shape (4,).
    """
    arr = np.asarray(state, dtype=np.float64)
    if arr.shape != (4,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"initial_state must be 4 finite numbers, got {state!r}")
    if abs(arr[0]) >= 2.4 or abs(arr[2]) >= 12 * 2 * np.pi / 360:
        raise ValueError(
            f"initial_state {state!r} is already terminal (|x| must be < 2.4 and |theta| < 0.2094)"
        )
    return arr


def _episode_seed(seed: int, episode: int) -> int:
    return int(np.random.SeedSequence([int(seed), int(episode)]).generate_state(1)[0])


def run_episode(
    env: Any,
    weights: np.ndarray,
    initial_state: np.ndarray,
    seed: int,
    *,
    reset_noise: bool = True,
    max_steps: int = MAX_STEPS,
) -> float:
    """Run one episode of the greedy linear softmax policy from a given initial state.

    Parameters
    ----------
    env : gymnasium.Env
        A ``CartPole-v1`` environment.
    weights : numpy.ndarray
        (4, 2) policy matrix.
    initial_state : numpy.ndarray
        Task's initial state.
    seed : int
        Seeds ``env.reset`` (the reset noise).
    reset_noise : bool
        Add gymnasium's uniform(-0.05, 0.05) reset state to ``initial_state``.
    max_steps : int
        Episode cap.

    Returns
    -------
    float
        Undiscounted return (number of steps survived, at most ``max_steps``).
    """
    env.reset(seed=seed)
    noise = np.asarray(env.unwrapped.state, dtype=np.float64) if reset_noise else 0.0
    env.unwrapped.state = initial_state + noise
    obs = np.asarray(env.unwrapped.state, dtype=np.float64)
    total = 0.0
    for _ in range(max_steps):
        action = int(np.argmax(obs @ weights))
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        if terminated or truncated:
            break
    return total


def cartpole_trainable(config: dict[str, Any]) -> None:
    """Tune function trainable: evaluate a linear policy on one CartPole task.

    Parameters
    ----------
    config : dict
        ``w0``..``w7`` (required), ``initial_state`` (4 floats, default zeros), ``episodes``
        (10), ``max_steps`` (200), ``seed`` (0), ``reset_noise`` (True),
        ``checkpoint_every`` (1 episode).
    """
    import gymnasium as gym

    runtime.check_keys(config, CONFIG_KEYS, "cartpole_trainable")
    weights = policy_matrix(config)
    initial = check_initial_state(config.get("initial_state", DEFAULT_INITIAL_STATE))
    episodes = runtime.get_int(config, "episodes", N_EPISODES, low=1)
    max_steps = runtime.get_int(config, "max_steps", MAX_STEPS, low=1)
    seed = runtime.get_int(config, "seed", 0)
    every = runtime.get_int(config, "checkpoint_every", 1, low=1)
    reset_noise = bool(config.get("reset_noise", True))

    state = runtime.restore(runtime.read_state) or {"episode": 0, "returns": []}
    returns = [float(r) for r in state["returns"]]
    env = gym.make("CartPole-v1", max_episode_steps=max_steps)
    try:
        for episode in range(int(state["episode"]) + 1, episodes + 1):
            ret = run_episode(
                env,
                weights,
                initial,
                _episode_seed(seed, episode),
                reset_noise=reset_noise,
                max_steps=max_steps,
            )
            returns.append(ret)
            metrics = {
                "episode": episode,
                "episode_return": ret,
                "mean_return": float(np.mean(returns)),
                "normalized_return": float(np.mean(returns)) / max_steps,
            }
            snapshot = {"episode": episode, "returns": list(returns)}

            def write(directory: Any, snapshot: dict[str, Any] = snapshot) -> None:
                runtime.write_state(directory, snapshot)

            runtime.report(metrics, write if episode % every == 0 or episode == episodes else None)
    finally:
        env.close()
