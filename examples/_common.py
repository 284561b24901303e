"""Shared plumbing of the example scripts in ``examples/`` (a helper module, not a script).

The scripts import it as ``from _common import ...``: Python puts a script's own directory on
``sys.path``, so this works for ``python examples/<script>.py`` from any directory. It holds what
the scripts have in common, so that each keeps only what is particular to its workload (search
space, trainable, meta-tasks, metric, and its docstring with its commands):

* the command-line options they share (:func:`make_parser`, :func:`add_meta_tasks_option`,
  :func:`add_sample_options`, :func:`add_trial_resource_options`, :func:`add_run_options`,
  :func:`add_target_state_option`, :func:`add_set_option`) and their parsing
  (:func:`trial_resources`, :func:`set_entries`);
* the guard that refuses to reuse a run folder (:func:`run_folder`): Tune appends to an
  existing experiment of the same name, and a meta-task run twice would count every trial twice;
* the pipeline "meta-task experiments -> ``RMBOSearcher`` -> ``tune.Tuner(...).fit()`` -> the
  trace and the best result" (:func:`meta_bo`, built from :func:`meta_task_paths`,
  :func:`warm_started_search`, :func:`fit` and :func:`print_report`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ray
from ray import tune

from rmbo_tune import RMBOSearcher
from rmbo_tune.bench.console import ray_logs_to_file
from rmbo_tune.diagnostics import final_metrics, trace_lines
from trainables.experiments import run_meta_tasks

# ---------------------------------------------------------------------------------------------
# Command-line options


def make_parser(
    doc: str,
    prefix: str,
    *,
    storage_help: str = "root of the experiments",
    name_help: str | None = None,
) -> argparse.ArgumentParser:
    """A parser described by the first paragraph of ``doc``, with ``--storage-path`` and
    ``--name`` (the run folder under it, by default ``<prefix>_<time>``)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--storage-path", default="~/ray_results", help=storage_help)
    p.add_argument(
        "--name", default=None, help=name_help or f"run folder (default: {prefix}_<time>)"
    )
    return p


def add_meta_tasks_option(p: argparse.ArgumentParser) -> None:
    """``--meta-tasks``: existing experiments that replace the script's meta-task step."""
    p.add_argument(
        "--meta-tasks",
        nargs="+",
        default=None,
        metavar="PATH",
        help="existing meta-task experiments (dirs, globs or URIs); skips step 1",
    )


def add_sample_options(
    p: argparse.ArgumentParser,
    *,
    meta: int,
    target: int,
    meta_help: str = "random trials per meta-task",
    target_help: str = "trials of the target search",
) -> None:
    """``--meta-samples`` (random trials per meta-task) and ``--num-samples`` (target trials)."""
    p.add_argument("--meta-samples", type=int, default=meta, help=meta_help)
    p.add_argument("--num-samples", type=int, default=target, help=target_help)


def add_trial_resource_options(p: argparse.ArgumentParser) -> None:
    """``--cpus-per-trial`` and ``--gpus-per-trial`` (see :func:`trial_resources`)."""
    p.add_argument("--cpus-per-trial", type=float, default=1.0)
    p.add_argument("--gpus-per-trial", type=float, default=0.0)


def trial_resources(args: argparse.Namespace) -> dict[str, float]:
    """The resources of one trial (``tune.with_resources``), from the options above."""
    resources = {"cpu": args.cpus_per_trial}
    if args.gpus_per_trial > 0:
        resources["gpu"] = args.gpus_per_trial
    return resources


def add_run_options(
    p: argparse.ArgumentParser,
    *,
    seed_help: str = "seeds both searches",
    max_concurrent: bool = True,
    num_cpus: bool = True,
) -> None:
    """``--max-concurrent``, ``--seed``, ``--num-cpus`` (of a local Ray) and ``--verbose``."""
    if max_concurrent:
        p.add_argument("--max-concurrent", type=int, default=None, help="simultaneous trials")
    p.add_argument("--seed", type=int, default=0, help=seed_help)
    if num_cpus:
        p.add_argument("--num-cpus", type=int, default=None, help="CPUs for Ray (default: all)")
    p.add_argument("--verbose", type=int, default=0, help="Tune verbosity (0-3)")


def add_target_state_option(
    p: argparse.ArgumentParser, default: Iterable[float], help: str
) -> None:
    """``--target-state X X_DOT THETA THETA_DOT``: CartPole's initial state of the target."""
    p.add_argument(
        "--target-state",
        type=float,
        nargs=4,
        default=list(default),
        metavar=("X", "X_DOT", "THETA", "THETA_DOT"),
        help=help,
    )


def add_set_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--set KEY=JSON`` (repeatable): extra fixed config entries (see :func:`set_entries`)."""
    p.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help=help)


def set_entries(p: argparse.ArgumentParser, items: Iterable[str]) -> dict[str, Any]:
    """The ``--set KEY=JSON`` items as config entries; a malformed one is a usage error."""
    entries: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            entries[key] = json.loads(value)
        except json.JSONDecodeError:
            sep = ""
        if not key or not sep:
            p.error(f"--set expects KEY=JSON, got {item!r}")
    return entries


# ---------------------------------------------------------------------------------------------
# Run folder and data


def run_folder(storage_path: str, name: str | None, prefix: str) -> str:
    """A fresh folder ``<storage_path>/<name>`` (default name ``<prefix>_<time>``) for this run.

    Stops the script when it exists: Tune appends to an existing experiment of the same name,
    and a meta-task experiment run twice would then count every trial twice.
    """
    name = name or time.strftime(f"{prefix}_%Y-%m-%d_%H-%M-%S")
    path = os.path.join(os.path.abspath(os.path.expanduser(storage_path)), name)
    if os.path.exists(path):
        raise SystemExit(f"error: {path} exists; pass another --name or remove it")
    return path


def data_error(exc: Exception) -> int:
    """Print a missing-dataset error (it names the file) and return the exit code, 2."""
    print(f"error: {exc} (this script: --data-dir DIR)", file=sys.stderr)
    return 2


# ---------------------------------------------------------------------------------------------
# The pipeline


def fit(
    trainable: Any,
    param_space: Mapping[str, Any],
    search_alg: Any,
    *,
    name: str,
    storage_path: str,
    num_samples: int,
    verbose: int,
    max_concurrent: int | None = None,
    max_failures: int = 0,
    metric: str | None = None,
    mode: str | None = None,
) -> tune.ResultGrid:
    """One Tune experiment ``<storage_path>/<name>`` searched by ``search_alg``."""
    if verbose == 0:  # Tune's new console output prints a box per experiment even then
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    return tune.Tuner(
        trainable,
        param_space=dict(param_space),
        tune_config=tune.TuneConfig(
            metric=metric,
            mode=mode,
            search_alg=search_alg,
            num_samples=num_samples,
            max_concurrent_trials=max_concurrent,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=storage_path,
            verbose=verbose,
            failure_config=tune.FailureConfig(max_failures=max_failures) if max_failures else None,
        ),
    ).fit()


def meta_task_paths(
    args: argparse.Namespace,
    root: str,
    *,
    workload: str,
    tasks: Mapping[str, Mapping[str, Any]],
    fixed: Mapping[str, Any],
    resources: Mapping[str, float] | None = None,
    describe: Callable[[str], str] | None = None,
) -> list[str]:
    """Step 1: ``--meta-tasks`` as given, else one random-search experiment per task
    (:func:`trainables.experiments.run_meta_tasks`), each printed as ``meta-task <task>: <dir>``
    (``describe(task)`` is appended to the task's name)."""
    if args.meta_tasks:
        return list(args.meta_tasks)
    dirs = run_meta_tasks(
        workload,
        tasks,
        storage_path=root,
        num_samples=args.meta_samples,
        fixed=fixed,
        resources=resources,
        max_concurrent_trials=args.max_concurrent,
        seed=args.seed,
        verbose=args.verbose,
    )
    for task, path in dirs.items():
        print(f"meta-task {task}{describe(task) if describe else ''}: {path}")
    return [str(path) for path in dirs.values()]


def warm_started_search(
    args: argparse.Namespace,
    root: str,
    *,
    trainable: Any,
    param_space: Mapping[str, Any],
    meta_tasks: Any,
    metric: str,
    mode: str,
    name: str,
    max_failures: int = 0,
    **searcher_options: Any,
) -> tuple[RMBOSearcher, tune.ResultGrid]:
    """Step 2: the target search ``<root>/<name>`` with ``RMBOSearcher`` warm-started from
    ``meta_tasks``; returns the searcher (its ``history`` is complete after ``fit()``) and the
    results.

    The target's trials are scored by their last report (what Tune hands the searcher when a
    trial completes), so the meta-tasks' trials are scored the same way (``meta_scope="last"``).
    """
    searcher = RMBOSearcher(
        metric=metric,
        mode=mode,
        meta_tasks=meta_tasks,
        meta_scope="last",
        seed=args.seed,
        **searcher_options,
    )
    grid = fit(
        trainable,
        param_space,
        searcher,
        name=name,
        storage_path=root,
        num_samples=args.num_samples,
        max_concurrent=args.max_concurrent,
        verbose=args.verbose,
        max_failures=max_failures,
    )
    return searcher, grid


def print_report(
    searcher: RMBOSearcher,
    grid: tune.ResultGrid,
    *,
    heading: str,
    metric: str,
    mode: str,
    show_config: Callable[[dict[str, Any]], str],
    digits: int = 4,
    group: Callable[[str], str] | None = None,
) -> None:
    """Step 3: ``heading``, one trace line per suggestion (value, best so far, meta-weights),
    then ``best <metric>: <value> with <show_config(config)>`` and the target experiment."""
    print(heading)
    values = final_metrics(grid, metric)
    trace = trace_lines(
        searcher.history, values, metric=metric, mode=mode, digits=digits, group=group
    )
    print("\n".join(trace))
    best = grid.get_best_result(metric=metric, mode=mode)
    print(f"best {metric}: {best.metrics[metric]:.{digits}f} with {show_config(best.config)}")
    print(f"target experiment: {grid.experiment_path}")


def meta_bo(
    args: argparse.Namespace,
    root: str,
    *,
    workload: str,
    tasks: Mapping[str, Mapping[str, Any]],
    trainable: Any,
    search_space: Mapping[str, Any],
    fixed: Mapping[str, Any],
    target: Mapping[str, Any],
    target_name: str,
    metric: str,
    mode: str,
    heading: str,
    show_config: Callable[[dict[str, Any]], str],
    resources: Mapping[str, float] | None = None,
    describe_task: Callable[[str], str] | None = None,
    digits: int = 4,
    group: Callable[[str], str] | None = None,
    **searcher_options: Any,
) -> int:
    """The whole example on a local Ray (``--num-cpus``): the meta-task experiments (unless
    ``--meta-tasks`` names them), the warm-started target search over ``search_space`` with
    the ``fixed`` and ``target`` config entries, and the report; returns the exit code, 0.
    Ray's own log lines go to ``<root>/ray.log``, named in the last line printed."""
    if resources:
        trainable = tune.with_resources(trainable, dict(resources))
    with ray_logs_to_file(os.path.join(root, "ray.log"), announce=True):
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False)
        meta_tasks = meta_task_paths(
            args,
            root,
            workload=workload,
            tasks=tasks,
            fixed=fixed,
            resources=resources,
            describe=describe_task,
        )
        searcher, grid = warm_started_search(
            args,
            root,
            trainable=trainable,
            param_space={**search_space, **fixed, **target},
            meta_tasks=meta_tasks,
            metric=metric,
            mode=mode,
            name=target_name,
            **searcher_options,
        )
        print_report(
            searcher,
            grid,
            heading=heading,
            metric=metric,
            mode=mode,
            show_config=show_config,
            digits=digits,
            group=group,
        )
        ray.shutdown()  # explicitly: quicker than leaving it to the interpreter's exit
    return 0
