"""Tabular benchmark data: read, validate and encode a directory of task files.

The file format (one ``.csv`` or ``.jsonl`` file per task, hyperparameter values, encoding to
the unit cube, missing metric values, duplicate rows) is documented once, in the *Data format*
section of :mod:`rmbo_tune.bench.tabular`; this module implements it. :func:`load_tabular`
returns a :class:`TabularBenchmark`: one :class:`TabularTask` grid per file, all sharing one
:class:`Encoding`.

Only numpy and scipy are used: CSV and JSON lines are read with the standard library rather
than pandas.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import RegularGridInterpolator
from scipy.spatial import cKDTree

from rmbo_tune.engine.types import Array

SUFFIXES = (".csv", ".jsonl")
AUTO_LOG_RATIO = 1e3
# Distinct configs must be this far apart in the cube: the engine treats points closer than
# its duplicate_tol (1e-6) as one, so closer configs could never both be suggested.
MIN_SEPARATION = 1e-5


@dataclass(frozen=True)
class Encoding:
    """How configs map to the unit cube.

    Attributes
    ----------
    columns : list of str
        Hyperparameter columns, in the order of each config tuple.
    numeric : dict
        Numeric column to ``(low, high, log)``: the cube coordinate is
        ``(v - low) / (high - low)``, with ``v = log10(value)`` when ``log``.
    categories : dict
        Categorical column to its sorted categories (one cube coordinate each).
    features : list of str
        Name of each cube coordinate (``column`` or ``column=category``).
    """

    columns: list[str]
    numeric: dict[str, tuple[float, float, bool]]
    categories: dict[str, list[str]]
    features: list[str]

    def encode(self, configs: Sequence[tuple]) -> Array:
        """Configs (tuples in ``columns`` order) as points of shape (n, n_features)."""
        parts = []
        for j, col in enumerate(self.columns):
            vals = [c[j] for c in configs]
            if col in self.numeric:
                low, high, log = self.numeric[col]
                if high > low:
                    v = np.asarray(vals, dtype=np.float64)
                    parts.append((((np.log10(v) if log else v) - low) / (high - low))[:, None])
            else:
                cats = self.categories[col]
                if len(cats) > 1:
                    parts.append(
                        np.array([[v == c for c in cats] for v in vals], dtype=np.float64)
                    )
        return np.clip(np.hstack(parts), 0.0, 1.0)

    def project(self, X: Array) -> Array:
        """Points (n, n_features) with each categorical column's coordinates set to the
        one-hot vector of its largest one: the cube points that stand for configs."""
        X = np.array(X, dtype=np.float64, copy=True).reshape(-1, len(self.features))
        start = 0
        for col in self.columns:
            if col in self.numeric:
                low, high, _ = self.numeric[col]
                start += int(high > low)
            elif (k := len(self.categories[col])) > 1:
                block = X[:, start : start + k]
                onehot = np.zeros_like(block)
                onehot[np.arange(len(block)), np.argmax(block, axis=1)] = 1.0
                X[:, start : start + k] = onehot
                start += k
        return X


@dataclass(frozen=True)
class TabularTask:
    """One task's grid: distinct configs and their (averaged) metric values.

    Attributes
    ----------
    name, path
        Task name (file stem) and the file read.
    configs : list of tuple
        Distinct configs in the encoding's column order (floats for numeric columns).
    X : ndarray of shape (n_configs, n_features)
        The configs in the unit cube.
    values : ndarray of shape (n_configs,)
        Metric in the table's units (mean over duplicate rows).
    n_rows, n_dropped, n_merged : int
        Rows read, rows dropped for a missing or non-finite metric, duplicate rows merged.
    """

    name: str
    path: Path
    configs: list[tuple]
    X: Array
    values: Array
    n_rows: int
    n_dropped: int
    n_merged: int

    def best(self, mode: str) -> float:
        """Best metric value of the grid."""
        return float(self.values.max() if mode == "max" else self.values.min())

    def nearest(self, x: Array, free: NDArray[np.bool_] | None = None) -> int:
        """Index of the config nearest to the point ``x`` of the unit cube, among those
        where ``free`` is True when given (at least one must be)."""
        dist = ((self.X - x) ** 2).sum(axis=1)
        if free is not None:
            dist = np.where(free, dist, np.inf)
        return int(np.argmin(dist))


class GridInterpolation:
    """A task's values between its configs: multilinear interpolation over the numeric cube
    coordinates, within each combination of categories (``scipy.interpolate``'s
    ``RegularGridInterpolator``). Each value is a convex combination of table values, so the
    grid's best config stays the best point of the cube.

    Parameters
    ----------
    task : TabularTask
        Its configs must form the full product of each numeric coordinate's values within
        every combination of categories.
    encoding : Encoding
        The benchmark's encoding (which coordinates are one-hot).

    Raises
    ------
    ValueError
        Naming the task's file when its configs are not such a grid.
    """

    def __init__(self, task: TabularTask, encoding: Encoding) -> None:
        onehot = np.array(["=" in f for f in encoding.features])
        X = task.X
        axes = {j: np.unique(X[:, j]) for j in np.flatnonzero(~onehot)}
        self._num = [j for j, a in axes.items() if len(a) > 1]
        self._cat = np.flatnonzero(onehot)
        grids = [axes[j] for j in self._num]
        shape = tuple(len(a) for a in grids)
        self._low = np.array([a[0] for a in grids])
        self._high = np.array([a[-1] for a in grids])
        self._tables: dict[tuple, RegularGridInterpolator] = {}
        keys = [tuple(row) for row in X[:, self._cat].astype(int)]
        for key in sorted(set(keys)):
            rows = [i for i, k in enumerate(keys) if k == key]
            if len(rows) != int(np.prod(shape)):
                names = [encoding.features[j] for j in self._num]
                raise ValueError(
                    f"{task.path}: configs are not a full grid over {names} "
                    f"({len(rows)} of {int(np.prod(shape))} combinations for one choice of "
                    "categories); a continuous search needs one"
                )
            table = np.empty(shape)
            index = tuple(
                np.searchsorted(a, X[rows, j]) for a, j in zip(grids, self._num, strict=True)
            )
            table[index] = task.values[rows]
            self._tables[key] = RegularGridInterpolator(grids, table)

    def __call__(self, x: Array) -> float:
        """The value at one point of the cube whose one-hot coordinates are projected."""
        key = tuple(np.rint(x[self._cat]).astype(int))
        z = np.clip(x[self._num], self._low, self._high)
        return float(self._tables[key](z[None, :])[0])


@dataclass(frozen=True)
class TabularBenchmark:
    """Tasks loaded by :func:`load_tabular`, sorted by name, sharing one encoding."""

    tasks: list[TabularTask]
    encoding: Encoding
    metric: str
    mode: str

    def task(self, name: str) -> TabularTask:
        """The task called ``name``."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise ValueError(f"no task {name!r}; tasks are {[t.name for t in self.tasks]}")


# ---------------------------------------------------------------------- reading
def _csv_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty; expected a header row of column names")
        header = [h.strip() for h in header]
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise ValueError(f"{path} has duplicate column names {dup}")
        rows = []
        for fields in reader:
            if not fields or all(not f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                raise ValueError(
                    f"{path} line {reader.line_num}: {len(fields)} fields, expected "
                    f"{len(header)} (columns {header})"
                )
            rows.append(
                (reader.line_num, {h: f.strip() for h, f in zip(header, fields, strict=True)})
            )
    return header, rows


def _json_text(v: Any) -> str:
    """A JSON value as the text a CSV cell would hold ("" for null)."""
    return "" if v is None else v if isinstance(v, str) else json.dumps(v)


def _jsonl_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    header: dict[str, None] = {}
    rows = []
    with path.open() as fh:
        for k, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} line {k} is not valid JSON: {exc}") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path} line {k}: expected a JSON object, got {line.strip()!r}")
            header.update(dict.fromkeys(map(str, rec)))
            rows.append((k, {str(key): _json_text(v) for key, v in rec.items()}))
    return list(header), rows


def _is_finite_number(v: str) -> bool:
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def _metric(v: str, path: Path, line: int, metric: str) -> float:
    if v == "":
        return math.nan
    try:
        x = float(v)
    except ValueError:
        raise ValueError(
            f"{path} line {line}: metric {metric!r} is {v!r}, not a number "
            "(empty, 'nan' or null mark a missing value)"
        ) from None
    return x if math.isfinite(x) else math.nan


def _list_files(data_dir: Path) -> list[Path]:
    if not data_dir.is_dir():
        raise ValueError(f"the data must be a directory of task files, got {str(data_dir)!r}")
    files = sorted(
        p
        for p in data_dir.iterdir()
        if p.is_file() and p.suffix in SUFFIXES and not p.name.startswith(".")
    )
    if not files:
        raise ValueError(
            f"no task files ({', '.join('*' + s for s in SUFFIXES)}) in {data_dir}; expected "
            "one file per task"
        )
    stems = [p.stem for p in files]
    clash = sorted({s for s in stems if stems.count(s) > 1})
    if clash:
        raise ValueError(f"task names {clash} appear twice in {data_dir} (.csv and .jsonl)")
    if len(files) < 2:
        raise ValueError(
            f"{data_dir} holds one task file ({files[0].name}); leave-one-task-out needs "
            "at least two"
        )
    return files


def _read_tasks(
    files: Sequence[Path], metric: str, ignore: Sequence[str]
) -> tuple[list[str], list[tuple[Path, list[tuple[int, dict[str, str]]]]]]:
    """Rows of every file and the hyperparameter columns they share."""
    raw, columns, first = [], [], files[0]
    for path in files:
        header, rows = (_csv_rows if path.suffix == ".csv" else _jsonl_rows)(path)
        header = [h for h in header if h not in ignore]
        if metric not in header:
            raise ValueError(
                f"{path} has no metric column {metric!r}; its columns are {header}. "
                "Pass --metric NAME"
            )
        params = [h for h in header if h != metric]
        if path == first:
            columns = params
            if not columns:
                raise ValueError(f"{path} has no hyperparameter columns besides {metric!r}")
        elif set(params) != set(columns):
            raise ValueError(
                f"{path}: hyperparameter columns differ from {first.name}'s: missing "
                f"{sorted(set(columns) - set(params))}, extra {sorted(set(params) - set(columns))}"
                " (every task file needs the same columns; --ignore-columns drops extras)"
            )
        raw.append((path, rows))
    return columns, raw


def _numeric_columns(columns: Sequence[str], raw: Sequence[tuple[Path, list]]) -> dict[str, bool]:
    """Whether each column's values, over all tasks, all parse as finite numbers."""
    numeric = dict.fromkeys(columns, True)
    for path, rows in raw:
        for line, row in rows:
            for col in columns:
                v = row.get(col, "")
                if v == "":
                    raise ValueError(
                        f"{path} line {line}: hyperparameter {col!r} has no value; every row "
                        "needs every hyperparameter (fill inactive ones with a constant)"
                    )
                if numeric[col] and not _is_finite_number(v):
                    numeric[col] = False
    return numeric


def _make_encoding(
    columns: Sequence[str],
    numeric: Mapping[str, bool],
    configs: Sequence[tuple],
    log_columns: Sequence[str],
    auto_log: bool,
) -> Encoding:
    """Column ranges (log or linear) and categories over the configs of all tasks."""
    unknown = sorted(set(log_columns) - set(columns))
    if unknown:
        raise ValueError(f"--log-columns names unknown columns {unknown}; columns are {columns}")
    text = sorted(c for c in log_columns if not numeric[c])
    if text:
        raise ValueError(f"--log-columns names non-numeric columns {text}")
    ranges, categories, features = {}, {}, []
    for j, col in enumerate(columns):
        if not numeric[col]:
            categories[col] = sorted({c[j] for c in configs})
            if len(categories[col]) > 1:
                features += [f"{col}={cat}" for cat in categories[col]]
            continue
        v = np.array([c[j] for c in configs], dtype=np.float64)
        positive = bool(v.min() > 0)
        if col in log_columns and not positive:
            raise ValueError(
                f"log column {col!r} has a value {v.min():g} <= 0; log scaling needs "
                "positive values (drop it from --log-columns)"
            )
        log = col in log_columns or (auto_log and positive and v.max() > AUTO_LOG_RATIO * v.min())
        t = np.log10(v) if log else v
        ranges[col] = (float(t.min()), float(t.max()), bool(log))
        if t.max() > t.min():
            features.append(col)
    return Encoding(list(columns), ranges, categories, features)


def load_tabular(
    data_dir: str | Path,
    *,
    mode: str,
    metric: str = "value",
    log_columns: Sequence[str] = (),
    auto_log: bool = True,
    ignore_columns: Sequence[str] = (),
) -> TabularBenchmark:
    """Read a directory of task files (format: :mod:`rmbo_tune.bench.tabular`).

    Parameters
    ----------
    data_dir : str or path-like
        Directory with one ``.csv`` or ``.jsonl`` file per task.
    mode : {"min", "max"}
        Direction of the metric.
    metric : str
        Name of the metric column.
    log_columns : sequence of str
        Numeric columns scaled by ``log10`` (values must be positive).
    auto_log : bool
        Also log-scale positive numeric columns with ``max / min > 1000``.
    ignore_columns : sequence of str
        Columns dropped before anything else.

    Returns
    -------
    TabularBenchmark

    Raises
    ------
    ValueError
        Naming the file (and line or column) of any format error.
    """
    if mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
    data_dir = Path(data_dir)
    columns, raw = _read_tasks(_list_files(data_dir), metric, ignore_columns)
    numeric = _numeric_columns(columns, raw)
    grids = []  # (path, rows read, rows dropped, config -> metric values)
    for path, rows in raw:
        groups: dict[tuple, list[float]] = {}
        for line, row in rows:
            y = _metric(row.get(metric, ""), path, line, metric)
            if not math.isnan(y):
                cfg = tuple(float(row[c]) if numeric[c] else row[c] for c in columns)
                groups.setdefault(cfg, []).append(y)
        if not groups:
            raise ValueError(f"{path} has no row with a finite metric {metric!r}")
        n_kept = sum(len(g) for g in groups.values())
        grids.append((path, len(rows), len(rows) - n_kept, groups))
    configs = [c for *_, groups in grids for c in groups]
    enc = _make_encoding(columns, numeric, configs, log_columns, auto_log)
    if not enc.features:
        raise ValueError(f"every hyperparameter column of {data_dir} is constant")
    tasks = []
    for path, n_rows, n_dropped, groups in grids:
        X = enc.encode(list(groups))
        _check_separation(X, list(groups), path)
        values = np.array([np.mean(g) for g in groups.values()])
        n_merged = n_rows - n_dropped - len(X)
        tasks.append(
            TabularTask(path.stem, path, list(groups), X, values, n_rows, n_dropped, n_merged)
        )
    return TabularBenchmark(tasks, enc, metric, mode)


def _check_separation(X: Array, configs: list[tuple], path: Path) -> None:
    if len(X) < 2:
        return
    dist, idx = cKDTree(X).query(X, k=2)
    i = int(np.argmin(dist[:, 1]))
    if dist[i, 1] < MIN_SEPARATION:
        raise ValueError(
            f"{path}: configs {configs[i]} and {configs[idx[i, 1]]} are {dist[i, 1]:.2g} apart "
            f"in the unit cube (less than {MIN_SEPARATION:g}), too close for the engine to tell "
            "apart; round that column or log-scale it with --log-columns"
        )


def describe(bench: TabularBenchmark) -> str:
    """One line per task (rows, configs, dropped and merged rows, best value) and the encoding."""
    enc = bench.encoding
    cols = ", ".join(
        (f"{c} (log)" if enc.numeric[c][2] else c)
        if c in enc.numeric
        else f"{c} ({len(enc.categories[c])} categories)"
        for c in enc.columns
    )
    lines = [f"{len(bench.tasks)} tasks, columns: {cols}; {len(enc.features)} cube dimensions"]
    for t in bench.tasks:
        lines.append(
            f"  {t.name}: {t.n_rows} rows, {len(t.X)} configs, {t.n_dropped} dropped "
            f"(NaN {bench.metric}), {t.n_merged} duplicates merged, best {t.best(bench.mode):.6g}"
        )
    return "\n".join(lines)
