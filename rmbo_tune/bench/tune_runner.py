"""Run a Tune benchmark task: meta-task experiments, then the target search, through Ray Tune.

:func:`run_benchmark` takes a :class:`~rmbo_tune.bench.tune_task.TuneTask` and

1. runs one ordinary Tune experiment per meta-task (as a user's earlier experiments would be;
   GP-UCB by default, as in the paper, or Tune's random search), into ``<out>/meta``
   (:func:`run_meta_experiments`);
2. searches the target task with each method and seed, sequentially (one trial at a time, as
   in the paper), every engine method given the meta-task directories as ``meta_tasks``
   (:func:`run_search`, with the search algorithms of :mod:`rmbo_tune.bench.search_algs`);
3. returns a results document (:mod:`rmbo_tune.bench.report`) with each trial's metric in
   suggestion order, the searcher's time per trial and, for the meta-BO methods, the
   meta-weights at every suggestion.

With ``scheduler="asha"`` every search runs beside Tune's ASHA (``bohb`` beside its own
HyperBand) until the same number of epochs is spent (:func:`asha_search`), and a run's
values are the best full-length result after each full training's worth of epochs.

The experiments of an earlier run of the suite in the same output folder are removed first:
Tune would add the new trials to them.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ray import tune

from rmbo_tune.bench.console import ray_logs_to_file
from rmbo_tune.bench.search_algs import METHODS, make_search_alg
from rmbo_tune.bench.tune_task import TuneTask
from rmbo_tune.engine.methods import METHODS as ENGINE_METHODS
from rmbo_tune.searcher import RMBOSearcher

SOURCES = ("gp-ucb", "random")


def _fit(
    task: TuneTask,
    spec: tuple[Any, str, str, dict[str, Any]],
    method: str,
    *,
    seed: int,
    name: str,
    storage_path: str | Path,
    meta_dirs: Mapping[str, str | Path] | None,
    max_concurrent: int,
    resources: Mapping[str, float] | None,
    options: Mapping[str, Any] | None,
    num_samples: int,
    fixed: Mapping[str, Any] | None = None,
    scheduler: Any = None,
    stopper: tune.Stopper | None = None,
) -> tuple[tune.ResultGrid, Any, float]:
    """Build the method's search algorithm and fit one ``tune.Tuner`` on the target task,
    given its ``task.spec()`` (``fixed`` replaces the task's fixed parameters); returns the
    result grid, the search algorithm (its ``order`` and ``seconds`` per trial) and the
    wall-clock seconds."""
    fn, metric, mode, space = spec
    alg = make_search_alg(
        method,
        metric,
        mode,
        seed=seed,
        meta_tasks=meta_dirs,
        max_concurrent=max_concurrent,
        options=options,
        space=space,
    )
    trainable = tune.with_resources(fn, dict(resources)) if resources else fn
    fixed = task.fixed if fixed is None else fixed
    t0 = time.perf_counter()
    grid = tune.Tuner(
        trainable,
        param_space={**space, **fixed, **task.target},
        tune_config=tune.TuneConfig(
            metric=metric,
            mode=mode,
            search_alg=alg,
            scheduler=scheduler,
            num_samples=num_samples,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(Path(storage_path).resolve()),
            stop=stopper,
            verbose=0,
        ),
    ).fit()
    return grid, alg, time.perf_counter() - t0


def run_search(
    task: TuneTask,
    method: str,
    *,
    seed: int,
    budget: int,
    storage_path: str | Path,
    meta_dirs: Mapping[str, str | Path] | None = None,
    max_concurrent: int = 1,
    resources: Mapping[str, float] | None = None,
    options: Mapping[str, Any] | None = None,
    scheduler: str | None = None,
    stopped_as_final: bool = False,
) -> dict[str, Any]:
    """Search the target task with one method and seed through ``tune.Tuner``.

    Parameters
    ----------
    task : TuneTask
        The task.
    method : str
        One of :data:`~rmbo_tune.bench.search_algs.METHODS`.
    seed : int
        Searcher seed.
    budget : int
        Number of trials (``num_samples``).
    storage_path : str or path-like
        Where the experiment is written (``<storage_path>/<task>-<method>-s<seed>``).
    meta_dirs : mapping, optional
        Meta-task name to experiment directory.
    max_concurrent : int
        Trials at once (1: sequential, as in the paper).
    resources : mapping, optional
        Per-trial resources (``{"cpu": 1, "gpu": 1}``).
    options : mapping, optional
        Extra RMBOSearcher options.
    scheduler : {"asha"}, optional
        Run beside Tune's ``ASHAScheduler`` (``grace_period=1``, ``reduction_factor=3``,
        ``max_t`` the task's epochs) until ``budget`` full trainings' worth of epochs are
        spent (:func:`asha_search`); None runs ``budget`` trials to the end.
    stopped_as_final : bool
        With a scheduler, do not tell RMBOSearcher about it, so that a stopped trial's last
        value counts as final (what Tune's searchers do).

    Returns
    -------
    dict
        A run record for :mod:`rmbo_tune.bench.report`: ``seed``, ``values``, ``seconds``,
        ``weights``, ``nu``, ``wall``.
    """
    if scheduler is not None:
        return asha_search(
            task,
            method,
            seed=seed,
            budget=budget,
            storage_path=storage_path,
            meta_dirs=meta_dirs,
            resources=resources,
            options=options,
            stopped_as_final=stopped_as_final,
        )
    spec = task.spec()
    metric = spec[1]
    grid, alg, wall = _fit(
        task,
        spec,
        method,
        seed=seed,
        name=f"{task.name}-{method}-s{seed}",
        storage_path=storage_path,
        meta_dirs=meta_dirs,
        max_concurrent=max_concurrent,
        resources=resources,
        options=options,
        num_samples=int(budget),
    )
    final = {}
    for result in grid:
        trial_id = result.metrics.get("trial_id") if result.metrics else None
        value = result.metrics.get(metric) if result.metrics else None
        if trial_id is not None:
            ok = result.error is None and isinstance(value, int | float) and math.isfinite(value)
            final[trial_id] = float(value) if ok else math.nan
    order = alg.order
    record: dict[str, Any] = {
        "seed": seed,
        "values": [final.get(t, math.nan) for t in order],
        "seconds": [alg.seconds[t] for t in order],
        "wall": wall,
    }
    inner = getattr(alg, "searcher", None)
    if isinstance(inner, RMBOSearcher):
        by_trial = {h["trial_id"]: h for h in inner.history}
        record["weights"] = [dict(by_trial.get(t, {}).get("weights") or {}) for t in order]
        record["nu"] = [by_trial.get(t, {}).get("nu") for t in order]
    return record


class EpochBudget(tune.Stopper):
    """Stops the whole experiment once its trials have reported ``total`` results in all
    (one result per epoch), so that searchers beside a scheduler get equal training.

    ``log`` keeps ``(trial_id, training_iteration, value of metric)`` of every result in the
    order Tune processed them (what the driver knew when), whatever the concurrency.
    """

    def __init__(self, total: int, metric: str) -> None:
        self.total, self.metric = int(total), metric
        self.log: list[tuple[str, int, Any]] = []

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        it = int(result.get("training_iteration", len(self.log) + 1))
        self.log.append((trial_id, it, result.get(self.metric)))
        return False

    def stop_all(self) -> bool:
        return len(self.log) >= self.total


def best_per_budget(
    log: Sequence[tuple[str, int, Any]], *, max_t: int, budget: int, mode: str
) -> tuple[list[float], dict[str, int]]:
    """From an :class:`EpochBudget` log: the best value of a result at ``max_t`` once ``k``
    full trainings' worth of results were processed, ``k = 1 .. budget`` (NaN before the
    first), and the epochs each trial trained (its highest iteration reported)."""
    better = max if mode == "max" else min
    best, per_unit, epochs = math.nan, [], {}
    for spent, (trial_id, it, value) in enumerate(log, start=1):
        epochs[trial_id] = max(epochs.get(trial_id, 0), it)
        finite = isinstance(value, int | float) and math.isfinite(value)
        if it >= max_t and finite:
            best = float(value) if math.isnan(best) else better(best, float(value))
        while len(per_unit) < min(spent // max_t, budget):
            per_unit.append(best)
    per_unit += [best] * (budget - len(per_unit))
    return per_unit, epochs


def asha_search(
    task: TuneTask,
    method: str,
    *,
    seed: int,
    budget: int,
    storage_path: str | Path,
    meta_dirs: Mapping[str, str | Path] | None = None,
    resources: Mapping[str, float] | None = None,
    options: Mapping[str, Any] | None = None,
    stopped_as_final: bool = False,
) -> dict[str, Any]:
    """Search the target task beside Tune's ASHA, one trial at a time, until ``budget``
    full trainings' worth of epochs are spent.

    The engine methods get the scheduler (``RMBOSearcher(scheduler=...)``: stopped trials
    are not observed, the rungs are online meta-tasks) unless ``stopped_as_final``.
    ``bohb`` runs beside ``HyperBandForBOHB`` instead (same ``max_t`` and reduction factor),
    as its authors intend; synchronous HyperBand pauses trials until their rung is full, so
    it runs as many trials at once as the cluster allows, each checkpointed every epoch.
    The record's ``values[k - 1]`` is the best metric of a trial that trained every epoch,
    once ``k`` full trainings' worth of epochs were spent (NaN before the first); ``trials``
    says how many trials trained, ``epochs`` how long each suggested trial trained (0 for
    one created but never started before the budget ran out).
    """
    from ray.tune.schedulers import ASHAScheduler, HyperBandForBOHB

    spec = task.spec()
    _, metric, mode, _ = spec
    max_t = int(task.fixed.get("epochs", 1))
    fixed = dict(task.fixed)
    scheduler: ASHAScheduler | HyperBandForBOHB
    if method == "bohb":
        scheduler = HyperBandForBOHB(
            time_attr="training_iteration", max_t=max_t, reduction_factor=3
        )
        if "checkpoint_every" in fixed:  # a paused trial resumes from its last epoch
            fixed["checkpoint_every"] = 1
    else:
        scheduler = ASHAScheduler(
            time_attr="training_iteration", max_t=max_t, grace_period=1, reduction_factor=3
        )
    extra = dict(options or {})
    if method in ENGINE_METHODS and not stopped_as_final:
        extra["scheduler"] = scheduler
    stopper = EpochBudget(budget * max_t, metric)
    _, alg, wall = _fit(
        task,
        spec,
        method,
        seed=seed,
        name=f"{task.name}-{method}{'-final' if stopped_as_final else ''}-asha-s{seed}",
        storage_path=storage_path,
        meta_dirs=meta_dirs,
        max_concurrent=budget * max_t if method == "bohb" else 1,
        resources=resources,
        options=extra,
        num_samples=budget * max_t,  # every trial trains at least one epoch
        fixed=fixed,
        scheduler=scheduler,
        stopper=stopper,
    )
    per_unit, trained = best_per_budget(stopper.log, max_t=max_t, budget=budget, mode=mode)
    return {
        "seed": seed,
        "values": per_unit,
        "seconds": [alg.seconds[t] for t in alg.order],
        "wall": wall,
        "trials": sum(trained.get(t, 0) > 0 for t in alg.order),  # trained at least 1 epoch
        "epochs": [trained.get(t, 0) for t in alg.order],
    }


def run_meta_experiments(
    task: TuneTask,
    *,
    storage_path: str | Path,
    num_samples: int,
    source: str = "gp-ucb",
    seed: int = 0,
    resources: Mapping[str, float] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Path | str]:
    """Run one Tune experiment per meta-task; return their directories by task name.

    Parameters
    ----------
    task : TuneTask
        The task whose ``meta_tasks`` to run.
    storage_path : str or path-like
        Root directory; experiments are ``<storage_path>/<task>-meta-<name>``.
    num_samples : int
        Trials per meta-task (paper: 50).
    source : {"gp-ucb", "random"}
        How each earlier experiment searched: our GP-UCB (the paper's independent BO runs) or
        Tune's random search.
    seed : int
        Seed (meta-task ``i`` uses ``seed + i``).
    resources : mapping, optional
        Per-trial resources.
    progress : callable, optional
        Called with a line of text after each experiment.

    Returns
    -------
    dict
        Meta-task name to experiment directory.
    """
    from trainables.experiments import run_meta_tasks

    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    _, metric, mode, space = task.spec()

    def gp_ucb(i: int) -> RMBOSearcher:
        return RMBOSearcher(metric=metric, mode=mode, method="gp-ucb", seed=seed + i)

    def report(name: str, _path: Path | str, seconds: float) -> None:
        if progress is not None:
            progress(f"  meta-task {name}: {num_samples} trials ({source}) in {seconds:.1f} s")

    # Tune's random search (run_meta_tasks's default) is seeded seed + i as well.
    return run_meta_tasks(
        task.workload,
        task.meta_tasks,
        storage_path=storage_path,
        num_samples=num_samples,
        prefix=f"{task.name}-meta",
        fixed={**space, **task.fixed},
        resources=resources,
        max_concurrent_trials=1,
        seed=seed,
        verbose=0,
        search_alg=None if source == "random" else gp_ucb,
        on_experiment=report,
        metric=metric,
        mode=mode,
    )


MARKER = ".rmbo-bench"


def _fresh_output(out: Path, *, clear_meta: bool) -> None:
    """Empty the experiment folders of an earlier run of the suite in ``out``.

    Tune adds the trials of a new run to an existing experiment directory, and the meta-task
    loader would then read both runs; so the ``meta`` and ``runs`` folders of an earlier
    benchmark run (recognized by the marker file this function writes) are removed first.
    A non-empty ``out`` without the marker is refused rather than touched.
    """
    marker = out / MARKER
    if out.exists() and not marker.exists():
        if not out.is_dir():
            raise ValueError(f"output path {out} exists and is not a directory")
        if any(p.name in ("meta", "runs") for p in out.iterdir()):
            raise ValueError(
                f"{out} holds 'meta' or 'runs' folders that this suite did not write; "
                "choose another output directory"
            )
    for sub in ("meta", "runs") if clear_meta else ("runs",):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    out.mkdir(parents=True, exist_ok=True)
    marker.write_text("written by rmbo_tune.bench.tune_runner; meta/ and runs/ are rewritten\n")


def run_benchmark(
    task: TuneTask,
    *,
    methods: Sequence[str],
    seeds: Sequence[int],
    budget: int,
    out_dir: str | Path,
    meta_samples: int = 50,
    source: str = "gp-ucb",
    meta_dirs: Mapping[str, str | Path] | None = None,
    resources: Mapping[str, float] | None = None,
    options: Mapping[str, Any] | None = None,
    scheduler: str | None = None,
    progress: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Meta-task experiments, then every method and seed on the target; a results document.

    Parameters
    ----------
    task : TuneTask
        The task.
    methods : sequence of str
        Methods from :data:`~rmbo_tune.bench.search_algs.METHODS`.
    seeds : sequence of int
        One run per method and seed.
    budget : int
        Trials per run.
    out_dir : str or path-like
        Experiments go to ``<out_dir>/meta`` and ``<out_dir>/runs``; those of an earlier run
        of the suite there are removed first (Tune would otherwise add to them).
    meta_samples : int
        Trials per meta-task experiment.
    source : {"gp-ucb", "random"}
        How the meta-task experiments search.
    meta_dirs : mapping, optional
        Existing meta-task experiments (name to directory) instead of running them.
    resources : mapping, optional
        Per-trial resources.
    options : mapping, optional
        Extra RMBOSearcher options.
    scheduler : {"asha"}, optional
        Run every search beside ASHA for ``budget`` full trainings' worth of epochs
        (:func:`asha_search`; ``bohb`` beside its own HyperBand); the runs are named
        ``METHOD+asha`` (``bohb``: ``bohb``). Each engine method but
        ``random`` also runs as ``METHOD+asha-final`` (RMBOSearcher not told about the
        scheduler) and as ``METHOD`` (no scheduler, ``budget`` trials trained to the end).
    progress : callable, optional
        Receives progress lines (default: print).

    Returns
    -------
    dict
        A results document for :func:`rmbo_tune.bench.report.write_outputs`.
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; expected some of {METHODS}")
    if int(budget) < 1:
        raise ValueError(f"budget must be >= 1, got {budget!r}")
    if scheduler not in (None, "asha"):
        raise ValueError(f"scheduler must be None or 'asha', got {scheduler!r}")
    say = progress or (lambda _line: None)
    _, metric, mode, _ = task.spec()
    out = Path(out_dir).resolve()
    _fresh_output(out, clear_meta=meta_dirs is None)
    t_start = time.perf_counter()
    if meta_dirs is None:
        say(f"[{task.name}] {len(task.meta_tasks)} meta-task experiments -> {out / 'meta'}")
        dirs = run_meta_experiments(
            task,
            storage_path=out / "meta",
            num_samples=meta_samples,
            source=source,
            seed=10_000,
            resources=resources,
            progress=say,
        )
    else:
        dirs = {k: Path(v) for k, v in meta_dirs.items()}
    # (name, method, scheduler, stopped values as final)
    variants: list[tuple[str, str, str | None, bool]] = [(m, m, None, False) for m in methods]
    if scheduler is not None:
        learners = [m for m in methods if m in ENGINE_METHODS and m != "random"]
        variants = (
            [(m if m == "bohb" else f"{m}+{scheduler}", m, scheduler, False) for m in methods]
            + [(f"{m}+{scheduler}-final", m, scheduler, True) for m in learners]
            + [(m, m, None, False) for m in learners]  # every trial trained to the end
        )
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in variants}
    for seed in seeds:
        for name, method, sched, final in variants:
            rec = run_search(
                task,
                method,
                seed=seed,
                budget=budget,
                storage_path=out / "runs",
                meta_dirs=dirs,
                resources=resources,
                options=options,
                scheduler=sched,
                stopped_as_final=final,
            )
            runs[name].append(rec)
            vals = [v for v in rec["values"] if math.isfinite(v)]
            best = (max if mode == "max" else min)(vals) if vals else math.nan
            done = f"{rec.get('trials', len(rec['values']))} trials"
            say(
                f"[{task.name}] {name:>11} seed {seed}: best {metric} {best:.4f} after "
                f"{done} ({rec['wall']:.1f} s)"
            )
    extra: dict[str, Any] = {}
    if scheduler is not None:
        epochs = int(task.fixed.get("epochs", 1))
        extra["x_label"] = f"full trainings ({epochs} epochs each) beside ASHA"
    return {
        **extra,
        "task": task.name,
        "metric": metric,
        "mode": mode,
        "optimum": task.optimum,
        "budget": int(budget),
        "settings": {
            "workload": task.workload,
            "target": task.target,
            "fixed": task.fixed,
            "meta_tasks": task.meta_tasks,
            "meta_samples": meta_samples,
            "source": source,
            "seeds": list(seeds),
            "methods": list(methods),
            "options": dict(options or {}),
            "scheduler": scheduler,
            "wall_seconds": time.perf_counter() - t_start,
        },
        "runs": runs,
    }


def run_benchmark_quietly(
    task: TuneTask, *, num_cpus: int | None, log_path: str | Path, **kwargs: Any
) -> dict[str, Any]:
    """:func:`run_benchmark` with Ray started here (``num_cpus``) unless it runs already, and
    Ray's log lines, warnings and raylet output sent to ``log_path`` instead of the terminal."""
    import ray

    with ray_logs_to_file(log_path):
        if not ray.is_initialized():
            ray.init(
                address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False
            )
        return run_benchmark(task, **kwargs)
