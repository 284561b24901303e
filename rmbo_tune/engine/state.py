"""The engine's saved state: a plain, versioned dict (numbers, lists, strings), checked on load.

A restored engine continues exactly as the saved one would have: same random stream, same
fitted hyperparameters (nothing is refitted on load), same incrementally grown factor.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbo_tune.engine.candidates import GridLevels
from rmbo_tune.engine.gp import GPHyperparameters
from rmbo_tune.engine.online import OnlineTask, count_given_tasks
from rmbo_tune.engine.options import VERSION_1_OPTIONS, MetaBOOptions
from rmbo_tune.engine.types import Array

if TYPE_CHECKING:
    from rmbo_tune.engine.metabo import MetaBO

STATE_VERSION = 3
KEYS = (
    "version",
    "dim",
    "method",
    "options",
    "meta_tasks",
    "candidates",
    "seeds",
    "rng",
    "X",
    "y",
    "pending",
    "n_failed",
    "target_hyper",
    "weights",
    "history",
)


def _task_warp(value: Any, dim: int) -> Array | None:
    """The tasks' warp of a state (None where it had none, or predates it: refitted)."""
    if value is None:
        return None
    warp = np.asarray(value, dtype=np.float64)
    if warp.shape != (2, dim) or not np.all(np.isfinite(warp)):
        raise ValueError(f"MetaBO state: task_warp must be finite of shape (2, {dim})")
    return warp


def dump(engine: MetaBO) -> dict[str, Any]:
    """The state of ``engine`` (see :meth:`MetaBO.state_dict`)."""
    return {
        "version": STATE_VERSION,
        "dim": engine.dim,
        "method": engine.method,
        "options": dataclasses.asdict(engine.options),
        "meta_tasks": [
            {"X": X.tolist(), "y": y.tolist(), "hyper": h.to_dict()}
            for (X, y), h in zip(engine._meta_data, engine._meta_hypers, strict=True)
        ],
        # With grid_levels, every point below is in the candidate set's spacing.
        "candidates": None if engine._cands is None else engine._cands.tolist(),
        "levels": None
        if engine.levels is None
        else [None if lv is None else lv.tolist() for lv in engine.levels.levels],
        "seeds": dict(engine._seeds),
        "rng": engine.rng.bit_generator.state,
        # input_warp="tasks": the tasks' median warp, fitted once at build.
        "task_warp": None if engine.task_warp is None else engine.task_warp.tolist(),
        # Every evaluation in arrival order (the factor is grown in that order); None marks
        # a failed one.
        "X": engine.target.X_fit.tolist(),
        "y": [None if np.isnan(v) else v for v in engine.target.y_list],
        "pending": engine._pending_points.tolist(),
        "n_failed": engine.n_failed,
        "n_given": engine.n_given,
        "target_hyper": engine.target.hyper.to_dict(),
        "factor_base": engine.target.factor_base,
        "weights": engine.weight_state.state_dict(),
        "online_tasks": [t.to_dict() for t in engine._online.values()],
        "excluded": engine._excluded_points.tolist(),
        "history": [dict(r) for r in engine.history],
    }


def _levels(value: Any, dim: int, has_candidates: bool) -> GridLevels | None:
    """The spacing of a state's candidate set (None where the engine had none)."""
    if value is None:
        return None
    levels = [None if lv is None else np.asarray(lv, dtype=np.float64) for lv in value]
    if (
        not has_candidates
        or len(levels) != dim
        or any(
            lv is not None
            and (
                lv.ndim != 1 or len(lv) == 0 or np.any(np.diff(lv) <= 0) or lv[0] < 0 or lv[-1] > 1
            )
            for lv in levels
        )
    ):
        raise ValueError(
            f"MetaBO state: levels must be {dim} increasing lists in [0, 1] (or null) beside "
            "candidates"
        )
    return GridLevels(levels)


def _points(value: Any, dim: int, what: str) -> Array:
    X = np.asarray(value, dtype=np.float64)
    if X.size == 0:
        return X.reshape(0, dim)
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"MetaBO state: {what} must have shape (n, {dim}), got {X.shape}")
    return X


def _check(state: Mapping[str, Any]) -> tuple[int, Array, Array]:
    if not isinstance(state, Mapping):
        raise TypeError(f"MetaBO state must be a dict, got {type(state).__name__}")
    missing = [k for k in KEYS if k not in state]
    if missing:
        raise ValueError(f"MetaBO state is missing keys {missing}")
    version = state["version"]
    if version not in (1, 2, STATE_VERSION):
        raise ValueError(f"unsupported MetaBO state version {version!r}; expected {STATE_VERSION}")
    dim = int(state["dim"])
    X = _points(state["X"], dim, "X")
    y = np.array([math.nan if v is None else v for v in state["y"]], dtype=np.float64)
    if len(X) != len(y):
        raise ValueError(f"MetaBO state: {len(X)} rows in X but {len(y)} values in y")
    if np.isinf(y).any() or np.isnan([v for v in state["y"] if v is not None]).any():
        raise ValueError("MetaBO state: y contains NaN or inf (a failed evaluation is null)")
    return dim, X, y


def load(
    cls: type[MetaBO], state: Mapping[str, Any], project: Callable[[Array], Array] | None
) -> MetaBO:
    """Rebuild an engine (see :meth:`MetaBO.from_state_dict`).

    Raises
    ------
    ValueError
        If the state has an unknown version, misses keys or holds inconsistent arrays.
    """
    dim, X, y = _check(state)
    options = dict(state["options"])
    if state["version"] == 1:
        # Written before these options existed: the behaviour of that engine.
        options = {**VERSION_1_OPTIONS, **options}
    # Written before meta-tasks were thinned: that engine fitted every observation.
    options.setdefault("max_meta_observations", None)
    # Written before the input warp: that engine's kernel took the inputs as they are.
    options.setdefault("input_warp", None)
    # Written before grid_levels: that engine took a candidate set's coordinates as given.
    options.setdefault("grid_levels", "none")
    # Written before the tasks' deviations joined the late basis: that engine had none.
    options.setdefault("meta_basis_tasks", 0.0)
    # Written before meta_prior_mean: that engine's targets had no prior mean.
    options.setdefault("meta_prior_mean", False)
    # Written before taf_disagreement: that engine took TAF's form for searched tasks only.
    options.setdefault("taf_disagreement", None)
    # Written before the escalation option: that engine's repeat escalations doubled beta.
    options.setdefault("escalation", "beta")
    if state["version"] == 2 and options.get("tau") is None and state["method"] == "rm-gp-ucb":
        # Written when tau=None weighed the tasks' means alone in RM-GP-UCB's meta term.
        options["tau"] = 0.0
    tasks = [
        (_points(t["X"], dim, "meta-task X"), np.asarray(t["y"], dtype=np.float64))
        for t in state["meta_tasks"]
    ]
    cands = state["candidates"]
    # Absent from states written before online meta-tasks existed, as "excluded" is.
    online = {t["name"]: OnlineTask(**t) for t in state.get("online_tasks", [])}
    rng = np.random.default_rng()
    rng.bit_generator.state = state["rng"]
    # The constructor without its fits: the state holds every fitted hyperparameter.
    engine = cls.__new__(cls)
    engine._setup(
        dim=dim,
        method=state["method"],
        options=MetaBOOptions(**options),
        tasks=tasks,
        hypers=[GPHyperparameters.from_dict(t["hyper"]) for t in state["meta_tasks"]],
        candidates=None if cands is None else _points(cands, dim, "candidates"),
        rng=rng,
        seeds=dict(state["seeds"]),
        project=project,
        task_warp=_task_warp(state.get("task_warp"), dim),
        levels=_levels(state.get("levels"), dim, cands is not None),
        n_given_tasks=count_given_tasks(online, len(tasks)),
    )
    target = engine.target
    for x, v in zip(X, y, strict=True):
        target.add(x, float(v))
    engine._pending = list(_points(state["pending"], dim, "pending"))
    engine.n_failed = int(state["n_failed"])
    # Absent from states written before given observations were counted: the basis then
    # waited for nu alone.
    engine.n_given = int(state.get("n_given", 0))
    if not 0 <= engine.n_given <= len(y):
        raise ValueError(f"MetaBO state: n_given {engine.n_given} is not in [0, {len(y)}]")
    target.hyper = GPHyperparameters.from_dict(state["target_hyper"])
    # States written before the factor was grown incrementally: factorize all at once.
    target.factor_base = int(state.get("factor_base", len(y)))
    if not 0 <= target.factor_base <= len(y):
        raise ValueError(f"MetaBO state: factor_base {target.factor_base} is not in [0, {len(y)}]")
    engine.weight_state.load_state_dict(state["weights"])
    engine._online = online
    engine._excluded = list(_points(state.get("excluded", []), dim, "excluded"))
    engine.history = [dict(r) for r in state["history"]]
    return engine
