"""A search's diagnostics: the suggestion history file, and a finished search read back in
suggestion order (metric, best so far, nu and meta-weights).

``RMBOSearcher.history`` has one record per suggestion (trial id, nu, meta-weights by task
name); :func:`write_history` writes it, with the search's metric, mode, meta-task names and
counts, to :data:`HISTORY_FILE` beside each searcher checkpoint. A ``ResultGrid`` has each
trial's final metric. :func:`trace_lines` joins the two::

    grid = tuner.fit()
    for line in trace_lines(searcher.history, final_metrics(grid, "val_error"),
                            metric="val_error", mode="min"):
        print(line)

prints ``  1  val_error=0.1234  best=0.1234  nu=1.000  svhn=0.50, cifar10=0.50`` per trial.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rmbo_tune.engine.types import Array

HISTORY_FILE = "rmbo_history.json"


def write_history(
    path: str | os.PathLike,
    history: Sequence[Mapping[str, Any]],
    *,
    metric: str | None,
    mode: str | None,
    meta_tasks: Sequence[str],
    counts: Mapping[str, int],
    space: Mapping[str, Any] | None = None,
    added: Sequence[Mapping[str, Any]] = (),
    fidelity: Mapping[str, Any] | None = None,
) -> None:
    """Write a search's suggestion history as JSON, replacing ``path`` atomically.

    The file holds one object: ``metric``, ``mode``, ``meta_tasks``, ``counts``, ``space``,
    ``added``, ``fidelity`` and ``suggestions`` (the records, one per line, so that the
    file reads well). With the space, each suggestion's point ``x`` and outcome, the
    results given without a suggestion and the learning curves, it is enough to rebuild
    the search (:func:`read_history`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (a temporary file beside it is renamed onto it).
    history : sequence of mapping
        ``RMBOSearcher.history``: JSON-safe records, one per suggestion.
    metric, mode : str or None
        The search's metric and direction.
    meta_tasks : sequence of str
        Names of the meta-tasks the search uses, in the order of the engine's weights.
    counts : mapping of str to int
        The searcher's counts (observed, errored, ...).
    space : mapping, optional
        The search space as :func:`~rmbo_tune.space_codec.space_to_json` writes it.
    added : sequence of mapping, optional
        Results given with ``add_evaluated_point``: ``x``, ``outcome`` ("observed" or
        "failed"), ``value`` if observed, and ``after``, the number of suggestions made
        before it was given.
    fidelity : mapping, optional
        The trials' learning curves beside a scheduler (``FidelityTracker.state_dict``).
    """
    path = os.fspath(path)
    tmp = path + ".tmp"
    header = json.dumps(
        {
            "metric": metric,
            "mode": mode,
            "meta_tasks": list(meta_tasks),
            "counts": dict(counts),
            "space": None if space is None else dict(space),
            "added": [dict(a) for a in added],
            "fidelity": None if fidelity is None else dict(fidelity),
        }
    )
    with open(tmp, "w") as fh:
        # One suggestion per line, each encoded by json.dumps (its one-shot encoder runs in C).
        fh.write(header[:-1] + ', "suggestions": [\n')
        fh.write(",\n".join(json.dumps(r) for r in history))
        fh.write("\n]}\n")
    os.replace(tmp, path)


OUTCOMES = ("observed", "failed", "dropped", "stopped", None)  # None: running when written


def read_history(path: str | os.PathLike) -> dict[str, Any]:
    """Read a file written by :func:`write_history`, checking what a restore replays.

    Parameters
    ----------
    path : str or os.PathLike
        The history file.

    Returns
    -------
    dict
        ``metric``, ``mode``, ``meta_tasks``, ``counts``, ``space`` (None in files written
        without it), ``added`` (empty in files written without it) and ``suggestions``;
        each suggestion has ``x`` (its point in the unit cube), an ``outcome`` (None while
        running) and, if observed, the reported ``value``; each of ``added`` has ``x``, an
        ``outcome`` ("observed" or "failed"), ``after`` and, if observed, ``value``.

    Raises
    ------
    OSError, ValueError
        If the file cannot be read, or a suggestion lacks what a restore needs (the
        message names the file and the suggestion).
    """
    with open(path) as fh:
        saved = json.load(fh)
    if not isinstance(saved, dict) or not isinstance(saved.get("suggestions"), list):
        raise ValueError(f"{os.fspath(path)}: not a suggestion history")
    for i, rec in enumerate(saved["suggestions"]):
        ok = isinstance(rec, dict) and isinstance(rec.get("x"), list)
        ok = ok and rec.get("outcome") in OUTCOMES and isinstance(rec.get("trial_id"), str)
        if ok and rec.get("outcome") == "observed":
            ok = _is_number(rec.get("value"))
        if not ok:
            raise ValueError(f"{os.fspath(path)}: suggestion {i} cannot be replayed: {rec!r}")
    if not isinstance(saved.setdefault("fidelity", None), dict | None):
        raise ValueError(f"{os.fspath(path)}: 'fidelity' is not an object")
    saved.setdefault("added", [])
    if not isinstance(saved["added"], list):
        raise ValueError(f"{os.fspath(path)}: 'added' is not a list")
    for i, rec in enumerate(saved["added"]):
        ok = isinstance(rec, dict) and isinstance(rec.get("x"), list)
        ok = ok and rec.get("outcome") in ("observed", "failed")
        ok = ok and isinstance(rec.get("after"), int) and not isinstance(rec["after"], bool)
        if ok and rec["outcome"] == "observed":
            ok = _is_number(rec.get("value"))
        if not ok:
            raise ValueError(f"{os.fspath(path)}: added result {i} cannot be replayed: {rec!r}")
    return saved


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def name_by_task(record: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """Key a suggestion record's per-meta-task lists (``weights``, ``gaps``) by task name.

    Parameters
    ----------
    record : dict
        One record of the engine's history; changed in place.
    names : sequence of str
        The meta-tasks' names, in the engine's order; lists of another length are left as
        they are.

    Returns
    -------
    dict
        ``record``.
    """
    for key in ("weights", "gaps"):
        vals = record.get(key)
        if isinstance(vals, list) and len(vals) == len(names):
            record[key] = dict(zip(names, vals, strict=True))
    return record


def best_so_far(values: Sequence[float], mode: str) -> Array:
    """Best value after each trial; non-finite values (failed trials) never count as best.

    Parameters
    ----------
    values : sequence of float
        Metric of each trial in order (NaN for a trial without a result).
    mode : {"max", "min"}
        Direction of the metric.

    Returns
    -------
    numpy.ndarray
        Same length as ``values``; NaN until the first finite value.
    """
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    v = np.asarray(values, dtype=np.float64)
    signed = np.where(np.isfinite(v), v if mode == "max" else -v, -np.inf)
    best = np.maximum.accumulate(signed) if len(v) else signed
    out = best if mode == "max" else -best
    return np.where(np.isfinite(best), out, np.nan)


def final_metrics(results: Iterable[Any], metric: str) -> dict[str, float]:
    """Final ``metric`` of every trial that finished without error, by trial id.

    Parameters
    ----------
    results : iterable of ray.tune.Result
        A ``ResultGrid`` (or any iterable of Tune results).
    metric : str
        The metric to read.

    Returns
    -------
    dict
        Trial id to value; trials that errored or never reported ``metric`` are left out.
    """
    out = {}
    for r in results:
        metrics = r.metrics or {}
        if r.error is None and metric in metrics and "trial_id" in metrics:
            out[metrics["trial_id"]] = float(metrics[metric])
    return out


def trace_lines(
    history: Sequence[Mapping[str, Any]],
    values: Mapping[str, float],
    *,
    metric: str,
    mode: str,
    digits: int = 4,
    group: Callable[[str], str] | None = None,
) -> list[str]:
    """One line per suggestion: number, value, best so far, nu and meta-weights.

    Parameters
    ----------
    history : sequence of mapping
        ``RMBOSearcher.history`` (records with ``trial_id``, ``nu`` and ``weights``).
    values : mapping
        Trial id to final metric (:func:`final_metrics`); a trial without one shows NaN.
    metric : str
        Name shown for the value.
    mode : {"min", "max"}
        Direction of the metric, for the best so far.
    digits : int
        Decimals of the value and the best so far.
    group : callable, optional
        Maps a meta-task name to a group name; the weights are then summed by group (e.g.
        ``lambda name: name.rstrip("0123456789")``).

    Returns
    -------
    list of str
        The lines, without newlines.
    """
    vals = [values.get(record["trial_id"], float("nan")) for record in history]
    best = best_so_far(vals, mode)
    lines = []
    for t, (record, value, b) in enumerate(zip(history, vals, best, strict=True), 1):
        weights: dict[str, float] = {}
        for name, w in (record.get("weights") or {}).items():
            key = group(name) if group is not None else name
            weights[key] = weights.get(key, 0.0) + w
        shown = ", ".join(f"{k}={w:.2f}" for k, w in weights.items())
        nu = record.get("nu")
        lines.append(
            f"  {t:3d}  {metric}={value:.{digits}f}  best={b:.{digits}f}  "
            f"nu={float('nan') if nu is None else nu:.3f}  {shown}".rstrip()
        )
    return lines
