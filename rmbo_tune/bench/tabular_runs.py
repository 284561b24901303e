"""Leave-one-task-out runs of the tabular benchmark on the engine.

Every target task is searched by every method and seed on its finite grid, the other tasks
being its meta-tasks (all their rows, or a seeded subsample): :func:`run` returns the results
document of the whole benchmark, :func:`make_engines` builds one engine per method with the
meta-task GPs fitted once, :func:`search` runs one engine for a budget of evaluations of the
target's table. The protocol and the results are described in :mod:`rmbo_tune.bench.tabular`
(the command line); the tasks come from :mod:`rmbo_tune.bench.tabular_data`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from multiprocessing import get_context
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import ThreadpoolController

from rmbo_tune.bench import report
from rmbo_tune.bench.tabular_data import Array, GridInterpolation, TabularBenchmark, TabularTask
from rmbo_tune.engine import METHODS, MetaBO
from rmbo_tune.engine.methods import META_METHODS

META_SEARCHES = ("random", "gp-ucb", "tpe")
UNRECORDED_LEVELS = ("middle", "lowest", "highest")


def _meta_tasks(
    bench: TabularBenchmark,
    target: TabularTask,
    n_samples: int | None,
    rng: np.random.Generator,
    n_tasks: int | None = None,
    searched: Mapping[str, Array] | None = None,
    unrecorded: Unrecorded | None = None,
    noise: tuple[float, np.random.Generator] | None = None,
    fixed: Fixed | None = None,
) -> tuple[list[str], list[tuple[Array, Array]]]:
    """Names and ``(X, y)`` of the target's meta-tasks, ``y`` maximized: every other task,
    or ``n_tasks`` of them drawn at random; each task's rows drawn at random, or
    ``searched[name]`` (the rows its own search evaluated, :func:`_search_rows`). With
    ``unrecorded``, the rows are drawn among those at its level, and its features are NaN
    (or, with its ``known``, the level itself). With ``noise = (fraction, rng)``, each value
    has Gaussian noise of standard deviation ``fraction`` times its task's range added, drawn
    from ``rng`` (:func:`_noisy`). With ``fixed``, the rows as :meth:`Fixed.meta` leaves
    them; a task with no row left is not a meta-task."""
    sign = 1.0 if bench.mode == "max" else -1.0
    others = [task for task in bench.tasks if task.name != target.name]
    if n_tasks is not None and n_tasks < len(others):
        others = [others[i] for i in np.sort(rng.choice(len(others), n_tasks, replace=False))]
    names, tasks = [], []
    for task in others:
        rows = np.arange(len(task.X))
        if unrecorded is not None:
            rows = unrecorded.rows(task.X)
        if searched is not None:
            rows = np.sort(searched[task.name])
        elif n_samples is not None and n_samples < len(rows):
            rows = np.sort(rng.choice(rows, size=n_samples, replace=False))
        X = task.X[rows]
        if unrecorded is not None and not unrecorded.known:
            X = X.copy()
            X[:, unrecorded.features] = np.nan
        y = task.values[rows]
        if noise is not None:
            y = _noisy(task, noise[0], noise[1])[rows]
        if fixed is not None:
            X, y = fixed.meta(X, y)
            if len(y) == 0:
                continue
        names.append(task.name)
        tasks.append((X, sign * y))
    return names, tasks


def _noisy(task: TabularTask, fraction: float, rng: np.random.Generator) -> Array:
    """Every config's value of ``task`` with Gaussian noise of standard deviation ``fraction``
    times the task's range (best minus worst) added: one evaluation of each config, as a
    training run with another seed or split returns it."""
    spread = float(np.ptp(task.values))
    return task.values + rng.normal(0.0, fraction * spread, size=len(task.values))


@dataclasses.dataclass(frozen=True)
class Unrecorded:
    """A column the earlier experiments did not search: they ran it at one ``level`` (its
    ``features``' values), and the engine sees those features as NaN, or with ``known``
    the level itself (a user who knows what the earlier runs used)."""

    column: str
    features: list[int]
    level: tuple[float, ...]
    known: bool = False

    @classmethod
    def of(
        cls, bench: TabularBenchmark, column: str, *, known: bool = False, at: str = "middle"
    ) -> Unrecorded:
        """``column`` of ``bench`` at the middle (``at="middle"``), lowest or highest of its
        distinct values over every task (for a categorical column, of its one-hot rows in
        sorted order)."""
        features, level = _column_level(bench, column, at, "unrecorded")
        return cls(column, features, level, known)

    def rows(self, X: Array) -> NDArray[np.intp]:
        """The rows of ``X`` at the level."""
        return _at_level(X, self.features, self.level)


def _column_level(
    bench: TabularBenchmark, column: str, at: str, role: str
) -> tuple[list[int], tuple[float, ...]]:
    """The feature indices of ``column`` and its level at the middle, lowest or highest of
    its distinct values over every task (``role`` names the option in errors)."""
    if at not in UNRECORDED_LEVELS:
        raise ValueError(f"{role} level must be one of {UNRECORDED_LEVELS}, got {at!r}")
    enc = bench.encoding
    if column not in enc.columns:
        raise ValueError(f"{role}: {column!r} is not one of the columns {enc.columns}")
    features = [i for i, f in enumerate(enc.features) if f == column or f.startswith(column + "=")]
    if not features:
        raise ValueError(f"{role}: {column!r} takes one value; there is nothing to leave out")
    if len(features) == len(enc.features):
        raise ValueError(f"{role}: {column!r} is the only column searched")
    levels = np.unique(np.vstack([t.X[:, features] for t in bench.tasks]), axis=0)
    index = {"middle": len(levels) // 2, "lowest": 0, "highest": len(levels) - 1}[at]
    return features, tuple(float(v) for v in levels[index])


def _at_level(X: Array, features: Sequence[int], level: Sequence[float]) -> NDArray[np.intp]:
    """The rows of ``X`` whose ``features`` are at ``level``."""
    return np.flatnonzero(np.all(np.abs(X[:, list(features)] - level) < 1e-9, axis=1))


@dataclasses.dataclass(frozen=True)
class Fixed:
    """A column the earlier experiments searched and the new search fixes at one ``level``
    (its ``features``' values): the target is its configs at the level, the column left
    out; each meta-task keeps its rows at every level with the column left out (every trial
    counted whatever its value), or with ``slice`` only its rows at the level, as
    ``RMBOSearcher`` reads an experiment that searched a key its space holds constant
    (:func:`~rmbo_tune.meta_tasks._compact.fixed_slice`)."""

    column: str
    features: list[int]
    level: tuple[float, ...]
    slice: bool = False

    @classmethod
    def of(
        cls, bench: TabularBenchmark, column: str, *, at: str = "middle", slice: bool = False
    ) -> Fixed:
        """``column`` of ``bench`` fixed at the middle, lowest or highest of its levels
        (as :meth:`Unrecorded.of`)."""
        features, level = _column_level(bench, column, at, "fixed")
        return cls(column, features, level, slice)

    def target(self, task: TabularTask) -> TabularTask:
        """``task``'s configs at the level, the column's features left out."""
        rows = _at_level(task.X, self.features, self.level)
        return dataclasses.replace(
            task,
            configs=[task.configs[i] for i in rows],
            X=np.delete(task.X[rows], self.features, axis=1),
            values=task.values[rows],
        )

    def check_budget(self, bench: TabularBenchmark, targets: Sequence[str], budget: int) -> None:
        """Raise ValueError if a target has fewer than ``budget`` configs at the level."""
        for name in targets:
            size = len(self.target(bench.task(name)).X)
            if budget > size:
                raise ValueError(
                    f"budget {budget} exceeds the {size} configs of target {name!r} at the "
                    f"fixed level of {self.column!r}; lower --budget"
                )

    def meta(self, X: Array, y: Array) -> tuple[Array, Array]:
        """A meta-task's rows with the column left out (with ``slice``, those at the level)."""
        if self.slice:
            rows = _at_level(X, self.features, self.level)
            X, y = X[rows], y[rows]
        return np.delete(X, self.features, axis=1), y


def _search_rows(job: tuple) -> list[int]:
    """The rows of task ``k`` that a cold GP-UCB search of ``n`` evaluations visits: an
    earlier experiment as a user who searched that task with a model-based searcher has it,
    its rows clustered where the task is good (one job of :func:`run`'s meta-task searches)."""
    bench, k, s, n, seed = job
    task = bench.tasks[k]
    engine_seed = int(np.random.default_rng([seed, k, s, 1]).integers(2**31))
    with ThreadpoolController().limit(limits=1, user_api="blas"):
        opt = MetaBO(task.X.shape[1], (), "gp-ucb", candidates=task.X, seed=engine_seed)
        return search(opt, task, (), mode=bench.mode, budget=min(n, len(task.X)))["configs"]


def _mirror(bench: TabularBenchmark) -> TabularBenchmark:
    """``bench`` with every task's values negated: each task's mirror image, its best
    configs the original's worst (misleading meta-tasks, option ``mirror`` of :func:`run`)."""
    return dataclasses.replace(
        bench, tasks=[dataclasses.replace(t, values=-t.values) for t in bench.tasks]
    )


def _tpe_rows(job: tuple) -> list[int]:
    """The rows of task ``k`` that a TPE search of ``n`` evaluations visits (Optuna's
    ``TPESampler``, its defaults: 10 random trials, then the model): each proposal in the
    unit cube is snapped to the nearest config not yet evaluated, whose value TPE is told,
    as a user's TPE search of a continuous space over these configs would leave them."""
    import optuna

    bench, k, s, n, seed = job
    task = bench.tasks[k]
    sign = 1.0 if bench.mode == "max" else -1.0
    tpe_seed = int(np.random.default_rng([seed, k, s, 2]).integers(2**31))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=tpe_seed)
    )
    free = np.ones(len(task.X), dtype=bool)
    rows = []
    for _ in range(min(n, len(task.X))):
        trial = study.ask()
        x = np.array([trial.suggest_float(f"x{j}", 0.0, 1.0) for j in range(task.X.shape[1])])
        i = task.nearest(x, free)
        free[i] = False
        rows.append(i)
        study.tell(trial, sign * float(task.values[i]))
    return rows


def make_engines(
    methods: Sequence[str],
    target: TabularTask,
    meta_tasks: Sequence[tuple[Array, Array]],
    *,
    seed: int,
    options: Mapping[str, Any] | None = None,
    project: Callable[[Array], Array] | None = None,
) -> dict[str, tuple[MetaBO, float]]:
    """One engine per method on the target's grid (or its whole cube), with meta-task GPs
    fitted once.

    The first meta method's engine fits the meta-task GPs; the other meta methods are rebuilt
    from its state dict with the method swapped, so every meta method sees the same
    meta-models and engine random state (and the fit, which dominates setup, runs once).

    Parameters
    ----------
    methods : sequence of str
        Engine methods.
    target : TabularTask
        The grid searched: its configs are every engine's candidates, unless ``project``.
    meta_tasks : sequence of (X, y)
        Encoded configs and values (higher is better) of each meta-task.
    seed : int
        Engine seed.
    options : mapping, optional
        Engine options for every method.
    project : callable, optional
        Search the continuous cube instead, with this projection of candidates
        (:meth:`~rmbo_tune.bench.tabular_data.Encoding.project`).

    Returns
    -------
    dict
        Method to ``(engine, setup seconds)``; the meta methods all report the shared fit's.
    """
    dim, opts = target.X.shape[1], dict(options or {})
    out: dict[str, tuple[MetaBO, float]] = {}
    template: tuple[dict[str, Any], float] | None = None
    for method in methods:
        t0 = time.perf_counter()
        if method in META_METHODS and template is not None:
            opt = MetaBO.from_state_dict({**template[0], "method": method}, project=project)
            out[method] = (opt, template[1] + time.perf_counter() - t0)
            continue
        candidates = None if project else target.X
        opt = MetaBO(
            dim, meta_tasks, method, candidates=candidates, project=project, seed=seed, **opts
        )
        out[method] = (opt, time.perf_counter() - t0)
        if method in META_METHODS:
            template = (opt.state_dict(), out[method][1])
    return out


def search(
    opt: MetaBO,
    target: TabularTask,
    meta_names: Sequence[str],
    *,
    mode: str,
    budget: int,
    batch: int = 1,
    value_at: Callable[[Array], float] | None = None,
    told_at: Callable[[Array, int], float] | None = None,
    initial: Sequence[int] = (),
) -> dict[str, Any]:
    """Run a fresh engine for ``budget`` evaluations of the target's table.

    With ``batch`` > 1 the search runs as Tune runs concurrent trials: ``batch`` suggestions
    are in flight (pending in the engine), and each time the oldest one's result is told a
    new one is asked, until ``budget`` have been told.

    Parameters
    ----------
    opt : MetaBO
        An engine whose candidates are ``target.X`` and nothing observed yet.
    target : TabularTask
        The grid searched; the value observed is its table value.
    meta_names : sequence of str
        Name of each of the engine's meta-tasks (keys of the recorded weights).
    mode : {"min", "max"}
        Direction of the metric (the engine maximizes ``value`` or ``-value``).
    budget : int
        Evaluations; at most the target's number of configs.
    batch : int
        Evaluations in flight at once.
    value_at : callable, optional
        The value of a point anywhere in the cube, for an engine that searches the whole
        cube (:func:`make_engines` with ``project``; for example
        :class:`~rmbo_tune.bench.tabular_data.GridInterpolation`), told at the point itself.
        ``configs`` then records the nearest config of each point, which may repeat.
    told_at : callable, optional
        The value told to the engine, given the point and the index of its nearest config,
        when it is not the value recorded (a noisy evaluation of it); ``values`` stay the
        table's, so that regret is measured on them.
    initial : sequence of int
        Configs (indices into ``target.configs``) evaluated before the search and told to
        the engine first, without being asked for; they count in ``budget``.

    Returns
    -------
    dict
        ``values`` (table units), ``seconds`` (each evaluation's ask and tell), ``optimum``,
        ``weights`` (empty for methods without meta-weights), ``nu`` and ``configs`` (index
        of each evaluated config in ``target.configs``); evaluations in the order asked,
        which is the order told. With ``told_at``, also ``observed``, the values told. For
        RM-GP-UCB, also ``meta_term``, the form ``meta_term="auto"`` resolved to.

    Raises
    ------
    RuntimeError
        If the engine suggests a config twice on the grid (it excludes observed points).
    """
    sign = 1.0 if mode == "max" else -1.0
    asked: list[int] = []
    values, seconds, observed = [], [], []
    in_flight: collections.deque[tuple[Array, int, float]] = collections.deque()

    def observe(x: Array, i: int, ask_s: float) -> None:
        """Evaluate ``x`` (nearest config ``i``), tell the engine, record it."""
        t0 = time.perf_counter()
        value = float(target.values[i]) if value_at is None else value_at(x)
        told = value if told_at is None else float(told_at(x, i))
        opt.tell(x, sign * told)
        seconds.append(ask_s + time.perf_counter() - t0)
        values.append(value)
        observed.append(told)

    for i in initial:
        asked.append(int(i))
        observe(target.X[i], int(i), 0.0)
    while len(values) < budget:
        while len(in_flight) < batch and len(asked) < budget:
            t0 = time.perf_counter()
            x = opt.ask()
            ask_s = time.perf_counter() - t0
            i = target.nearest(x)
            if i in asked and value_at is None:
                raise RuntimeError(
                    f"{opt.method} suggested config {target.configs[i]} of {target.name} twice"
                )
            asked.append(i)
            in_flight.append((x, i, ask_s))
        observe(*in_flight.popleft())
    weights = [
        dict(zip(meta_names, r["weights"], strict=True))
        if isinstance(r.get("weights"), list) and len(r["weights"]) == len(meta_names)
        else {}
        for r in opt.history
    ]
    out = {
        "values": values,
        "seconds": seconds,
        "optimum": target.best(mode),
        "worst": target.best("min" if mode == "max" else "max"),
        "weights": weights if any(weights) else [],
        "nu": [float(r["nu"]) for r in opt.history],
        "configs": asked,
    }
    if told_at is not None:
        out["observed"] = observed
    if opt.method == "rm-gp-ucb":
        out["meta_term"] = opt.meta_term
    return out


def check_run_args(
    bench: TabularBenchmark,
    methods: Sequence[str],
    budget: int,
    n_seeds: int,
    targets: Sequence[str] | None,
    meta_samples: int | None,
    meta_tasks: int | None = None,
) -> list[str]:
    """Check the arguments of :func:`run` before any engine is built.

    Parameters
    ----------
    bench, methods, budget, n_seeds, targets, meta_samples, meta_tasks
        As for :func:`run`.

    Returns
    -------
    list of str
        The target task names (``targets``, or every task).

    Raises
    ------
    ValueError
        Naming the first bad argument: unknown methods or targets, a budget, seed count or
        meta-sample count that is not a positive integer, a meta-task count that is not one
        of ``1 .. len(bench.tasks) - 1``, or a budget above a target's number of distinct
        configs.
    """
    bad = sorted(set(methods) - set(METHODS))
    if bad or not methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {list(methods)}")
    names = [t.name for t in bench.tasks]
    chosen = list(targets) if targets else names
    missing = [t for t in chosen if t not in names]
    if missing:
        raise ValueError(f"unknown targets {missing}; tasks are {names}")
    for name, value in (("budget", budget), ("n_seeds", n_seeds)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if meta_samples is not None and (not isinstance(meta_samples, int) or meta_samples < 1):
        raise ValueError(f"meta_samples must be a positive integer or None, got {meta_samples!r}")
    most = len(names) - 1
    if meta_tasks is not None and (
        not isinstance(meta_tasks, int)
        or isinstance(meta_tasks, bool)
        or not 1 <= meta_tasks <= most
    ):
        raise ValueError(
            f"meta_tasks must be an integer from 1 to {most} (the other tasks) or None, "
            f"got {meta_tasks!r}"
        )
    for name in chosen:
        size = len(bench.task(name).X)
        if budget > size:
            raise ValueError(
                f"budget {budget} exceeds the {size} distinct configs of target {name!r} "
                f"({bench.task(name).path}); lower --budget or leave that target out"
            )
    return chosen


@dataclasses.dataclass(frozen=True)
class _Told:
    """The noisy value told at a point: its nearest config's noisy value on a grid, or the
    noisy table interpolated in the cube."""

    values: Array
    interpolated: GridInterpolation | None

    def __call__(self, x: Array, i: int) -> float:
        return float(self.values[i] if self.interpolated is None else self.interpolated(x))


def _target_runs(job: tuple) -> list[tuple[str, dict[str, Any]]]:
    """Every method's run on one target and seed (one job of :func:`run`)."""
    bench, k, s, methods, budget, meta_samples, meta_tasks, seed, options, batch, cont = job[:11]
    searched = job[11]  # this seed's searched rows per task, or None for random rows
    meta_bench = job[12]  # the tasks the meta-tasks observe (mirror images with ``mirror``)
    unrecorded, noise, fixed, n_initial = job[13], job[14], job[15], job[16]
    target = bench.tasks[k]
    rng = np.random.default_rng([seed, k, s])
    # The noise has streams of its own, so that the rows and engine seeds do not depend on it.
    meta_noise = (noise, np.random.default_rng([seed, k, s, 4])) if noise else None
    meta_names, meta = _meta_tasks(
        meta_bench, target, meta_samples, rng, meta_tasks, searched, unrecorded, meta_noise, fixed
    )
    if fixed is not None:
        target = fixed.target(target)
    engine_seed = int(rng.integers(2**31))
    # A stream of its own, so that the rows and engine seeds do not depend on it.
    initial = np.random.default_rng([seed, k, s, 5]).choice(
        len(target.X), size=n_initial, replace=False
    )
    out = []
    # One BLAS thread, as in the searcher: on two cores, threaded BLAS made the meta-GP fits
    # 2-6x slower.
    with ThreadpoolController().limit(limits=1, user_api="blas"):
        project = bench.encoding.project if cont else None
        value_at = GridInterpolation(target, bench.encoding) if cont else None
        told_at = None
        if noise:
            # One noisy evaluation per config, the same for every method (paired runs);
            # between configs of the cube, the noisy table interpolated.
            values = _noisy(target, noise, np.random.default_rng([seed, k, s, 3]))
            noisy = dataclasses.replace(target, values=values)
            interpolated = GridInterpolation(noisy, bench.encoding) if cont else None
            told_at = _Told(values, interpolated)
        engines = make_engines(
            methods, target, meta, seed=engine_seed, options=options, project=project
        )
        for method, (opt, setup) in engines.items():
            kwargs = {
                "mode": bench.mode,
                "budget": budget,
                "batch": batch,
                "value_at": value_at,
                "told_at": told_at,
                "initial": initial.tolist(),
            }
            rec = search(opt, target, meta_names, **kwargs)
            rec = {"target": target.name, "seed": s, "meta_tasks": meta_names, **rec}
            out.append((method, {**rec, "setup_seconds": setup}))
    return out


def run(
    bench: TabularBenchmark,
    *,
    methods: Sequence[str] = METHODS,
    budget: int = 30,
    n_seeds: int = 5,
    targets: Sequence[str] | None = None,
    meta_samples: int | None = None,
    meta_tasks: int | None = None,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    processes: int = 1,
    batch: int = 1,
    continuous: bool = False,
    meta_search: str = "random",
    mirror: bool = False,
    unrecorded: str | None = None,
    unrecorded_known: bool = False,
    unrecorded_level: str = "middle",
    noise: float = 0.0,
    fixed: str | None = None,
    fixed_level: str = "middle",
    fixed_slice: bool = False,
    initial: int = 0,
) -> dict[str, Any]:
    """Leave-one-task-out benchmark; returns a :mod:`~rmbo_tune.bench.report` document.

    Parameters
    ----------
    bench : TabularBenchmark
        Tasks from :func:`~rmbo_tune.bench.tabular_data.load_tabular`.
    methods : sequence of str
        Engine methods.
    budget : int
        Evaluations per run.
    n_seeds : int
        Runs per target and method (seeds ``0 .. n_seeds - 1``).
    targets : sequence of str, optional
        Target task names (default: every task).
    meta_samples : int, optional
        Rows drawn per meta-task (default: all rows).
    meta_tasks : int, optional
        Meta-tasks per run, drawn at random from the other tasks for each target and seed
        (default: every other task): a user with a few earlier experiments.
    seed : int
        Base seed: the meta-tasks, their subsample and the engine seed of seed ``s`` on
        target ``k`` (position in the sorted task list) derive from ``(seed, k, s)``, the
        same for every method.
    options : mapping, optional
        Engine options for every method.
    progress : callable, optional
        Called with a line of text after each run.
    processes : int
        Worker processes, one (target, seed) at a time each; the document is the same
        whatever their number.
    batch : int
        Evaluations in flight at once in each search (:func:`search`).
    continuous : bool
        Search the whole cube instead of the grid, the values between configs interpolated
        (:class:`~rmbo_tune.bench.tabular_data.GridInterpolation`; every target's configs
        must form a grid).
    meta_search : {"random", "gp-ucb", "tpe"}
        How each meta-task's rows were chosen: ``meta_samples`` at random (the paper's
        protocol), or the ``meta_samples`` (default 50) configs a cold GP-UCB search of that
        task evaluated, as the trials of an earlier model-based Tune search are: clustered
        where the task is good, few where it is bad. A task's search depends on the task and
        the seed only (not on the target), and runs with the engine's GP-UCB defaults;
        "tpe": the configs an Optuna TPE search of the unit cube evaluated, each proposal
        snapped to the nearest config not yet evaluated (:func:`_tpe_rows`).
    mirror : bool
        Every meta-task observes its task's values negated, a mirror image whose best
        configs are its task's worst: earlier experiments that mislead. With
        ``meta_search``, the earlier searches searched the mirror images, so their rows
        crowd where each task is worst.
    unrecorded : str, optional
        A column the earlier experiments did not search (a parameter added since): each
        meta-task's rows are drawn among its configs at one level of it (the middle of its
        distinct values, :class:`Unrecorded`), and the engine gets that column as NaN.
        Not with ``meta_search``.
    unrecorded_known : bool
        With ``unrecorded``, give the engine the level itself instead of NaN (the earlier
        runs' value known).
    unrecorded_level : {"middle", "lowest", "highest"}
        With ``unrecorded``, which of the column's levels the earlier runs used.
    noise : float
        Evaluation noise: every value a method observes, the meta-tasks' and the target's,
        has Gaussian noise of standard deviation ``noise`` times its task's range (best minus
        worst) added, one draw per config and seed, the same for every method; regret is
        measured on the table's values.
    fixed : str, optional
        A column the earlier experiments searched and the new search fixes (a constant in
        its space): the target searches its configs at one level of it (``fixed_level``),
        the column left out, and regret is measured within them; the meta-tasks' rows are
        drawn as usual and the column left out (:class:`Fixed`). Not with ``unrecorded`` or
        ``continuous``.
    fixed_level : {"middle", "lowest", "highest"}
        With ``fixed``, the column's level the new search fixes.
    fixed_slice : bool
        With ``fixed``, keep only the meta-tasks' rows at that level.
    initial : int
        Configs of the target drawn at random (per target and seed, the same for every
        method) and told to each method before its first suggestion (:func:`search`); they
        count in ``budget``.

    Returns
    -------
    dict
        Results document: task ``"tabular"``, ``optimum`` None (each run carries its target's
        optimum), ``settings`` (data, targets, loading summary), ``runs`` by method, each
        record with ``target``, ``seed`` and ``meta_tasks`` (names) added to those of
        :func:`search`,
        and ``setup_seconds`` from :func:`make_engines`.
    """
    chosen = check_run_args(bench, methods, budget, n_seeds, targets, meta_samples, meta_tasks)
    if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
        raise ValueError(f"processes must be a positive integer, got {processes!r}")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if meta_search not in META_SEARCHES:
        raise ValueError(f"meta_search must be one of {META_SEARCHES}, got {meta_search!r}")
    spec = None
    if unrecorded is not None:
        if meta_search != "random":
            raise ValueError(
                "unrecorded draws the meta-tasks' rows at random; not with meta_search"
            )
        spec = Unrecorded.of(bench, unrecorded, known=unrecorded_known, at=unrecorded_level)
    fixed_spec = None
    if fixed is not None:
        if unrecorded is not None or continuous:
            raise ValueError(
                "fixed searches a slice of the grid; not with unrecorded or continuous"
            )
        fixed_spec = Fixed.of(bench, fixed, at=fixed_level, slice=fixed_slice)
        fixed_spec.check_budget(bench, chosen, budget)
    if (
        isinstance(noise, bool)
        or not isinstance(noise, (int, float))
        or not (np.isfinite(noise) and noise >= 0)
    ):
        raise ValueError(f"noise must be a finite fraction >= 0 of a task's range, got {noise!r}")
    if isinstance(initial, bool) or not isinstance(initial, int) or not 0 <= initial < budget:
        raise ValueError(f"initial must be an integer from 0 to budget - 1, got {initial!r}")
    names = [t.name for t in bench.tasks]
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    mirrored = _mirror(bench) if mirror else bench
    if continuous:
        for name in chosen:  # raises early for a target that is not a grid
            GridInterpolation(bench.task(name), bench.encoding)
    rest = (meta_samples, meta_tasks, seed, options, batch, bool(continuous))
    pairs = list(itertools.product(chosen, range(n_seeds)))
    with contextlib.ExitStack() as stack:
        pool = None
        if processes > 1:  # results come back in job order, so the document does not depend on it
            pool = stack.enter_context(get_context("spawn").Pool(min(processes, len(pairs))))
        # Seed -> each task's rows from its own search, shared by every target of that seed.
        searched: dict[int, dict[str, Array]] = {}
        if meta_search != "random":
            n = 50 if meta_samples is None else meta_samples
            keys = list(itertools.product(range(len(names)), range(n_seeds)))
            hjobs = [(mirrored, k, s, n, seed) for k, s in keys]
            fn = _search_rows if meta_search == "gp-ucb" else _tpe_rows
            rows = pool.map(fn, hjobs) if pool else list(map(fn, hjobs))
            for (k, s), r in zip(keys, rows, strict=True):
                searched.setdefault(s, {})[names[k]] = np.asarray(r)
            if progress is not None:
                label = "GP-UCB" if meta_search == "gp-ucb" else "TPE"
                progress(f"meta-tasks: {len(hjobs)} {label} searches of {n} evaluations")
        jobs = [
            (
                bench,
                names.index(name),
                s,
                list(methods),
                budget,
                *rest,
                searched.get(s),
                mirrored,
                spec,
                float(noise),
                fixed_spec,
                initial,
            )
            for name, s in pairs
        ]
        if pool is None:
            done: Iterable[list[tuple[str, dict[str, Any]]]] = map(_target_runs, jobs)
        else:
            done = pool.imap(_target_runs, jobs)
        for records in done:
            for method, rec in records:
                runs[method].append(rec)
                if progress is not None:
                    best = report.best_so_far(rec["values"], bench.mode)[-1]
                    ms = 1000 * float(np.median(rec["seconds"]))
                    progress(
                        f"{rec['target']} seed {rec['seed']} {method}: regret "
                        f"{abs(rec['optimum'] - best):.4g} after {budget}, {ms:.0f} ms/iter"
                    )
    enc = bench.encoding
    return {
        "task": "tabular",
        "metric": bench.metric,
        "mode": bench.mode,
        "optimum": None,
        "budget": budget,
        "settings": {
            "data": str(bench.tasks[0].path.parent),
            "targets": chosen,
            "n_seeds": n_seeds,
            "seed": seed,
            "meta_samples": meta_samples,
            "meta_tasks": meta_tasks,
            "meta_search": meta_search,
            "mirror": bool(mirror),
            "unrecorded": None
            if spec is None
            else {"column": spec.column, "level": list(spec.level), "known": spec.known},
            "fixed": None
            if fixed_spec is None
            else {
                "column": fixed_spec.column,
                "level": list(fixed_spec.level),
                "slice": fixed_spec.slice,
            },
            # None without noise, as results written before the option have it (they pair).
            "noise": float(noise) if noise else None,
            "initial": initial or None,  # None without, as results written before have it
            "batch": batch,
            "continuous": bool(continuous),
            "methods": list(methods),
            "options": dict(options or {}),
            "columns": {
                c: dict(zip(("low", "high", "log"), enc.numeric[c], strict=True))
                if c in enc.numeric
                else {"categories": enc.categories[c]}
                for c in enc.columns
            },
            "features": enc.features,
            "tasks": {
                t.name: {
                    "file": t.path.name,
                    "rows": t.n_rows,
                    "configs": len(t.X),
                    "dropped_nan": t.n_dropped,
                    "merged_duplicates": t.n_merged,
                    "best": t.best(bench.mode),
                }
                for t in bench.tasks
            },
        },
        "runs": runs,
    }
