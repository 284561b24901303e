"""The scoreboard compares one method with the strongest other one, paired by target."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmbo_tune.bench import scoreboard


def _run(target: str, values: list[float]) -> dict:
    # optimum 1 and worst 0: normalized regret = 1 - best so far.
    return {"target": target, "values": values, "optimum": 1.0, "worst": 0.0, "seconds": []}


def _doc(**runs: list[dict]) -> dict:
    return {"task": "tabular", "metric": "value", "mode": "max", "optimum": None, "runs": runs}


DOC = _doc(
    ref=[_run("a", [0.5, 0.9]), _run("a", [0.7, 0.7]), _run("b", [0.2, 1.0])],
    close=[_run("a", [0.8, 0.8]), _run("b", [0.6, 0.6])],
    far=[_run("a", [0.0, 0.1]), _run("b", [0.1, 0.2])],
)


def test_compare_pairs_the_reference_with_the_best_other_method_per_horizon() -> None:
    board = scoreboard.compare(DOC, "ref", [1, 2, 3])
    assert sorted(board) == [1, 2]  # runs are two evaluations long
    # @1: ref regret per target 0.4 (a, seeds averaged) and 0.8 (b); close 0.2, 0.4; far 1, 0.9.
    one = board[1]
    assert one["reference"] == pytest.approx(0.6) and one["targets"] == 2
    assert one["best"] == "close" and one["best_regret"] == pytest.approx(0.3)
    assert one["diff"] == pytest.approx(0.3)
    assert one["se"] == pytest.approx(np.std([0.2, 0.4], ddof=1) / np.sqrt(2))
    assert set(one["ahead"]) == {"close"}
    # @2: ref 0.2 and 0.0; close 0.2 and 0.4: ref is ahead, nothing is ahead of it.
    two = board[2]
    assert two["best"] == "close" and two["diff"] == pytest.approx(-0.2)
    assert two["ahead"] == {}


def test_compare_refuses_what_it_cannot_pair() -> None:
    with pytest.raises(ValueError, match="'missing' has no runs"):
        scoreboard.compare(DOC, "missing", [1])
    with pytest.raises(ValueError, match="no method besides 'ref'"):
        scoreboard.compare(_doc(ref=DOC["runs"]["ref"]), "ref", [1])
    no_target = _doc(ref=DOC["runs"]["ref"], other=[{"values": [0.5], "optimum": 1.0}])
    with pytest.raises(ValueError, match="not a tabular benchmark"):
        scoreboard.compare(no_target, "ref", [1])
    disjoint = _doc(ref=[_run("a", [0.5])], other=[_run("b", [0.5])])
    with pytest.raises(ValueError, match="no target was run by every method"):
        scoreboard.compare(disjoint, "ref", [1])


def test_markdown_marks_where_the_reference_is_behind() -> None:
    text = scoreboard.markdown({"grid": scoreboard.compare(DOC, "ref", [1, 2])}, "ref")
    assert "| grid | 0.6000 (close 0.3000) | 0.1000 (close 0.3000) |" in text
    assert "**+0.3000 ± 0.1000** (close) | -0.2000 ± 0.2000 (close) |" in text
    assert "- grid @1: close, +0.3000 ± 0.1000" in text


def test_command_writes_the_tables_and_the_picture(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    src = tmp_path / "svm"
    src.mkdir()
    (src / "results.json").write_text(json.dumps(DOC))
    out = tmp_path / "board"
    scoreboard.main(
        [str(src), f"second={src}", "--reference", "ref", "--horizons", "1,2", "--out", str(out)]
    )
    text = (out / "scoreboard.md").read_text()
    assert "| svm |" in text and "| second |" in text
    assert (out / "scoreboard.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        scoreboard.main([str(src), str(src), "--reference", "ref", "--out", str(out)])
    assert "two results are named 'svm'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        scoreboard.main([str(src), "--reference", "nope", "--out", str(out)])
    assert "'nope' has no runs" in capsys.readouterr().err


def test_runs_of_one_grid_in_several_directories_are_pooled(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    first, second = tmp_path / "seed0", tmp_path / "seed1"
    for folder, runs in ((first, DOC["runs"]), (second, {"ref": [_run("b", [1.0, 1.0])]})):
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps(_doc(**runs)))
    doc = scoreboard.pooled_runs([_doc(**DOC["runs"]), _doc(ref=[_run("b", [1.0, 1.0])])], "x")
    assert len(doc["runs"]["ref"]) == 4 and len(doc["runs"]["close"]) == 2
    # Target b's reference runs now average 0.8 and 0 at 1: the pooled board reads it.
    board = scoreboard.compare(doc, "ref", [1])
    assert board[1]["reference"] == pytest.approx((0.4 + 0.4) / 2)
    out = tmp_path / "board"
    scoreboard.main(
        [f"grid={first},{second}", "--reference", "ref", "--horizons", "1", "--out", str(out)]
    )
    assert "| grid | 0.4000 (close 0.3000) |" in (out / "scoreboard.md").read_text()
    other = tmp_path / "min"
    other.mkdir()
    (other / "results.json").write_text(json.dumps({**_doc(**DOC["runs"]), "mode": "min"}))
    with pytest.raises(SystemExit):
        scoreboard.main([f"grid={first},{other}", "--reference", "ref", "--out", str(out)])
    assert "mode 'min' is not 'max'" in capsys.readouterr().err


def test_the_picture_marks_a_horizon_beyond_a_benchmarks_runs(tmp_path, monkeypatch) -> None:
    axes = pytest.importorskip("matplotlib.axes")
    texts: list[str] = []
    original = axes.Axes.text

    def record(self, x, y, s, *args, **kwargs):
        texts.append(s)
        return original(self, x, y, s, *args, **kwargs)

    monkeypatch.setattr(axes.Axes, "text", record)
    short = _doc(ref=[_run("a", [0.5])], other=[_run("a", [0.7])])
    boards = {
        "long": scoreboard.compare(DOC, "ref", [1, 2]),
        "short": scoreboard.compare(short, "ref", [1, 2]),
    }
    path = scoreboard.plot(boards, "ref", tmp_path / "board.png")
    assert path.stat().st_size > 0
    assert texts.count("beyond budget") == 1
