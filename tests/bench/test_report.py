"""Results documents: best-so-far, summary statistics, tables and plots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rmbo_tune.bench import report


def _doc(optimum=None, **runs) -> dict:
    return {
        "task": "toy",
        "metric": "loss",
        "mode": "min",
        "optimum": optimum,
        "budget": 4,
        "runs": runs,
    }


def test_summarize_mean_and_standard_error() -> None:
    doc = _doc(
        a=[
            {"values": [4, 2, 3, 1], "seconds": [0.001] * 4},
            {"values": [2, 2, 2, 2], "seconds": [0.003] * 4},
        ],
        b=[{"values": [5, 5, 5, 0], "seconds": [0.002] * 4}],
    )
    rows = {r["method"]: r for r in report.summarize(doc, [1, 2, 4, 9])}
    mean, se = rows["a"]["best@2"]
    assert mean == pytest.approx(2.0) and se == pytest.approx(0.0)
    mean, se = rows["a"]["best@1"]
    assert mean == pytest.approx(3.0) and se == pytest.approx(np.std([4, 2], ddof=1) / np.sqrt(2))
    # no optimum given: regret against the best value any run found (0, from method b)
    assert rows["a"]["regret@4"][0] == pytest.approx(1.5)
    assert rows["b"]["regret@4"] == (0.0, 0.0)
    assert "best@9" not in rows["a"]  # beyond the budget
    assert rows["a"]["ms"] == pytest.approx(2.0)


def test_per_run_optimum_and_table_text() -> None:
    doc = _doc(
        a=[
            {"values": [3, 2], "optimum": 1.0, "seconds": [0.0, 0.0]},
            {"values": [5, 5], "optimum": 4.0, "seconds": [0.0, 0.0]},
        ],
    )
    rows = report.summarize(doc, [2])
    assert rows[0]["regret@2"][0] == pytest.approx(1.0)
    text = report.summary_markdown(doc, [2])
    assert "each run's own optimum" in text
    assert "| a | 2 | 1.000 ± 0.000 | 0.0 |" in text
    assert "best-so-far" not in text  # meaningless across different functions


def test_write_outputs_round_trip(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    doc = _doc(
        optimum=0.0,
        a=[
            {
                "values": [3, 2, 1, 1],
                "seconds": [0.0] * 4,
                "weights": [{"t1": 0.5, "t2": 0.5}, {"t1": 0.7, "t2": 0.3}] * 2,
            }
        ],
        b=[{"values": [3, math.nan, 2, 1], "seconds": [0.0] * 4}],
    )
    files = report.write_outputs(doc, tmp_path / "out", [1, 4])
    assert set(files) == {"json", "markdown", "best_so_far", "meta_weights"}
    for path in files.values():
        assert path.stat().st_size > 0
    assert files["best_so_far"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    back = report.load_results(tmp_path / "out")
    assert back["runs"]["a"][0]["values"] == [3, 2, 1, 1]
    assert math.isnan(back["runs"]["b"][0]["values"][1])
    assert "the optimum 0.0" in files["markdown"].read_text()


def test_no_weights_no_weight_plot(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    files = report.write_outputs(_doc(a=[{"values": [1.0], "seconds": [0.0]}]), tmp_path, [1])
    assert "meta_weights" not in files


def test_load_results_errors(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no benchmark results"):
        report.load_results(tmp_path)
    (tmp_path / "results.json").write_text('{"task": "x"}')
    with pytest.raises(ValueError, match="missing 'metric'"):
        report.load_results(tmp_path)


def test_no_finished_trial_gives_nan_not_an_error() -> None:
    doc = _doc(a=[{"values": [math.nan, math.nan], "seconds": [0.0, 0.0]}])
    row = report.summarize(doc, [2])[0]
    assert all(math.isnan(v) for v in row["regret@2"] + row["best@2"])


def test_paired_differences_average_seeds_then_pair_targets() -> None:
    # Two targets, mode max, optimum 1 and worst 0 on both: normalized regret = 1 - best.
    def run(target: str, values: list[float]) -> dict:
        return {"target": target, "values": values, "optimum": 1.0, "worst": 0.0}

    doc = {
        "task": "tabular",
        "metric": "value",
        "mode": "max",
        "optimum": None,
        "budget": 2,
        "runs": {
            "ref": [run("t1", [0.5, 0.9]), run("t1", [0.7, 0.7]), run("t2", [0.2, 1.0])],
            "other": [run("t1", [0.8, 0.8]), run("t2", [0.6, 0.6]), run("t3", [0.0, 0.0])],
        },
    }
    (row,) = report.paired_differences(doc, "ref", [1, 2, 5])
    assert row["method"] == "other" and row["targets"] == 2  # t3 has no reference run
    # @1: ref t1 mean regret 0.4, t2 0.8; other 0.2, 0.4 -> differences 0.2, 0.4.
    mean, se = row["diff@1"]
    assert mean == pytest.approx(0.3) and se == pytest.approx(np.std([0.2, 0.4], ddof=1) / 2**0.5)
    # @2: ref t1 (0.1 + 0.3) / 2 = 0.2, t2 0.0; other 0.2, 0.4 -> 0.0 and -0.4.
    assert row["diff@2"][0] == pytest.approx(-0.2)
    assert "diff@5" not in row
    table = report.paired_markdown([row], "ref")
    assert "| other | 2 | **+0.3000 ± 0.1000** | -0.2000 ± 0.2000 |" in table
    assert "Paired by target (ref's" in report.summary_markdown(doc, [1, 2])
    assert report.paired_differences(doc, "missing", [1]) == []
    del doc["runs"]["other"][0]["target"]
    assert report.paired_differences(doc, "ref", [1]) == []


def test_mean_se_leaves_out_values_that_are_not_finite() -> None:
    mean, se = report.mean_se(np.array([1.0, 3.0, math.nan, math.inf]))
    assert mean == pytest.approx(2.0) and se == pytest.approx(np.sqrt(2.0) / np.sqrt(2.0))
    assert report.mean_se(np.array([4.0])) == (4.0, 0.0)
    assert all(math.isnan(v) for v in report.mean_se(np.array([math.nan])))


def test_save_figure_creates_the_folder_and_closes_the_figure(tmp_path) -> None:
    plt = report.pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    out = report.save_figure(fig, tmp_path / "a" / "b.png")
    assert out == tmp_path / "a" / "b.png" and out.stat().st_size > 0
    assert not plt.fignum_exists(fig.number)
