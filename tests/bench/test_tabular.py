"""Tabular benchmark command line, on a small synthetic table written into tmp_path (helpers
shared with test_tabular_data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmbo_tune.bench import tabular
from tests.bench.test_tabular_data import write_grid


@pytest.fixture
def grid(tmp_path: Path) -> Path:
    return write_grid(tmp_path / "grid")


def test_main_writes_the_report(grid: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    args = ["--data", str(grid), "--metric", "loss", "--mode", "min", "--budget", "3"]
    args += ["--seeds", "2", "--targets", "target", "--methods", "rm-gp-ucb,random"]
    args += ["--meta-search", "gp-ucb"]
    tabular.main([*args, "--meta-samples", "30", "--batch", "2", "--out", str(out)])
    assert {p.name for p in out.iterdir()} >= {
        "results.json",
        "results.md",
        "best_so_far.png",
        "meta_weights.png",
    }
    doc = json.loads((out / "results.json").read_text())
    assert doc["task"] == "tabular" and doc["mode"] == "min" and doc["budget"] == 3
    assert doc["settings"]["batch"] == 2 and doc["settings"]["meta_search"] == "gp-ucb"
    rec = doc["runs"]["rm-gp-ucb"][1]
    assert (rec["target"], rec["seed"], len(rec["values"]), len(rec["seconds"])) == (
        "target",
        1,
        3,
        3,
    )
    assert rec["optimum"] == doc["settings"]["tasks"]["target"]["best"]
    assert set(rec["weights"][0]) == {"far", "near1", "near2"}
    assert doc["runs"]["random"][0]["weights"] == []
    printed = capsys.readouterr().out
    assert "simple regret @3" in printed and "lr (log)" in printed
    assert (out / "results.md").read_text().strip() in printed


def test_cli_errors_are_usage_errors(grid: Path, capsys) -> None:
    args = ["--data", str(grid), "--metric", "loss", "--mode", "min"]
    for extra, message in [
        (["--methods", "rm-gp-ucb,tpe"], "methods must be a non-empty subset"),
        (["--targets", "nope"], "unknown targets ['nope']"),
        (["--budget", "500"], "budget 500 exceeds the 243 distinct configs"),
        (["--metric", "acc"], "has no metric column 'acc'"),
        (["--option", "beta_scale=-1"], "beta_scale"),
        (["--batch", "0"], "--batch"),
        (["--meta-search", "bohb"], "--meta-search"),
        (["--unrecorded", "depth"], "'depth' is not one of the columns"),
        (["--unrecorded-known"], "need --unrecorded"),
        (["--unrecorded", "kind", "--meta-search", "gp-ucb"], "rows at random"),
        (["--fixed", "depth"], "fixed: 'depth' is not one of the columns"),
        (["--fixed-slice"], "need --fixed"),
        (["--fixed", "kind", "--unrecorded", "lr"], "--fixed is not for --unrecorded"),
        (["--fixed", "kind", "--budget", "100"], "exceeds the 81 configs of target"),
        (["--noise", "-0.1"], "--noise must be a finite fraction >= 0, got -0.1"),
        (["--noise", "nan"], "--noise must be a finite fraction >= 0, got nan"),
        (["--initial", "30"], "--initial must be from 0 to the budget - 1, got 30"),
    ]:
        with pytest.raises(SystemExit):
            tabular.main([*args, *extra])
        assert message in capsys.readouterr().err


def test_suite_runs_the_shipped_svm_data_with_the_papers_protocol(tmp_path, capsys):
    from rmbo_tune.bench import report

    out = tmp_path / "svm"
    args = ["--suite", "svm", "--targets", "wine", "--methods", "rm-gp-ucb,warm-start"]
    tabular.main([*args, "--budget", "3", "--seeds", "1", "--out", str(out)])
    doc = report.load_results(out / "results.json")
    assert doc["settings"]["meta_samples"] == 50
    assert len(doc["settings"]["tasks"]) == 50
    run = doc["runs"]["rm-gp-ucb"][0]
    assert len(run["values"]) == 3 and run["worst"] < run["optimum"]
    assert "normalized regret @3" in (out / "results.md").read_text()


def test_a_minimized_suite_runs_in_its_own_mode(tmp_path):
    from rmbo_tune.bench import report

    out = tmp_path / "mlp"
    args = ["--suite", "mlp", "--targets", "diabetes", "--methods", "rm-gp-ucb"]
    tabular.main([*args, "--budget", "3", "--seeds", "1", "--out", str(out)])
    doc = report.load_results(out / "results.json")
    assert doc["mode"] == "min"
    run = doc["runs"]["rm-gp-ucb"][0]
    # The optimum of an error is the grid's smallest value, and the worst its largest.
    assert run["optimum"] == min(run["values"] + [run["optimum"]]) < run["worst"]


def test_suite_and_data_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        tabular.main(["--suite", "svm", "--data", "x", "--mode", "max"])
    assert "exactly one of --suite and --data" in capsys.readouterr().err
