"""Where each method's evaluations go: how the earlier tasks rate them, step by step.

``rmbo-tune bench placement DIR`` reads the ``results.json`` of one ``rmbo-tune bench
tabular`` run and the grid it searched (``settings.data``, or ``--data``). Each
configuration of a target gets its *tasks' percentile*: its percentile within each other
dataset's table (0 the dataset's worst configuration, 1 its best, ties averaged), averaged
over the other datasets that list it. This reads every other dataset's whole table, more
than the meta-tasks' sampled rows gave the searchers: it says where a configuration stands
among the earlier tasks, not what a method could know. For each method and each evaluation
``k`` (``--steps``), over its runs:

- ``percentile``: the mean tasks' percentile of the configuration evaluated at ``k``; a
  method that follows the earlier tasks stays near 1, a cold search near 0.5;
- ``improved``: the share of runs whose best value so far improved at ``k``.

Means over targets say that a method falls behind at some horizon; this says whether the
evaluations before it went where the earlier tasks point or away from them. It writes
``placement.md`` (one table of each) and ``placement.png`` (both, against ``k``).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from rmbo_tune.bench.options import method_list, out_dir, positive_int
from rmbo_tune.bench.report import load_results, pyplot, save_figure
from rmbo_tune.bench.tabular_data import TabularBenchmark, load_tabular
from rmbo_tune.diagnostics import best_so_far
from rmbo_tune.engine.types import Array

__all__ = ["main", "markdown", "placement", "plot", "task_percentiles"]


def task_percentiles(bench: TabularBenchmark) -> dict[str, Array]:
    """Each task's configurations rated by the other tasks (module docstring).

    Parameters
    ----------
    bench : TabularBenchmark
        The grids; configurations are matched across tasks by their values.

    Returns
    -------
    dict of str to ndarray
        Per task, one entry per configuration (in ``task.configs``' order): the mean over the
        other tasks that list it of its percentile there, 1 the best for ``bench.mode``; NaN
        where no other task lists it or every other task that does has one configuration.
    """
    sign = 1.0 if bench.mode == "max" else -1.0
    pct: list[dict[tuple, float]] = []
    for task in bench.tasks:
        n = len(task.values)
        ranks = stats.rankdata(sign * task.values)  # 1 = worst, ties averaged
        share = (ranks - 1.0) / (n - 1) if n > 1 else np.full(n, np.nan)
        pct.append(dict(zip(task.configs, share.tolist(), strict=True)))
    out: dict[str, Array] = {}
    for i, task in enumerate(bench.tasks):
        others = [p for j, p in enumerate(pct) if j != i]
        rated = np.full(len(task.configs), np.nan)
        for k, cfg in enumerate(task.configs):
            seen = [p[cfg] for p in others if cfg in p and np.isfinite(p[cfg])]
            if seen:
                rated[k] = float(np.mean(seen))
        out[task.name] = rated
    return out


def placement(
    doc: Mapping[str, Any],
    percentiles: Mapping[str, Array],
    steps: int,
    methods: Sequence[str] | None = None,
) -> dict[str, dict[str, Array]]:
    """The tasks' percentile of each evaluation and the share of runs improved, per step.

    Parameters
    ----------
    doc : mapping
        A results document of ``rmbo-tune bench tabular`` (runs carry ``target`` and
        ``configs``, indices into the target's configurations).
    percentiles : mapping of str to ndarray
        :func:`task_percentiles` of the grid the runs searched.
    steps : int
        Evaluations reported; cut to the shortest run.
    methods : sequence of str, optional
        The methods reported (default: every one with runs).

    Returns
    -------
    dict of str to dict of str to ndarray
        Per method, ``percentile`` and ``improved`` of shape (steps,): means over its runs
        (``improved`` is NaN at the first evaluation, ``percentile`` where no run's
        configuration is rated).

    Raises
    ------
    ValueError
        If a method has no runs, a run lacks ``configs``, or a run's target or configuration
        is not in ``percentiles`` (runs of another grid).
    """
    runs = doc["runs"]
    names = [m for m in runs if runs[m]] if methods is None else list(methods)
    for m in names:
        if not runs.get(m):
            raise ValueError(f"method {m!r} has no runs; there are {sorted(runs)}")
    out: dict[str, dict[str, Array]] = {}
    for m in names:
        length = min([steps, *(len(r.get("configs", ())) for r in runs[m])])
        if length == 0:
            raise ValueError(f"the runs of {m!r} record no configs: not a tabular benchmark")
        pct, improved = [], []
        for r in runs[m]:
            rated = percentiles.get(r["target"])
            idx = np.asarray(r["configs"][:length], dtype=np.intp)
            if rated is None or idx.max() >= len(rated):
                raise ValueError(
                    f"target {r['target']!r} of {m!r} is not in the grid read (or has fewer "
                    "configs): give the grid the runs searched with --data"
                )
            pct.append(rated[idx])
            best = best_so_far(r["values"][:length], doc["mode"])
            step_up = np.isfinite(best[1:]) & ~(best[1:] == best[:-1])  # a first value counts
            improved.append(np.r_[np.nan, step_up.astype(np.float64)])
        with warnings.catch_warnings():  # a step no other task rates: NaN, shown as "-"
            warnings.simplefilter("ignore", RuntimeWarning)
            rated_mean = np.nanmean(np.array(pct), axis=0)
        out[m] = {
            "percentile": rated_mean,
            "improved": np.mean(np.array(improved), axis=0),
        }
    return out


def markdown(table: Mapping[str, Mapping[str, Array]]) -> str:
    """Both tables, one column per evaluation."""
    length = min(len(v["percentile"]) for v in table.values())
    head = "| method | " + " | ".join(str(k) for k in range(1, length + 1)) + " |"
    rule = "|---|" + "---|" * length
    parts = []
    for key, what in (
        (
            "percentile",
            "The earlier tasks' mean percentile of the configuration evaluated at "
            "each step (1: every other dataset's best, 0.5: a random configuration):",
        ),
        ("improved", "The share of runs whose best value so far improved at each step:"),
    ):
        parts += [what, "", head, rule]
        for m, v in table.items():
            cells = ["-" if not np.isfinite(x) else f"{x:.2f}" for x in v[key][:length]]
            parts.append(f"| {m} | " + " | ".join(cells) + " |")
        parts.append("")
    return "\n".join(parts)


def plot(table: Mapping[str, Mapping[str, Array]], title: str, path: str | Path) -> Path:
    """Both quantities against the evaluation, one line per method; written to ``path``."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for m, v in table.items():
        k = np.arange(1, len(v["percentile"]) + 1)
        axes[0].plot(k, v["percentile"], marker="o", markersize=3, label=m)
        axes[1].plot(k[1:], v["improved"][1:], marker="o", markersize=3, label=m)
    axes[0].axhline(0.5, color="black", linewidth=0.8, linestyle=":")
    axes[0].set_ylabel("earlier tasks' percentile of the evaluated config")
    axes[1].set_ylabel("share of runs improved")
    for ax in axes:
        ax.set_xlabel("evaluation")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench placement``).

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    """
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench placement",
        description="Where each method's evaluations go on one 'rmbo-tune bench tabular' "
        "result: how the other datasets rate each configuration evaluated, step by step.",
    )
    p.add_argument("results", help="results directory or file of 'rmbo-tune bench tabular'")
    p.add_argument("--data", help="the grid searched (default: the results' settings.data)")
    p.add_argument("--steps", type=positive_int, default=15, help="15")
    p.add_argument("--methods", help="comma-separated methods (default: every one)")
    p.add_argument("--out", type=out_dir, default="bench-results/placement")
    a = p.parse_args(argv)
    try:
        doc = load_results(a.results)
    except (OSError, ValueError) as exc:
        p.error(str(exc))
    if doc["task"] != "tabular":
        p.error(f"{a.results} holds a {doc['task']!r} benchmark, not a tabular one")
    settings = doc.get("settings", {})
    if settings.get("fixed"):
        p.error(
            f"{a.results} searched a slice of each grid (fixed={settings['fixed']!r}): "
            "its configs do not index the whole table"
        )
    data = a.data or settings.get("data")
    if not data or not Path(data).is_dir():
        p.error(f"the grid searched ({data!r}) is not a directory here: give --data DIR")
    try:
        bench = load_tabular(data, mode=doc["mode"], metric=doc["metric"])
        methods = None if a.methods is None else method_list(a.methods, list(doc["runs"]))
        table = placement(doc, task_percentiles(bench), a.steps, methods)
    except ValueError as exc:
        p.error(str(exc))
    text = markdown(table)
    folder = Path(a.out)
    folder.mkdir(parents=True, exist_ok=True)
    md = folder / "placement.md"
    md.write_text(text)
    png = plot(table, f"Where the evaluations go: {Path(data).name}", folder / "placement.png")
    print(text)
    print(f"wrote {md} and {png}")


if __name__ == "__main__":
    main()
