"""Meta-tasks from earlier Tune experiments: loading, alignment and inspection.

:func:`load_meta_tasks` turns Tune experiment directories (local or in object storage),
``ExperimentAnalysis``/``ResultGrid`` objects, DataFrames, CSV files and ``(configs, values)``
pairs into :class:`MetaTask` objects whose values are in the target metric's units, each with a
:class:`LoadReport` of what was found, used and dropped. :func:`format_report` prints those
reports as a table; :func:`inspect_main` is the ``rmbo-tune inspect`` command.

Nothing is ever unpickled from an experiment directory: only JSON and CSV files are read.
"""

from __future__ import annotations

from rmbo_tune.meta_tasks._inspect import inspect_main
from rmbo_tune.meta_tasks._loader import load_meta_tasks
from rmbo_tune.meta_tasks._report import LoadReport, MetaTask, format_report

__all__ = ["LoadReport", "MetaTask", "format_report", "inspect_main", "load_meta_tasks"]
