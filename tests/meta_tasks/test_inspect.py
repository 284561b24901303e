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
