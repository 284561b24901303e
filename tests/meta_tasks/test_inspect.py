"""The ``rmbo-tune inspect`` command."""

from __future__ import annotations

import os

import pytest

from rmbo_tune.meta_tasks import inspect_main

pytestmark = pytest.mark.ray


def test_inspect_cli(runs, capsys):
    code = inspect_main(
        [
            str(runs["messy"]),
            str(runs["other"]),
            "--metric",
            "loss",
            "--mode",
            "min",
            "--scope",
            "last",
            "--map",
            "score=-1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "-1 * score" in out and "nan 2" in out and "2 tasks" in out
    assert inspect_main([str(runs["messy"]), "--metric", "acc", "--mode", "max"]) == 1
    assert "metrics found: aux/loss, other, score" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        inspect_main([str(runs["messy"]), "--metric", "acc"])
    assert os.path.exists(runs["messy"])


def test_inspect_keeps_the_trials_that_reached_a_fidelity(runs, capsys):
    args = [str(runs["other"]), "--metric", "score", "--mode", "max"]
    assert inspect_main([*args, "--fidelity", "training_iteration=3"]) == 0
    assert "below_fidelity" not in capsys.readouterr().out  # every trial ran 3 iterations
    assert inspect_main([*args, "--fidelity", "training_iteration=4"]) == 1
    assert "below_fidelity" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        inspect_main([*args, "--fidelity", "training_iteration"])
    assert "expected ATTR=VALUE" in capsys.readouterr().err


def test_inspect_aligns_with_a_space_from_a_file(runs, capsys, tmp_path):
    (tmp_path / "myspace.py").write_text(
        "from ray import tune\n"
        "SPACE = {'lr': tune.uniform(0.001, 0.1), 'model': {'width': 16, 'act': 'tanh'},\n"
        "         'wd': tune.uniform(0.0, 1.0)}\n"
        "NOT_A_SPACE = 3\n"
    )
    args = [str(runs["other"]), "--metric", "score", "--mode", "max"]
    assert inspect_main([*args, "--space", f"{tmp_path / 'myspace.py'}:SPACE"]) == 0
    out = capsys.readouterr().out
    # lr 0.01, 0.05, 0.2 x width 16, 64: the width-64 trials ran at another value of a key
    # the space fixes, lr 0.2 is outside its bounds, and no trial has wd.
    assert "other_fixed_value 3" in out and "out_of_bounds 1" in out
    assert "searched model/width; only its trials at this search's value" in out
    assert "did not search wd" in out
    for bad, message in [
        ("myspace", "expected MODULE:NAME or FILE.py:NAME"),
        (f"{tmp_path / 'nope.py'}:SPACE", "no file"),
        (f"{tmp_path / 'myspace.py'}:NOT_A_SPACE", "NOT_A_SPACE is int, not a param_space dict"),
        (f"{tmp_path / 'myspace.py'}:MISSING", "MISSING is nothing"),
        ("no_such_module_xyz:SPACE", "No module named 'no_such_module_xyz'"),
    ]:
        with pytest.raises(SystemExit):
            inspect_main([*args, "--space", bad])
        assert message in capsys.readouterr().err
