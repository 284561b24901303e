"""RMBOSearcher: a Ray Tune ``Searcher`` running the meta-BO engine.

A thin adapter: Tune configs are encoded into the unit cube (:mod:`rmbo_tune.space`),
``mode="min"`` is negated (the engine maximizes), and everything else is the engine's.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from ray.tune.search import Searcher
from ray.tune.search.sample import Domain
from threadpoolctl import ThreadpoolController

from rmbo_tune.engine import MetaBO, MetaBOOptions, SearchSpaceExhausted
from rmbo_tune.engine.methods import METHODS
from rmbo_tune.exceptions import OutOfSpaceError
from rmbo_tune.space import Dimension, SearchSpace, flatten, unflatten

logger = logging.getLogger(__name__)

STATE_VERSION = 1
HISTORY_FILE = "rmbo_history.json"

_F = TypeVar("_F", bound=Callable[..., Any])
_BLAS: ThreadpoolController | None = None


def _one_blas_thread(method: _F) -> _F:
    """Run the engine with BLAS limited to one thread.

    In the Tune driver, BLAS threads compete with the trials' processes for the same cores;
    on two cores that made the overhead benchmark four times slower. The engine's matrices
    are small (hundreds of rows), so one thread loses nothing.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _BLAS
        if _BLAS is None:
            _BLAS = ThreadpoolController()
        with _BLAS.limit(limits=1, user_api="blas"):
            return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _MetaSource:
    """A meta-task kept compactly until the search space is known: its name, configs as
    columns (numpy arrays where numeric) and values in the target's mode."""

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
        self.name, self.mode = name, mode  # mode None: the target's
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

    def configs(self) -> list[dict]:
        """The configs back as flat dicts."""
        out = []
        for i in range(self.n):
            cfg = {}
            for k, col in self.columns.items():
                v = col[i]
                if v is not _MISSING:
                    cfg[k] = v.item() if isinstance(v, np.generic) else v
            out.append(cfg)
        return out


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING = _Missing()


class RMBOSearcher(Searcher):
    """Robust meta-Bayesian optimization (RM-GP-UCB / RM-GP-TS) as a Ray Tune searcher.

    Parameters
    ----------
    space : dict, optional
        A Tune search space; usually left out and taken from ``Tuner(param_space=...)``.
    metric, mode : str, optional
        Objective and direction ("min" or "max"); may come from ``TuneConfig`` instead.
    meta_tasks : optional
        Results of earlier tasks. One source or a list of them, or a dict naming them; a
        source is a Tune experiment directory, a glob (``"~/ray_results/cnn_*"``), a storage
        URI (``"s3://bucket/runs/exp"``), a directory of experiments, a
        ``tune.ResultGrid``/``tune.ExperimentAnalysis``, a DataFrame or CSV file (see
        :func:`rmbo_tune.meta_tasks.load_meta_tasks`), a :class:`~rmbo_tune.meta_tasks.MetaTask`,
        or a ``(configs, values)`` pair with values of the target's metric and mode. Paths are
        read (JSON only, never pickles) when the search starts, with the target's metric and
        mode; configs outside the search space are dropped.
    meta_scope : {"best", "last"}
        A meta-task trial's value: its best reported value, or its last.
    meta_metric_map : dict, optional
        Metrics meta-tasks recorded under another name or in other units, e.g.
        ``{"neg_loss": -1}`` (see :func:`~rmbo_tune.meta_tasks.load_meta_tasks`).
    method : {"rm-gp-ucb", "rm-gp-ts", "gp-ucb", "rgpe", "taf", "random"}
    points_to_evaluate : list of dict, optional
        Configs to run first (missing keys take the middle of their range).
    evaluated_rewards : list of float, optional
        Results of ``points_to_evaluate``: those points are then observed, not run.
    seed : int, optional
        Makes suggestions reproducible (with sequential trials).
    **options
        Engine options (see :class:`rmbo_tune.engine.MetaBOOptions`), e.g. ``kernel="se"``.

    Examples
    --------
    >>> searcher = RMBOSearcher(meta_tasks=[(old_configs, old_scores)], metric="acc", mode="max")
    >>> tuner = tune.Tuner(train, param_space=space,
    ...                    tune_config=tune.TuneConfig(search_alg=searcher, num_samples=30))
    """

    def __init__(
        self,
        space: Mapping[str, Any] | None = None,
        metric: str | None = None,
        mode: str | None = None,
        meta_tasks: Any = None,
        method: str = "rm-gp-ucb",
        points_to_evaluate: Sequence[Mapping[str, Any]] | None = None,
        evaluated_rewards: Sequence[float] | None = None,
        seed: int | None = None,
        meta_scope: str = "best",
        meta_metric_map: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if mode not in (None, "min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if seed is not None and (not isinstance(seed, int | np.integer) or isinstance(seed, bool)):
            raise ValueError(f"seed must be an integer or None, got {seed!r}")
        MetaBOOptions.from_kwargs(options)  # validate early, name unknown options
        super().__init__(metric=metric, mode=mode)
        self._method, self._seed, self._options = method, seed, dict(options)
        self._space: SearchSpace | None = None
        if space:
            self._space = SearchSpace.from_tune(space)
        if meta_scope not in ("best", "last"):
            raise ValueError(f"meta_scope must be 'best' or 'last', got {meta_scope!r}")
        self._meta_sources, self._meta_deferred = _split_meta_tasks(meta_tasks)
        self._meta_load_options = {"scope": meta_scope, "metric_map": meta_metric_map}
        self._task_names: list[str] = []
        self._points = [dict(p) for p in points_to_evaluate or []]
        if evaluated_rewards is not None:
            if len(evaluated_rewards) != len(self._points):
                raise ValueError(
                    f"evaluated_rewards has {len(evaluated_rewards)} values for "
                    f"{len(self._points)} points_to_evaluate"
                )
            self._rewards: list[float] | None = [float(r) for r in evaluated_rewards]
        else:
            self._rewards = None
        self._max_concurrent: int | None = None
        self._engine: MetaBO | None = None
        self._live: dict[str, list[float]] = {}
        self._observed: set[str] = set()
        self._history: list[dict] = []
        self.counts = {
            "observed": 0,
            "errored": 0,
            "non_finite": 0,
            "missing_metric": 0,
            "added": 0,
            "dropped_meta_configs": 0,
        }

    # ----------------------------------------------------------------- Tune protocol
    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        """Called by Tune with ``TuneConfig``'s metric/mode and the ``param_space``."""
        if (
            self._space is not None
            and config
            and any(_has_domain(v) for v in flatten(config).values())
        ):
            return False  # a space given twice: Tune raises a clear error for this
        if self._engine is not None:
            return False
        if config and self._space is None:
            self._space = SearchSpace.from_tune(config)
        if metric:
            self._metric = metric
        if mode:
            if mode not in ("min", "max"):
                raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
            self._mode = mode
        return True

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        """Honour ``TuneConfig(max_concurrent_trials=...)`` here (no ConcurrencyLimiter)."""
        self._max_concurrent = int(max_concurrent) if max_concurrent else None
        return True

    @_one_blas_thread
    def suggest(self, trial_id: str) -> dict | str | None:
        """The next config, None to wait (concurrency limit), or FINISHED (space exhausted)."""
        engine = self._ensure_engine()
        if self._max_concurrent and len(self._live) >= self._max_concurrent:
            return None
        if self._points:
            config = self._points.pop(0)
            x = self._encode_point(config)
            engine.add_pending(x)
            record: dict[str, Any] = {"branch": "points_to_evaluate"}
        else:
            try:
                x = engine.ask()
            except SearchSpaceExhausted:
                logger.info("RMBOSearcher: every configuration has been tried")
                return Searcher.FINISHED
            record = dict(engine.history[-1])
        assert self._space is not None
        config = self._space.decode(x)
        self._live[trial_id] = x.tolist()
        record.update(trial_id=trial_id, config=_jsonable(config))
        self._history.append(self._named(record))
        return config

    @_one_blas_thread
    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        """Tell the engine the trial's final metric (or its failure); never twice."""
        x = self._live.pop(trial_id, None)
        if x is None or trial_id in self._observed or self._engine is None:
            return
        self._observed.add(trial_id)
        self._engine.tell(x, self._objective(result, error))

    @_one_blas_thread
    def add_evaluated_point(
        self,
        parameters: dict,
        value: float,
        error: bool = False,
        pruned: bool = False,
        intermediate_values: list[float] | None = None,
    ) -> None:
        """Observe a config evaluated elsewhere (``add_evaluated_trials`` calls this)."""
        engine = self._ensure_engine()
        assert self._space is not None
        try:
            x = self._space.encode(parameters)
        except OutOfSpaceError as exc:
            logger.warning("RMBOSearcher: ignoring an evaluated point outside the space: %s", exc)
            return
        y = self._objective(None if error else {self._metric: value}, error)
        if y is not None:
            engine.tell(x, y)
            self.counts["added"] += 1

    # ----------------------------------------------------------------- state
    def save(self, checkpoint_path: str) -> None:
        """Write the searcher's state as JSON (no pickle), and the diagnostics history
        as ``rmbo_history.json`` beside it."""
        engine = None
        if self._engine is not None:
            engine = self._engine.state_dict()
            # The engine's per-ask log repeats what self._history holds (per trial, with
            # names); leaving it out halves the checkpoint that Tune writes periodically.
            engine["history"] = []
        state = {
            "version": STATE_VERSION,
            "metric": self._metric,
            "mode": self._mode,
            "space": None if self._space is None else _space_to_json(self._space),
            "engine": engine,
            "live": self._live,
            "observed": sorted(self._observed),
            "points": [_jsonable(p) for p in self._points],
            "rewards": self._rewards,
            "history": self._history,
            "counts": self.counts,
            "max_concurrent": self._max_concurrent,
            "task_names": self._task_names,
        }
        # json.dumps, not json.dump: only the one-shot encoder runs in C (several times
        # faster on a long history, and Tune saves the searcher periodically).
        with open(checkpoint_path, "w") as fh:
            fh.write(json.dumps(state))
        history_path = os.path.join(os.path.dirname(checkpoint_path) or ".", HISTORY_FILE)
        tmp = history_path + ".tmp"
        header = json.dumps(
            {
                "metric": self._metric,
                "mode": self._mode,
                "meta_tasks": self._meta_names(),
                "counts": self.counts,
            }
        )
        with open(tmp, "w") as fh:
            # One suggestion per line: readable, and each line encoded in C.
            fh.write(header[:-1] + ', "suggestions": [\n')
            fh.write(",\n".join(json.dumps(r) for r in self._history))
            fh.write("\n]}\n")
        os.replace(tmp, history_path)

    @_one_blas_thread
    def restore(self, checkpoint_path: str) -> None:
        """Load state written by :meth:`save`."""
        with open(checkpoint_path) as fh:
            state = json.load(fh)
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"{checkpoint_path}: unsupported RMBOSearcher state version "
                f"{state.get('version')!r}"
            )
        self._metric, self._mode = state["metric"], state["mode"]
        if state["space"] is not None:
            restored = _space_from_json(state["space"])
            self._space = restored if self._space is None else self._space
        self._live = {k: list(v) for k, v in state["live"].items()}
        self._observed = set(state["observed"])
        self._points = state["points"]
        self._rewards = state["rewards"]
        self._history = state["history"]
        self.counts.update(state["counts"])
        self._max_concurrent = self._max_concurrent or state["max_concurrent"]
        self._task_names = list(state["task_names"])
        if state["engine"] is not None:
            assert self._space is not None
            self._engine = MetaBO.from_state_dict(state["engine"], project=self._space.project)

    def __getstate__(self) -> dict:
        # tuner.pkl holds the constructed searcher: keep it small (no engine, no GP caches);
        # the engine's state travels in the JSON checkpoint written by save().
        state = self.__dict__.copy()
        state["_engine"] = None
        return state

    # ----------------------------------------------------------------- diagnostics
    @property
    def history(self) -> list[dict]:
        """One record per suggestion: trial id, config, nu, meta-weights by task name,
        gaps by task name, branch (which part of the acquisition chose the point)."""
        return self._history

    @property
    def engine(self) -> MetaBO | None:
        """The underlying engine (None before the first suggestion)."""
        return self._engine

    # ----------------------------------------------------------------- internals
    def _ensure_engine(self) -> MetaBO:
        if self._engine is not None:
            return self._engine
        if self._metric is None:
            raise ValueError(
                "RMBOSearcher needs a metric: pass metric= to RMBOSearcher or to "
                "tune.TuneConfig(metric=...)"
            )
        if self._mode is None:
            raise ValueError(
                "RMBOSearcher needs a mode: pass mode='min' or 'max' to RMBOSearcher or to "
                "tune.TuneConfig(mode=...)"
            )
        if self._space is None or self._space.dim == 0:
            raise ValueError(
                "RMBOSearcher has no search space: pass param_space to tune.Tuner (or config "
                "to tune.run), or space= to RMBOSearcher, with at least one tune domain"
            )
        space = self._space
        meta, names = [], []
        for src in self._meta_sources + self._load_deferred():
            X, y = self._encode_meta(src)
            if len(X):
                meta.append((X, _direction(src.mode or self._mode) * y))
                names.append(src.name)
            else:
                logger.warning(
                    "RMBOSearcher: meta-task %r has no config in the search space; it is ignored",
                    src.name,
                )
        self._task_names = names
        self._engine = MetaBO(
            space.dim, meta, self._method, seed=self._seed, project=space.project, **self._options
        )
        if self._rewards is not None:
            for point, reward in zip(self._points, self._rewards, strict=True):
                self._engine.tell(self._encode_point(point), self._sign * reward)
            self._points, self._rewards = [], None
        return self._engine

    def _load_deferred(self) -> list[_MetaSource]:
        if not self._meta_deferred:
            return []
        from rmbo_tune.meta_tasks import load_meta_tasks

        named = any(name is not None for name, _ in self._meta_deferred)
        sources: Any = (
            {name or f"source_{i}": src for i, (name, src) in enumerate(self._meta_deferred)}
            if named
            else [src for _, src in self._meta_deferred]
        )
        tasks = load_meta_tasks(
            sources,
            self._metric,
            self._mode,
            space=self._space,
            **self._meta_load_options,
        )
        for task in tasks:
            logger.info("RMBOSearcher meta-task %s", task.report.summary())
        return [_MetaSource(t.name, t.configs, t.values, t.mode) for t in tasks]

    @property
    def _sign(self) -> float:
        return _direction(self._mode)

    def _encode_meta(self, src: _MetaSource) -> tuple[np.ndarray, np.ndarray]:
        assert self._space is not None
        X, y = [], []
        for cfg, v in zip(src.configs(), src.values, strict=True):
            if not math.isfinite(v):
                continue
            try:
                X.append(self._space.encode(cfg))
                y.append(v)
            except OutOfSpaceError:
                self.counts["dropped_meta_configs"] += 1
        Xa = np.array(X, dtype=np.float64).reshape(-1, self._space.dim)
        ya = np.array(y, dtype=np.float64)
        # Canonical row order: the order in which an experiment's trials are listed varies
        # between two runs of the same experiment (Tune's trial ids are random), and the
        # meta-task GP fits, though order-invariant in exact arithmetic, are not in floating
        # point; sorting makes the same earlier experiments give the same search.
        order = np.lexsort(np.column_stack([Xa, ya]).T[::-1])
        return Xa[order], ya[order]

    def _encode_point(self, config: Mapping[str, Any]) -> np.ndarray:
        assert self._space is not None
        space = self._space
        filled = flatten(space.decode(np.full(space.dim, 0.5)))
        filled.update(flatten(config))
        try:
            return space.project(space.encode(unflatten(filled)))[0]
        except OutOfSpaceError as exc:
            raise ValueError(f"points_to_evaluate: {exc}") from None

    def _objective(self, result: dict | None, error: bool) -> float | None:
        if error or result is None:
            self.counts["errored"] += 1
            return None
        value = flatten(result).get(tuple(self._metric.split("/")), result.get(self._metric))
        if value is None:
            self.counts["missing_metric"] += 1
            return None
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.counts["missing_metric"] += 1
            return None
        if not math.isfinite(v):
            self.counts["non_finite"] += 1
            return None
        self.counts["observed"] += 1
        return self._sign * v

    def _meta_names(self) -> list[str]:
        return self._task_names

    def _named(self, record: dict) -> dict:
        names = self._meta_names()
        for key in ("weights", "gaps"):
            vals = record.get(key)
            if isinstance(vals, list) and len(vals) == len(names):
                record[key] = dict(zip(names, vals, strict=True))
        return record


def _split_meta_tasks(meta_tasks: Any) -> tuple[list[_MetaSource], list[tuple[str | None, Any]]]:
    """In-memory tasks become compact sources now; paths, URIs, result objects and frames are
    loaded when the search starts (they need the target's metric, mode and space)."""
    if meta_tasks is None:
        return [], []
    if isinstance(meta_tasks, Mapping):
        items = [(str(k), v) for k, v in meta_tasks.items()]
    elif isinstance(meta_tasks, list | tuple) and not _is_pair(meta_tasks):
        items = [(None, t) for t in meta_tasks]
    else:
        items = [(None, meta_tasks)]
    ready: list[_MetaSource] = []
    deferred: list[tuple[str | None, Any]] = []
    for i, (name, task) in enumerate(items):
        if _is_pair(task):
            configs, values = task
            if len(configs) == 0:
                raise ValueError(f"meta-task {name or i!r} is empty")
            ready.append(_MetaSource(name or f"task_{i}", list(configs), list(values)))
        elif hasattr(task, "configs") and hasattr(task, "values") and hasattr(task, "mode"):
            ready.append(_MetaSource(name or task.name, task.configs, task.values, task.mode))
        else:
            if isinstance(task, str | os.PathLike):
                _check_path(os.fspath(task))
            deferred.append((name, task))
    return ready, deferred


def _is_pair(obj: Any) -> bool:
    return (
        isinstance(obj, list | tuple)
        and len(obj) == 2
        and isinstance(obj[0], list | tuple)
        and (len(obj[0]) == 0 or isinstance(obj[0][0], Mapping))
    )


def _check_path(path: str) -> None:
    if "://" in path:
        return  # storage URIs are checked when loaded
    import glob

    expanded = os.path.expanduser(path)
    if glob.has_magic(expanded):
        if not glob.glob(expanded):
            raise FileNotFoundError(f"meta_tasks: no path matches the glob {path!r}")
    elif not os.path.exists(expanded):
        raise FileNotFoundError(f"meta_tasks: no such file or directory: {path!r}")


def _direction(mode: str | None) -> float:
    """+1 for "max", -1 for "min": the engine maximizes."""
    return 1.0 if mode == "max" else -1.0


def _has_domain(value: Any) -> bool:
    return isinstance(value, Domain) or (isinstance(value, Mapping) and "grid_search" in value)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return repr(obj)


def _category_to_json(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [_category_to_json(v) for v in value]}
    if isinstance(value, list):
        return [_category_to_json(v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: _category_to_json(v) for k, v in value.items()}}
    return {"__repr__": repr(value)}


def _category_from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_category_from_json(v) for v in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(_category_from_json(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _category_from_json(v) for k, v in value["__dict__"].items()}
        raise ValueError(
            f"the saved search space has a category that JSON cannot hold ({value['__repr__']}); "
            "pass space= to RMBOSearcher when restoring this experiment"
        )
    return value


def _space_to_json(space: SearchSpace) -> dict:
    dims = [
        {
            "path": list(d.path),
            "kind": d.kind,
            "low": d.low,
            "high": d.high,
            "log": d.log,
            "q": d.q,
            "categories": [_category_to_json(c) for c in d.categories],
        }
        for d in space.dimensions
    ]
    fixed = [[list(p), _category_to_json(v)] for p, v in space.fixed_choices.items()]
    return {"dimensions": dims, "fixed": fixed}


def _space_from_json(state: dict) -> SearchSpace:
    dims = [
        Dimension(
            tuple(d["path"]),
            d["kind"],
            low=d["low"],
            high=d["high"],
            log=d["log"],
            q=d["q"],
            categories=tuple(_category_from_json(c) for c in d["categories"]),
        )
        for d in state["dimensions"]
    ]
    space = SearchSpace(dims)
    space.fixed_choices = {tuple(p): _category_from_json(v) for p, v in state["fixed"]}
    return space
