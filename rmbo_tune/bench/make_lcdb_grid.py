"""Build the ``lcdb-learners`` tabular meta-dataset from the Learning Curve Database.

``python -m rmbo_tune.bench.make_lcdb_grid --out rmbo_tune/bench/data/lcdb-learners``
(about a minute) reads LCDB 1.0 (Mohr, Viering, Loog and van Rijn, ECML PKDD 2022; MIT
licence), which scikit-learn learners reached what test accuracy at what training-set
size on OpenML datasets, and writes one CSV per dataset with the columns ``learner,
value``: each learner with its default hyperparameters, ``value`` its mean test accuracy
over LCDB's splits (5 outer x 5 inner for most) at the largest training size of that
dataset.

The source is LCDB's ``database-accuracy.csv`` and ``datasets.csv``, found in the folder
of the installed ``lcdb`` package (``pip install lcdb==0.1.0``; its 65 MB source archive
holds them) or in ``--source DIR``. Neither is shipped: only the derived table is.

A dataset is kept when all 19 learners reached its largest training size; 146 of the
database's 248 are. ``MultinomialNB`` is left out: it refuses negative features and has no
score on 114 datasets, and keeping it would leave 85.

This is the project's one family of meta-data that it did not compute itself, and the one
without a numeric hyperparameter: choosing a learner is a categorical search of 19 one-hot
columns, where the target GP cannot carry a value from one configuration to another and
everything an early evaluation gains comes from the earlier tasks. It was built after every
engine default was fixed and is used for no choice.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

SOURCE_FILES = ("database-accuracy.csv", "datasets.csv")
# Learners left out, with the reason in the module docstring.
EXCLUDED = ("sklearn.naive_bayes.MultinomialNB",)
_SUFFIXES = ("Classifier", "Analysis")


def short_name(learner: str) -> str:
    """The learner's column value: its class name without the module or a ``Classifier``
    / ``Analysis`` suffix (``sklearn.ensemble.ExtraTreesClassifier`` -> ``ExtraTrees``;
    ``SVC_rbf`` stays)."""
    name = learner.rsplit(".", 1)[-1]
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            name = name[: -len(suffix)]
    return name


def file_name(openml_id: str, name: str | None) -> str:
    """``<openml id>-<name>`` with the name lower-cased and anything but letters, digits,
    ``_`` and ``-`` replaced by ``-`` (the id alone where LCDB names no dataset)."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", (name or "").lower()).strip("-")
    return f"{openml_id}-{slug}" if slug else openml_id


def find_source(source: str | None) -> Path:
    """The folder holding LCDB's CSVs: ``source``, or the installed ``lcdb`` package's."""
    if source is None:
        spec = importlib.util.find_spec("lcdb")
        if spec is None or spec.origin is None:
            raise FileNotFoundError(
                "no --source given and the lcdb package is not installed (pip install lcdb==0.1.0)"
            )
        folder = Path(spec.origin).parent
    else:
        folder = Path(source).expanduser()
    missing = [name for name in SOURCE_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} has no {', '.join(missing)} (LCDB's source files)")
    return folder


def learner_tables(database: Path) -> dict[str, dict[str, float]]:
    """Per OpenML id, each learner's mean ``score_test`` at the dataset's largest
    ``size_train``, for the datasets where every learner not :data:`EXCLUDED` has one."""
    # (id, learner) -> [largest size seen, sum of its test scores, their count]
    best: dict[tuple[str, str], list[float]] = {}
    with open(database, newline="") as f:
        for row in csv.DictReader(f):
            if row["learner"] in EXCLUDED:
                continue
            key, size = (row["openmlid"], row["learner"]), float(row["size_train"])
            score = float(row["score_test"])
            entry = best.get(key)
            if entry is None or size > entry[0]:
                best[key] = [size, score, 1.0]
            elif size == entry[0]:
                entry[1] += score
                entry[2] += 1.0
    learners = sorted({learner for _, learner in best})
    per_dataset: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for (openml_id, learner), entry in best.items():
        per_dataset[openml_id][learner] = entry
    tables = {}
    for openml_id, entries in per_dataset.items():
        largest = max(entry[0] for entry in entries.values())
        if len(entries) == len(learners) and all(e[0] == largest for e in entries.values()):
            tables[openml_id] = {
                short_name(learner): entries[learner][1] / entries[learner][2]
                for learner in learners
            }
    return tables


def dataset_names(path: Path) -> dict[str, str]:
    """OpenML id to dataset name, from LCDB's ``datasets.csv``."""
    with open(path, newline="") as f:
        return {row["openmlid"]: row["Name"] for row in csv.DictReader(f)}


def write(tables: dict[str, dict[str, float]], names: dict[str, str], out: Path) -> list[Path]:
    """One ``learner,value`` CSV per dataset under ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for openml_id in sorted(tables, key=int):
        path = out / f"{file_name(openml_id, names.get(openml_id))}.csv"
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["learner", "value"])
            for learner, value in tables[openml_id].items():
                # Means of 25 scores of 4-6 decimals: 10 places hold them exactly.
                writer.writerow([learner, repr(round(value, 10))])
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    p = argparse.ArgumentParser(
        prog="python -m rmbo_tune.bench.make_lcdb_grid", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--source", help="folder with LCDB's CSVs (default: the lcdb package's)")
    p.add_argument("--out", default="lcdb-learners", help="output folder")
    a = p.parse_args(argv)
    try:
        source = find_source(a.source)
    except FileNotFoundError as exc:
        p.error(str(exc))
    start = time.perf_counter()
    tables = learner_tables(source / SOURCE_FILES[0])
    paths = write(tables, dataset_names(source / SOURCE_FILES[1]), Path(a.out))
    print(f"{len(paths)} datasets written to {a.out} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
