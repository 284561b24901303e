"""One method against the strongest other one, on every tabular benchmark at once.

``rmbo-tune bench scoreboard DIR [DIR ...]`` reads the ``results.json`` of several
``rmbo-tune bench tabular`` runs (one per meta-dataset; ``NAME=DIR`` names a row, else the
directory's name does; ``NAME=DIR,DIR,...`` pools the runs of one grid made with different
``--seed``) and, at each horizon, compares the reference method (``--reference``,
default ``rm-gp-ucb``) with the other method of lowest mean normalized regret there: the
strongest baseline a practitioner could have picked for that grid and budget, chosen after
the fact, which favours the baselines. The difference is paired by target (each method's runs
of a target averaged over seeds first; mean ± standard error over targets), as in
:func:`rmbo_tune.bench.report.paired_differences`.

It writes ``scoreboard.md`` (the reference's regret, the strongest other method's, their
paired difference, and every method ahead of the reference by more than one standard error)
and ``scoreboard.png`` (the difference in standard errors, one cell per grid and horizon).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbo_tune.bench.options import out_dir, positive_int_list
from rmbo_tune.bench.report import load_results, mean_se, pyplot, regret_by_target, save_figure

__all__ = [
    "compare",
    "load_named",
    "main",
    "markdown",
    "named_result",
    "paired_cell",
    "plot",
    "pooled_runs",
    "write",
]


def compare(
    doc: Mapping[str, Any], reference: str, horizons: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """The reference against every other method of one tabular results document.

    Parameters
    ----------
    doc : mapping
        A results document of ``rmbo-tune bench tabular`` (runs carry ``target`` and
        ``worst``).
    reference : str
        The method compared with the others.
    horizons : sequence of int
        Evaluation counts; those beyond the shortest run are left out.

    Returns
    -------
    dict of int to dict
        Per horizon: ``reference`` (its mean regret over targets), ``targets`` (their
        number), ``best`` (the other method of lowest mean regret), ``best_regret``,
        ``diff`` and ``se`` (the reference minus ``best``, paired by target; negative when
        the reference is ahead) and ``ahead`` (every other method ahead of the reference by
        more than one standard error, with its paired difference).

    Raises
    ------
    ValueError
        If the reference or every other method is missing, or the runs carry no target.
    """
    runs = doc["runs"]
    if reference not in runs or not runs[reference]:
        raise ValueError(f"method {reference!r} has no runs; there are {sorted(runs)}")
    others = [m for m in runs if m != reference and runs[m]]
    if not others:
        raise ValueError(f"no method besides {reference!r} to compare with")
    if not all("target" in r and "worst" in r for rs in runs.values() for r in rs):
        raise ValueError("runs carry no target or worst value: not a tabular benchmark")
    curves = {m: regret_by_target(runs[m], doc["mode"]) for m in [reference, *others]}
    targets = sorted(set.intersection(*(set(c) for c in curves.values())))
    if not targets:
        raise ValueError("no target was run by every method")
    length = min(len(c[t]) for c in curves.values() for t in targets)
    table = {m: np.array([curves[m][t][:length] for t in targets]) for m in curves}
    out: dict[int, dict[str, Any]] = {}
    for h in horizons:
        if not 1 <= h <= length:
            continue
        means = {m: float(np.nanmean(table[m][:, h - 1])) for m in others}
        best = min(others, key=lambda m: means[m])
        paired = {m: mean_se(table[reference][:, h - 1] - table[m][:, h - 1]) for m in others}
        out[h] = {
            "reference": float(np.nanmean(table[reference][:, h - 1])),
            "targets": len(targets),
            "best": best,
            "best_regret": means[best],
            "diff": paired[best][0],
            "se": paired[best][1],
            "ahead": {m: paired[m] for m in others if paired[m][0] > paired[m][1]},
        }
    return out


def paired_cell(row: Mapping[str, Any]) -> str:
    """A paired difference as a table cell, ``diff ± se``, in bold where the reference is
    behind by more than one standard error.

    Parameters
    ----------
    row : mapping
        One horizon of what :func:`compare` returns (``diff`` and ``se``).

    Returns
    -------
    str
        The Markdown cell text.
    """
    text = f"{row['diff']:+.4f} ± {row['se']:.4f}"
    return f"**{text}**" if row["diff"] > row["se"] else text


def markdown(boards: Mapping[str, Mapping[int, Mapping[str, Any]]], reference: str) -> str:
    """Tables of :func:`compare` results, one row per benchmark.

    Parameters
    ----------
    boards : mapping of str to dict
        Per benchmark name, what :func:`compare` returned.
    reference : str
        The reference method's name, for the headers.

    Returns
    -------
    str
        Markdown: the regrets with the strongest other method, the paired differences (in
        bold where the reference is behind by more than one standard error), and the methods
        ahead of it.
    """
    horizons = sorted({h for b in boards.values() for h in b})
    head = " | ".join(f"@{h}" for h in horizons)
    sep = "|---" * (len(horizons) + 1) + "|"
    regret = [f"| benchmark | {head} |", sep]
    diffs = [f"| benchmark | {head} |", sep]
    ahead = []
    for name, board in boards.items():
        cells, dcells = [], []
        for h in horizons:
            if h not in board:
                cells.append("-")
                dcells.append("-")
                continue
            row = board[h]
            cells.append(f"{row['reference']:.4f} ({row['best']} {row['best_regret']:.4f})")
            dcells.append(f"{paired_cell(row)} ({row['best']})")
            for method, (mean, se) in row["ahead"].items():
                ahead.append(f"- {name} @{h}: {method}, {mean:+.4f} ± {se:.4f}")
        regret.append(f"| {name} | " + " | ".join(cells) + " |")
        diffs.append(f"| {name} | " + " | ".join(dcells) + " |")
    parts = [
        f"Mean normalized regret of {reference} (in brackets: the other method of lowest mean "
        "regret at that horizon, and its regret):",
        "",
        *regret,
        "",
        f"{reference} minus that method, paired by target (mean ± standard error over "
        f"targets; negative: {reference} ahead; bold: behind by more than one standard error):",
        "",
        *diffs,
        "",
        f"Methods ahead of {reference} by more than one standard error:",
        "",
        *(ahead or ["- none"]),
    ]
    return "\n".join(parts) + "\n"


def plot(
    boards: Mapping[str, Mapping[int, Mapping[str, Any]]],
    reference: str,
    path: str | Path,
    title: str | None = None,
) -> Path:
    """Heat map of the paired difference in standard errors, one cell per benchmark and
    horizon, annotated with the difference (and, without ``title``, the strongest other
    method); a horizon beyond a benchmark's runs is a blank cell marked "beyond budget".

    Parameters
    ----------
    boards : mapping of str to dict
        Per benchmark name, what :func:`compare` returned.
    reference : str
        The reference's name, for the title ("blue: ... ahead").
    path : str or path-like
        Where the PNG goes.
    title : str, optional
        The first line of the title, when the other side is one fixed run (an ablation's
        base) rather than the strongest other method.

    Returns
    -------
    Path
        The file written.
    """
    plt = pyplot()
    names = list(boards)
    horizons = sorted({h for b in boards.values() for h in b})
    z = np.full((len(names), len(horizons)), math.nan)
    fig, ax = plt.subplots(figsize=(1.9 * len(horizons) + 2.2, 0.55 * len(names) + 1.6))
    for i, name in enumerate(names):
        for j, h in enumerate(horizons):
            row = boards[name].get(h)
            if row is None:
                # The benchmark's runs are shorter than this horizon.
                ax.text(j, i, "beyond budget", ha="center", va="center", fontsize=7, color="0.5")
                continue
            se = row["se"] if row["se"] > 0 else math.inf
            z[i, j] = np.clip(row["diff"] / se, -3.0, 3.0) if math.isfinite(se) else 0.0
            text = f"{row['diff']:+.4f}" + ("" if title else f"\n{row['best']}")
            # White on the darkest cells, where black text would not read.
            color = "white" if abs(z[i, j]) >= 2.0 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    image = ax.imshow(z, cmap="RdBu_r", vmin=-3.0, vmax=3.0, aspect="auto")
    ax.set_xticks(range(len(horizons)), [f"@{h}" for h in horizons])
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("evaluations")
    first = title or f"{reference} minus the strongest other method"
    ax.set_title(
        f"{first}\n(blue: {reference} ahead; colour: difference / SE, clipped at 3)", fontsize=10
    )
    fig.colorbar(image, ax=ax, label="difference / standard error")
    fig.tight_layout()
    return save_figure(fig, path)


def named_result(arg: str) -> tuple[str, Path]:
    """A ``NAME=DIR`` command-line argument as (name, path); a bare ``DIR`` is named after
    its last component."""
    name, sep, path = arg.partition("=")
    if not sep:
        path = name
        name = Path(path.rstrip("/")).name
    return name, Path(path).expanduser()


# The settings of a tabular run that pooled results must share: only the seeds (and which
# targets, methods or how many seeds each ran) may differ.
POOLED_ALIKE = (
    "data",
    "meta_samples",
    "meta_tasks",
    "meta_search",
    "mirror",
    "unrecorded",
    "fixed",
    "noise",
    "initial",
    "batch",
    "continuous",
    "options",
)


def _setting(settings: Mapping[str, Any], key: str) -> Any:
    """A setting as pooling compares it: the data by its folder's name (another checkout
    holds the same grid elsewhere)."""
    value = settings.get(key)
    if key == "data" and isinstance(value, str):
        return os.path.basename(os.path.normpath(value))
    return value


def pooled_runs(docs: Sequence[Mapping[str, Any]], where: str) -> dict[str, Any]:
    """One results document with every method's runs from ``docs`` (runs of the same grid
    with different ``--seed``): the first document with the others' runs appended.

    Each document numbers its seeds from 0, so the runs of the k-th keep their seed plus the
    number of seeds before it: a run is still paired (``rmbo-tune bench tails``) with the
    other methods' run of its own document, target and seed.

    Raises
    ------
    ValueError
        If the documents differ in task, metric, mode, budget or a setting of the protocol
        (:data:`POOLED_ALIKE`), or two hold the same base seed for a target (the same runs
        twice); ``where`` names them.
    """
    first = docs[0]
    seen: dict[Any, set] = {}
    for doc in docs:
        for key in ("task", "metric", "mode", "budget"):
            if doc.get(key) != first.get(key):
                raise ValueError(f"{where}: {key} {doc.get(key)!r} is not {first.get(key)!r}")
        a, b = first.get("settings", {}), doc.get("settings", {})
        for key in POOLED_ALIKE:
            if _setting(b, key) != _setting(a, key):
                raise ValueError(
                    f"{where}: setting {key!r} differs ({a.get(key)!r} and {b.get(key)!r}): "
                    "only runs of the same protocol with other seeds pool"
                )
        targets = {r["target"] for rs in doc["runs"].values() for r in rs if "target" in r}
        base = b.get("seed")
        if base is not None and seen.get(base, set()) & targets:
            raise ValueError(f"{where}: base seed {base} twice for the same targets")
        seen.setdefault(base, set()).update(targets)
    runs: dict[str, list[Any]] = {}
    offset = 0
    for doc in docs:
        seeds = [r["seed"] for rs in doc["runs"].values() for r in rs if "seed" in r]
        for method, rs in doc["runs"].items():
            runs.setdefault(method, []).extend(
                {**r, "seed": r["seed"] + offset} if "seed" in r else r for r in rs
            )
        offset += max(seeds, default=-1) + 1
    return {**first, "runs": runs}


def load_named(
    parser: argparse.ArgumentParser, results: Sequence[str]
) -> dict[str, tuple[Path, dict[str, Any]]]:
    """The tabular results documents of ``NAME=DIR`` (or ``DIR``) arguments, by name, each
    with its path; ``NAME=DIR,DIR,...`` pools the runs of several directories of one grid
    (runs with different ``--seed``). ``parser.error`` on a repeated name, documents that
    cannot be pooled, or a results file of another task."""
    docs: dict[str, tuple[Path, dict[str, Any]]] = {}
    for arg in results:
        name, path = named_result(arg)
        if name in docs:
            parser.error(f"two results are named {name!r}: give NAME=DIR")
        paths = [Path(part).expanduser() for part in str(path).split(",")]
        try:
            doc = pooled_runs([load_results(p) for p in paths], arg)
        except (FileNotFoundError, ValueError) as exc:
            parser.error(str(exc))
        if doc["task"] != "tabular":
            parser.error(f"{path} holds a {doc['task']!r} benchmark, not a tabular one")
        docs[name] = (paths[0], doc)
    return docs


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench scoreboard``).

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    """
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench scoreboard",
        description="Compare one method with the strongest other one on several "
        "'rmbo-tune bench tabular' results at once.",
    )
    p.add_argument(
        "results",
        nargs="+",
        help="results directories or files, as DIR, NAME=DIR, or NAME=DIR,DIR,... to pool "
        "the runs of one grid with different --seed",
    )
    p.add_argument("--reference", default="rm-gp-ucb", help="method compared (rm-gp-ucb)")
    p.add_argument(
        "--horizons", type=positive_int_list, default=[5, 10, 25, 50], help="5,10,25,50"
    )
    p.add_argument("--out", type=out_dir, default="bench-results/scoreboard")
    a = p.parse_args(argv)
    boards: dict[str, dict[int, dict[str, Any]]] = {}
    for name, (path, doc) in load_named(p, a.results).items():
        try:
            boards[name] = compare(doc, a.reference, a.horizons)
        except ValueError as exc:
            p.error(f"{path}: {exc}")
    write(boards, markdown(boards, a.reference), a.out, "scoreboard", a.reference)


def write(
    boards: Mapping[str, Mapping[int, Mapping[str, Any]]],
    text: str,
    out: str | Path,
    stem: str,
    reference: str,
    title: str | None = None,
) -> None:
    """Write ``STEM.md`` (``text``) and ``STEM.png`` (:func:`plot`) to ``out`` and print
    the table and where both went.

    Parameters
    ----------
    boards : mapping of str to dict
        Per benchmark name, what :func:`compare` returned.
    text : str
        The Markdown tables.
    out : str or path-like
        The output directory, created if missing.
    stem : str
        The files' name without extension.
    reference, title : str
        As :func:`plot` takes them.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    md = folder / f"{stem}.md"
    md.write_text(text)
    png = plot(boards, reference, folder / f"{stem}.png", title=title)
    print(text)
    print(f"wrote {md} and {png}")
