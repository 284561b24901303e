"""One method with other options against its default, on every tabular benchmark at once.

``rmbo-tune bench ablation BASE VARIANT`` reads two ``rmbo-tune bench tabular`` results that
differ only in ``--option`` (the same suite or data, targets, seeds, meta-task protocol and
budget): each either one results directory or a folder of them, one subdirectory per
benchmark (``runs/random/hgb``, ``runs/random/knn``, ...), matched by name. For one method
(``--method``, default ``rm-gp-ucb``) it gives the variant's mean normalized regret, the
base's, and the variant minus the base, paired by target (each target's runs averaged over
seeds first; mean ± standard error over targets), as
:func:`rmbo_tune.bench.scoreboard.compare` pairs methods. The runs of a target and seed see
the same meta-task rows in both, so the pairing removes the spread between targets and
seeds; what is left is the options' effect.

Results whose settings differ in anything but the options are refused, naming the setting:
their runs would not pair.

It writes ``ablation.md`` and ``ablation.png`` (the difference in standard errors, one cell
per benchmark and horizon).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rmbo_tune.bench.options import out_dir, positive_int_list
from rmbo_tune.bench.report import load_results
from rmbo_tune.bench.scoreboard import compare, paired_cell, pooled_runs, write

__all__ = ["main", "markdown", "pair", "pair_folders"]

# Settings of a tabular run that may differ between the two sides: what is ablated, and
# where the data lies (another checkout); the tasks read from it, with their row counts and
# best values, must agree.
ABLATED = ("options", "methods", "data")
BASE, VARIANT = "base", "variant"


def pair(
    base: Mapping[str, Any], variant: Mapping[str, Any], method: str, horizons: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """The variant's runs of one method against the base's, paired by target.

    Parameters
    ----------
    base, variant : mapping
        Results documents of ``rmbo-tune bench tabular`` whose settings differ in the
        options (and the methods run) only.
    method : str
        The method compared; both documents must have its runs.
    horizons : sequence of int
        Evaluation counts; those beyond the shortest run are left out.

    Returns
    -------
    dict of int to dict
        Per horizon, what :func:`~rmbo_tune.bench.scoreboard.compare` returns with the
        variant as reference: ``reference`` (the variant's mean regret over targets),
        ``best_regret`` (the base's), ``diff`` and ``se`` (the variant minus the base,
        paired by target; negative when the variant is ahead) and ``targets``.

    Raises
    ------
    ValueError
        If either document is not a tabular benchmark, lacks the method's runs, the
        settings differ in anything but the options (the setting is named), or no horizon
        is within the runs' length.
    """
    for name, doc in ((BASE, base), (VARIANT, variant)):
        if doc.get("task") != "tabular":
            kind = doc.get("task")
            raise ValueError(f"the {name} holds a {kind!r} benchmark, not a tabular one")
        if not doc["runs"].get(method):
            have = sorted(doc["runs"])
            raise ValueError(f"the {name} has no runs of {method!r}; it has {have}")
    if base["mode"] != variant["mode"]:
        raise ValueError(f"mode differs: base {base['mode']!r}, variant {variant['mode']!r}")
    a, b = base.get("settings", {}), variant.get("settings", {})
    for key in sorted((set(a) | set(b)) - set(ABLATED)):
        if a.get(key) != b.get(key):
            raise ValueError(
                f"setting {key!r} differs (base {a.get(key)!r}, variant {b.get(key)!r}): "
                "the runs would not pair; only the options may differ"
            )
    runs = {VARIANT: variant["runs"][method], BASE: base["runs"][method]}
    board = compare({"mode": base["mode"], "runs": runs}, VARIANT, horizons)
    if not board:
        length = min(len(r["values"]) for rs in runs.values() for r in rs)
        raise ValueError(f"no horizon of {list(horizons)} within the runs' {length} evaluations")
    return board


def pair_folders(
    base: str | Path, variant: str | Path, method: str, horizons: Sequence[int]
) -> dict[str, dict[int, dict[str, Any]]]:
    """:func:`pair` on two results directories, or on every benchmark of two folders.

    Parameters
    ----------
    base, variant : str or path-like
        Each a results directory (holding ``results.json``) or a folder of them, one
        subdirectory per benchmark; subdirectories are matched by name. Several,
        comma-separated, are pooled (runs of the same grids with different ``--seed``, as
        :func:`~rmbo_tune.bench.scoreboard.pooled_runs` pools them): a benchmark is then
        one that every folder of both sides holds.
    method : str
        The method compared.
    horizons : sequence of int
        Evaluation counts.

    Returns
    -------
    dict of str to dict
        Per benchmark name (the subdirectory's, or the variant directory's own), what
        :func:`pair` returns; in the order of the base folder's names.

    Raises
    ------
    FileNotFoundError
        If a side holds no results, or the two folders share no benchmark name.
    ValueError
        As :func:`pair`, prefixed with the benchmark's name.
    """
    bases, variants = _paths(base), _paths(variant)
    names: dict[str, tuple[list[Path], list[Path]]]
    if any((p / "results.json").is_file() for p in [*bases, *variants]):
        names = {variants[0].name: (bases, variants)}
    else:
        sides = [_benchmarks(p) for p in [*bases, *variants]]
        shared = [n for n in sides[0] if all(n in side for side in sides[1:])]
        if not shared:
            folders = [*bases, *variants]
            listed = ", ".join(f"{p} ({n})" for p, n in zip(folders, sides, strict=True))
            raise FileNotFoundError(f"{listed} share no benchmark directory")
        names = {n: ([p / n for p in bases], [p / n for p in variants]) for n in shared}
    boards = {}
    for name, (b, v) in names.items():
        try:
            base_doc, variant_doc = (
                pooled_runs([load_results(p) for p in ps], name) for ps in (b, v)
            )
            boards[name] = pair(base_doc, variant_doc, method, horizons)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from exc
    return boards


def _paths(arg: str | Path) -> list[Path]:
    return [Path(part).expanduser() for part in str(arg).split(",") if part]


def _benchmarks(folder: Path) -> list[str]:
    if not folder.is_dir():
        raise FileNotFoundError(f"no benchmark results at {folder}")
    names = sorted(p.name for p in folder.iterdir() if (p / "results.json").is_file())
    if not names:
        raise FileNotFoundError(f"{folder} holds no results.json, nor subdirectories with one")
    return names


def markdown(boards: Mapping[str, Mapping[int, Mapping[str, Any]]], method: str) -> str:
    """The ablation's table, one row per benchmark.

    Parameters
    ----------
    boards : mapping of str to dict
        Per benchmark name, what :func:`pair` returned.
    method : str
        The method's name, for the header.

    Returns
    -------
    str
        Markdown: per horizon the variant's and the base's mean regret and their paired
        difference, in bold where the variant is behind by more than one standard error.
    """
    horizons = sorted({h for b in boards.values() for h in b})
    lines = [
        f"{method}, variant minus base: mean normalized regret (variant / base) and the "
        "difference paired by target (mean ± standard error over targets; negative: the "
        "variant ahead; bold: behind by more than one standard error):",
        "",
        "| benchmark | targets | " + " | ".join(f"@{h}" for h in horizons) + " |",
        "|---" * (len(horizons) + 2) + "|",
    ]
    for name, board in boards.items():
        cells = []
        for h in horizons:
            row = board.get(h)
            if row is None:
                cells.append("-")
                continue
            cells.append(f"{row['reference']:.4f} / {row['best_regret']:.4f}: {paired_cell(row)}")
        targets = max((row["targets"] for row in board.values()), default=0)
        lines.append(f"| {name} | {targets} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (``rmbo-tune bench ablation``).

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    """
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench ablation",
        description="Compare one method's 'rmbo-tune bench tabular' runs with other options "
        "(VARIANT) against the same runs with the default ones (BASE), paired by target.",
    )
    p.add_argument(
        "base",
        help="results directory, or a folder of them (one per benchmark); DIR,DIR,... pools "
        "runs with different --seed",
    )
    p.add_argument("variant", help="the same, run with other --option values")
    p.add_argument("--method", default="rm-gp-ucb", help="method compared (rm-gp-ucb)")
    p.add_argument(
        "--horizons", type=positive_int_list, default=[3, 5, 10, 25, 50], help="3,5,10,25,50"
    )
    p.add_argument("--out", type=out_dir, default="bench-results/ablation")
    a = p.parse_args(argv)
    try:
        boards = pair_folders(a.base, a.variant, a.method, a.horizons)
    except (FileNotFoundError, ValueError) as exc:
        p.error(str(exc))
    title = f"{a.method}: variant minus base"
    write(boards, markdown(boards, a.method), a.out, "ablation", "the variant", title=title)
