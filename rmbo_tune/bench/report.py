"""Benchmark results: one JSON document per run of the suite, its summary table and plots.

A results document is a plain dict (what ``results.json`` holds)::

    {
      "task": "cartpole", "metric": "normalized_return", "mode": "max",
      "optimum": 1.0,                # or None: regret is then taken against the best value
                                     # any method found on that task
      "budget": 30, "settings": {...},
      "x_label": "trials",           # optional: what the horizons count
      "runs": {
        "rm-gp-ucb": [
          {"seed": 0, "values": [...],          # metric of each trial, in suggestion order
           "seconds": [...],                    # searcher time per trial (suggest + update)
           "optimum": 0.93,                     # optional per-run optimum (synthetic)
           "worst": 0.41,                       # optional per-run worst value (tabular):
                                                # normalized regret |opt - best| / |opt - worst|
           "weights": [{"task": w, ...}, ...],  # optional meta-weights per suggestion
           "nu": [...]},                        # optional
          ...],
        "gp-ucb": [...], ...
      }
    }

:func:`write_outputs` writes ``results.json``, ``results.md`` (mean and standard error of
best-so-far and simple regret at chosen horizons, plus searcher milliseconds per trial),
``best_so_far.png`` and, when any method recorded them, ``meta_weights.png``.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbo_tune.diagnostics import best_so_far
from rmbo_tune.engine.types import Array


def _check_mode(mode: str) -> None:
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")


def _curves(runs: Sequence[Mapping[str, Any]], mode: str) -> Array:
    """Best-so-far curves of runs, cut to the shortest run: shape (runs, trials)."""
    length = min(len(r["values"]) for r in runs)
    return np.array([best_so_far(r["values"][:length], mode) for r in runs]).reshape(
        len(runs), length
    )


def _reference(doc: Mapping[str, Any]) -> float:
    """Task-level optimum: the given one, else the best finite value of any run (NaN if
    none)."""
    if doc.get("optimum") is not None:
        return float(doc["optimum"])
    vals = [
        v for runs in doc["runs"].values() for r in runs for v in r["values"] if math.isfinite(v)
    ]
    if not vals:
        return math.nan
    return max(vals) if doc["mode"] == "max" else min(vals)


def mean_se(col: Array) -> tuple[float, float]:
    """Mean and standard error of the finite entries of ``col``.

    Parameters
    ----------
    col : ndarray
        Values; NaN and infinite ones are left out.

    Returns
    -------
    (float, float)
        The mean and ``std(ddof=1) / sqrt(n)`` (0 for one value; both NaN for none).
    """
    col = col[np.isfinite(col)]
    if len(col) == 0:
        return (math.nan, math.nan)
    se = float(col.std(ddof=1) / np.sqrt(len(col))) if len(col) > 1 else 0.0
    return (float(col.mean()), se)


def summarize(doc: Mapping[str, Any], horizons: Sequence[int]) -> list[dict[str, Any]]:
    """Per method: mean and standard error over seeds of best-so-far and simple regret.

    Parameters
    ----------
    doc : mapping
        A results document (module docstring).
    horizons : sequence of int
        Trial counts at which to report (those beyond a run's length are skipped).

    Returns
    -------
    list of dict
        One row per method: ``method``, ``n`` (runs), ``best@k`` and ``regret@k`` as
        ``(mean, se)`` pairs, ``nregret@k`` (normalized regret, when every run records the
        ``worst`` value of its task), ``ms`` (median searcher milliseconds per trial).
    """
    mode = doc["mode"]
    _check_mode(mode)
    ref = _reference(doc)
    rows = []
    for method, runs in doc["runs"].items():
        if not runs:
            continue
        curves = _curves(runs, mode)
        length = curves.shape[1]
        row: dict[str, Any] = {"method": method, "n": len(runs)}
        # each run's own optimum where it has one, else the task's (NaN if nothing finished)
        opt = np.array(
            [r["optimum"] if r.get("optimum") is not None else ref for r in runs],
            dtype=np.float64,
        )
        worst = np.array([r.get("worst", math.nan) for r in runs], dtype=np.float64)
        span = np.abs(opt - worst)
        span = np.where(span > 0, span, math.nan)
        for h in horizons:
            if not 1 <= h <= length:
                continue
            col = curves[:, h - 1]
            row[f"best@{h}"] = mean_se(col)
            row[f"regret@{h}"] = mean_se(np.abs(opt - col))
            if np.isfinite(span).all():
                row[f"nregret@{h}"] = mean_se(np.abs(opt - col) / span)
        secs = [np.median(r["seconds"]) for r in runs if r.get("seconds")]
        row["ms"] = 1000.0 * float(np.median(secs)) if secs else math.nan
        rows.append(row)
    return rows


def markdown_table(rows: Sequence[Mapping[str, Any]], *, metric: str = "best") -> str:
    """Rows from :func:`summarize` as a markdown table (mean ± standard error).

    Parameters
    ----------
    rows : sequence of mapping
        From :func:`summarize`.
    metric : {"best", "regret", "nregret"}
        Which columns to show.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    labels = {"best": "best-so-far", "regret": "simple regret", "nregret": "normalized regret"}
    if metric not in labels:
        raise ValueError(f"metric must be one of {sorted(labels)}, got {metric!r}")
    keys = sorted(
        {k for r in rows for k in r if k.startswith(f"{metric}@")},
        key=lambda k: int(k.split("@")[1]),
    )
    label = labels[metric]
    digits = 4 if metric == "nregret" else 3
    head = "| method | runs | " + " | ".join(f"{label} @{k.split('@')[1]}" for k in keys)
    lines = [head + " | searcher ms/trial |", "|---" * (len(keys) + 3) + "|"]
    for r in rows:
        cells = " | ".join(
            f"{r[k][0]:.{digits}f} ± {r[k][1]:.{digits}f}" if k in r else "-" for k in keys
        )
        lines.append(f"| {r['method']} | {r['n']} | {cells} | {r['ms']:.1f} |")
    return "\n".join(lines)


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend.

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        If matplotlib is not installed, naming the extra that brings it.
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(
            "plots need matplotlib: pip install 'rmbo-tune[bench]' (or matplotlib)"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Write a matplotlib figure to ``path`` (its folder created), close it, return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    pyplot().close(fig)
    return out


def plot_best_so_far(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Mean best-so-far (or simple regret, when runs carry their own optimum) ± 1 SE per method.

    Parameters
    ----------
    doc : mapping
        A results document.
    path : str or path-like
        PNG file to write.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    plt = pyplot()
    mode = doc["mode"]
    per_run_opt = _per_run_optimum(doc)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method, runs in doc["runs"].items():
        if not runs:
            continue
        curves = _curves(runs, mode)
        length = curves.shape[1]
        if per_run_opt:
            curves = np.abs(np.array([r["optimum"] for r in runs])[:, None] - curves)
        mean = np.nanmean(curves, axis=0)
        se = (
            np.nanstd(curves, axis=0, ddof=1) / np.sqrt(len(runs))
            if len(runs) > 1
            else np.zeros_like(mean)
        )
        t = np.arange(1, length + 1)
        ax.plot(t, mean, label=method)
        ax.fill_between(t, mean - se, mean + se, alpha=0.2)
    ax.set_xlabel(doc.get("x_label", "trials"))
    ax.set_ylabel("simple regret" if per_run_opt else f"best {doc['metric']} so far")
    ax.set_title(f"{doc['task']}: mean ± 1 SE over runs")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)


# Meta-tasks named in a meta-weights plot's legend (those of highest weight).
LEGEND_TASKS = 8


def plot_meta_weights(doc: Mapping[str, Any], path: str | Path) -> Path | None:
    """Meta-weight of each meta-task per trial (mean over the runs of each method that has them).

    Parameters
    ----------
    doc : mapping
        A results document.
    path : str or path-like
        PNG file to write.

    Returns
    -------
    pathlib.Path or None
        The file written, or None when no run recorded weights.
    """
    with_w = {
        m: runs
        for m, runs in doc["runs"].items()
        if runs and all(r.get("weights") for r in runs) and any(r["weights"][0] for r in runs)
    }
    if not with_w:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(
        1, len(with_w), figsize=(5.2 * len(with_w), 3.8), squeeze=False, sharey=True
    )
    for ax, (method, runs) in zip(axes[0], with_w.items(), strict=True):
        # leave-one-task-out runs (tabular) have different meta-tasks: plot the union; a
        # task's curve averages the runs that had it
        names = list(dict.fromkeys(n for r in runs for step in r["weights"] for n in step))
        length = min(len(r["weights"]) for r in runs)
        steps = np.arange(1, length + 1)
        curves = {}
        for name in names:
            w = np.array(
                [[step.get(name, np.nan) for step in r["weights"][:length]] for r in runs]
            )
            with warnings.catch_warnings():  # a task some runs never had: NaN there
                warnings.simplefilter("ignore", RuntimeWarning)
                curves[name] = np.nanmean(w, axis=0)
        # Many tasks: the few of highest weight named and coloured, the rest grey.
        named = sorted(curves, key=lambda n: -np.nanmax(curves[n]))[:LEGEND_TASKS]
        for name, curve in curves.items():
            if name not in named:
                ax.plot(steps, curve, color="0.75", lw=0.8)
        for i, name in enumerate(named):
            ax.plot(steps, curves[name], color=plt.cm.tab10(i % 10), label=name)
        rest = len(curves) - len(named)
        ax.set_title(f"{method}: meta-weights" + (f" ({rest} more in grey)" if rest else ""))
        ax.set_xlabel("trials")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[0][0].set_ylabel("weight (mean over runs)")
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)


def write_outputs(
    doc: Mapping[str, Any], out_dir: str | Path, horizons: Sequence[int]
) -> dict[str, Path]:
    """Write ``results.json``, ``results.md``, ``best_so_far.png`` and ``meta_weights.png``.

    Parameters
    ----------
    doc : mapping
        A results document.
    out_dir : str or path-like
        Directory (created if needed).
    horizons : sequence of int
        Trial counts for the table.

    Returns
    -------
    dict
        Output kind (``json``, ``markdown``, ``best_so_far``, ``meta_weights``) to file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "results.json", "markdown": out / "results.md"}
    files["json"].write_text(json.dumps(doc, indent=1, allow_nan=True))
    files["markdown"].write_text(summary_markdown(doc, horizons) + "\n")
    files["best_so_far"] = plot_best_so_far(doc, out / "best_so_far.png")
    weights = plot_meta_weights(doc, out / "meta_weights.png")
    if weights is not None:
        files["meta_weights"] = weights
    return files


def summary_markdown(doc: Mapping[str, Any], horizons: Sequence[int]) -> str:
    """The two tables (best-so-far and simple regret) with a one-line header.

    Parameters
    ----------
    doc : mapping
        A results document.
    horizons : sequence of int
        Trial counts for the table.

    Returns
    -------
    str
        Markdown text.
    """
    rows = summarize(doc, horizons)
    per_run = _per_run_optimum(doc)
    if per_run:
        ref = "each run's own optimum"
    elif doc.get("optimum") is not None:
        ref = f"the optimum {doc['optimum']}"
    else:
        ref = "the best value any method found"
    head = (
        f"**{doc['task']}** ({doc['metric']}, mode={doc['mode']}, budget {doc['budget']}); "
        f"mean ± standard error over runs; regret against {ref}."
    )
    parts = [head, ""]
    if any(k.startswith("nregret@") for r in rows for k in r):
        parts[0] += " Normalized regret: `|optimum - best| / |optimum - worst|` per run."
        parts += [markdown_table(rows, metric="nregret"), ""]
    if not per_run:
        parts += [markdown_table(rows, metric="best"), ""]
    parts.append(markdown_table(rows, metric="regret"))
    reference = next(iter(doc["runs"]), None)
    paired = paired_differences(doc, reference, horizons) if reference else []
    if paired and max(r["targets"] for r in paired) > 1:
        parts += [
            "",
            f"Paired by target ({reference}'s normalized regret minus each method's, runs of a "
            "target averaged over seeds first; mean ± standard error over targets; in bold "
            f"where that method is ahead of {reference} by more than one standard error):",
            "",
            paired_markdown(paired, reference),
        ]
    return "\n".join(parts)


def normalized_regret(runs: Sequence[Mapping[str, Any]], mode: str) -> Array:
    """Normalized regret curves of tabular runs, one row per run.

    Parameters
    ----------
    runs : sequence of mapping
        Run records carrying ``values``, ``optimum`` and ``worst``.
    mode : {"max", "min"}
        The metric's direction.

    Returns
    -------
    ndarray of shape (runs, trials)
        ``|optimum - best so far| / |optimum - worst|`` (NaN where a grid is constant), cut
        to the shortest run.
    """
    _check_mode(mode)
    curves = _curves(runs, mode)
    opt = np.array([r["optimum"] for r in runs], dtype=np.float64)[:, None]
    span = np.abs(opt - np.array([r["worst"] for r in runs], dtype=np.float64)[:, None])
    return np.abs(opt - curves) / np.where(span > 0, span, math.nan)


def regret_by_target(runs: Sequence[Mapping[str, Any]], mode: str) -> dict[str, Array]:
    """Normalized regret curves of tabular runs, averaged over the runs of each target.

    Parameters
    ----------
    runs : sequence of mapping
        Run records carrying ``target``, ``values``, ``optimum`` and ``worst``.
    mode : {"max", "min"}
        The metric's direction.

    Returns
    -------
    dict of str to ndarray
        Per target, the mean over its runs of ``|optimum - best so far| / |optimum - worst|``
        (NaN where a grid is constant), cut to the shortest run.
    """
    out: dict[str, list[Array]] = {}
    for r, row in zip(runs, normalized_regret(runs, mode), strict=True):
        out.setdefault(r["target"], []).append(row)
    return {t: np.mean(rows, axis=0) for t, rows in out.items()}


def paired_differences(
    doc: Mapping[str, Any], reference: str, horizons: Sequence[int]
) -> list[dict[str, Any]]:
    """The reference method's normalized regret minus each other method's, paired by target.

    Each method's runs on one target are averaged over seeds first; the difference is then
    taken per target, over the targets both methods ran, and summarized by its mean and
    standard error over targets. A negative difference means the reference is ahead.

    Parameters
    ----------
    doc : mapping
        A results document whose runs carry ``target`` and ``worst`` (tabular benchmarks).
    reference : str
        The method compared against every other one.
    horizons : sequence of int
        Trial counts (those beyond the shortest run are skipped).

    Returns
    -------
    list of dict
        One row per other method: ``method``, ``targets`` (the number paired) and
        ``diff@k`` as ``(mean, se)`` pairs; empty when the reference did not run or the runs
        carry no target or worst value.
    """
    _check_mode(doc["mode"])
    runs = doc["runs"].get(reference) or []
    if not runs or not all(
        "target" in r and "worst" in r for rs in doc["runs"].values() for r in rs
    ):
        return []

    ref = regret_by_target(runs, doc["mode"])
    rows = []
    for method, method_runs in doc["runs"].items():
        if method == reference or not method_runs:
            continue
        other = regret_by_target(method_runs, doc["mode"])
        targets = sorted(set(ref) & set(other))
        if not targets:
            continue
        length = min(len(ref[targets[0]]), len(other[targets[0]]))
        row: dict[str, Any] = {"method": method, "targets": len(targets)}
        for h in horizons:
            if 1 <= h <= length:
                diff = np.array([ref[t][h - 1] - other[t][h - 1] for t in targets])
                row[f"diff@{h}"] = mean_se(diff)
        rows.append(row)
    return rows


def paired_markdown(rows: Sequence[Mapping[str, Any]], reference: str) -> str:
    """Rows from :func:`paired_differences` as a markdown table; a difference is in bold
    where that method is ahead of the reference by more than one standard error."""
    keys = sorted(
        {k for r in rows for k in r if k.startswith("diff@")}, key=lambda k: int(k.split("@")[1])
    )
    head = "| method | targets | " + " | ".join(f"{reference} minus it @{k[5:]}" for k in keys)
    lines = [head + " |", "|---" * (len(keys) + 2) + "|"]
    for r in rows:
        cells = []
        for k in keys:
            if k not in r:
                cells.append("-")
                continue
            mean, se = r[k]
            text = f"{mean:+.4f} ± {se:.4f}"
            cells.append(f"**{text}**" if mean > se else text)
        lines.append(f"| {r['method']} | {r['targets']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _per_run_optimum(doc: Mapping[str, Any]) -> bool:
    """Whether every run carries its own optimum (different functions per run)."""
    return all(r.get("optimum") is not None for runs in doc["runs"].values() for r in runs)


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a ``results.json`` written by :func:`write_outputs`.

    Parameters
    ----------
    path : str or path-like
        The JSON file or the directory holding it.

    Returns
    -------
    dict
        The results document.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    if not p.is_file():
        raise FileNotFoundError(f"no benchmark results at {p}")
    try:
        doc = json.loads(p.read_text())
    except ValueError as exc:
        raise ValueError(f"{p} is not a benchmark results file: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{p} is not a benchmark results file: not a JSON object")
    for key in ("task", "metric", "mode", "runs"):
        if key not in doc:
            raise ValueError(f"{p} is not a benchmark results file: missing {key!r}")
    return doc
