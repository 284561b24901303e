"""``rmbo-tune demo`` end to end on a reduced budget (real Ray Tune, CartPole)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ray


def test_demo_reduced_budget_writes_table_and_plots(ray_local, tmp_path, capfd) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("matplotlib")
    from rmbo_tune.bench import demo

    out = tmp_path / "demo"
    doc = demo.main(["--seeds", "2", "--budget", "5", "--meta-samples", "4", "--out", str(out)])
    text, err = capfd.readouterr()
    for name in ("results.json", "results.md", "best_so_far.png", "meta_weights.png"):
        assert (out / name).stat().st_size > 0, name
    assert len(list((out / "meta").glob("cartpole-meta-*"))) == 10
    assert set(doc["runs"]) == set(demo.METHODS)
    assert all(len(r["values"]) == 5 for runs in doc["runs"].values() for r in runs)
    # progress lines while it runs, then the table and the weights summary
    assert "similar0" in text and "rm-gp-ucb seed 1" in text
    assert "| rm-gp-ucb | 2 |" in text
    assert "after  5 trials" in text
    assert "final meta-weights" in text
    # a bar per phase on the terminal; Ray's own log lines in the file only
    assert "earlier experiments [" in text and "target searches" in text and "10/10" in text
    assert "INFO" not in text + err and "WARNING" not in text + err
    assert (out / "ray.log").is_file() and str(out / "ray.log") in text


def test_demo_rejects_bad_budget() -> None:
    from rmbo_tune.bench import demo

    with pytest.raises(SystemExit):
        demo.main(["--budget", "0"])
