"""Helpers shared by the meta-task tests: copies of the experiments, and the checks of the
"messy" experiment's task (see :mod:`tests.meta_tasks_fixtures`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmbo_tune.meta_tasks import MetaTask
from tests.meta_tasks_fixtures import CASES, expected

# Drops per scope for messy_space() loaded with metric "score", mode "max".
DROPS = {
    "best": {"errored": 1, "missing_metric": 1, "no_results": 1, "nan": 1, "inf": 1},
    "last": {"errored": 1, "missing_metric": 1, "no_results": 1, "nan": 2, "inf": 1},
}


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def drop_state(exp: Path) -> Path:
    for f in exp.glob("experiment_state-*.json"):
        f.unlink()
    return exp


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def sorted_pairs(task: MetaTask) -> list[tuple[str, float]]:
    return sorted(zip(map(_key, task.configs), task.values, strict=True))


def assert_messy(task: MetaTask, scope: str) -> None:
    assert task.report.found == len(CASES)
    assert task.report.dropped == DROPS[scope]
    assert task.report.used == len(task.values) == len(CASES) - sum(DROPS[scope].values())
    assert task.metric == "score" and task.mode == "max"
    for config, value in zip(task.configs, task.values, strict=True):
        assert value == pytest.approx(expected(config, scope), rel=1e-12), config["case"]
    assert task.report.value_min == min(task.values)
    assert task.report.value_max == max(task.values)


def by_case(task: MetaTask) -> dict[str, float]:
    return {c["case"]: v for c, v in zip(task.configs, task.values, strict=True)}


def trial_dir(exp: Path, case: str) -> Path:
    for d in exp.iterdir():
        if d.is_dir() and json.loads((d / "params.json").read_text())["case"] == case:
            return d
    raise AssertionError(case)
