"""Search algorithms of the Tune benchmark, one per method, timed.

:func:`make_search_alg` builds the Tune search algorithm of a benchmark method and wraps it so
that the run can report each trial in suggestion order with the seconds the searcher spent on
it (:class:`TimedLimiter` around a :class:`~ray.tune.search.Searcher`,
:class:`TimedVariantGenerator` for Tune's random search).

Methods (:data:`METHODS`): the engine's ``rm-gp-ucb``, ``rm-gp-ts``, ``gp-ucb``, ``rgpe``,
``taf``, ``warm-start``, ``portfolio``, ``random`` (all through
:class:`~rmbo_tune.RMBOSearcher`), Tune's ``BasicVariantGenerator`` (``tune-random``) and
``OptunaSearch`` (``optuna``, TPE, and ``optuna-warm``, TPE with the configs of
:func:`warm_start_configs` enqueued; only when optuna is installed) and ``TuneBOHB`` (``bohb``,
beside ``HyperBandForBOHB`` only; it needs ``hpbandster`` and ``ConfigSpace``, which the
project does not install).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter, Searcher

from rmbo_tune.engine.methods import META_METHODS
from rmbo_tune.engine.methods import METHODS as ENGINE_METHODS
from rmbo_tune.searcher import RMBOSearcher

TUNE_METHODS = ("tune-random", "optuna", "optuna-warm", "bohb")
METHODS = ENGINE_METHODS + TUNE_METHODS


def optuna_available() -> bool:
    """Whether ``optuna`` can be imported (the ``optuna`` and ``optuna-warm`` methods need it).

    Returns
    -------
    bool
        True when the import succeeds.
    """
    try:
        import optuna  # noqa: F401
    except ImportError:
        return False
    return True


def bohb_available() -> bool:
    """Whether Tune's BOHB can run (``hpbandster`` and ``ConfigSpace`` import).

    Returns
    -------
    bool
        True when both imports succeed.
    """
    try:
        import ConfigSpace  # noqa: F401
        import hpbandster  # noqa: F401
    except ImportError:
        return False
    return True


class TimedLimiter(ConcurrencyLimiter):
    """A ConcurrencyLimiter that records trial order and the searcher's seconds per trial."""

    def __init__(self, searcher: Searcher, max_concurrent: int = 1) -> None:
        super().__init__(searcher, max_concurrent=max_concurrent)
        self.order: list[str] = []
        self.seconds: dict[str, float] = {}

    def suggest(self, trial_id: str) -> dict | None:
        t0 = time.perf_counter()
        config = super().suggest(trial_id)
        if isinstance(config, dict):
            self.order.append(trial_id)
            self.seconds[trial_id] = time.perf_counter() - t0
        return config

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        t0 = time.perf_counter()
        super().on_trial_complete(trial_id, result=result, error=error)
        if trial_id in self.seconds:
            self.seconds[trial_id] += time.perf_counter() - t0


class TimedVariantGenerator(BasicVariantGenerator):
    """Tune's random search, recording trial order and time per created trial."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order: list[str] = []
        self.seconds: dict[str, float] = {}

    def next_trial(self) -> Any:
        t0 = time.perf_counter()
        trial = super().next_trial()
        if trial is not None:
            self.order.append(trial.trial_id)
            self.seconds[trial.trial_id] = time.perf_counter() - t0
        return trial


def warm_start_configs(
    space: Mapping[str, Any],
    metric: str,
    mode: str,
    meta_tasks: Mapping[str, Any],
    *,
    seed: int,
) -> list[dict[str, Any]]:
    """The configs the engine's ``warm-start`` method evaluates first, in its order.

    Each meta-task's best config, ranked by the mean prediction of all meta-tasks' GPs (at
    most ten). ``optuna-warm`` enqueues them in Optuna's TPE, the warm start a practitioner
    would write by hand for a searcher without transfer learning.

    Parameters
    ----------
    space : mapping
        The Tune search space.
    metric, mode : str
        The target's metric and direction.
    meta_tasks : mapping
        Meta-task name to any source :class:`~rmbo_tune.RMBOSearcher` accepts (an experiment
        directory, a ``(configs, values)`` pair).
    seed : int
        Seed of the searcher.

    Returns
    -------
    list of dict
        The configs, in the order the ``warm-start`` method suggests them.
    """
    warm = RMBOSearcher(
        metric=metric,
        mode=mode,
        method="warm-start",
        meta_tasks={n: str(p) if isinstance(p, Path) else p for n, p in meta_tasks.items()},
        seed=seed,
    )
    warm.set_search_properties(metric, mode, dict(space))
    configs = [warm.suggest("warm-start-0")]
    assert warm.engine is not None
    configs += [warm.suggest(f"warm-start-{i}") for i in range(1, warm.engine.n_initial)]
    return configs


def make_search_alg(
    method: str,
    metric: str,
    mode: str,
    *,
    seed: int,
    meta_tasks: Mapping[str, str | Path] | None = None,
    max_concurrent: int = 1,
    options: Mapping[str, Any] | None = None,
    space: Mapping[str, Any] | None = None,
) -> TimedLimiter | TimedVariantGenerator:
    """The search algorithm for one benchmark run, wrapped to record order and timing.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    metric, mode : str
        The target's metric and direction.
    seed : int
        Seed of the searcher.
    meta_tasks : mapping, optional
        Meta-task name to experiment directory (used by the engine's meta-BO methods only).
    max_concurrent : int
        Trials at once.
    options : mapping, optional
        Extra :class:`~rmbo_tune.RMBOSearcher` options for the engine methods.
    space : mapping, optional
        The Tune search space (``optuna-warm`` needs it to rank the warm-start configs).

    Returns
    -------
    TimedLimiter or TimedVariantGenerator
        Pass as ``TuneConfig(search_alg=...)``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if method == "tune-random":
        return TimedVariantGenerator(random_state=seed, max_concurrent=max_concurrent)
    searcher: Searcher
    if method == "bohb":
        if not bohb_available():
            raise ImportError("method 'bohb' needs hpbandster: pip install hpbandster ConfigSpace")
        from ray.tune.search.bohb import TuneBOHB

        searcher = TuneBOHB(metric=metric, mode=mode, seed=seed)
    elif method in ("optuna", "optuna-warm"):
        if not optuna_available():
            raise ImportError(f"method {method!r} needs optuna: pip install optuna")
        from ray.tune.search.optuna import OptunaSearch

        warm = None
        if method == "optuna-warm":
            if space is None or not meta_tasks:
                raise ValueError("method 'optuna-warm' needs the search space and meta-tasks")
            warm = warm_start_configs(space, metric, mode, meta_tasks, seed=seed)
        searcher = OptunaSearch(metric=metric, mode=mode, seed=seed, points_to_evaluate=warm)
    else:
        meta = (
            {name: str(p) for name, p in meta_tasks.items()}
            if meta_tasks and method in META_METHODS
            else None
        )
        searcher = RMBOSearcher(
            metric=metric,
            mode=mode,
            method=method,
            meta_tasks=meta or None,
            seed=seed,
            **dict(options or {}),
        )
    return TimedLimiter(searcher, max_concurrent=max_concurrent)
