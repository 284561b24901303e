"""MetaTask, LoadReport and the report table."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from rmbo_tune.engine.options import MetaBOOptions


@dataclass
class LoadReport:
    """What happened to the trials of one meta-task while it was loaded.

    ``found == used + sum(dropped.values())`` always holds.

    Attributes
    ----------
    source : str
        The path, URI or description of what was read.
    reader : str
        How it was read: "experiment_state", "trial_files", "ExperimentAnalysis",
        "ResultGrid", "DataFrame", "CSV", "pairs" or "MetaTask".
    metric_read : str
        The metric as read from the source, with its map to the target metric if any
        (e.g. ``"-1 * neg_loss"``).
    found, used : int
        Trials (observations) found, and kept in the task.
    dropped : dict of str to int
        Trials dropped, by reason: "errored", "nan", "inf", "missing_metric", "no_results",
        "truncated_result" (a result file with no readable line), "missing_config",
        "below_fidelity" (stopped before the ``fidelity`` asked of the load),
        "out_of_space:<reason>" (reason as in :class:`~rmbo_tune.exceptions.OutOfSpaceError`,
        or "other_fixed_value": see ``fixed_keys``).
    notes : dict of str to int
        Events that dropped nothing: "truncated_result" (a truncated last line was skipped),
        "unreadable_result_lines", "clipped", "state_file_missing", "state_file_unreadable",
        "trials_not_in_state", "realigned".
    extra_keys : dict of str to int
        Config keys that the search space does not know (ignored), with how many configs
        had them.
    unrecorded_keys : list of str
        Searched keys that no config of the task has (a parameter its experiment did not
        search): its configs are kept, and the searcher's GP of the task is constant along
        these keys.
    fixed_keys : list of str
        Keys the search space holds constant that the task's experiment searched: only its
        trials at the space's value are kept (the others dropped as
        "out_of_space:other_fixed_value"), where at least
        :data:`~rmbo_tune.meta_tasks._compact.MIN_FIXED_TRIALS` ran there; else the list is
        empty and every trial is kept.
    value_min, value_max : float or None
        Range of the values kept, in the target metric's units.
    """

    source: str
    reader: str = ""
    metric_read: str = ""
    found: int = 0
    used: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    extra_keys: dict[str, int] = field(default_factory=dict)
    unrecorded_keys: list[str] = field(default_factory=list)
    fixed_keys: list[str] = field(default_factory=list)
    value_min: float | None = None
    value_max: float | None = None

    def drop(self, reason: str, n: int = 1) -> None:
        """Count ``n`` trials dropped for ``reason``."""
        self.dropped[reason] = self.dropped.get(reason, 0) + n

    def note(self, what: str, n: int = 1) -> None:
        """Count ``n`` events that dropped nothing."""
        self.notes[what] = self.notes.get(what, 0) + n

    @property
    def n_dropped(self) -> int:
        """Total number of trials dropped."""
        return sum(self.dropped.values())

    def summary(self) -> str:
        """One line: ``"found 10, used 8; dropped errored 1, nan 1"``."""
        text = f"found {self.found}, used {self.used}"
        if self.dropped:
            text += "; dropped " + _counts(self.dropped)
        return text


@dataclass(repr=False)
class MetaTask:
    """Observations of one earlier tuning task, ready for a meta-BO searcher.

    A ``MetaTask`` unpacks as ``configs, values``, so it can go wherever a
    ``(configs, values)`` pair is accepted.

    Attributes
    ----------
    name : str
        The experiment directory's name, or ``"task_<i>"`` for in-memory sources.
    configs : list of dict
        Nested trial configs, as Tune passed them to the trainable (clipped values replaced
        under ``out_of_space="clip"``).
    values : list of float
        One finite value per config, in the target metric's units.
    metric : str
        The target metric's name.
    mode : {"min", "max"}
        The direction in which ``values`` are better (the target's mode).
    source : str
        Path, URI or description of the source.
    report : LoadReport
        Trials found, used and dropped by reason.
    """

    name: str
    configs: list[dict]
    values: list[float]
    metric: str
    mode: str
    source: str
    report: LoadReport = field(default_factory=lambda: LoadReport(""))

    def __post_init__(self) -> None:
        if len(self.configs) != len(self.values):
            raise ValueError(
                f"meta-task {self.name!r}: {len(self.configs)} configs but "
                f"{len(self.values)} values"
            )
        if self.mode not in ("min", "max"):
            raise ValueError(
                f"meta-task {self.name!r}: mode must be 'min' or 'max', got {self.mode!r}"
            )

    def __iter__(self) -> Iterator:
        return iter((self.configs, self.values))

    def __repr__(self) -> str:
        return (
            f"MetaTask(name={self.name!r}, n={len(self.values)}, metric={self.metric!r}, "
            f"mode={self.mode!r}, source={self.source!r})"
        )

    def best(self) -> tuple[dict, float]:
        """The best (config, value) of the task in its mode."""
        if not self.values:
            raise ValueError(f"meta-task {self.name!r} is empty")
        pick = max if self.mode == "max" else min
        i = pick(range(len(self.values)), key=self.values.__getitem__)
        return self.configs[i], self.values[i]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def _fmt(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.4g}"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else "..." + text[-(width - 3) :]


def format_report(tasks: Sequence[MetaTask], *, source_width: int = 48) -> str:
    """The load reports of meta-tasks as a plain-text table.

    Parameters
    ----------
    tasks : sequence of MetaTask
        As returned by :func:`load_meta_tasks`.
    source_width : int, default=48
        Longer sources are cut on the left.

    Returns
    -------
    str
        One row per task (name, source, reader, metric read, found, used, dropped by reason,
        value range), a total row, then per task, if any: that the searcher fits its GP to
        fewer trials than it has (``max_meta_observations``), notes, and config keys not in
        the search space.
    """
    header = ["task", "source", "read from", "metric", "found", "used", "dropped", "values"]
    rows = []
    for t in tasks:
        r = t.report
        rows.append(
            [
                t.name,
                _shorten(t.source, source_width),
                r.reader,
                r.metric_read or t.metric,
                str(r.found),
                str(r.used),
                _counts(r.dropped) or "-",
                f"[{_fmt(r.value_min)}, {_fmt(r.value_max)}] ({t.mode})",
            ]
        )
    found = sum(t.report.found for t in tasks)
    used = sum(t.report.used for t in tasks)
    total: dict[str, int] = {}
    for t in tasks:
        for k, v in t.report.dropped.items():
            total[k] = total.get(k, 0) + v
    rows.append(
        [f"{len(tasks)} tasks", "", "", "", str(found), str(used), _counts(total) or "-", ""]
    )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    numeric = {4, 5}

    def line(row: list[str]) -> str:
        cells = [
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(row) for row in rows[:-1]]
    out += [line(["-" * w for w in widths]), line(rows[-1])]
    extras = []
    limit = MetaBOOptions().max_meta_observations
    for t in tasks:
        if limit is not None and t.report.used > limit:
            extras.append(
                f"{t.name}: the searcher fits this task's GP to {limit} of its {t.report.used} "
                "trials, its best quarter and a space-filling rest (max_meta_observations)"
            )
        if t.report.notes:
            extras.append(f"{t.name}: notes: {_counts(t.report.notes)}")
        if t.report.extra_keys:
            keys = ", ".join(f"{k} ({v})" for k, v in sorted(t.report.extra_keys.items()))
            extras.append(f"{t.name}: config keys not in the search space (ignored): {keys}")
        if t.report.unrecorded_keys:
            keys = ", ".join(t.report.unrecorded_keys)
            extras.append(f"{t.name}: did not search {keys} (its model is constant along them)")
        if t.report.fixed_keys:
            keys = ", ".join(t.report.fixed_keys)
            extras.append(
                f"{t.name}: searched {keys}; only its trials at this search's value used"
            )
    if extras:
        out += ["", *extras]
    return "\n".join(out)
