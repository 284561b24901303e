"""Reading a metric from trial records: which metric, in which units, one value per trial.

A meta-task may have recorded the target metric under another name or in other units
(``metric_map``): :func:`candidates` lists the names to try with their affine maps to the
target, and :meth:`MetricReader.pick` takes the first one the trials recorded. A trial's
value is then its best or its last reported value (``scope``), read from Tune's per-trial
metric summary when that is trustworthy and from its results otherwise; trials without a
finite value are dropped and counted in the :class:`LoadReport`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from rmbo_tune.meta_tasks import _storage as st
from rmbo_tune.meta_tasks._report import LoadReport

# Keys Tune adds to every result: not offered as "metrics found" in error messages.
_BOOKKEEPING = frozenset(
    "done training_iteration timestamp time_this_iter_s time_total_s time_since_restore "
    "iterations_since_restore pid date hostname node_ip trial_id experiment_tag "
    "checkpoint_dir_name experiment_id timesteps_total episodes_total timesteps_since_restore "
    "logdir should_checkpoint".split()
)


class Candidate:
    """A metric name to read and its affine map to the target: ``scale * x + offset``."""

    def __init__(self, name: str, scale: float = 1.0, offset: float = 0.0) -> None:
        self.name, self.scale, self.offset = name, scale, offset

    def __call__(self, x: float) -> float:
        return self.scale * x + self.offset

    def describe(self) -> str:
        """The map as the report shows it: ``"-1 * score + 1"``, or just the name."""
        if (self.scale, self.offset) == (1.0, 0.0):
            return self.name
        text = self.name if self.scale == 1.0 else f"{self.scale:g} * {self.name}"
        return text + (f" + {self.offset:g}" if self.offset else "")


def candidates(metric: str, metric_map: Mapping | None) -> list[Candidate]:
    """The metrics to read, in order: the target metric, then the keys of ``metric_map``.

    Parameters
    ----------
    metric : str
        The target metric (read as is, unless ``metric_map`` maps it).
    metric_map : mapping, optional
        ``{name: None | scale | (scale, offset)}``, as in ``load_meta_tasks``.

    Returns
    -------
    list of Candidate

    Raises
    ------
    TypeError
        A ``metric_map`` that is not a dict, or an entry of the wrong type.
    ValueError
        A zero or non-finite scale, or a non-finite offset.
    """
    if metric_map is None:
        return [Candidate(metric)]
    if not isinstance(metric_map, Mapping):
        raise TypeError(f"metric_map must be a dict, got {type(metric_map).__name__}")
    out = {}
    for name, spec in metric_map.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"metric_map keys must be metric names, got {name!r}")
        if spec is None:
            scale, offset = 1.0, 0.0
        elif isinstance(spec, numbers.Real) and not isinstance(spec, bool):
            scale, offset = float(spec), 0.0
        elif (
            isinstance(spec, tuple | list)
            and len(spec) == 2
            and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in spec)
        ):
            scale, offset = float(spec[0]), float(spec[1])
        else:
            raise TypeError(
                f"metric_map[{name!r}] must be None, a scale or a (scale, offset) pair of "
                f"numbers, got {spec!r}"
            )
        if not (math.isfinite(scale) and math.isfinite(offset)) or scale == 0.0:
            raise ValueError(
                f"metric_map[{name!r}] needs a finite non-zero scale and a finite offset, "
                f"got {spec!r}"
            )
        out[name] = Candidate(name, scale, offset)
    first = out.pop(metric, Candidate(metric))
    return [first, *out.values()]


def is_num(x: Any) -> bool:
    """Whether ``x`` is a real number (not a bool)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _get(result: Mapping, name: str) -> Any:
    if name in result:
        return result[name]
    node: Any = result
    for part in name.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _keys(result: Mapping, prefix: str = "") -> list[str]:
    out = []
    for k, v in result.items():
        if isinstance(v, Mapping) and v:
            if k != "config":
                out += _keys(v, f"{prefix}{k}/")
        else:
            out.append(f"{prefix}{k}")
    return out


def keep_finite(v: float, report: LoadReport) -> float | None:
    """``v`` if finite; otherwise None, counting the trial dropped as "nan" or "inf".

    Parameters
    ----------
    v : float
        A trial's value.
    report : LoadReport
        The task's report, where a drop is counted.

    Returns
    -------
    float or None
        ``v``, or None for a dropped trial.
    """
    if math.isnan(v):
        report.drop("nan")
    elif math.isinf(v):
        report.drop("inf")
    else:
        return v
    return None


def _reported(result: Mapping | None) -> bool:
    """Whether a last result holds anything but Tune's bookkeeping."""
    return bool(result) and any(k not in _BOOKKEEPING and k != "config" for k in result)


def _has(rec: st.TrialRecord, name: str) -> bool:
    if rec.summary is not None:
        return name in rec.summary
    if rec.last_result and _get(rec.last_result, name) is not None:
        return True
    return any(_get(row, name) is not None for row in rec.rows())


class MetricReader:
    """How one ``load_meta_tasks`` call reads a trial's value.

    Parameters
    ----------
    metric : str
        The target metric.
    mode : {"min", "max"}
        The target's direction: which value of a trial is best.
    scope : {"best", "last"}
        A trial's value: its best reported value, or its last.
    candidates : list of Candidate
        The metrics to try, in order (:func:`candidates`).
    """

    def __init__(
        self,
        metric: str,
        mode: str,
        scope: str,
        candidates: list[Candidate],
        fidelity: tuple[str, float] | None = None,
    ) -> None:
        self.metric, self.mode, self.scope, self.candidates = metric, mode, scope, candidates
        self.fidelity = fidelity

    def reached(self, rec: st.TrialRecord) -> bool:
        """Whether the trial reached :attr:`fidelity` (``(key, value)``; always with None):
        the largest value of the key in its summary, last result or result rows."""
        if self.fidelity is None:
            return True
        key, full = self.fidelity
        seen: list[float] = []
        s = rec.summary.get(key) if rec.summary else None
        if isinstance(s, Mapping):
            seen += [float(s[k]) for k in ("max", "last") if is_num(s.get(k))]
        if rec.last_result and is_num(_get(rec.last_result, key)):
            seen.append(float(_get(rec.last_result, key)))
        if not seen:
            seen = [float(v) for row in rec.rows() if is_num(v := _get(row, key))]
        return bool(seen) and max(seen) >= full

    def best(self, values: Sequence[float]) -> float:
        """The best of ``values`` in :attr:`mode`."""
        return max(values) if self.mode == "max" else min(values)

    def pick(self, records: list[st.TrialRecord], source: str) -> Candidate:
        """The first candidate that any of the trials recorded.

        Parameters
        ----------
        records : list of TrialRecord
            The trials of one source.
        source : str
            The source, as error messages name it.

        Returns
        -------
        Candidate

        Raises
        ------
        ValueError
            When no trial recorded any candidate; the message lists the metrics found.
        """
        for cand in self.candidates:
            if any(_has(r, cand.name) for r in records):
                return cand
        found: set[str] = set()
        for r in records:
            if r.summary:
                found.update(r.summary)
            for res in ([r.last_result] if r.last_result else []) + (r._rows or [])[:1]:
                found.update(_keys(res))
        found = {k for k in found if k not in _BOOKKEEPING and not k.startswith("config/")}
        names = ", ".join(repr(c.name) for c in self.candidates)
        raise ValueError(
            f"metric {names} not found in {source}; metrics found: "
            f"{', '.join(sorted(found)) or '(none)'}. Map one of them to {self.metric!r} with "
            f"metric_map={{name: (scale, offset)}} (RMBOSearcher's meta_metric_map=, the "
            f"command line's --map NAME=SCALE[,OFFSET])"
        )

    def value(self, rec: st.TrialRecord, cand: Candidate, report: LoadReport) -> float | None:
        """One trial's value in the target's units under :attr:`scope`.

        Parameters
        ----------
        rec : TrialRecord
            The trial.
        cand : Candidate
            The metric to read (from :meth:`pick`).
        report : LoadReport
            The task's report: a dropped trial is counted under its reason.

        Returns
        -------
        float or None
            The value, or None for a trial that is dropped.
        """
        if rec.errored:
            report.drop("errored")
            return None
        if not self.reached(rec):
            report.drop("below_fidelity")  # stopped early by a scheduler
            return None
        s = rec.summary.get(cand.name) if rec.summary else None
        if rec.summary and s is None:  # Tune summarizes every numeric metric reported
            report.drop("missing_metric")
            return None
        if isinstance(s, Mapping) and is_num(s.get("last")):
            if self.scope == "last":
                return keep_finite(cand(float(s["last"])), report)
            # Tune's running max/min restart after a NaN; a finite running mean says none occurred.
            if all(is_num(s.get(k)) and math.isfinite(s[k]) for k in ("max", "min", "avg")):
                return self.best([cand(float(s["max"])), cand(float(s["min"]))])
        elif self.scope == "last" and rec.last_result and is_num(_get(rec.last_result, cand.name)):
            return keep_finite(cand(float(_get(rec.last_result, cand.name))), report)
        rows = rec.rows()
        if rec.truncated:
            report.note("truncated_result")
        if rec.bad_lines:
            report.note("unreadable_result_lines", rec.bad_lines)
        vals = [float(x) for row in rows if is_num(x := _get(row, cand.name))]
        if not vals and isinstance(s, Mapping) and is_num(s.get("last")):
            # No result file to check against: trust the summary's extremes if finite. A
            # non-finite running mean says a NaN came first, and the extremes restarted
            # after it: the best before it is lost, which the report notes.
            ends = [float(s[k]) for k in ("max", "min") if is_num(s.get(k))]
            vals = [v for v in ends if math.isfinite(v)] or [float(s["last"])]
            if self.scope == "best" and not (is_num(s.get("avg")) and math.isfinite(s["avg"])):
                report.note("best_since_a_nan")
        last = _get(rec.last_result, cand.name) if rec.last_result else None
        if not vals and not rows and is_num(last):
            # Neither rows nor a summary (a result grid whose files did not load): the last
            # result is the one value known, for "best" too, which the report notes.
            vals = [float(last)]
            report.note("best_from_last_result")
        if not vals:
            if not rows and rec.truncated:
                report.drop("truncated_result")
            elif not rows and not rec.summary and not _reported(rec.last_result):
                report.drop("no_results")
            else:
                report.drop("missing_metric")
            return None
        if self.scope == "last":
            return keep_finite(cand(vals[-1]), report)
        finite = [cand(v) for v in vals if math.isfinite(v)]
        if not finite:
            return keep_finite(
                cand(vals[-1]) if any(math.isinf(v) for v in vals) else math.nan, report
            )
        return self.best(finite)
