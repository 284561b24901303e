"""Meta-tasks as ``RMBOSearcher`` holds them until the search starts.

A search's meta-tasks need its metric, mode and search space, which Tune may give the
searcher only after it is constructed (and pickled into ``tuner.pkl``). So
:func:`split_sources` keeps in-memory tasks (``(configs, values)`` pairs and
:class:`~rmbo_tune.meta_tasks.MetaTask` objects) as :class:`CompactTask` objects, their configs
stored as columns (numpy arrays where numeric) to keep the pickle small, and leaves paths,
URIs, result objects and frames to :func:`load_deferred` when the search starts;
:func:`engine_tasks` then turns every task into the engine's unit-cube points and values.
:class:`PendingMetaTasks` holds a searcher's meta-tasks through these steps.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rmbo_tune.engine.types import Array
from rmbo_tune.exceptions import OutOfSpaceError
from rmbo_tune.meta_tasks._loader import load_meta_tasks
from rmbo_tune.meta_tasks._reduce import candidates, is_num
from rmbo_tune.meta_tasks._sources import (
    check_path,
    is_loadable,
    is_pair,
    is_path,
    normalize_sources,
)
from rmbo_tune.space import Path, SearchSpace, flatten, path_name, unflatten

logger = logging.getLogger(__name__)

Entry = tuple[str | None, Any]

# An earlier experiment that searched a key the new search holds constant is read at the new
# value only if at least this many of its trials ran there; else every trial counts.
MIN_FIXED_TRIALS = 3


class _Missing:
    """A config cell with no value (the config lacks that key)."""

    def __repr__(self) -> str:
        return "<missing>"

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING = _Missing()


class CompactTask:
    """A meta-task's configs as columns and its values, in the mode the task was recorded in.

    Parameters
    ----------
    name : str
        The task's name (the meta-weights are reported under it).
    configs : sequence of mapping
        Nested configs.
    values : sequence of float
        One value per config.
    mode : {"min", "max"}, optional
        The direction of ``values``; None: the target's.

    Raises
    ------
    ValueError
        When ``configs`` and ``values`` differ in length.
    """

    def __init__(
        self,
        name: str,
        configs: Sequence[Mapping],
        values: Sequence[float],
        mode: str | None = None,
    ) -> None:
        if len(configs) != len(values):
            raise ValueError(
                f"meta-task {name!r}: {len(configs)} configs but {len(values)} values"
            )
        self.name, self.mode = name, mode
        flat = [flatten(c) for c in configs]
        self.n = len(flat)
        self.columns: dict[tuple, Any] = {}
        for k in sorted({k for f in flat for k in f}):
            col = [f.get(k, _MISSING) for f in flat]
            if all(type(v) is int for v in col):
                self.columns[k] = np.asarray(col, dtype=np.int64)
            elif all(type(v) in (int, float) for v in col):
                self.columns[k] = np.asarray(col, dtype=np.float64)
            else:
                self.columns[k] = col
        self.values = np.asarray(values, dtype=np.float64)

    @classmethod
    def from_task(cls, task: Any, name: str | None = None) -> CompactTask:
        """From a :class:`MetaTask` (or any object with ``name``, ``configs``, ``values`` and
        ``mode``), renamed to ``name`` if given."""
        return cls(name or task.name, task.configs, task.values, task.mode)

    def configs(self) -> list[dict]:
        """The configs back, as flat dicts (``{path tuple: value}``)."""
        out = []
        for i in range(self.n):
            cfg = {}
            for k, col in self.columns.items():
                v = col[i]
                if v is not _MISSING:
                    cfg[k] = v.item() if isinstance(v, np.generic) else v
            out.append(cfg)
        return out

    def encode(self, space: SearchSpace) -> tuple[Array, Array, int]:
        """The task's points in the space's unit cube, in a canonical row order.

        Parameters
        ----------
        space : SearchSpace
            The search's space.

        Returns
        -------
        X : ndarray of shape (n, space.dim)
            A searched key that no config of the task has (the experiment did not search
            it) is NaN in every row: the engine's meta-task GP is constant along it.
        y : ndarray of shape (n,)
            The values, in the task's mode (non-finite values are left out).
        dropped : int
            Configs left out because they are not in the space, ran at another value of a
            key the space holds constant that the experiment searched (:func:`fixed_slice`),
            or have a non-finite value.
        """
        X, y, dropped = [], [], 0
        # On the space's paths: a choice among dicts keeps its dict whole.
        configs = [space.flatten(unflatten(c)) for c in self.configs()]
        unrecorded = unrecorded_keys(space, configs)
        sliced, at_value = fixed_slice(space, configs)
        for cfg, v, keep in zip(configs, self.values, at_value, strict=True):
            if not math.isfinite(v):
                dropped += 1
                continue
            if not keep:
                dropped += 1
                continue
            try:
                X.append(space.encode(cfg, unrecorded=unrecorded))
                y.append(v)
            except OutOfSpaceError:
                dropped += 1
        Xa = np.array(X, dtype=np.float64).reshape(-1, space.dim)
        ya = np.array(y, dtype=np.float64)
        if unrecorded and len(Xa):
            names = sorted(path_name(p) for p in unrecorded)
            logger.info(
                "RMBOSearcher: meta-task %r did not search %s; its model is constant along %s",
                self.name,
                ", ".join(names),
                "it" if len(names) == 1 else "them",
            )
        if sliced:
            logger.info(
                "RMBOSearcher: meta-task %r searched %s; only its %d trials at the value this "
                "search fixes are used",
                self.name,
                ", ".join(f"{path_name(p)} (now {v!r})" for p, v in sliced.items()),
                int(sum(at_value)),
            )
        # Canonical row order: the order in which an experiment's trials are listed varies
        # between two runs of the same experiment (Tune's trial ids are random), and the
        # meta-task GP fits, though order-invariant in exact arithmetic, are not in floating
        # point; sorting makes the same earlier experiments give the same search.
        order = np.lexsort(np.column_stack([Xa, ya]).T[::-1])
        return Xa[order], ya[order], dropped


def unrecorded_keys(space: SearchSpace, configs: Sequence[Mapping[Path, Any]]) -> set[Path]:
    """The searched keys (paths) that none of one task's flat ``configs`` has: a parameter
    its experiment did not search. Empty when the task has none of them (it was a search of
    another space, not of fewer parameters) or no config."""
    missing = {d.path for d in space.dimensions if not any(d.path in c for c in configs)}
    return set() if len(missing) == len(space.dimensions) else missing


def fixed_slice(
    space: SearchSpace, configs: Sequence[Mapping[Path, Any]]
) -> tuple[dict[Path, Any], list[bool]]:
    """The keys the new search holds constant that one task's flat ``configs`` searched
    (two or more values), with the search's value of each, and which configs ran at those
    values.

    A trial at another value of such a key measured another configuration than the new
    search can run: on the shipped boosting grid with the learning rate fixed, RM-GP-UCB's
    regret at 5 was 0.062 with the earlier tasks' trials at the new value, against 0.116
    with all of them (``rmbo-tune bench tabular --fixed``). When fewer than
    ``MIN_FIXED_TRIALS`` configs ran at the values (a continuous parameter fixed now at a
    value never tried), no key is returned and every config counts.
    """
    fixed = {**space.constants, **space.fixed_choices}
    searched = {}
    for path, value in fixed.items():
        seen = [c[path] for c in configs if path in c]
        if any(not _same(v, seen[0]) for v in seen[1:]):
            searched[path] = value
    if not searched:
        return {}, [True] * len(configs)
    keep = [all(p in c and _same(c[p], v) for p, v in searched.items()) for c in configs]
    if sum(keep) < MIN_FIXED_TRIALS:
        return {}, [True] * len(configs)
    return searched, keep


def _same(a: Any, b: Any) -> bool:
    """Whether two config values are the same setting (numbers to a relative 1e-9)."""
    numbers = (int, float, np.integer, np.floating)
    if isinstance(a, numbers) and isinstance(b, numbers):
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def split_sources(meta_tasks: Any) -> tuple[list[CompactTask], list[Entry]]:
    """Keep in-memory meta-tasks now; leave the rest to be loaded when the search starts.

    Parameters
    ----------
    meta_tasks : object
        ``RMBOSearcher``'s ``meta_tasks`` argument: None, one source, a list of sources or a
        dict naming them (see :func:`normalize_sources`).

    Returns
    -------
    ready : list of CompactTask
        ``(configs, values)`` pairs (values in the target's mode) and objects with
        ``configs``, ``values`` and ``mode`` such as :class:`MetaTask`.
    deferred : list of (str or None, object)
        Paths, URIs, result objects and frames with their names, for :func:`load_deferred`.

    Raises
    ------
    ValueError
        An empty pair, or one whose configs and values differ in length.
    FileNotFoundError
        A local path or glob that names nothing.
    """
    if meta_tasks is None:
        return [], []
    ready: list[CompactTask] = []
    deferred: list[Entry] = []
    for i, (name, task) in enumerate(normalize_sources(meta_tasks)):
        if is_pair(task):
            configs, values = task
            if len(configs) == 0:
                raise ValueError(f"meta-task {name or i!r} is empty")
            # As load_meta_tasks checks a pair: values are never coerced from text or bools.
            for v in values:
                if not is_num(v):
                    raise TypeError(f"meta-task {name or i!r}: values must be numbers, got {v!r}")
            ready.append(CompactTask(name or f"task_{i}", list(configs), list(values)))
        elif hasattr(task, "configs") and hasattr(task, "values") and hasattr(task, "mode"):
            ready.append(CompactTask.from_task(task, name))
        elif is_loadable(task):
            if is_path(task):
                check_path(task)
            deferred.append((name, task))
        else:
            raise TypeError(
                f"meta_tasks: {name or i!r} is {task!r} ({type(task).__name__}); a meta-task "
                "source is a path, glob or URI, an ExperimentAnalysis, a ResultGrid, a pandas "
                "DataFrame, a MetaTask or a (configs, values) pair"
            )
    return ready, deferred


def load_deferred(
    deferred: Sequence[Entry],
    metric: str,
    mode: str,
    *,
    space: SearchSpace,
    scope: str,
    metric_map: Mapping[str, Any] | None,
    fidelity: tuple[str, float] | None = None,
) -> list[CompactTask]:
    """Load the sources :func:`split_sources` deferred, aligned with the search space.

    Each task's load report is logged (INFO).

    Parameters
    ----------
    deferred : sequence of (str or None, object)
        The deferred sources with their names.
    metric, mode : str
        The target's metric and direction.
    space : SearchSpace
        The search's space; configs outside it are dropped.
    scope, metric_map, fidelity
        As in :func:`~rmbo_tune.meta_tasks.load_meta_tasks`.

    Returns
    -------
    list of CompactTask
        The loaded tasks; none if nothing was deferred.
    """
    if not deferred:
        return []
    named = any(name is not None for name, _ in deferred)
    sources: Any = (
        {name or f"source_{i}": src for i, (name, src) in enumerate(deferred)}
        if named
        else [src for _, src in deferred]
    )
    tasks = load_meta_tasks(
        sources,
        metric,
        mode,
        space=space,
        scope=scope,
        metric_map=metric_map,
        on_error="skip",
        fidelity=fidelity,
    )
    for task in tasks:
        logger.info("RMBOSearcher meta-task %s", task.report.summary())
    return [CompactTask.from_task(t) for t in tasks]


def engine_tasks(
    tasks: Sequence[CompactTask], space: SearchSpace, mode: str
) -> tuple[list[tuple[Array, Array]], list[str], int]:
    """The meta-tasks as the engine takes them: points in the cube and values to maximize.

    Parameters
    ----------
    tasks : sequence of CompactTask
        The search's meta-tasks.
    space : SearchSpace
        The search's space.
    mode : {"min", "max"}
        The target's direction, for tasks that recorded none.

    Returns
    -------
    meta : list of (X, y)
        One per task with a config in the space (the others are left out, with a warning);
        ``y`` negated for tasks in "min" mode.
    names : list of str
        The names of the tasks in ``meta``.
    dropped : int
        Configs left out because they are not in the space (or their value is not finite).
    """
    meta, names, dropped, unusable = [], [], 0, []
    for task in tasks:
        X, y, n_out = task.encode(space)
        dropped += n_out
        if len(X):
            meta.append((X, (1.0 if (task.mode or mode) == "max" else -1.0) * y))
            names.append(task.name)
        else:
            unusable.append(f"{task.name!r} {_why_unusable(task, space)}")
            logger.warning("RMBOSearcher: meta-task %s; it is ignored", unusable[-1])
    if unusable and not meta:
        raise ValueError(f"no meta-task is usable: {'; '.join(unusable)}")
    return meta, names, dropped


def _why_unusable(task: CompactTask, space: SearchSpace) -> str:
    """Why ``task`` has no row for the engine (its encoding kept none)."""
    if not any(math.isfinite(v) for v in task.values):
        return "has no finite value (every one is NaN or infinite)"
    configs = [space.flatten(unflatten(c)) for c in task.configs()]
    if not any(fixed_slice(space, configs)[1]):
        return "has no trial at the values this search holds constant"
    unrecorded = unrecorded_keys(space, configs)
    for cfg in configs:
        try:
            space.encode(cfg, unrecorded=unrecorded)
        except OutOfSpaceError as exc:
            return f"has no config in the search space (the first: {exc})"
    return "has no finite value at a config in the search space"


class PendingMetaTasks:
    """A searcher's meta-tasks from its construction to the start of the search.

    Parameters
    ----------
    meta_tasks : object
        ``RMBOSearcher``'s ``meta_tasks`` argument (see :func:`split_sources`).
    scope : {"best", "last"}
        ``meta_scope``: a deferred source's trial value, its best or its last.
    metric_map : mapping, optional
        ``meta_metric_map``, as ``metric_map`` in ``load_meta_tasks``.

    Raises
    ------
    ValueError
        A bad ``scope``, or a pair :func:`split_sources` refuses.
    FileNotFoundError
        A local path or glob that names nothing.
    """

    def __init__(
        self, meta_tasks: Any, scope: str = "best", metric_map: Mapping[str, Any] | None = None
    ) -> None:
        if scope not in ("best", "last"):
            raise ValueError(f"meta_scope must be 'best' or 'last', got {scope!r}")
        try:  # checked now, not when the search starts
            candidates("<metric>", metric_map)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"meta_metric_map: {exc}") from None
        self.ready, self.deferred = split_sources(meta_tasks)
        self.scope, self.metric_map = scope, metric_map

    def for_engine(
        self,
        space: SearchSpace,
        metric: str,
        mode: str,
        fidelity: tuple[str, float] | None = None,
    ) -> tuple[list[tuple[Array, Array]], list[str], int]:
        """Load the deferred sources (trials that reached ``fidelity`` only) and encode
        every task, as :func:`engine_tasks` does."""
        try:
            loaded = load_deferred(
                self.deferred,
                metric,
                mode,
                space=space,
                scope=self.scope,
                metric_map=self.metric_map,
                fidelity=fidelity,
            )
        except ValueError as exc:
            if not self.ready:
                raise
            # The in-memory meta-tasks are still usable: search with them.
            logger.warning("RMBOSearcher: %s", exc)
            loaded = []
        return engine_tasks(self.ready + loaded, space, mode)
