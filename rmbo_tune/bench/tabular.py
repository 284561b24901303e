"""Tabular benchmark: leave-one-task-out meta-BO on user-supplied grids of evaluated configs.

``rmbo-tune bench tabular --data DIR --mode min`` (or ``python -m rmbo_tune.bench.tabular``);
``rmbo-tune bench tabular --suite svm`` or ``--suite hgb`` runs a meta-dataset shipped with
the package (``rmbo_tune/bench/data``) with the paper's protocol as defaults.

Data format
-----------
``DIR`` holds one file per task; the task's name is the file name without its extension.
Files ending in ``.csv`` (a header row, then one row per evaluated config, comma-separated)
and ``.jsonl`` (one JSON object per line; blank lines skipped) are read; other files, and
names starting with ``.``, are ignored. Every file has one metric column (``--metric``,
default ``value``) and one column per hyperparameter; ``--ignore-columns a,b`` drops extra
columns (runtimes, other metrics) first. Every task must have the same hyperparameter columns,
in any order.

- **Hyperparameter values** must be present in every row (an empty CSV cell or a JSON
  ``null`` is an error naming the file and line; fill inactive conditional parameters with a
  constant). A column whose values, across all tasks, all parse as finite numbers is
  numeric; any other column is categorical, its values compared as text (JSON ``true``
  becomes ``true``, JSON numbers their JSON text).
- **Encoding to the unit cube.** A numeric column maps linearly from its minimum and
  maximum over all tasks to ``[0, 1]``; log columns map ``log10`` of the value the same way.
  ``--log-columns a,b`` forces log scaling (their values must be positive). Unless
  ``--no-auto-log`` is given, a numeric column whose values are all positive and span more
  than 3 orders of magnitude (``max / min > 1000``) is log-scaled as well. A categorical
  column becomes one 0/1 column per category (one-hot). Constant columns are dropped.
- **Metric.** Higher is better with ``--mode max``, lower with ``--mode min`` (required: the
  engine maximizes the value, or its negative). Rows whose metric is empty, ``nan``, JSON
  ``null``, missing (JSON lines) or infinite are dropped and counted in the output; any other
  non-numeric metric is an error.
- **Duplicates.** Rows of one task with the same config (same numeric values, same category
  text) are merged into one config whose metric is their mean; the number of rows merged is
  reported. Each task's grid is therefore a set of distinct configs.

Protocol
--------
For every target task (all of them, or ``--targets a,b``) the other tasks are the
meta-tasks: all their rows, or ``--meta-samples N`` rows per task drawn without replacement
(seeded per target and seed, the same for every method). Each method runs ``--budget``
evaluations (default 30) on the target's finite grid: the engine's candidates are exactly
the target's configs, it never suggests a config already observed (the benchmark checks),
and the value observed is the table's value, without extra noise. Runs use ``--seeds``
seeds (default 5). Simple regret is measured against the best value of the target's grid.
The meta-task GPs are fitted once per target and seed and shared by the meta methods
(``rm-gp-ucb``, ``rm-gp-ts``, ``rgpe``, ``taf``), so they differ only in how they use them.
That fit costs O(n^3) in a meta-task's rows: above a few hundred rows per task, use
``--meta-samples`` (200 is a reasonable start). The engine runs with one BLAS thread.

Results follow :mod:`rmbo_tune.bench.report` (task ``"tabular"``): per method, one run record
per (target, seed) with ``target``, ``seed``, ``values`` (the metric of each evaluated
config, in the table's units), ``seconds`` (engine ask + tell per evaluation), ``optimum``
(the target grid's best value), ``weights`` (meta-task name to weight at each suggestion;
empty for ``gp-ucb`` and ``random``), ``nu``, ``configs`` (row of each evaluated config in
the target's grid of distinct configs) and ``setup_seconds`` (the meta-task GP fit).
``settings`` records the encoding and, per task, rows read, configs, rows dropped for a NaN
metric, duplicates merged and the best value. ``--out`` (default ``bench-results/tabular``)
receives ``results.json``, ``results.md``, ``best_so_far.png`` (simple regret) and
``meta_weights.png``; the latter has one curve per meta-task name over all runs, each the
mean over the runs that had that task (with several targets, a task's curve mixes the
targets it was a meta-task for; ``--targets NAME`` gives one target's picture).

The loader (reading, validation, encoding) is :mod:`rmbo_tune.bench.tabular_data`; its
public names are re-exported here.

Only numpy, scipy, threadpoolctl and the engine are used: CSV and JSON lines are read with
the standard library rather than pandas, so the benchmark neither needs nor imports Ray.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from rmbo_tune.bench import report
from rmbo_tune.bench.tabular_data import (
    Array,
    Encoding,
    TabularBenchmark,
    TabularTask,
    describe,
    load_tabular,
)
from rmbo_tune.engine import METHODS, MetaBO
from rmbo_tune.engine.options import META_METHODS

__all__ = [
    "Encoding",
    "TabularBenchmark",
    "TabularTask",
    "describe",
    "load_tabular",
    "main",
    "make_engines",
    "run",
    "search",
]

HORIZONS = (1, 5, 10, 20, 25, 30, 50, 100)
DATA_DIR = Path(__file__).resolve().parent / "data"
# Meta-datasets shipped with the package; ``--suite NAME`` runs the paper's protocol on one:
# every task the target in turn, the others meta-tasks of 50 random configs, budget 50.
SUITES: dict[str, dict[str, str]] = {
    "svm": {
        "folder": "svm-wistuba",
        "log_columns": "",
        "about": "SVM grid of Wistuba et al. (288 configs x 50 datasets; the paper's Fig. 2c)",
    },
    "hgb": {
        "folder": "hgb-grid",
        "log_columns": "learning_rate,max_leaf_nodes,min_samples_leaf,l2_regularization",
        "about": "gradient-boosting grid (240 configs x 24 datasets; "
        "rmbo_tune.bench.make_hgb_grid)",
    },
}


# ---------------------------------------------------------------------- running
def _meta_tasks(
    bench: TabularBenchmark, target: TabularTask, n_samples: int | None, rng: np.random.Generator
) -> tuple[list[str], list[tuple[Array, Array]]]:
    sign = 1.0 if bench.mode == "max" else -1.0
    names, tasks = [], []
    for task in bench.tasks:
        if task.name == target.name:
            continue
        rows = np.arange(len(task.X))
        if n_samples is not None and n_samples < len(rows):
            rows = np.sort(rng.choice(rows, size=n_samples, replace=False))
        names.append(task.name)
        tasks.append((task.X[rows], sign * task.values[rows]))
    return names, tasks


def make_engines(
    methods: Sequence[str],
    target: TabularTask,
    meta_tasks: Sequence[tuple[Array, Array]],
    *,
    seed: int,
    options: Mapping[str, Any] | None = None,
) -> dict[str, tuple[MetaBO, float]]:
    """One engine per method on the target's grid, with meta-task GPs fitted once.

    The first meta method's engine fits the meta-task GPs; the other meta methods are rebuilt
    from its state dict with the method swapped, so every meta method sees the same
    meta-models and engine random state (and the fit, which dominates setup, runs once).

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
            opt = MetaBO.from_state_dict({**template[0], "method": method})
            out[method] = (opt, template[1] + time.perf_counter() - t0)
            continue
        opt = MetaBO(dim, meta_tasks, method, candidates=target.X, seed=seed, **opts)
        out[method] = (opt, time.perf_counter() - t0)
        if method in META_METHODS:
            template = (opt.state_dict(), out[method][1])
    return out


def search(
    opt: MetaBO, target: TabularTask, meta_names: Sequence[str], *, mode: str, budget: int
) -> dict[str, Any]:
    """Run a fresh engine for ``budget`` evaluations of the target's table.

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

    Returns
    -------
    dict
        ``values`` (table units), ``seconds`` (ask + tell), ``optimum``, ``weights`` (empty
        for methods without meta-weights), ``nu`` and ``configs`` (index of each evaluated
        config in ``target.configs``).

    Raises
    ------
    RuntimeError
        If the engine suggests a config twice (the engine excludes observed points).
    """
    sign = 1.0 if mode == "max" else -1.0
    seen: list[int] = []
    values, seconds = [], []
    for _ in range(budget):
        t0 = time.perf_counter()
        x = opt.ask()
        ask_s = time.perf_counter() - t0
        i = int(np.argmin(((target.X - x) ** 2).sum(axis=1)))
        if i in seen:
            raise RuntimeError(
                f"{opt.method} suggested config {target.configs[i]} of {target.name} twice"
            )
        seen.append(i)
        t0 = time.perf_counter()
        opt.tell(x, sign * float(target.values[i]))
        seconds.append(ask_s + time.perf_counter() - t0)
        values.append(float(target.values[i]))
    weights = [
        dict(zip(meta_names, r["weights"], strict=True))
        if isinstance(r.get("weights"), list) and len(r["weights"]) == len(meta_names)
        else {}
        for r in opt.history
    ]
    return {
        "values": values,
        "seconds": seconds,
        "optimum": target.best(mode),
        "worst": target.best("min" if mode == "max" else "max"),
        "weights": weights if any(weights) else [],
        "nu": [float(r["nu"]) for r in opt.history],
        "configs": seen,
    }


def _names(arg: str) -> list[str]:
    return [name.strip() for name in arg.split(",") if name.strip()]


def _check_run(
    bench: TabularBenchmark,
    methods: Sequence[str],
    budget: int,
    n_seeds: int,
    targets: Sequence[str] | None,
    meta_samples: int | None,
) -> list[str]:
    """Validated arguments of :func:`run`; returns the target names."""
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
    for name in chosen:
        size = len(bench.task(name).X)
        if budget > size:
            raise ValueError(
                f"budget {budget} exceeds the {size} distinct configs of target {name!r} "
                f"({bench.task(name).path}); lower --budget or leave that target out"
            )
    return chosen


def run(
    bench: TabularBenchmark,
    *,
    methods: Sequence[str] = METHODS,
    budget: int = 30,
    n_seeds: int = 5,
    targets: Sequence[str] | None = None,
    meta_samples: int | None = None,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Leave-one-task-out benchmark; returns a :mod:`~rmbo_tune.bench.report` document.

    Parameters
    ----------
    bench : TabularBenchmark
        Tasks from :func:`load_tabular`.
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
    seed : int
        Base seed: the meta-task subsample and the engine seed of seed ``s`` on target ``k``
        (position in the sorted task list) derive from ``(seed, k, s)``, the same for every
        method.
    options : mapping, optional
        Engine options for every method.
    progress : callable, optional
        Called with a line of text after each run.

    Returns
    -------
    dict
        Results document: task ``"tabular"``, ``optimum`` None (each run carries its target's
        optimum), ``settings`` (data, targets, loading summary), ``runs`` by method, each
        record with ``target`` and ``seed`` added to those of :func:`search`,
        and ``setup_seconds`` from :func:`make_engines`.
    """
    chosen = _check_run(bench, methods, budget, n_seeds, targets, meta_samples)
    names = [t.name for t in bench.tasks]
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    # One BLAS thread, as in the searcher: on two cores, threaded BLAS made the meta-GP fits
    # 2-6x slower.
    blas = ThreadpoolController()
    for name, s in itertools.product(chosen, range(n_seeds)):
        k = names.index(name)
        target = bench.tasks[k]
        rng = np.random.default_rng([seed, k, s])
        meta_names, meta = _meta_tasks(bench, target, meta_samples, rng)
        engine_seed = int(rng.integers(2**31))
        with blas.limit(limits=1, user_api="blas"):
            engines = make_engines(methods, target, meta, seed=engine_seed, options=options)
            for method, (opt, setup) in engines.items():
                rec = search(opt, target, meta_names, mode=bench.mode, budget=budget)
                runs[method].append({"target": name, "seed": s, **rec, "setup_seconds": setup})
                if progress is not None:
                    best = report.best_so_far(rec["values"], bench.mode)[-1]
                    ms = 1000 * float(np.median(rec["seconds"]))
                    progress(
                        f"{name} seed {s} {method}: regret {abs(rec['optimum'] - best):.4g} "
                        f"after {budget}, {ms:.0f} ms/iter"
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


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench tabular``)."""
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench tabular",
        description="Leave-one-task-out meta-BO on tabular benchmarks (one CSV / JSON-lines "
        "file per task). Format: python -m pydoc rmbo_tune.bench.tabular",
    )
    p.add_argument(
        "--suite",
        choices=sorted(SUITES),
        help="a meta-dataset shipped with the package, with its protocol as defaults: "
        + "; ".join(f"{k}: {v['about']}" for k, v in sorted(SUITES.items())),
    )
    p.add_argument("--data", help="directory with one .csv/.jsonl file per task")
    p.add_argument("--metric", default="value", help="metric column (default: value)")
    p.add_argument("--mode", choices=["min", "max"])
    p.add_argument("--log-columns", default="", help="comma-separated columns to log-scale")
    p.add_argument(
        "--no-auto-log",
        action="store_true",
        help="do not log-scale positive columns spanning more than 3 orders of magnitude",
    )
    p.add_argument("--ignore-columns", default="", help="comma-separated columns to drop")
    p.add_argument("--targets", default="", help="comma-separated target tasks (default: all)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"from {','.join(METHODS)}")
    p.add_argument("--budget", type=int, default=None, help="default 30 (suite: 50)")
    p.add_argument("--seeds", type=int, default=None, help="per target and method (5; suite 3)")
    p.add_argument("--seed", type=int, default=0, help="base seed")
    p.add_argument("--meta-samples", type=int, default=None, help="rows per meta-task (suite: 50)")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine option (value parsed as JSON, else text), e.g. beta_scale=0.2",
    )
    p.add_argument("--out", default="bench-results/tabular")
    a = p.parse_args(argv)
    if (a.suite is None) == (a.data is None):
        p.error("give exactly one of --suite and --data")
    if a.suite is not None:
        suite = SUITES[a.suite]
        a.data, a.mode = str(DATA_DIR / suite["folder"]), a.mode or "max"
        a.log_columns = a.log_columns or suite["log_columns"]
        a.meta_samples = 50 if a.meta_samples is None else a.meta_samples
        a.budget = 50 if a.budget is None else a.budget
        a.seeds = 3 if a.seeds is None else a.seeds
        if a.out == "bench-results/tabular":
            a.out = f"bench-results/tabular-{a.suite}"
    elif a.mode is None:
        p.error("--mode is required with --data")
    a.budget = 30 if a.budget is None else a.budget
    a.seeds = 5 if a.seeds is None else a.seeds
    options = {}
    for item in a.option:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--option expects KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    try:
        bench = load_tabular(
            a.data,
            mode=a.mode,
            metric=a.metric,
            log_columns=_names(a.log_columns),
            auto_log=not a.no_auto_log,
            ignore_columns=_names(a.ignore_columns),
        )
        methods, targets = _names(a.methods), _names(a.targets) or None
        _check_run(bench, methods, a.budget, a.seeds, targets, a.meta_samples)
    except ValueError as exc:
        p.error(str(exc))
    print(describe(bench), flush=True)
    most = max(len(t.X) for t in bench.tasks)
    if a.meta_samples is None and most > 500:
        print(
            f"note: meta-tasks of up to {most} configs; fitting their GPs costs O(n^3) per "
            "target and seed, --meta-samples 200 is much faster",
            flush=True,
        )
    t0 = time.time()
    doc = run(
        bench,
        methods=methods,
        budget=a.budget,
        n_seeds=a.seeds,
        targets=targets,
        meta_samples=a.meta_samples,
        seed=a.seed,
        options=options,
        progress=lambda line: print(line, flush=True),
    )
    horizons = sorted({h for h in HORIZONS if h <= a.budget} | {a.budget})
    files = report.write_outputs(doc, a.out, horizons)
    print(f"\n{time.time() - t0:.0f} s; wrote {', '.join(str(f) for f in files.values())}\n")
    print(report.summary_markdown(doc, horizons))


if __name__ == "__main__":
    main()
