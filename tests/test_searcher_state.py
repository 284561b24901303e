"""RMBOSearcher's saved state: dump, load and the rebuild from the history file."""

import json

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


def test_an_unknown_version_is_named():
    state = searcher_state.dump(_searcher())
    with pytest.raises(ValueError, match=r"state\.json: unsupported RMBOSearcher state version 7"):
        searcher_state.load(RMBOSearcher(SPACE), {**state, "version": 7}, "state.json")


def test_recover_without_a_history_names_both_files(tmp_path):
    with pytest.raises(ValueError, match=r"cannot resume: the state is cut, and .*rmbo_history"):
        searcher_state.recover(RMBOSearcher(SPACE), str(tmp_path / "s.json"), "the state is cut")
