"""The load report of each task and the table format_report prints."""

from __future__ import annotations

import pytest

from rmbo_tune.meta_tasks import LoadReport, format_report, load_meta_tasks
from tests.meta_tasks_fixtures import target_space

pytestmark = pytest.mark.ray


def test_format_report(runs):
    tasks = load_meta_tasks(runs["root"], "score", "max", space=target_space())
    text = format_report(tasks)
    lines = text.splitlines()
    assert lines[0].split() == [
        "task",
        "source",
        "read",
        "from",
        "metric",
        "found",
        "used",
        "dropped",
        "values",
    ]
    messy = next(line for line in lines if line.startswith("messy "))
    assert "experiment_state" in messy and " 10 " in messy and "errored 1" in messy
    assert "2 tasks" in text and "out_of_space:unknown_category 2" in text
    assert "config keys not in the search space (ignored): dropout (6)" in text
    assert isinstance(tasks[0].report, LoadReport)
    assert tasks[0].report.summary().startswith("found 10, used 5; dropped ")
    assert repr(tasks[0]).startswith("MetaTask(name='messy', n=5")
