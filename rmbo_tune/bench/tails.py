"""How often, and how badly, each method loses to plain GP-UCB, run by run.

``rmbo-tune bench tails DIR [DIR ...]`` reads the ``results.json`` of several ``rmbo-tune
bench tabular`` runs (``NAME=DIR`` names a grid) and pairs every run of each method with
the baseline's run (``--baseline``, default ``gp-ucb``) of the same target and seed, which
read the same meta-task rows. Means over targets hide a method that is usually a little
ahead and now and then far behind; a robust method should be no worse than plain GP-UCB on
average and have a far smaller worst case than the transfer methods that lack a
guarantee. At each horizon and for each method, over the pairs of every grid pooled:

- ``behind`` and ``ahead``: the share of pairs where its normalized regret is above (below)
  the baseline's by more than ``--tolerance`` (default 0: any difference);
- ``mean``: the mean difference (negative: ahead);
- ``p99`` and ``worst``: the 99th percentile and the largest difference, the size of its
  losses in the worst 1% of runs and in the worst one.

It writes ``tails.md`` (the pooled table per horizon, then the reference method's figures
grid by grid) and ``tails.png`` (at ``--plot-horizon``, each method's worst differences against the
share of runs, log-scaled: the tail at a glance).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbo_tune.bench.options import nonnegative_float, out_dir, positive_int, positive_int_list
from rmbo_tune.bench.report import normalized_regret, pyplot, save_figure
from rmbo_tune.bench.scoreboard import load_named
from rmbo_tune.engine.types import Array

__all__ = ["main", "markdown", "paired_gaps", "plot", "pooled", "summarize"]


def paired_gaps(
    doc: Mapping[str, Any], baseline: str, horizons: Sequence[int]
) -> dict[str, dict[int, Array]]:
    """Every method's normalized regret minus the baseline's, run by run.

    Parameters
    ----------
    doc : mapping
        A results document of ``rmbo-tune bench tabular`` (runs carry ``target``, ``seed``
        and ``worst``).
    baseline : str
        The method every other one is paired with.
    horizons : sequence of int
        Evaluation counts; those beyond the shortest run are left out.

    Returns
    -------
    dict of str to dict of int to ndarray
        Per method other than the baseline, per horizon, the differences over the (target,
        seed) pairs both ran (NaN pairs, from a constant grid, left out).

    Raises
    ------
    ValueError
        If the baseline has no runs, the runs carry no target or seed, or a method shares
        no (target, seed) with the baseline.
    """
    runs = doc["runs"]
    if not runs.get(baseline):
        raise ValueError(f"baseline {baseline!r} has no runs; there are {sorted(runs)}")
    if not all({"target", "seed", "worst"} <= set(r) for rs in runs.values() for r in rs):
        raise ValueError("runs carry no target, seed or worst value: not a tabular benchmark")
    mode = doc["mode"]
    base_rows = normalized_regret(runs[baseline], mode)
    base = {
        (r["target"], r["seed"]): row for r, row in zip(runs[baseline], base_rows, strict=True)
    }
    out: dict[str, dict[int, Array]] = {}
    for method, rs in runs.items():
        if method == baseline or not rs:
            continue
        rows = normalized_regret(rs, mode)
        keys = [(r["target"], r["seed"]) for r in rs]
        pairs = [(row, base[k]) for row, k in zip(rows, keys, strict=True) if k in base]
        if not pairs:
            raise ValueError(f"{method!r} shares no (target, seed) with {baseline!r}")
        length = min(rows.shape[1], base_rows.shape[1])
        gaps = np.array([a[:length] - b[:length] for a, b in pairs])
        out[method] = {}
        for h in horizons:
            if 1 <= h <= length:
                col = gaps[:, h - 1]
                out[method][h] = col[np.isfinite(col)]
    return out


def summarize(gaps: Array, tolerance: float = 0.0) -> dict[str, float]:
    """``behind``, ``ahead`` (shares beyond ``tolerance``), ``mean``, ``p99``, ``worst`` and
    ``runs`` of one set of paired differences (module docstring)."""
    if len(gaps) == 0:
        raise ValueError("no paired runs to summarize")
    return {
        "runs": len(gaps),
        "behind": float(np.mean(gaps > tolerance)),
        "ahead": float(np.mean(gaps < -tolerance)),
        "mean": float(gaps.mean()),
        "p99": float(np.quantile(gaps, 0.99)),
        "worst": float(gaps.max()),
    }


def pooled(
    grids: Mapping[str, Mapping[str, Mapping[int, Array]]],
) -> dict[str, dict[int, Array]]:
    """The paired differences of every grid, pooled per method and horizon (the methods
    and horizons every grid has)."""
    methods = set.intersection(*(set(g) for g in grids.values()))
    out: dict[str, dict[int, Array]] = {}
    for m in sorted(methods):
        hs = set.intersection(*(set(g[m]) for g in grids.values()))
        out[m] = {h: np.concatenate([g[m][h] for g in grids.values()]) for h in sorted(hs)}
    return out


def markdown(
    grids: Mapping[str, Mapping[str, Mapping[int, Array]]],
    baseline: str,
    reference: str,
    tolerance: float = 0.0,
    horizons: Sequence[int] | None = None,
) -> str:
    """The pooled table per horizon (``horizons``, default every one the grids have), then
    ``reference``'s figures grid by grid."""
    pool = pooled(grids)
    have = {h for per in pool.values() for h in per}
    horizons = sorted(have if horizons is None else have.intersection(horizons))
    head = "| method | runs | behind | ahead | mean | p99 | worst |\n|---|---|---|---|---|---|---|"
    tol = f" by more than {tolerance:g}" if tolerance > 0 else ""
    parts = [
        f"Normalized regret minus {baseline}'s on the same target and seed, every run of "
        f"{len(grids)} grid(s) pooled: the share of runs behind and ahead{tol}, the mean "
        "difference, its 99th percentile and the worst run (positive: behind).",
    ]
    for h in horizons:
        parts += ["", f"@{h}:", "", head]
        for m, per in pool.items():
            if h in per:
                parts.append(_row(m, summarize(per[h], tolerance)))
    if reference in pool:
        parts += ["", f"{reference} grid by grid:", ""]
        parts.append(
            "| grid | " + " | ".join(f"@{h} behind / ahead, worst" for h in horizons) + " |"
        )
        parts.append("|---|" + "---|" * len(horizons))
        for name, g in grids.items():
            cells = []
            for h in horizons:
                if reference in g and h in g[reference]:
                    s = summarize(g[reference][h], tolerance)
                    cells.append(f"{s['behind']:.2f} / {s['ahead']:.2f}, {s['worst']:+.3f}")
                else:
                    cells.append("")
            parts.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(parts) + "\n"


def _row(method: str, s: Mapping[str, float]) -> str:
    return (
        f"| {method} | {s['runs']} | {s['behind']:.3f} | {s['ahead']:.3f} | {s['mean']:+.4f} "
        f"| {s['p99']:+.3f} | {s['worst']:+.3f} |"
    )


def plot(
    pool: Mapping[str, Mapping[int, Array]], baseline: str, horizon: int, path: str | Path
) -> Path:
    """The tail of each method's paired differences at ``horizon``: the k-th worst
    difference against k / runs on a log scale (the worst run on the left, the worst 1%
    at 0.01), down to the worst fifth; written to ``path``."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for m, per in pool.items():
        if horizon not in per or len(per[horizon]) == 0:
            continue
        gaps = np.sort(per[horizon])[::-1]
        share = np.arange(1, len(gaps) + 1) / len(gaps)
        keep = share <= 0.2
        ax.step(share[keep], gaps[keep], where="post", label=m)
    ax.set_xscale("log")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel("share of runs, worst first")
    ax.set_ylabel(f"normalized regret minus {baseline}'s")
    ax.set_title(f"The worst runs against {baseline} at {horizon} evaluations (above 0: behind)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench tails``).

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    """
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench tails",
        description="How often and how badly each method loses to a baseline, run by run, "
        "on several 'rmbo-tune bench tabular' results.",
    )
    p.add_argument(
        "results",
        nargs="+",
        help="results directories or files, as DIR, NAME=DIR, or NAME=DIR,DIR,... to pool "
        "the runs of one grid with different --seed",
    )
    p.add_argument("--baseline", default="gp-ucb", help="method paired with (gp-ucb)")
    p.add_argument("--reference", default="rm-gp-ucb", help="method shown grid by grid")
    p.add_argument("--horizons", type=positive_int_list, default=[10, 25, 50], help="10,25,50")
    p.add_argument("--plot-horizon", type=positive_int, default=25, help="25")
    p.add_argument("--tolerance", type=nonnegative_float, default=0.0, help="0")
    p.add_argument("--out", type=out_dir, default="bench-results/tails")
    a = p.parse_args(argv)
    grids: dict[str, dict[str, dict[int, Array]]] = {}
    named = load_named(p, a.results)
    budget = min(
        len(run["values"])
        for _, doc in named.values()
        for runs in doc["runs"].values()
        for run in runs
    )
    if a.plot_horizon > budget:  # no run reached it: the plot would be empty
        print(f"note: --plot-horizon {a.plot_horizon} is beyond the budget; plotted at {budget}")
        a.plot_horizon = budget
    for name, (path, doc) in named.items():
        try:
            grids[name] = paired_gaps(doc, a.baseline, sorted({*a.horizons, a.plot_horizon}))
        except ValueError as exc:
            p.error(f"{path}: {exc}")
    text = markdown(grids, a.baseline, a.reference, a.tolerance, a.horizons)
    folder = Path(a.out)
    folder.mkdir(parents=True, exist_ok=True)
    md = folder / "tails.md"
    md.write_text(text)
    png = plot(pooled(grids), a.baseline, a.plot_horizon, folder / "tails.png")
    print(text)
    print(f"wrote {md} and {png}")


if __name__ == "__main__":
    main()
