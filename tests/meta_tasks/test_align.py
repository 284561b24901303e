"""Meta-task configs aligned with the current search space: dropped, clipped, extra keys."""

from __future__ import annotations

import pytest

from rmbo_tune.meta_tasks import load_meta_tasks
from tests.meta_tasks.helpers import assert_messy
from tests.meta_tasks_fixtures import target_space

pytestmark = pytest.mark.ray


def test_other_space_drop(runs):
    (task,) = load_meta_tasks(runs["other"], "score", "max", space=target_space())
    assert task.report.found == 6
    assert task.report.dropped == {
        "out_of_space:out_of_bounds": 2,
        "out_of_space:unknown_category": 2,
    }
    assert task.report.used == 2
    assert task.report.extra_keys == {"dropout": 6}
    assert sorted((c["lr"], c["model"]["width"]) for c in task.configs) == [(0.01, 16), (0.05, 16)]
    (unaligned,) = load_meta_tasks(runs["other"], "score", "max")
    assert unaligned.report.used == 6 and not unaligned.report.extra_keys


def test_other_space_clip(runs):
    from rmbo_tune.space import SearchSpace

    space = SearchSpace.from_tune(target_space())
    (task,) = load_meta_tasks(runs["other"], "score", "max", space=space, out_of_space="clip")
    assert task.report.used == 3
    assert task.report.notes["clipped"] == 1
    assert task.report.dropped == {"out_of_space:unknown_category": 3}
    clipped = [c for c in task.configs if c["lr"] > 0.05]
    assert len(clipped) == 1 and 0.099 < clipped[0]["lr"] < 0.1
    for c in task.configs:
        space.encode(c)  # every kept config is in the space
    assert clipped[0]["dropout"] == 0.1 and clipped[0]["model"]["act"] == "tanh"


def test_messy_with_space_reports_extra_keys(runs):
    (task,) = load_meta_tasks(runs["messy"], "score", "max", space=target_space())
    assert task.report.extra_keys == {"case": 5}
    assert_messy(task, "best")
