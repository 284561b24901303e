"""Run the earlier experiments that become meta-tasks: one ordinary Tune run per source task.

Each source task (a dataset, an initial state, an alphabet or a Pima stage) gets its own Tune
run with Tune's default search (seeded random search, :class:`BasicVariantGenerator`), written to
``<storage_path>/<prefix>-<task>``. Those directories are what a meta-BO searcher reads as
meta-observations (e.g. ``RMBOSearcher(meta_tasks=[...])``); each trial's ``result.json`` holds the
config and per-epoch metrics. The paper's source tasks are:

* ``cnn``: the three image datasets other than the target (paper: 50 evaluations each);
* ``logreg``: Pima stages 1-4, target stage 5 (non-stationary BO);
* ``cartpole``: 10 initial states, 7 random and 3 close to the target's (50 evaluations each);
* ``siamese``: 10 alphabets of the Omniglot background set (30 evaluations each).

See ``examples/make_meta_tasks.py`` for the command-line front end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ray import tune
from ray.tune.search import BasicVariantGenerator

from trainables import cartpole, cnn, logreg, siamese
from trainables.omniglot import list_omniglot_alphabets

__all__ = [
    "WORKLOADS",
    "cartpole_tasks",
    "cnn_tasks",
    "default_tasks",
    "logreg_tasks",
    "run_meta_tasks",
    "siamese_tasks",
]

# workload -> (trainable, metric, mode, search space factory)
WORKLOADS: dict[str, tuple[Callable[[dict[str, Any]], None], str, str, Callable[[], dict]]] = {
    "cnn": (cnn.cnn_trainable, "val_error", "min", cnn.search_space),
    "siamese": (siamese.siamese_trainable, "val_error", "min", siamese.search_space),
    "logreg": (logreg.logreg_trainable, "val_error", "min", logreg.search_space),
    "cartpole": (cartpole.cartpole_trainable, "normalized_return", "max", cartpole.search_space),
}


def cnn_tasks(target: str = "mnist") -> dict[str, dict[str, Any]]:
    """Source tasks for a CNN target: the paper's other three image datasets.

    Parameters
    ----------
    target : {"mnist", "svhn", "cifar10", "cifar100"}
        Target dataset, excluded from the sources.

    Returns
    -------
    dict
        Task name to the task's fixed config entries.
    """
    paper = ("mnist", "svhn", "cifar10", "cifar100")
    if target not in paper:
        raise ValueError(f"CNN target must be one of {paper}, got {target!r}")
    return {name: {"dataset": name} for name in paper if name != target}


def logreg_tasks() -> dict[str, dict[str, Any]]:
    """Source tasks of the non-stationary experiment: Pima stages 1-4 (stage 5 is the target).

    Returns
    -------
    dict
        Task name to config entries.
    """
    return {f"stage{k}": {"stage": k} for k in range(1, len(logreg.STAGE_SIZES))}


def cartpole_tasks(
    target_state: Sequence[float] = cartpole.DEFAULT_INITIAL_STATE,
    *,
    n_similar: int = 3,
    n_random: int = 7,
    similar_scale: float = 0.02,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Initial states as source tasks: some near the target's, the rest random.

    Parameters
    ----------
    target_state : sequence of 4 floats
        The target task's initial state.
    n_similar, n_random : int
        How many near (target + N(0, similar_scale^2)) and uniformly random states (position
        in [-1.5, 1.5], velocities in [-0.5, 0.5], angle in [-0.15, 0.15]).
    similar_scale : float
        Spread of the similar states.
    seed : int
        Generator seed.

    Returns
    -------
    dict
        Task name to ``{"initial_state": [...]}``.
    """
    target = cartpole.check_initial_state(target_state)
    rng = np.random.default_rng(seed)
    tasks = {}
    for i in range(n_similar):
        state = np.clip(
            target + rng.normal(0.0, similar_scale, 4), [-2.3, -3, -0.2, -3], [2.3, 3, 0.2, 3]
        )
        tasks[f"similar{i}"] = {"initial_state": [round(float(v), 6) for v in state]}
    for i in range(n_random):
        state = rng.uniform([-1.5, -0.5, -0.15, -0.5], [1.5, 0.5, 0.15, 0.5])
        tasks[f"random{i}"] = {"initial_state": [round(float(v), 6) for v in state]}
    return tasks


def siamese_tasks(
    split: str = "background", n_alphabets: int = 10, data_dir: str | None = None
) -> dict[str, dict[str, Any]]:
    """The first ``n_alphabets`` alphabets of an Omniglot split as source tasks.

    Parameters
    ----------
    split : str
        Omniglot split (see :mod:`trainables.omniglot`).
    n_alphabets : int
        How many alphabets, in sorted order.
    data_dir : str, optional
        Dataset directory.

    Returns
    -------
    dict
        Task name to ``{"alphabet": ..., "split": ...}``.
    """
    names = list_omniglot_alphabets(split, data_dir)[:n_alphabets]
    return {name: {"alphabet": name, "split": split} for name in names}


def run_meta_tasks(
    workload: str,
    tasks: Mapping[str, Mapping[str, Any]],
    *,
    storage_path: str | Path,
    num_samples: int,
    prefix: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    resources: Mapping[str, float] | None = None,
    max_concurrent_trials: int | None = None,
    seed: int = 0,
    verbose: int = 1,
    search_alg: Callable[[int], Any] | None = None,
    on_experiment: Callable[[str, Path | str, float], None] | None = None,
    metric: str | None = None,
    mode: str | None = None,
) -> dict[str, Path | str]:
    """Run one Tune experiment per source task and return their directories.

    Parameters
    ----------
    workload : {"cnn", "siamese", "logreg", "cartpole"}
        Which trainable.
    tasks : mapping
        Task name to the config entries defining the task (from the ``*_tasks`` helpers).
    storage_path : str or path-like
        Root directory for the experiments, or a storage URI (``s3://bucket/prefix``,
        ``gs://...``, ``file:///...``) that Tune writes through pyarrow.
    num_samples : int
        Random-search evaluations per task.
    prefix : str, optional
        Experiment name prefix (default: the workload name).
    fixed : mapping, optional
        Extra fixed config (e.g. ``{"epochs": 5, "data_dir": ...}``).
    resources : mapping, optional
        Per-trial resources for ``tune.with_resources``, e.g. ``{"cpu": 4, "gpu": 1}``.
    max_concurrent_trials : int, optional
        Cap on simultaneous trials.
    seed : int
        Random-search seed (task ``i`` uses ``seed + i``).
    verbose : int
        Tune verbosity.
    search_alg : callable, optional
        Called with the task's index, returns the search algorithm of its experiment (any
        Tune ``Searcher`` or ``SearchAlgorithm``); default: Tune's random search seeded
        ``seed + i``.
    on_experiment : callable, optional
        Called after each experiment with the task's name, its directory and the seconds it
        took (progress for long runs).
    metric, mode : str, optional
        The metric the experiments optimize (default: the workload's, e.g. ``val_error``).

    Returns
    -------
    dict
        Task name to experiment directory (a ``Path``, or a URI string when
        ``storage_path`` is a URI).
    """
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; expected one of {sorted(WORKLOADS)}")
    if int(num_samples) < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    fn, default_metric, default_mode, space = WORKLOADS[workload]
    metric, mode = metric or default_metric, mode or default_mode
    trainable = tune.with_resources(fn, dict(resources)) if resources else fn
    # A URI (s3://, gs://, file://) goes to Tune as it is; a local path is made absolute.
    uri = "://" in str(storage_path)
    root: Path | str = (
        str(storage_path).rstrip("/") if uri else Path(storage_path).expanduser().resolve()
    )
    out = {}
    for i, (task, task_config) in enumerate(tasks.items()):
        started = time.perf_counter()
        name = f"{prefix or workload}-{task}"
        tuner = tune.Tuner(
            trainable,
            param_space={**space(), **(fixed or {}), **task_config},
            tune_config=tune.TuneConfig(
                metric=metric,
                mode=mode,
                num_samples=int(num_samples),
                search_alg=(
                    search_alg(i)
                    if search_alg is not None
                    else BasicVariantGenerator(random_state=seed + i)
                ),
                max_concurrent_trials=max_concurrent_trials,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                name=name,
                storage_path=str(root),
                verbose=verbose,
                failure_config=tune.FailureConfig(max_failures=2),
            ),
        )
        grid = tuner.fit()
        errors = [r.error for r in grid if r.error is not None]
        if errors:
            raise RuntimeError(f"{len(errors)} trial(s) of meta-task {name!r} failed: {errors[0]}")
        out[task] = f"{root}/{name}" if uri else Path(root) / name
        if on_experiment is not None:
            on_experiment(task, out[task], time.perf_counter() - started)
    return out


def default_tasks(workload: str, **kwargs: Any) -> dict[str, dict[str, Any]]:
    """The paper's source tasks for ``workload`` (keyword arguments go to the helper).

    Parameters
    ----------
    workload : {"cnn", "siamese", "logreg", "cartpole"}
        Which workload.
    **kwargs
        Passed to :func:`cnn_tasks`, :func:`siamese_tasks`, :func:`logreg_tasks` or
        :func:`cartpole_tasks`.

    Returns
    -------
    dict
        Task name to config entries.
    """
    helpers = {
        "cnn": cnn_tasks,
        "siamese": siamese_tasks,
        "logreg": logreg_tasks,
        "cartpole": cartpole_tasks,
    }
    if workload not in helpers:
        raise ValueError(f"unknown workload {workload!r}; expected one of {sorted(helpers)}")
    return helpers[workload](**kwargs)
