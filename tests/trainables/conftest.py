"""Fixtures for the trainables tests: a small local Ray runtime and Tune helpers."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import ray_runtime

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tag every test that starts Ray with the registered ``ray`` marker."""
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="module")
def ray_cluster():
    """A 2-CPU local Ray runtime (shared with the next modules that use one: see
    tests/ray_runtime.py)."""
    ray_runtime.start()
    yield


def run_tuner(
    trainable: Callable[[dict[str, Any]], None],
    param_space: dict[str, Any],
    storage: Path,
    *,
    metric: str = "val_error",
    mode: str = "min",
    max_failures: int = 0,
    name: str = "exp",
):
    """Fit a Tuner with tiny settings and fail loudly if any trial errored."""
    from ray import tune

    grid = tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(metric=metric, mode=mode, reuse_actors=True),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(storage),
            verbose=0,
            failure_config=tune.FailureConfig(max_failures=max_failures),
        ),
    ).fit()
    errors = [r.error for r in grid if r.error is not None]
    # RayTaskError wrapping an OSError subclass prints empty; show the cause and traceback.
    assert not errors, "\n".join(
        f"{getattr(e, 'cause', e)!s}\n{getattr(e, 'traceback_str', '')}" for e in errors
    )
    return grid


def crash_once(trainable: Callable[[dict[str, Any]], None], after: int, marker: Path):
    """Wrap ``trainable`` so its first run raises right after its ``after``-th report.

    The crash happens once per ``marker`` file; a restarted trial (FailureConfig) then runs the
    unmodified trainable, which must resume from the checkpoint of that report. The restarted
    run writes how many reports it made to ``<marker>.reports`` (:func:`reports_after_restart`):
    ``tune.report`` returns only once Tune has taken the result and its checkpoint, so a
    trainable that resumes makes exactly ``total - after`` of them. (Tune's result files are
    no witness: whether the row of the report before the crash reaches them is timing.)
    """
    marker = str(marker)

    def crashing(config: dict[str, Any]) -> None:
        from ray import tune as tune_module

        original = tune_module.report
        count = {"n": 0}
        restarted = os.path.exists(marker)

        def report(metrics: dict[str, Any], *, checkpoint: Any = None) -> None:
            original(metrics, checkpoint=checkpoint)
            count["n"] += 1
            if count["n"] == after and not os.path.exists(marker):
                Path(marker).touch()
                raise RuntimeError("injected crash")

        tune_module.report = report
        try:
            trainable(config)
        finally:
            tune_module.report = original
        if restarted:
            Path(marker + ".reports").write_text(str(count["n"]))

    return crashing


def reports_after_restart(marker: Path) -> int:
    """How many reports the run restarted after :func:`crash_once`'s crash made."""
    return int(Path(str(marker) + ".reports").read_text())
