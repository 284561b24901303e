"""Small real Tune experiments for meta-task tests (reusable by other test modules).

``run_experiment(storage_path, name, messy_space())`` writes an experiment with one trial per
entry of :data:`CASES`: clean multi-iteration trials whose best and last values differ, an
errored trial, NaN and inf values, a trial that never reports the metric and one that
reports nothing. :func:`expected` gives each trial's value from its config. Ray must be
initialized by the caller (``ray.init(num_cpus=2)``).
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Any

from ray import tune

CASES = (
    "ok_a",
    "ok_b",
    "ok_c",
    "error",
    "nan_last",
    "nan_all",
    "nan_mid",
    "inf_all",
    "missing",
    "silent",
)
# score at iterations 0, 1, 2 is lr * 10 * CURVE[i]: best at 1, last at 2.
CURVE = (0.5, 1.0, 0.75)


def target_space() -> dict:
    """The "current" search space the tests align meta-tasks with."""
    return {
        "lr": tune.uniform(0.001, 0.1),
        "model": {"width": tune.choice([8, 16, 32]), "act": "relu"},
    }


def messy_space() -> dict:
    """One trial per case, nested config."""
    return {"case": tune.grid_search(list(CASES)), **target_space()}


def other_space() -> dict:
    """An older, different space: lr 0.2 is out of the target's bounds, width 64 is an
    unknown category, ``dropout`` an extra key. 6 clean trials."""
    return {
        "lr": tune.grid_search([0.01, 0.05, 0.2]),
        "model": {"width": tune.grid_search([16, 64]), "act": "tanh"},
        "dropout": 0.1,
    }


def scores(config: dict) -> list[float]:
    """The score a trial reports at each iteration (errored trials: before the error)."""
    case, x = config.get("case", "ok"), config["lr"] * 10
    out = [x * c for c in CURVE]
    if case == "error":
        return out[:1]
    if case == "nan_last":
        out[2] = math.nan
    elif case == "nan_all":
        out = [math.nan] * 3
    elif case == "nan_mid":  # Tune's running max forgets the first value after the NaN
        out = [x, math.nan, 0.5 * x]
    elif case == "inf_all":
        out = [math.inf] * 3
    elif case in ("missing", "silent"):
        out = []
    return out


def expected(config: dict, scope: str, mode: str = "max") -> float | None:
    """A trial's value under ``scope`` (None: the loader must drop it)."""
    if config.get("case") in ("error", "missing", "silent"):
        return None
    vals = scores(config)
    if scope == "last":
        return vals[-1] if math.isfinite(vals[-1]) else None
    finite = [v for v in vals if math.isfinite(v)]
    return (max if mode == "max" else min)(finite) if finite else None


def trainable(config: dict) -> None:
    case = config.get("case", "ok")
    if case == "silent":
        return
    for i in range(3):
        if case == "error" and i == 1:
            raise RuntimeError("planned failure")
        if case == "missing":
            tune.report({"other": float(i)})
            continue
        s = scores(config)[i]
        tune.report({"score": s, "aux": {"loss": -s}})


def run_experiment(storage_path: str | Path, name: str, param_space: dict) -> Any:
    """Run the trainable over ``param_space``; returns the ResultGrid."""
    tuner = tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(num_samples=1, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(storage_path), name=name, verbose=0),
    )
    return tuner.fit()


class _Bomb:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return exec, (f"open({self.marker!r}, 'w').write('unpickled')",)


def pickle_bomb(marker: str | Path) -> bytes:
    """Pickle bytes that create ``marker`` when unpickled."""
    return pickle.dumps(_Bomb(str(marker)))


def plant_pickle_bombs(experiment: str | Path, marker: str | Path) -> list[Path]:
    """Overwrite every ``*.pkl`` (and the pickled ``basic-variant-state-*.json``) of an
    experiment directory with a bomb, and add ``params.pkl`` and ``checkpoint.pkl`` to every
    trial directory."""
    experiment = Path(experiment)
    bomb = pickle_bomb(marker)
    planted = set(experiment.rglob("*.pkl")) | set(experiment.glob("basic-variant-state-*.json"))
    planted |= {
        d / n for d in experiment.iterdir() if d.is_dir() for n in ("params.pkl", "checkpoint.pkl")
    }
    for path in planted:
        path.write_bytes(bomb)
    return sorted(planted)
