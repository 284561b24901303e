"""The latency benchmark: its tasks and the table it prints."""

from __future__ import annotations

import numpy as np
import pytest

from rmbo_tune.bench import latency


def test_tasks_track_the_target_except_the_noise_ones() -> None:
    rng = np.random.default_rng(0)
    f, tasks = latency.make_tasks(rng, n_tasks=6, n_obs=200, dim=3, n_noise=2)
    assert len(tasks) == 6 and all(X.shape == (200, 3) for X, _ in tasks)
    corr = [np.corrcoef(f(X), y)[0, 1] for X, y in tasks]
    assert min(corr[:4]) > 0.5  # the target plus a smaller smooth offset
    assert max(abs(c) for c in corr[4:]) < 0.2  # pure noise


def test_a_noise_count_beyond_the_tasks_is_refused() -> None:
    with pytest.raises(ValueError, match=r"n_noise must be in \[0, 3\], got 4"):
        latency.make_tasks(np.random.default_rng(0), n_tasks=3, n_obs=5, dim=2, n_noise=4)


def test_the_table_has_a_row_per_method_and_the_joint_gp(capsys) -> None:
    args = ["--tasks", "3", "--obs", "12", "--dim", "2", "--noise-tasks", "1"]
    latency.main([*args, "--iterations", "10", "--methods", "gp-ucb", "gp-ts"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    names = [r.split(" | ")[0] for r in rows[1:]]
    assert names == ["| gp-ucb", "| gp-ts", "| joint GP, 46 obs (one factorization + predict)"]
    assert all(r.count("|") == 8 for r in rows)
    with pytest.raises(SystemExit):
        latency.main([*args, "--iterations", "9"])


def test_engine_options_reach_every_method_and_the_header(capsys, monkeypatch) -> None:
    seen = []
    real = latency.MetaBO

    def spy(*args, **kwargs):
        seen.append(kwargs.get("max_meta_observations"))
        return real(*args, **kwargs)

    monkeypatch.setattr(latency, "MetaBO", spy)
    args = ["--tasks", "2", "--obs", "20", "--dim", "2", "--noise-tasks", "0"]
    methods = ["--methods", "rm-gp-ucb", "gp-ucb"]
    latency.main([*args, "--iterations", "10", *methods, "--option", "max_meta_observations=8"])
    assert "max_meta_observations=8" in capsys.readouterr().out.splitlines()[0]
    assert seen == [8, 8]
    with pytest.raises(SystemExit) as exc:  # a usage error, before anything runs
        latency.main([*args, "--option", "max_meta_observations=2"])
    assert exc.value.code == 2
    assert "max_meta_observations must be an integer >= 8" in capsys.readouterr().err
