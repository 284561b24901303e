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
    assert OWN_OPTION[task] in capsys.readouterr().out


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
