"""The tails report pairs every run with the baseline's run of the same target and seed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmbo_tune.bench import tails
from rmbo_tune.bench.scoreboard import pooled_runs


def _run(target: str, seed: int, values: list[float]) -> dict:
    # optimum 1 and worst 0: normalized regret = 1 - best so far.
    return {"target": target, "seed": seed, "values": values, "optimum": 1.0, "worst": 0.0}


def _doc(**runs: list[dict]) -> dict:
    return {"task": "tabular", "metric": "value", "mode": "max", "optimum": None, "runs": runs}


DOC = _doc(
    **{
        "gp-ucb": [_run("a", 0, [0.5, 0.9]), _run("a", 1, [0.7, 0.7]), _run("b", 0, [0.2, 1.0])],
        # a/0 behind by 0.3 then level; a/1 ahead by 0.2 then 0.2; b/0 behind by 0.6 then 0.5.
        "rm": [_run("b", 0, [0.2, 0.5]), _run("a", 1, [0.9, 0.9]), _run("a", 0, [0.2, 0.9])],
        # c has no baseline run: left out.
        "other": [_run("a", 0, [0.5, 0.9]), _run("c", 0, [0.0, 0.0])],
    }
)


def test_runs_are_paired_by_target_and_seed_not_by_order() -> None:
    gaps = tails.paired_gaps(DOC, "gp-ucb", [1, 2, 3])
    assert sorted(gaps) == ["other", "rm"] and sorted(gaps["rm"]) == [1, 2]
    assert sorted(gaps["rm"][1]) == pytest.approx([-0.2, 0.0, 0.3])
    assert sorted(gaps["rm"][2]) == pytest.approx([-0.2, 0.0, 0.5])
    assert gaps["other"][1] == pytest.approx([0.0])


def test_summary_counts_shares_beyond_the_tolerance_and_the_worst_run() -> None:
    s = tails.summarize(np.array([-0.2, 0.0, 0.3, 0.005]))
    assert s["runs"] == 4 and s["behind"] == 0.5 and s["ahead"] == 0.25
    assert s["worst"] == pytest.approx(0.3) and s["mean"] == pytest.approx(0.105 / 4)
    assert s["p99"] == pytest.approx(np.quantile([-0.2, 0.0, 0.3, 0.005], 0.99))
    assert tails.summarize(np.array([-0.2, 0.0, 0.3, 0.005]), tolerance=0.01)["behind"] == 0.25
    with pytest.raises(ValueError, match="no paired runs"):
        tails.summarize(np.array([]))


def test_refuses_what_it_cannot_pair() -> None:
    with pytest.raises(ValueError, match="baseline 'gp-ts' has no runs"):
        tails.paired_gaps(DOC, "gp-ts", [1])
    no_seed = _doc(**{"gp-ucb": [{"target": "a", "values": [0.5], "optimum": 1.0}]})
    with pytest.raises(ValueError, match="not a tabular benchmark"):
        tails.paired_gaps(no_seed, "gp-ucb", [1])
    apart = _doc(**{"gp-ucb": [_run("a", 0, [0.5])], "rm": [_run("a", 1, [0.5])]})
    with pytest.raises(ValueError, match="'rm' shares no"):
        tails.paired_gaps(apart, "gp-ucb", [1])


def test_runs_of_two_directories_are_paired_within_their_own() -> None:
    # Both documents number their seeds from 0 (two --seed values of one grid): each run is
    # paired with the baseline's run of its own document, never the other's.
    first = _doc(**{"gp-ucb": [_run("a", 0, [0.5])], "rm": [_run("a", 0, [0.9])]})
    second = _doc(**{"gp-ucb": [_run("a", 0, [0.1])], "rm": [_run("a", 0, [0.2])]})
    gaps = tails.paired_gaps(pooled_runs([first, second], "x"), "gp-ucb", [1])
    assert sorted(gaps["rm"][1]) == pytest.approx([-0.4, -0.1])


def test_grids_are_pooled_and_the_reference_shown_grid_by_grid() -> None:
    grids = {
        "g1": tails.paired_gaps(DOC, "gp-ucb", [1, 2]),
        "g2": tails.paired_gaps(DOC, "gp-ucb", [1, 2]),
    }
    pool = tails.pooled(grids)
    assert len(pool["rm"][1]) == 6 and len(pool["other"][2]) == 2
    text = tails.markdown(grids, "gp-ucb", "rm")
    assert "| rm | 6 | 0.333 | 0.333 | +0.0333 | +0.300 | +0.300 |" in text
    assert "| g2 | 0.33 / 0.33, +0.300 | 0.33 / 0.33, +0.500 |" in text


def test_command_line_writes_the_table_and_the_plot(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "results.json").write_text(json.dumps(DOC))
    out = tmp_path / "out"
    tails.main(
        [
            f"grid={tmp_path / 'g'}",
            "--horizons",
            "1,2",
            "--plot-horizon",
            "2",
            "--reference",
            "rm",
            "--out",
            str(out),
        ]
    )
    assert (out / "tails.png").stat().st_size > 0
    text = (out / "tails.md").read_text()
    assert "@1:" in text and "@2:" in text and "| grid |" in text
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        tails.main([f"grid={tmp_path / 'g'}", "--baseline", "missing", "--out", str(out)])
