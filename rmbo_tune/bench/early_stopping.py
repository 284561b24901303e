"""``rmbo-tune bench fidelity``: searchers beside ASHA, on replayed learning curves.

Each of the 24 datasets of the shipped ``hgb-curves`` meta-dataset (:mod:`make_hgb_curves`:
240 gradient-boosting configurations, balanced accuracy after 1, 3, 9, 27 and 81 boosting
iterations, from real training runs) is a target in turn. A run replays Tune's ASHA
(``AsyncHyperBandScheduler`` with ``grace_period=1``, ``reduction_factor=3``, ``max_t=81``,
one trial at a time, the same cutoff rule) beside a searcher until a budget of boosting
iterations is spent; every trial costs the iterations it ran. The score after each block of
81 iterations (one full training) is the best full-fidelity value among the trials that
reached 81 iterations, as normalized regret ``(best of grid - best found) / (best - worst)``.

Methods:

``rmbo+asha``
    RM-GP-UCB with the fidelity-aware searcher's defaults: early-stopped trials are not
    observed, the values at 1, 3, 9 and 27 iterations are online meta-tasks.
``rmbo+asha-norungs``
    The same without the level meta-tasks (``rung_meta_tasks=False``).
``rmbo+asha-final``
    RM-GP-UCB treating a stopped trial's last value as final (what Tune's built-in
    searchers do beside a scheduler).
``rmbo``
    RM-GP-UCB without a scheduler: every trial trains for 81 iterations.
``tpe+asha``
    Optuna's TPE, stopped values as final (as Tune's ``OptunaSearch`` reports them).
``random+asha``
    Random search with ASHA.

``--reverse-rung1`` reverses the ranking at 1 iteration (``v -> max + min - v`` per task):
the lowest fidelity then misleads, and the level meta-task must be distrusted.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from rmbo_tune.bench import report
from rmbo_tune.bench.console import Progress
from rmbo_tune.bench.options import method_list, out_dir, positive_int
from rmbo_tune.engine import MetaBO
from rmbo_tune.engine.types import Array
from rmbo_tune.fidelity import FidelityTracker

DATA = Path(__file__).resolve().parent / "data" / "hgb-curves"
FIDELITIES = (1, 3, 9, 27, 81)
MAX_FIDELITY = FIDELITIES[-1]
REDUCTION_FACTOR = 3
METHODS = (
    "rmbo+asha",
    "rmbo+asha-norungs",
    "rmbo+asha-final",
    "rmbo",
    "tpe+asha",
    "random+asha",
)
LOG_COLUMNS = ("learning_rate", "max_leaf_nodes", "min_samples_leaf", "l2_regularization")


@dataclass(frozen=True)
class Curves:
    """Learning curves of one configuration grid on several tasks.

    Attributes
    ----------
    names : list of str
        Task (dataset) names.
    configs : list of tuple
        The grid, in the order of ``X`` (raw hyperparameter values).
    columns : list of str
    X : ndarray of shape (n_configs, dim)
        The grid in the unit cube (log10, then min-max scaled).
    values : ndarray of shape (n_tasks, n_configs, len(FIDELITIES))
        Metric (maximized) of each configuration at each fidelity.
    """

    names: list[str]
    configs: list[tuple]
    columns: list[str]
    X: Array
    values: Array


def load_curves(path: str | Path = DATA) -> Curves:
    """Read a folder of learning-curve CSVs (the format :mod:`make_hgb_curves` writes).

    Raises
    ------
    FileNotFoundError
        If the folder holds no CSV file.
    ValueError
        If the files disagree on the grid or miss a fidelity.
    """
    files = sorted(Path(path).glob("*.csv"))
    if not files:
        raise FileNotFoundError(f"no learning-curve CSV files in {path}")
    names, tables, grid = [], [], None
    for f in files:
        with open(f, newline="") as fh:
            rows = list(csv.reader(fh))
        if len(rows) < 2 or len(rows[0]) < 3:
            raise ValueError(
                f"{f}: expected a header of parameter columns, the fidelity and the value, "
                "and at least one row"
            )
        header, body = rows[0], rows[1:]
        columns = header[:-2]
        table: dict[tuple, dict[int, float]] = {}
        for line, row in enumerate(body, 2):
            try:
                if len(row) != len(header):
                    raise ValueError(f"{len(row)} cells for {len(header)} columns")
                config = tuple(float(v) for v in row[:-2])
                table.setdefault(config, {})[int(float(row[-2]))] = float(row[-1])
            except ValueError as exc:
                raise ValueError(f"{f} line {line}: {exc}") from None
        configs = sorted(table)
        if grid is None:
            grid = configs
        elif configs != grid:
            raise ValueError(f"{f}: its configurations differ from those of {files[0]}")
        missing = [c for c in configs if set(table[c]) != set(FIDELITIES)]
        if missing:
            raise ValueError(f"{f}: {missing[0]} lacks some of the fidelities {FIDELITIES}")
        names.append(f.stem)
        tables.append([[table[c][k] for k in FIDELITIES] for c in configs])
    assert grid is not None
    raw = np.log10(np.array(grid, dtype=np.float64))
    lo, hi = raw.min(0), raw.max(0)
    X = (raw - lo) / np.where(hi > lo, hi - lo, 1.0)
    return Curves(names, grid, columns, X, np.array(tables, dtype=np.float64))


def reverse_rung1(values: Array) -> Array:
    """The curves with the ranking at the first fidelity reversed, per task."""
    out = values.copy()
    first = out[:, :, 0]
    hi, lo = first.max(1, keepdims=True), first.min(1, keepdims=True)
    out[:, :, 0] = hi + lo - first
    return out


class ASHA:
    """Tune's ``AsyncHyperBandScheduler`` decision for one bracket, maximizing.

    At each milestone a trial is stopped if its value is below the ``1 - 1/rf`` quantile of
    the values recorded there before it (the first trial at a milestone always goes on).
    """

    def __init__(self, milestones: Sequence[int] = FIDELITIES, rf: float = REDUCTION_FACTOR):
        self.rf = rf
        self.recorded: dict[int, list[float]] = {m: [] for m in milestones}

    def stops(self, milestone: int, value: float) -> bool:
        """Record ``value`` at ``milestone``; whether the trial stops there."""
        seen = self.recorded[milestone]
        stop = bool(seen) and value < np.nanpercentile(seen, (1 - 1 / self.rf) * 100)
        seen.append(value)
        return stop


class _Suggester:
    """One method's suggestions and updates (the searcher part of a run)."""

    def __init__(self, method: str, curves: Curves, seed: int) -> None:
        self.method, self.curves = method, curves
        self.tracker: FidelityTracker | None = None
        if method == "tpe+asha":
            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            sampler = optuna.samplers.TPESampler(seed=seed)
            self.study = optuna.create_study(direction="maximize", sampler=sampler)
            self.choices = [
                sorted({c[j] for c in curves.configs}) for j in range(curves.X.shape[1])
            ]
            self.index = {c: i for i, c in enumerate(curves.configs)}
            return
        engine_method = "random" if method == "random+asha" else "rm-gp-ucb"
        if method in ("rmbo+asha", "rmbo+asha-norungs"):
            self.tracker = FidelityTracker(
                "iterations", MAX_FIDELITY, FIDELITIES[:-1], rung_meta_tasks=method == "rmbo+asha"
            )
        options = self.tracker.engine_options(engine_method, {}) if self.tracker else {}
        self.engine = MetaBO(
            curves.X.shape[1], method=engine_method, candidates=curves.X, seed=seed, **options
        )

    def ask(self) -> tuple[int, Any]:
        """The next configuration's row in the grid, and the handle to report on."""
        if self.method == "tpe+asha":
            trial = self.study.ask()
            config = tuple(
                trial.suggest_categorical(c, values)
                for c, values in zip(self.curves.columns, self.choices, strict=True)
            )
            return self.index[config], trial
        if self.tracker is not None:  # as RMBOSearcher.suggest does
            for trial in self.tracker.judged_worse():
                self.engine.fail(self.tracker.x[trial])
            for name, X, y in self.tracker.changed_tasks():
                self.engine.update_meta_task(name, X, y)
        x = self.engine.ask()
        return int(np.argmin(((self.curves.X - x) ** 2).sum(1))), x

    def report(self, trial: int, handle: Any, fidelity: int, value: float) -> None:
        """One milestone's value (the level meta-tasks of ``rmbo+asha``)."""
        if self.tracker is not None:
            self.tracker.observe(str(trial), list(handle), {"iterations": fidelity}, value)

    def finish(self, trial: int, handle: Any, fidelity: int, value: float) -> None:
        """The trial ended at ``fidelity`` (stopped, or trained to the end)."""
        if self.method == "tpe+asha":
            self.study.tell(handle, value)
        elif fidelity >= MAX_FIDELITY or self.method == "rmbo+asha-final":
            self.engine.tell(handle, value)
        else:
            self.engine.drop(handle)
        if self.tracker is not None:
            self.tracker.finish(str(trial), value, full=fidelity >= MAX_FIDELITY)


def search(method: str, curves: Curves, task: int, seed: int, budget: int) -> dict[str, Any]:
    """One run: ``budget`` full trainings' worth of iterations; the run record."""
    values = curves.values[task]
    sugg = _Suggester(method, curves, seed)
    asha = ASHA() if "+asha" in method else None
    spent, best = 0, -math.inf
    per_unit: list[float] = []
    seconds: list[float] = []
    trial = 0
    while spent < budget * MAX_FIDELITY:
        trial += 1
        start = time.perf_counter()
        try:
            index, handle = sugg.ask()
        except Exception as exc:  # the grid is used up
            if type(exc).__name__ != "SearchSpaceExhausted":
                raise
            break
        elapsed = time.perf_counter() - start
        previous = 0
        for fidelity, value in zip(FIDELITIES, values[index], strict=True):
            spent += fidelity - previous
            previous = fidelity
            if fidelity == MAX_FIDELITY:
                best = max(best, value)
            while len(per_unit) < min(spent // MAX_FIDELITY, budget):
                per_unit.append(best if math.isfinite(best) else math.nan)
            if asha is None and fidelity < MAX_FIDELITY:
                continue  # no scheduler: trained to the end, nothing to decide
            stop = asha is not None and asha.stops(fidelity, value)
            start = time.perf_counter()
            sugg.report(trial, handle, fidelity, value)
            if fidelity == MAX_FIDELITY or stop:
                sugg.finish(trial, handle, fidelity, value)
            elapsed += time.perf_counter() - start
            if fidelity == MAX_FIDELITY or stop:
                break
        seconds.append(elapsed)
    while len(per_unit) < budget:
        per_unit.append(best if math.isfinite(best) else math.nan)
    full = values[:, -1]
    return {
        "seed": seed,
        "task": curves.names[task],
        "values": per_unit,
        "seconds": seconds,
        "optimum": float(full.max()),
        "worst": float(full.min()),
    }


def _job(args: tuple) -> tuple[str, dict[str, Any]]:
    method, curves, task, seed, budget = args
    return method, search(method, curves, task, seed, budget)


def run(
    curves: Curves, methods: Sequence[str], seeds: int, budget: int, processes: int
) -> dict[str, Any]:
    """Every method on every task and seed; the results document (see ``report``)."""
    jobs = [
        (m, curves, t, 1000 * s + t, budget)
        for m in methods
        for t in range(len(curves.names))
        for s in range(seeds)
    ]
    doc: dict[str, Any] = {
        "task": "fidelity",
        "metric": "balanced_accuracy",
        "mode": "max",
        "optimum": None,
        "budget": budget,
        "x_label": f"full trainings ({MAX_FIDELITY} boosting iterations each)",
        "settings": {"seeds": seeds, "tasks": curves.names, "fidelities": list(FIDELITIES)},
        "runs": {m: [] for m in methods},
    }
    bar = Progress("fidelity runs", len(jobs))
    with get_context("spawn").Pool(processes) as pool:
        for method, record in pool.imap_unordered(_job, jobs):
            doc["runs"][method].append(record)
            bar.step(f"{method} {record['task']}")
    for runs in doc["runs"].values():
        runs.sort(key=lambda r: (r["task"], r["seed"]))
    return doc


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench fidelity --help``)."""
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench fidelity", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--data", default=str(DATA), help="folder of learning-curve CSVs")
    p.add_argument("--methods", default=",".join(METHODS), help=f"from {','.join(METHODS)}")
    p.add_argument("--seeds", type=positive_int, default=10, help="seeds per target (10)")
    p.add_argument(
        "--budget", type=positive_int, default=8, help="full trainings (x 81 iterations)"
    )
    p.add_argument("--targets", default="", help="comma-separated datasets (default: all)")
    p.add_argument("--reverse-rung1", action="store_true", help="reverse the 1-iteration ranking")
    p.add_argument(
        "--processes",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="worker processes (the machine's cores)",
    )
    p.add_argument("--out", type=out_dir, default="bench-results/fidelity")
    args = p.parse_args(argv)
    try:
        methods = method_list(args.methods, METHODS)
    except ValueError as exc:
        p.error(str(exc))
    try:
        curves = load_curves(args.data)
    except (FileNotFoundError, ValueError) as exc:
        p.error(str(exc))
    if args.targets:
        keep = [n for n in args.targets.split(",") if n]
        missing = sorted(set(keep) - set(curves.names))
        if missing:
            p.error(f"unknown target(s) {missing}; known: {', '.join(curves.names)}")
        idx = [curves.names.index(n) for n in keep]
        curves = Curves(keep, curves.configs, curves.columns, curves.X, curves.values[idx])
    if args.reverse_rung1:
        curves = Curves(
            curves.names, curves.configs, curves.columns, curves.X, reverse_rung1(curves.values)
        )
    doc = run(curves, methods, args.seeds, args.budget, args.processes)
    doc["settings"]["reverse_rung1"] = args.reverse_rung1
    horizons = sorted({1, max(1, args.budget // 4), max(1, args.budget // 2), args.budget})
    files = report.write_outputs(doc, args.out, horizons)
    print(report.summary_markdown(doc, horizons))
    print(f"\nwrote {', '.join(str(f) for f in files.values())}")


if __name__ == "__main__":
    main()
