"""Tabular benchmark: leave-one-task-out meta-BO on user-supplied grids of evaluated configs.

``rmbo-tune bench tabular --data DIR --mode min`` (or ``python -m rmbo_tune.bench.tabular``);
``rmbo-tune bench tabular --suite svm`` (or ``hgb``, ``rf``, ``knn``, ``logreg``, ``sgd``,
``tree``, ``mlp``, ``svc``, ``ada``, ``boost2d``, ``svc2d``, ``krr``, ``gbr``, ``lcdb``) runs
a meta-dataset shipped with the package (``rmbo_tune/bench/data``) with the paper's protocol
as defaults.

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
meta-tasks (all of them, or ``--meta-tasks N`` drawn at random, as a user with a few
earlier experiments has): all their rows, or ``--meta-samples N`` rows per task drawn
without replacement (seeded per target and seed, the same for every method); with
``--meta-search gp-ucb``, each task's rows are instead the ``--meta-samples`` configs
(default 50) that a cold GP-UCB search of that task evaluated (seeded per task and seed),
as the trials of an earlier model-based Tune search are: clustered where that task is good;
with ``--meta-search tpe``, those of an Optuna TPE search. With ``--mirror`` every meta-task
observes its task's values negated (earlier experiments that mislead; searched with
``--meta-search``, their rows crowd where each task is worst).
Each method runs ``--budget`` evaluations (default 30) on the target's finite grid: the engine's
candidates are exactly the target's configs, it never suggests a config already observed
(the benchmark checks), and the value observed is the table's value, without extra noise;
with ``--noise F``, every value a method observes (the meta-tasks' rows and the target's
evaluations) has Gaussian noise of standard deviation F times its task's range added, one
draw per config and seed, the same for every method, while regret is still measured on the
table's values (a training run's validation score varies with its seed and split). With
``--initial K``, K configs of the target drawn at random (per target and seed, the same for
every method) are evaluated first and told to each method before its first suggestion, as
HPO-B's protocol gives every method five, and as a Tune user's ``evaluated_rewards`` are;
they count in the budget and in the regret. Runs
use ``--seeds`` seeds (default 5). Simple regret is measured against the best value of the
target's grid.
``--batch K`` keeps K evaluations in flight, as Tune does with ``max_concurrent_trials=K``:
the engine holds K pending suggestions, and each time the oldest one's value is told it is
asked for a new one (regret is counted in evaluations told). ``--continuous`` searches the
whole cube instead, as a Tune search space of ranges and choices would be (categorical
columns one-hot, projected to a valid choice): a point's value is the multilinear
interpolation of the target's table over the numeric coordinates, within its choice of
categories, told at the point itself. Interpolated values are convex combinations of table
values, so the grid's best config is still the optimum; it needs tables that are full
grids (the boosting, random-forest and nearest-neighbour suites, not SVM).
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

This module is the command line. The loader (reading, validation, encoding) is
:mod:`rmbo_tune.bench.tabular_data`, its public names re-exported here; the leave-one-task-out
runs (:func:`~rmbo_tune.bench.tabular_runs.run`) are :mod:`rmbo_tune.bench.tabular_runs`.

Only numpy, scipy, threadpoolctl and the engine are used: CSV and JSON lines are read with
the standard library rather than pandas, so the benchmark neither needs nor imports Ray.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

from rmbo_tune.bench import report
from rmbo_tune.bench.options import add_option_argument, out_dir, parse_options, positive_int
from rmbo_tune.bench.tabular_data import GridInterpolation, describe, load_tabular
from rmbo_tune.bench.tabular_runs import (
    META_SEARCHES,
    UNRECORDED_LEVELS,
    Fixed,
    Unrecorded,
    check_run_args,
    run,
)
from rmbo_tune.engine import METHODS

__all__ = ["main"]

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
    "rf": {
        "folder": "rf-grid",
        "log_columns": "max_features,max_depth,min_samples_leaf",
        "about": "random-forest grid (128 configs x 24 datasets, one categorical column; "
        "rmbo_tune.bench.make_rf_grid)",
    },
    "knn": {
        "folder": "knn-grid",
        "log_columns": "n_neighbors",
        "about": "nearest-neighbour grid (162 configs x 24 datasets, three categorical "
        "columns; rmbo_tune.bench.make_knn_grid)",
    },
    "logreg": {
        "folder": "logreg-grid",
        "log_columns": "C",
        "about": "logistic-regression grid (108 configs x 24 datasets, three categorical "
        "columns; rmbo_tune.bench.make_logreg_grid)",
    },
    "sgd": {
        "folder": "sgd-grid",
        "log_columns": "alpha",
        "about": "linear-model SGD grid (216 configs x 24 datasets, four categorical "
        "columns; rmbo_tune.bench.make_sgd_grid)",
    },
    "svc": {
        "folder": "svc-grid",
        "log_columns": "C,gamma",
        "about": "RBF support-vector grid (196 configs x 24 datasets, two categorical "
        "columns; rmbo_tune.bench.make_svc_grid)",
    },
    "tree": {
        "folder": "tree-design",
        "log_columns": "max_depth,min_samples_split,min_samples_leaf,max_features,ccp_alpha",
        "about": "decision-tree design (256 Sobol configs, not a grid, x 24 datasets, three "
        "categorical columns; rmbo_tune.bench.make_tree_design)",
    },
    "ada": {
        "folder": "ada-grid",
        "log_columns": "learning_rate,n_estimators,max_depth",
        "about": "AdaBoost grid (144 configs x 24 datasets, one categorical column; "
        "rmbo_tune.bench.make_ada_grid)",
    },
    "boost2d": {
        "folder": "boost2d-grid",
        "log_columns": "n_estimators",
        "about": "AdaBoost rounds x tree depth (108 configs x 24 datasets, two columns; "
        "rmbo_tune.bench.make_boost2d_grid)",
    },
    "svc2d": {
        "folder": "svc2d-grid",
        "log_columns": "C,gamma",
        "about": "RBF SVM cost x bandwidth (108 configs x 24 datasets, two columns; "
        "rmbo_tune.bench.make_svc2d_grid)",
    },
    "mlp": {
        "folder": "mlp-grid",
        "log_columns": "hidden_units,alpha,learning_rate_init",
        "mode": "min",
        "about": "neural-network regression grid (96 configs x 21 datasets, one categorical "
        "column, error minimized; rmbo_tune.bench.make_mlp_grid)",
    },
    "krr": {
        "folder": "krr-grid",
        "log_columns": "alpha,gamma",
        "mode": "min",
        "about": "kernel-ridge regression grid (189 configs x 21 datasets, one categorical "
        "column, error minimized; rmbo_tune.bench.make_krr_grid)",
    },
    "gbr": {
        "folder": "gbr-grid",
        "log_columns": "learning_rate,max_depth",
        "mode": "min",
        "about": "gradient-boosted regression grid (225 configs x 21 datasets, one "
        "categorical column, error minimized; rmbo_tune.bench.make_gbr_grid)",
    },
    "lcdb": {
        "folder": "lcdb-learners",
        "log_columns": "",
        "budget": "19",
        "about": "choice of learner from the Learning Curve Database (19 configs x 146 "
        "OpenML datasets, one categorical column, budget 19; "
        "rmbo_tune.bench.make_lcdb_grid)",
    },
}


def _names(arg: str) -> list[str]:
    return [name.strip() for name in arg.split(",") if name.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench tabular``).

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    """
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
    p.add_argument(
        "--budget", type=positive_int, default=None, help="default 30 (suite: 50; lcdb: 19)"
    )
    p.add_argument(
        "--seeds", type=positive_int, default=None, help="per target and method (5; suite 3)"
    )
    p.add_argument("--seed", type=int, default=0, help="base seed")
    p.add_argument(
        "--batch",
        type=positive_int,
        default=1,
        help="evaluations in flight at once, as with Tune's max_concurrent_trials (default 1)",
    )
    p.add_argument(
        "--continuous",
        action="store_true",
        help="search the continuous space (categorical columns one-hot) instead of the grid, "
        "values between configs interpolated (full grids only)",
    )
    p.add_argument(
        "--meta-samples", type=positive_int, default=None, help="rows per meta-task (suite: 50)"
    )
    p.add_argument(
        "--meta-tasks",
        type=positive_int,
        default=None,
        help="meta-tasks per run, drawn at random from the other tasks for each target and "
        "seed (default: every other task)",
    )
    p.add_argument(
        "--meta-search",
        choices=META_SEARCHES,
        default="random",
        help="how each meta-task's rows were chosen: at random (default), or the configs a "
        "cold GP-UCB or TPE search of that task evaluated, as an earlier search leaves them",
    )
    p.add_argument(
        "--mirror",
        action="store_true",
        help="the meta-tasks observe their tasks' values negated (misleading earlier "
        "experiments; with --meta-search, their searches searched the mirror images)",
    )
    p.add_argument(
        "--unrecorded",
        metavar="COLUMN",
        help="a column the earlier experiments did not search (a parameter added since): "
        "their rows are drawn at one level of it and it reaches the engine as NaN",
    )
    p.add_argument(
        "--unrecorded-known",
        action="store_true",
        help="with --unrecorded, give the engine that level instead of NaN",
    )
    p.add_argument(
        "--unrecorded-level",
        choices=UNRECORDED_LEVELS,
        default="middle",
        help="with --unrecorded, the column's level the earlier experiments ran at (default: "
        "the middle of its distinct values)",
    )
    p.add_argument(
        "--fixed",
        metavar="COLUMN",
        help="a column the earlier experiments searched and the new search fixes: the target "
        "searches its configs at one level of it, and the meta-tasks' rows (drawn as usual) "
        "reach the engine without the column",
    )
    p.add_argument(
        "--fixed-level",
        choices=UNRECORDED_LEVELS,
        default="middle",
        help="with --fixed, the column's level the new search fixes (default: the middle of "
        "its distinct values)",
    )
    p.add_argument(
        "--fixed-slice",
        action="store_true",
        help="with --fixed, keep only the meta-tasks' rows at that level",
    )
    p.add_argument(
        "--initial",
        type=int,
        default=0,
        metavar="K",
        help="K random configs of the target evaluated before the search and told to every "
        "method first, the same for each (HPO-B's protocol; Tune's evaluated_rewards); "
        "they count in the budget (default 0)",
    )
    p.add_argument(
        "--noise",
        type=float,
        default=0.0,
        metavar="F",
        help="Gaussian noise on every value observed, standard deviation F times its task's "
        "range (regret is measured on the table's values; default 0)",
    )
    add_option_argument(p)
    p.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        help="worker processes, one target and seed each (the results do not depend on it)",
    )
    p.add_argument("--out", type=out_dir, default="bench-results/tabular")
    a = p.parse_args(argv)
    if (a.suite is None) == (a.data is None):
        p.error("give exactly one of --suite and --data")
    if a.suite is not None:
        suite = SUITES[a.suite]
        a.data, a.mode = str(DATA_DIR / suite["folder"]), a.mode or suite.get("mode", "max")
        a.log_columns = a.log_columns or suite["log_columns"]
        a.meta_samples = 50 if a.meta_samples is None else a.meta_samples
        a.budget = int(suite.get("budget", "50")) if a.budget is None else a.budget
        a.seeds = 3 if a.seeds is None else a.seeds
        if a.out == "bench-results/tabular":
            a.out = f"bench-results/tabular-{a.suite}"
    elif a.mode is None:
        p.error("--mode is required with --data")
    a.budget = 30 if a.budget is None else a.budget
    a.seeds = 5 if a.seeds is None else a.seeds
    options = parse_options(a.option, p)  # before anything runs
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
        check_run_args(bench, methods, a.budget, a.seeds, targets, a.meta_samples, a.meta_tasks)
        if a.unrecorded is not None:
            if a.meta_search != "random":
                raise ValueError("--unrecorded draws the meta-tasks' rows at random")
            Unrecorded.of(bench, a.unrecorded)
        elif a.unrecorded_known or a.unrecorded_level != "middle":
            raise ValueError("--unrecorded-known and --unrecorded-level need --unrecorded")
        if a.fixed is not None:
            if a.unrecorded is not None or a.continuous:
                raise ValueError("--fixed is not for --unrecorded or --continuous")
            chosen = targets or [t.name for t in bench.tasks]
            Fixed.of(bench, a.fixed, at=a.fixed_level).check_budget(bench, chosen, a.budget)
        elif a.fixed_slice or a.fixed_level != "middle":
            raise ValueError("--fixed-level and --fixed-slice need --fixed")
        if not (math.isfinite(a.noise) and a.noise >= 0):
            raise ValueError(f"--noise must be a finite fraction >= 0, got {a.noise}")
        if not 0 <= a.initial < a.budget:
            raise ValueError(f"--initial must be from 0 to the budget - 1, got {a.initial}")
        if a.continuous:  # every target must be a full grid to interpolate
            for name in targets or [t.name for t in bench.tasks]:
                GridInterpolation(bench.task(name), bench.encoding)
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
        meta_tasks=a.meta_tasks,
        seed=a.seed,
        options=options,
        progress=lambda line: print(line, flush=True),
        processes=a.processes,
        batch=a.batch,
        continuous=a.continuous,
        meta_search=a.meta_search,
        mirror=a.mirror,
        unrecorded=a.unrecorded,
        unrecorded_known=a.unrecorded_known,
        unrecorded_level=a.unrecorded_level,
        noise=a.noise,
        fixed=a.fixed,
        fixed_level=a.fixed_level,
        fixed_slice=a.fixed_slice,
        initial=a.initial,
    )
    horizons = sorted({h for h in HORIZONS if h <= a.budget} | {a.budget})
    files = report.write_outputs(doc, a.out, horizons)
    print(f"\n{time.time() - t0:.0f} s; wrote {', '.join(str(f) for f in files.values())}\n")
    print(report.summary_markdown(doc, horizons))


if __name__ == "__main__":
    main()
