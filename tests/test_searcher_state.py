"""RMBOSearcher's saved state: dump, load and the rebuild from the history file."""

import json

import numpy as np
import pytest
from ray import tune

from rmbo_tune import RMBOSearcher, searcher_state

SPACE = {"x": tune.uniform(0, 1), "n": tune.randint(1, 4)}


def _searcher():
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=3)
    for k in range(4):
        searcher.suggest(f"t{k}")
    searcher.on_trial_result("t0", {"loss": 0.5, "training_iteration": 1})
    searcher.on_trial_complete("t0", {"loss": 0.4, "training_iteration": 3})
    searcher.on_trial_complete("t1", {"loss": 0.9, "training_iteration": 1})
    searcher.on_trial_complete("t2", error=True)
    return searcher


def test_dump_is_plain_json_and_load_gives_it_back():
    searcher = _searcher()
    state = json.loads(json.dumps(searcher_state.dump(searcher)))
    again = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=3)
    searcher_state.load(again, state, "state.json")
    assert searcher_state.dump(again) == searcher_state.dump(searcher)
    assert again.counts["stopped_early"] == 1 and again.counts["errored"] == 1
    assert list(again._live) == ["t3"]


def test_points_still_to_evaluate_come_back_with_their_tuple_categories():
    space = {"x": tune.uniform(0, 1), "k": tune.choice([("a", 1), ("b", 2), ("c", 3)])}
    points = [{"x": 0.2, "k": ("c", 3)}, {"x": 0.3, "k": ("a", 1)}]
    searcher = RMBOSearcher(space, metric="loss", mode="min", seed=0, points_to_evaluate=points)
    state = json.loads(json.dumps(searcher_state.dump(searcher)))
    again = RMBOSearcher(space, metric="loss", mode="min", seed=0)
    searcher_state.load(again, state, "state.json")
    assert again._points == points
    assert again.suggest("t0") == points[0]  # not refused as outside the space


def test_an_unknown_version_is_named():
    state = searcher_state.dump(_searcher())
    with pytest.raises(ValueError, match=r"state\.json: unsupported RMBOSearcher state version 7"):
        searcher_state.load(RMBOSearcher(SPACE), {**state, "version": 7}, "state.json")


def test_recover_without_a_history_names_both_files(tmp_path):
    with pytest.raises(ValueError, match=r"cannot resume: the state is cut, and .*rmbo_history"):
        searcher_state.recover(RMBOSearcher(SPACE), str(tmp_path / "s.json"), "the state is cut")


def _tune_state(path, trials):
    """An experiment_state-*.json in Ray 2.x's layout: [trial JSON, run-metadata JSON]."""
    data = [
        [
            json.dumps({"trial_id": tid, "status": status, "config": config}),
            json.dumps({"last_result": last}),
        ]
        for tid, status, config, last in trials
    ]
    path.write_text(json.dumps({"trial_data": data, "runner_data": {}, "stats": {}}))


def _restored(tmp_path, trials):
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    configs = [searcher.suggest(f"t{k}") for k in range(4)]
    searcher.on_trial_result("t3", {"loss": 0.7})
    searcher.on_trial_complete("t0", {"loss": 0.4})
    searcher.save(str(tmp_path / "searcher-state-a.pkl"))
    _tune_state(tmp_path / "experiment_state-a.json", trials(configs))
    again = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    again.restore_from_dir(str(tmp_path))
    return again


def test_restore_settles_the_trials_on_which_tune_and_the_searcher_disagree(tmp_path, caplog):
    again = _restored(
        tmp_path,
        lambda c: [
            ("t0", "TERMINATED", c[0], {"loss": 0.4}),
            ("t1", "TERMINATED", c[1], {"loss": 0.2, "config": c[1]}),  # finished after
            ("t2", "ERROR", c[2], None),  # the searcher's last save
            ("u9", "TERMINATED", {"x": 0.5, "n": 2}, {"loss": 0.1}),  # never suggested here
            ("t5", "RUNNING", {"x": 0.9, "n": 1}, None),  # rerun by Tune: reported later
        ],  # t3 is unknown to Tune: it reported 0.7 before the crash, which counts
    )
    records = {r["trial_id"]: r for r in again.history}
    assert {t: records[t].get("outcome") for t in records} == {
        "t0": "observed",
        "t1": "observed",
        "t2": "failed",
        "t3": "observed",
        "u9": "observed",
        "t5": None,  # adopted as running: Tune reruns it
    }
    assert (records["t1"]["value"], records["t3"]["value"], records["u9"]["value"]) == (
        0.2,
        0.7,
        0.1,
    )
    assert list(again._live) == ["t5"] and records["t5"]["branch"] == "adopted"
    assert again.counts["observed"] == 4 and again.counts["errored"] == 1
    assert sorted(again.engine.y[~np.isnan(again.engine.y)]) == [-0.7, -0.4, -0.2, -0.1]
    assert "disagree" in caplog.text and "3 trials finished in Tune's record" in caplog.text


def test_a_running_trial_the_saved_searcher_never_suggested_is_not_suggested_again(tmp_path):
    # Tune wrote its state after the searcher's: it reruns t2, which the restored searcher
    # (back at the state in which it suggested t2's config) would otherwise suggest again.
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    configs = [searcher.suggest(f"t{k}") for k in range(2)]
    searcher.on_trial_complete("t0", {"loss": 0.4})
    searcher.save(str(tmp_path / "searcher-state-a.pkl"))
    configs.append(searcher.suggest("t2"))
    replay = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    replay.restore(str(tmp_path / "searcher-state-a.pkl"))  # no Tune state beside it yet
    assert replay.suggest("t3") == configs[2]
    states = [("t0", "TERMINATED", configs[0], {"loss": 0.4})]
    states += [(f"t{k}", "RUNNING", configs[k], None) for k in (1, 2)]
    _tune_state(tmp_path / "experiment_state-a.json", states)
    again = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    again.restore_from_dir(str(tmp_path))
    assert sorted(again._live) == ["t1", "t2"] and len(again.engine.pending) == 2
    assert again.suggest("t3") != configs[2]
    again.on_trial_complete("t2", {"loss": 0.1})
    assert again._record("t2")["outcome"] == "observed" and again.counts["observed"] == 2


def test_restored_trials_hold_no_slot_until_tune_reports_on_them(tmp_path):
    again = _restored(
        tmp_path,
        lambda c: (
            [("t0", "TERMINATED", c[0], {"loss": 0.4})]
            + [(f"t{k}", "PENDING", c[k], None) for k in (1, 3)]
        ),
    )
    assert again.counts["not_run"] == 1  # t2: suggested after Tune's state was written
    assert again._record("t2")["outcome"] == "dropped"
    # t1 and t3 hold no slot until Tune reports on them (it skips them, silently, under
    # resume_unfinished=False), then they count again.
    again.set_max_concurrency(2)
    assert sorted(again._live) == ["t1", "t3"] and isinstance(again.suggest("t4"), dict)
    again.on_trial_result("t1", {"loss": 0.3})
    assert again.suggest("t5") is None  # t1 and t4 run
    again.on_trial_complete("t1", {"loss": 0.3})
    assert isinstance(again.suggest("t5"), dict)
    assert again.suggest("t6") is None


def test_restore_keeps_its_state_when_tunes_is_missing_or_unreadable(tmp_path, caplog):
    searcher = _searcher()
    searcher.save(str(tmp_path / "searcher-state-a.pkl"))
    again = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=3)
    again.restore_from_dir(str(tmp_path))
    assert list(again._live) == ["t3"]
    (tmp_path / "experiment_state-b.json").write_text('{"trial_data": [')
    again = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=3)
    again.restore_from_dir(str(tmp_path))
    assert list(again._live) == ["t3"]
    assert "cannot read Tune's state" in caplog.text and "experiment_state-b.json" in caplog.text


def test_a_repeaters_groups_are_told_once_as_their_mean(tmp_path):
    # Repeater(searcher, repeat=2): each group's first trial id is the searcher's, and its
    # value the mean of the group; the Repeater does not save its groups.
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    configs = [searcher.suggest(f"g{k}a") for k in range(3)]
    searcher.on_trial_complete("g0a", {"loss": 0.3})  # the mean, told by the Repeater
    searcher.save(str(tmp_path / "searcher-state-a.pkl"))
    trials = []
    groups = [(0.2, 0.4), (0.1, 0.3), (0.5, None)]
    for k, (config, losses) in enumerate(zip(configs, groups, strict=True)):
        for i, loss in enumerate(losses):
            status = "RUNNING" if loss is None else "TERMINATED"
            last = None if loss is None else {"loss": loss}
            trials.append((f"g{k}{'ab'[i]}", status, {**config, "__trial_index__": i}, last))
    _tune_state(tmp_path / "experiment_state-a.json", trials)
    again = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    again.restore_from_dir(str(tmp_path))
    assert sorted(again.engine.y.tolist()) == [-0.3, -0.2]  # g0 as before, g1's mean
    assert list(again._live) == ["g2a"]  # its group still runs; no member adopted
    assert len(again.engine.pending) == 1
