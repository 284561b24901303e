"""The ``rmbo-tune`` command dispatches to the demo, inspect and every benchmark."""

from __future__ import annotations

import pytest

from rmbo_tune import cli

# An option only that task's own parser has: "bench TASK --help" must reach it.
OWN_OPTION = {
    **dict.fromkeys(cli.TUNE_TASKS, "--meta-samples"),
    "synthetic": "--adversarial",
    "tabular": "--suite",
    "latency": "--noise-tasks",
    "overhead": "--engine-only",
    "load-time": "--experiments",
    "fidelity": "--reverse-rung1",
    "scoreboard": "--reference",
    "ablation": "--method",
    "tails": "--tolerance",
    "placement": "--steps",
}


@pytest.mark.parametrize("task", [*cli.TUNE_TASKS, *cli.BENCHES])
def test_bench_help_for_every_task(task, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", task, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert OWN_OPTION[task] in out and f"usage: rmbo-tune bench {task} " in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "scoreboard", "{tmp}/none"], "no benchmark results at {tmp}/none"),
        (["bench", "tails", "{tmp}/none"], "no benchmark results at {tmp}/none"),
        (["bench", "ablation", "{tmp}/bad.json", "{tmp}/bad.json"], "{tmp}/bad.json"),
        (["bench", "fidelity", "--data", "{tmp}/none"], "no learning-curve CSV files"),
        (["bench", "fidelity", "--data", "{tmp}"], "bad.csv line 2: could not convert"),
        (["bench", "pima", "--option", "foo=1"], "unknown option(s) ['foo']"),
        (["bench", "pima", "--metric", "foo"], "invalid choice: 'foo'"),
        (["bench", "cartpole", "--metric", "val_loss"], "--metric applies to pima only"),
        (["bench", "latency", "--methods", "foo"], "unknown method(s) ['foo']"),
        (["bench", "latency", "--tasks", "3", "--noise-tasks", "5"], "cannot exceed --tasks"),
        (["bench", "overhead", "--option", "foo"], "--option must look like NAME=VALUE"),
        (["bench", "tabular", "--suite", "svm", "--continuous"], "not a full grid"),
        (["demo", "--out", "{tmp}/bad.json"], "is a file, not a folder"),
        (["bench", "tabular", "--suite", "svm", "--out", "{tmp}/bad.json"], "is a file"),
    ],
)
def test_bad_input_is_a_usage_error_naming_it(argv, message, tmp_path, capsys) -> None:
    (tmp_path / "bad.json").write_text("not json")
    (tmp_path / "bad.csv").write_text("a,epoch,value\nx,1,0.5\n")
    with pytest.raises(SystemExit) as exc:
        cli.main([a.format(tmp=tmp_path) for a in argv])
    assert exc.value.code == 2
    assert message.format(tmp=tmp_path) in capsys.readouterr().err


def test_bench_help_lists_the_tasks(capsys) -> None:
    assert cli.main(["bench", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(task in out for task in OWN_OPTION)


def test_demo_help(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--help"])
    assert exc.value.code == 0
    assert "--seeds" in capsys.readouterr().out


def test_unknown_task_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "mnist"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_synthetic_bench_writes_outputs(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "syn"
    code = cli.main(
        [
            "bench",
            "synthetic",
            "--functions",
            "2",
            "--iterations",
            "4",
            "--methods",
            "rm-gp-ucb",
            "gp-ucb",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert (out / "results.json").is_file() and (out / "best_so_far.png").is_file()
    assert "| rm-gp-ucb | 2 |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "synthetic", "--iterations", "-5"],
        ["bench", "synthetic", "--functions", "0"],
        ["bench", "cartpole", "--budget", "0"],
        ["bench", "cartpole", "--seeds", "0"],
        ["bench", "cartpole", "--budget", "-3"],
        ["bench", "tabular", "--suite", "svm", "--seeds", "0"],
        ["demo", "--budget", "0"],
    ],
)
def test_counts_below_one_are_usage_errors_before_anything_runs(argv, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert "must be >= 1" in capsys.readouterr().err
