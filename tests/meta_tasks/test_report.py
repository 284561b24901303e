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


def test_a_task_beyond_the_fit_limit_is_named_with_it():
    configs = [{"lr": 0.001 + 0.0003 * i} for i in range(300)]
    small = ([{"lr": 0.01}, {"lr": 0.02}], [1.0, 2.0])
    tasks = load_meta_tasks({"sweep": (configs, list(range(300))), "small": small}, "s", "max")
    text = format_report(tasks)
    assert "sweep: the searcher fits this task's GP to 256 of its 300 trials" in text
    assert "small:" not in text
