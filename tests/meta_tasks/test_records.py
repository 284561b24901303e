"""ResultGrid, ExperimentAnalysis, DataFrame and CSV sources give the same tasks as the
experiment directory they came from."""

from __future__ import annotations

import pandas as pd
import pytest
from ray import tune

from rmbo_tune.meta_tasks import load_meta_tasks
from tests.meta_tasks.helpers import sorted_pairs

pytestmark = pytest.mark.ray


@pytest.mark.parametrize("scope", ["best", "last"])
def test_result_grid_and_analysis_match_directory(runs, scope):
    (directory,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    (grid,) = load_meta_tasks(runs["grids"]["messy"], "score", "max", scope=scope)
    (analysis,) = load_meta_tasks(
        tune.ExperimentAnalysis(str(runs["messy"])), "score", "max", scope=scope
    )
    for task, reader in ((grid, "ResultGrid"), (analysis, "ExperimentAnalysis")):
        assert task.report.reader == reader
        assert task.name == "messy"
        assert sorted_pairs(task) == sorted_pairs(directory)
        assert task.report.dropped == directory.report.dropped
        assert task.report.found == directory.report.found


def _iterations_frame(grid) -> pd.DataFrame:
    frames = []
    for result in grid:
        df = result.metrics_dataframe
        if df is not None and len(df):
            frames.append(df.assign(status="ERROR" if result.error else "TERMINATED"))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("scope", ["best", "last"])
def test_dataframe_and_csv_match_directory(runs, tmp_path, scope):
    (directory,) = load_meta_tasks(runs["messy"], "score", "max", scope=scope)
    frame = _iterations_frame(runs["grids"]["messy"])
    csv = tmp_path / "messy_runs.csv"
    frame.to_csv(csv, index=False)
    (from_frame,) = load_meta_tasks(frame, "score", "max", scope=scope)
    (from_csv,) = load_meta_tasks(str(csv), "score", "max", scope=scope)
    assert from_frame.report.reader == "DataFrame" and from_frame.name == "task_0"
    assert from_csv.report.reader == "CSV" and from_csv.name == "messy_runs"
    for task in (from_frame, from_csv):
        assert sorted_pairs(task) == sorted_pairs(directory)
        assert task.report.dropped["errored"] == 1
    if scope == "last":  # Tune's own per-trial frame: one row per trial, its last result
        last = runs["grids"]["messy"].get_dataframe()
        errored = {r.metrics["trial_id"] for r in runs["grids"]["messy"] if r.error}
        last["status"] = ["ERROR" if t in errored else "TERMINATED" for t in last["trial_id"]]
        (task,) = load_meta_tasks(last, "score", "max", scope="last")
        assert sorted_pairs(task) == sorted_pairs(directory)


def test_an_empty_csv_is_named(tmp_path) -> None:
    from rmbo_tune.meta_tasks import load_meta_tasks

    empty = tmp_path / "old_run.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"old_run\.csv is empty"):
        load_meta_tasks(str(empty), "loss", "min")
