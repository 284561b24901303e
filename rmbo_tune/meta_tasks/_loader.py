"""load_meta_tasks: sources -> MetaTask objects in the target metric's units.

Each source (as :mod:`._sources` reads the argument) goes to its reader: experiment
directories and CSV files through :mod:`._storage`, result objects and frames through
:mod:`._records`; :mod:`._reduce` turns each trial into one value, :mod:`._align` keeps the
configs that belong to the search space, and every step is counted in the task's
:class:`LoadReport`.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow.fs as pafs

from rmbo_tune.meta_tasks import _storage as st
from rmbo_tune.meta_tasks._align import Aligner
from rmbo_tune.meta_tasks._records import (
    read_csv,
    records_from_analysis,
    records_from_frame,
    records_from_result_grid,
)
from rmbo_tune.meta_tasks._reduce import MetricReader, candidates, is_num, keep_finite
from rmbo_tune.meta_tasks._report import LoadReport, MetaTask
from rmbo_tune.meta_tasks._sources import instance_of, is_pair, is_path, normalize_sources

logger = logging.getLogger(__name__)


class _Context:
    """One call's settings: how trial values are read, configs aligned and paths opened."""

    def __init__(
        self, reader: MetricReader, aligner: Aligner | None, filesystem: pafs.FileSystem | None
    ) -> None:
        self.reader, self.aligner, self.filesystem = reader, aligner, filesystem
        self.metric, self.mode = reader.metric, reader.mode
        self.skip = False  # on_error="skip": an unusable experiment is logged and left out
        self.skipped: list[str] = []

    def attempt(self, where: str, load: Callable[[], list[MetaTask]]) -> list[MetaTask]:
        """``load()``, or with ``skip`` nothing when it fails with a ``ValueError``."""
        if not self.skip:
            return load()
        try:
            return load()
        except ValueError as exc:
            self.skipped.append(f"{where}: {exc}")
            logger.warning("meta-task source %s skipped: %s", where, exc)
            return []


def _finish(
    ctx: _Context, name: str, configs: list, values: list, source: str, report: LoadReport
) -> MetaTask:
    if ctx.aligner is not None:
        configs, values = ctx.aligner(configs, values, report)
    report.used = len(values)
    if not values:
        raise ValueError(
            f"no usable trial in {source}: {report.found} found; dropped "
            f"{report.summary().partition('dropped ')[2] or 'none'}"
        )
    report.value_min, report.value_max = min(values), max(values)
    return MetaTask(
        name, list(configs), [float(v) for v in values], ctx.metric, ctx.mode, source, report
    )


def _from_records(
    ctx: _Context, records: list[st.TrialRecord], name: str, report: LoadReport
) -> MetaTask:
    source = report.source
    report.found = len(records)
    if not records:
        raise ValueError(f"no trials in {source}")
    if all(r.errored for r in records):
        raise ValueError(f"every trial errored in {source} ({len(records)} trials)")
    cand = ctx.reader.pick(records, source)
    report.metric_read = cand.describe()
    configs, values = [], []
    for rec in records:
        v = ctx.reader.value(rec, cand, report)
        if v is None:
            continue
        if rec.config is None:
            report.drop("missing_config")
            continue
        configs.append(rec.config)
        values.append(v)
    return _finish(ctx, name, configs, values, source, report)


# --- in-memory sources --------------------------------------------------------------------


def _from_pair(ctx: _Context, pair: Sequence, name: str) -> MetaTask:
    configs, values = pair
    configs, values = list(configs), [v for v in values]
    if len(configs) != len(values):
        raise ValueError(f"meta-task {name!r}: {len(configs)} configs but {len(values)} values")
    report = LoadReport("(configs, values) pair", reader="pairs", metric_read=ctx.metric)
    report.found = len(configs)
    if not configs:
        raise ValueError(f"meta-task {name!r} is empty")
    keep_c, keep_v = [], []
    for c, v in zip(configs, values, strict=True):
        if not isinstance(c, Mapping):
            raise TypeError(f"meta-task {name!r}: configs must be dicts, got {c!r}")
        if not is_num(v):
            raise TypeError(f"meta-task {name!r}: values must be numbers, got {v!r}")
        if keep_finite(float(v), report) is not None:
            keep_c.append(dict(c))
            keep_v.append(float(v))
    return _finish(ctx, name, keep_c, keep_v, report.source, report)


def _from_metatask(ctx: _Context, task: MetaTask) -> MetaTask:
    report = copy.deepcopy(task.report)
    report.note("realigned")
    cand = next((c for c in ctx.reader.candidates if c.name == task.metric), None)
    if cand is None:
        raise ValueError(
            f"MetaTask {task.name!r} holds {task.metric!r}, not {ctx.metric!r}; map it with "
            f"metric_map={{{task.metric!r}: (scale, offset)}} (RMBOSearcher's "
            f"meta_metric_map=)"
        )
    if cand.name != ctx.metric:
        report.metric_read = f"{cand.describe()} (from {report.metric_read or task.metric})"
    # The task's values are finite, and they are the only observations: drops so far stay.
    report.used = 0
    values = [cand(v) for v in task.values]
    return _finish(ctx, task.name, list(task.configs), values, task.source, report)


# --- dispatch ----------------------------------------------------------------------------------


def _load_one(ctx: _Context, src: Any, name: str | None, index: int) -> list[MetaTask]:
    if isinstance(src, MetaTask):
        task = _from_metatask(ctx, src)
        task.name = name or task.name
        return [task]
    if is_pair(src):
        return [_from_pair(ctx, src, name or f"task_{index}")]
    if is_path(src):
        return _load_path(ctx, src, name)
    if instance_of(src, "pandas", "DataFrame"):
        report = LoadReport("DataFrame", reader="DataFrame")
        records = records_from_frame(src, "DataFrame")
        return [_from_records(ctx, records, name or f"task_{index}", report)]
    if instance_of(src, "ray.tune", "ResultGrid"):
        path = str(src.experiment_path)
        report = LoadReport(path, reader="ResultGrid")
        records = records_from_result_grid(src)
        return [_from_records(ctx, records, name or os.path.basename(path.rstrip("/")), report)]
    if instance_of(src, "ray.tune", "ExperimentAnalysis"):
        path = str(src.experiment_path)
        report = LoadReport(path, reader="ExperimentAnalysis")
        records = records_from_analysis(src)
        return [_from_records(ctx, records, name or os.path.basename(path.rstrip("/")), report)]
    raise TypeError(
        "a meta-task source must be a path, glob or URI, an ExperimentAnalysis, a ResultGrid, "
        f"a pandas DataFrame, a MetaTask or a (configs, values) pair; got {type(src).__name__}"
    )


def _from_csv(ctx: _Context, loc: Any) -> MetaTask:
    report = LoadReport(loc.display, reader="CSV")
    records = records_from_frame(read_csv(loc), loc.display)
    return _from_records(ctx, records, loc.name.rsplit(".", 1)[0], report)


def _from_experiment(ctx: _Context, exp: Any) -> MetaTask:
    report = LoadReport(exp.loc.display)
    records, report.reader = st.read_experiment(exp, report.notes)
    return _from_records(ctx, records, exp.loc.name, report)


def _load_path(ctx: _Context, src: Any, name: str | None) -> list[MetaTask]:
    out = []
    # A pattern's matches that hold no experiment and are no CSV (a notes file, an empty
    # folder beside the experiments) are left out, as a directory of experiments leaves such
    # entries out; a path named alone must be a source.
    pattern, ignored, skipped = st.is_glob(src), [], len(ctx.skipped)
    for loc in st.resolve(src, ctx.filesystem):
        if st.is_file(loc):
            if not loc.path.lower().endswith(".csv"):
                error = (
                    f"{loc.display} is a file but not a CSV; pass a Tune experiment directory, "
                    "a directory of experiments or a CSV file"
                )
                if not pattern:
                    raise ValueError(error)
                ignored.append(error)
                continue
            out += ctx.attempt(loc.display, lambda loc=loc: [_from_csv(ctx, loc)])
            continue
        try:
            experiments = st.find_experiments(loc)
        except ValueError as exc:
            if not pattern:
                raise
            ignored.append(str(exc))
            continue
        for exp in experiments:
            out += ctx.attempt(exp.loc.display, lambda exp=exp: [_from_experiment(ctx, exp)])
    if ignored:
        found = len(out) + len(ctx.skipped) - skipped
        if not found:
            raise ValueError(f"no match of {os.fspath(src)!r} is a meta-task source: {ignored[0]}")
        for reason in ignored:
            logger.info("meta-task pattern %s: a match left out: %s", os.fspath(src), reason)
    if name is not None:
        for task in out:
            task.name = name if len(out) == 1 else f"{name}/{task.name}"
    return out


def load_meta_tasks(
    sources: Any,
    metric: str,
    mode: str,
    *,
    scope: str = "best",
    metric_map: Mapping[str, Any] | None = None,
    space: Any = None,
    out_of_space: str = "drop",
    filesystem: pafs.FileSystem | None = None,
    on_error: str = "raise",
    fidelity: tuple[str, float] | None = None,
) -> list[MetaTask]:
    """Load earlier tuning runs as meta-tasks, in the target metric's units.

    Parameters
    ----------
    sources : source or list of sources or dict of name to source
        Each source is one of: a Tune experiment directory (local path or URI such as
        ``file:///...`` or ``s3://bucket/prefix``); a glob (``"~/ray_results/exp_*"``; globs
        work in URIs too); a directory holding several experiment directories (one task
        each); a CSV file; a ``tune.ExperimentAnalysis``; a ``tune.ResultGrid``; a pandas
        DataFrame with ``config/<key>`` columns and the metric (one row per trial, or one
        row per iteration with a ``trial_id`` column); a :class:`MetaTask` (aligned again);
        a ``(configs, values)`` pair (values already in the target's units). A dict names
        its sources (a source that expands to several tasks names them ``name/<dir>``).
    metric : str
        The target metric; nested metrics as ``"a/b"``.
    mode : {"min", "max"}
        The target's direction: which value of a trial is best, and the ``mode`` of the
        returned tasks.
    scope : {"best", "last"}, default="best"
        A trial's value: its best value over the iterations it reported, or the last one.
        Non-finite iterations are skipped by "best"; a non-finite last value drops the trial.
    metric_map : dict, optional
        Metrics that meta-tasks recorded under another name or in other units, mapped to the
        target by ``target = scale * recorded + offset``: ``{name: None}`` (same units),
        ``{name: scale}`` or ``{name: (scale, offset)}``. A negative scale turns a maximized
        metric into a minimized one: ``{"neg_loss": -1}``, or ``{"accuracy": (-1, 1)}`` for an
        error target. Per task, ``metric`` is used when recorded, else the first key of
        ``metric_map`` that is. A ``MetaTask`` holding a mapped metric is mapped the same way.
    space : dict or SearchSpace, optional
        The current search space (a Tune ``param_space`` or a
        :class:`~rmbo_tune.space.SearchSpace`). Without it every config is kept as is.
        With it, configs missing a searched key or with an unknown category or a value of
        the wrong type are dropped; out-of-bounds numbers are dropped or clipped as
        ``out_of_space`` says; keys the space does not know are ignored (and reported).
    out_of_space : {"drop", "clip"}, default="drop"
        What to do with numbers outside the space's bounds.
    filesystem : pyarrow.fs.FileSystem, optional
        Read every path source through this filesystem (e.g. an ``S3FileSystem`` with
        ``endpoint_override``); a URI scheme on the path is then ignored. By default local
        paths use the local filesystem and URIs ``pyarrow.fs.FileSystem.from_uri``.
    on_error : {"raise", "skip"}, default="raise"
        "skip": an experiment, CSV file or result object that cannot be used (no trial
        recorded the metric, every trial errored, ...) is left out with a warning naming it
        and why; a ``ValueError`` is raised only when no source is usable. Missing paths and
        sources of an unknown type are errors either way.
    fidelity : (str, float), optional
        Keep only trials that reached this training budget, e.g. ``("training_iteration",
        27)`` for an experiment run with ``ASHAScheduler(max_t=27)``: the others were
        stopped early, and their values are not full-budget results. They are dropped as
        ``below_fidelity`` in the load report.

    Returns
    -------
    list of MetaTask
        One per experiment (or other source), each with its :class:`LoadReport`.

    Raises
    ------
    FileNotFoundError
        A path or glob that names nothing.
    ValueError
        A directory without experiments, a metric that no trial recorded (the message lists
        the metrics found), an experiment whose trials all errored or none of which is
        usable, or a bad argument.
    TypeError
        A source of an unknown type.

    Notes
    -----
    Only JSON and CSV files are read; pickles Tune leaves in experiment directories are never
    opened. The ``experiment_state-*.json`` file's per-trial metric summaries give "last"
    and (when no NaN was reported) "best" values without reading ``result.json``; without a
    readable state file, each trial's ``params.json`` and ``result.json`` (or
    ``progress.csv``) are read. A truncated last line of ``result.json`` is skipped and
    counted. Trials that errored are dropped. DataFrames and CSV files carry no error status
    unless they have a ``status`` column ("ERROR" rows are dropped); their empty (NaN) config
    cells count as missing keys, and NaN metric cells as NaN values.

    Examples
    --------
    >>> tasks = load_meta_tasks("~/ray_results/exp_*", metric="val_loss", mode="min")
    >>> tasks = load_meta_tasks(
    ...     "s3://bucket/runs/", "val_error", "min", metric_map={"val_acc": (-1, 1)}
    ... )
    >>> print(format_report(tasks))  # doctest: +SKIP
    """
    if not isinstance(metric, str) or not metric:
        raise TypeError(f"metric must be a non-empty str, got {metric!r}")
    for arg, value, allowed in (
        ("mode", mode, ("min", "max")),
        ("scope", scope, ("best", "last")),
        ("out_of_space", out_of_space, ("drop", "clip")),
        ("on_error", on_error, ("raise", "skip")),
    ):
        if value not in allowed:
            raise ValueError(f"{arg} must be one of {allowed}, got {value!r}")
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(
            f"filesystem must be a pyarrow.fs.FileSystem, got {type(filesystem).__name__}"
        )
    aligner = Aligner(space, out_of_space) if space is not None else None
    if fidelity is not None and not (
        isinstance(fidelity, tuple)
        and len(fidelity) == 2
        and isinstance(fidelity[0], str)
        and is_num(fidelity[1])
    ):
        raise ValueError(f"fidelity must be a (result key, value) pair, got {fidelity!r}")
    reader = MetricReader(metric, mode, scope, candidates(metric, metric_map), fidelity)
    ctx = _Context(reader, aligner, filesystem)
    ctx.skip = on_error == "skip"
    tasks: list[MetaTask] = []
    for index, (name, src) in enumerate(normalize_sources(sources)):
        where = name or (str(src) if is_path(src) else f"source {index}")
        tasks += ctx.attempt(where, lambda n=name, s=src, i=index: _load_one(ctx, s, n, i))
    if ctx.skip and not tasks and ctx.skipped:
        raise ValueError("no usable meta-task source: " + "; ".join(ctx.skipped))
    seen: dict[str, int] = {}
    for task in tasks:
        seen[task.name] = seen.get(task.name, 0) + 1
        if seen[task.name] > 1:
            task.name = f"{task.name}#{seen[task.name]}"
    return tasks
