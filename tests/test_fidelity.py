"""Fidelity-aware observations: early-stopped trials and lower-fidelity meta-tasks."""

import copy
import math

import numpy as np
import pytest
from ray import tune
from ray.tune.schedulers import (
    ASHAScheduler,
    FIFOScheduler,
    HyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
    ResourceChangingScheduler,
)

from rmbo_tune import RMBOSearcher
from rmbo_tune.fidelity import MIN_LEVEL_TRIALS, FidelityTracker, default_levels, from_scheduler

SPACE = {"a": tune.uniform(0, 1), "b": tune.uniform(0, 1)}


def loss(config, epoch):
    return (config["a"] - 0.3) ** 2 + (config["b"] - 0.6) ** 2 + 1.0 / epoch


def test_default_levels():
    assert default_levels(27) == [1.0, 3.0, 9.0]
    assert default_levels(20) == pytest.approx([20 / 9, 20 / 3])
    assert default_levels(2) == []


def test_levels_read_from_schedulers():
    asha = from_scheduler(ASHAScheduler(time_attr="epoch", max_t=20, grace_period=1))
    assert asha == {
        "max_fidelity": 20.0,
        "fidelity_levels": [1.0, 4.0, 16.0],
        "fidelity_attr": "epoch",
    }
    hb = from_scheduler(HyperBandScheduler(max_t=27, reduction_factor=3))
    assert hb["max_fidelity"] == 27.0 and hb["fidelity_levels"] == [1.0, 3.0, 9.0]
    # max_t not a power of eta: the brackets that halve stop their winners at 9, not 10
    hb = from_scheduler(HyperBandScheduler(max_t=10, reduction_factor=3))
    assert hb["max_fidelity"] == 9.0 and hb["fidelity_levels"] == [1.0, 3.0]
    hb = from_scheduler(HyperBandScheduler(max_t=10, reduction_factor=3, stop_last_trials=False))
    assert hb["max_fidelity"] == 10.0 and hb["fidelity_levels"] == [1.0, 3.0, 9.0]
    wrapped = ResourceChangingScheduler(ASHAScheduler(time_attr="epoch", max_t=20, grace_period=1))
    assert from_scheduler(wrapped) == asha
    assert from_scheduler(MedianStoppingRule(time_attr="epoch")) == {"fidelity_attr": "epoch"}
    assert from_scheduler(FIFOScheduler()) == {}
    with pytest.raises(ValueError, match="PopulationBasedTraining"):
        from_scheduler(PopulationBasedTraining(hyperparam_mutations={"a": [0.1, 0.2]}))
    with pytest.raises(TypeError, match="TrialScheduler"):
        from_scheduler("asha")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"attr": ""}, "fidelity_attr"),
        ({"max_fidelity": 0}, "max_fidelity"),
        ({"max_fidelity": math.inf}, "max_fidelity"),
        ({"levels": [1]}, "needs max_fidelity"),
        ({"max_fidelity": 9, "levels": [3, 9]}, "fidelity_levels"),
        ({"max_fidelity": 9, "levels": "3"}, "fidelity_levels"),
    ],
)
def test_bad_fidelity_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FidelityTracker(**kwargs)


def test_tracker_values_at_levels():
    tr = FidelityTracker("epoch", 9, [1, 3])
    for k in range(MIN_LEVEL_TRIALS):
        tid = f"t{k}"
        tr.observe(tid, [0.1 * k], {"epoch": 1}, -1.0 - k)
        tr.observe(tid, [0.1 * k], {"epoch": 4}, -0.5 - k)  # skipped epoch 3: first >= 3
    tasks = dict((n, (X, y)) for n, X, y in tr.changed_tasks())
    assert set(tasks) == {"epoch=1", "epoch=3"}
    np.testing.assert_allclose(tasks["epoch=3"][1], [-0.5, -1.5, -2.5])
    assert tr.changed_tasks() == []  # only what changed since the last call
    tr.observe("t0", [0.0], {"epoch": 2}, 5.0)  # a level is recorded once
    assert tr.changed_tasks() == []
    assert not tr.is_full("t0", {"epoch": 4}) and tr.is_full("t0", {"epoch": 9})
    again = FidelityTracker("epoch", 9, [1, 3])
    again.load_state_dict(tr.state_dict())
    assert again.values == tr.values and again.reached == tr.reached


def test_inactive_tracker_observes_everything():
    tr = FidelityTracker()
    tr.observe("t", [0.5], {"training_iteration": 1}, 1.0)
    assert not tr.active and tr.is_full("t", {"training_iteration": 1})
    assert tr.changed_tasks() == []


@pytest.mark.parametrize(
    ("kwargs", "tau"),
    [
        ({"max_fidelity": 9}, 0.0),
        ({"scheduler": ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)}, 0.0),
        ({"max_fidelity": 9, "tau": 1.0}, 1.0),
        ({"max_fidelity": 9, "rung_meta_tasks": False}, None),
        ({"max_fidelity": 9, "method": "rm-gp-ts"}, None),
        ({"max_fidelity": 9, "variant": "paper"}, 1.0),
        ({}, None),
    ],
)
def test_level_meta_tasks_make_rm_gp_ucb_weigh_the_tasks_means_alone(kwargs, tau):
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, **kwargs)
    searcher.suggest("t0")
    assert searcher.engine.options.tau == tau


def run_by_hand(searcher, n_trials, stop_at, first=0):
    """Tune's calls for trials ``t<first>``, ... that a scheduler stops at ``stop_at(i)``
    epochs (the stopping result reaches only on_trial_complete, as in Tune)."""
    for i in range(n_trials):
        tid = f"t{first + i}"
        config = searcher.suggest(tid)
        stop = stop_at(i)
        for epoch in range(1, stop + 1):
            result = {"loss": loss(config, epoch), "training_iteration": epoch}
            if epoch < stop:
                searcher.on_trial_result(tid, result)
        searcher.on_trial_complete(tid, result)


def test_level_meta_tasks_are_named_after_the_earlier_experiments():
    rng = np.random.default_rng(0)
    configs = [{"a": float(a), "b": float(b)} for a, b in rng.uniform(size=(10, 2))]
    meta = {"old": (configs, [loss(c, 9) for c in configs])}
    meta["older"] = (configs, [-loss(c, 9) for c in configs])
    searcher = RMBOSearcher(
        SPACE, metric="loss", mode="min", seed=0, meta_tasks=meta, max_fidelity=9
    )
    run_by_hand(searcher, 8, lambda i: 9 if i % 3 == 0 else (3 if i % 2 else 1))
    searcher.suggest("next")
    names = ["old", "older", "training_iteration=1", "training_iteration=3"]
    assert searcher.engine.online_tasks == names[2:]
    assert list(searcher.history[-1]["weights"]) == names


def test_a_boolean_metric_is_never_a_level_value():
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=9)
    searcher.suggest("t")
    searcher.on_trial_result("t", {"loss": False, "training_iteration": 3})
    searcher.on_trial_complete("t", {"training_iteration": 9})
    assert searcher._fidelity.values == {} and len(searcher.engine.y) == 0


def test_the_budget_given_leaves_out_the_schedulers_rungs_above_it():
    asha = ASHAScheduler(time_attr="epoch", max_t=100, grace_period=1)
    searcher = RMBOSearcher(metric="loss", mode="min", scheduler=asha, max_fidelity=10)
    assert searcher._fidelity.max_fidelity == 10 and searcher._fidelity.levels == [1.0, 4.0]


def test_trials_that_never_reach_the_budget_are_named_once(caplog):
    asha = ASHAScheduler(max_t=100, grace_period=1, reduction_factor=4)  # rungs 1, 4, 16, 64
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, scheduler=asha)
    with caplog.at_level("WARNING", logger="rmbo_tune.searcher"):
        run_by_hand(searcher, 12, lambda i: 1 if i % 3 else 4)  # stopped at its rungs
        assert "none reached" not in caplog.text  # a scheduler's stops, not a mistake
        run_by_hand(searcher, 12, lambda i: 10, first=12)  # a 10-epoch trainable
    assert caplog.text.count("none reached training_iteration=100") == 1
    assert "the furthest reached 10" in caplog.text


def test_early_stopped_values_never_reach_the_target_and_levels_grow():
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=9)
    sizes = []
    stops = [9, 1, 3, 1, 9, 3, 1, 1, 9, 3, 1, 3]
    for i, stop in enumerate(stops):
        tid = f"t{i}"
        config = searcher.suggest(tid)
        for epoch in range(1, stop + 1):
            result = {"loss": loss(config, epoch), "training_iteration": epoch}
            if epoch < stop:
                searcher.on_trial_result(tid, result)
        searcher.on_trial_complete(tid, result)
        sizes.append(searcher.engine.meta.sizes.tolist())
    full = [r for r in searcher.history if r.get("outcome") == "observed"]
    assert len(full) == stops.count(9) and searcher.counts["stopped_early"] == 9
    # The target GP holds exactly the full-fidelity values.
    np.testing.assert_allclose(
        sorted(-searcher.engine.y), sorted(r["value"] for r in full), rtol=1e-12
    )
    assert all(r["value"] == pytest.approx(loss(r["config"], 9)) for r in full)
    assert searcher.engine.online_tasks == ["training_iteration=1", "training_iteration=3"]
    # Levels grow as the search runs (every trial reaches epoch 1; 7 reach epoch 3).
    assert sizes[-1] == [len(stops) - 1, 6]  # the last trial's results arrive after its ask
    assert sizes[3][0] < sizes[-1][0]
    record = searcher.history[-1]
    assert set(record["weights"]) == {"training_iteration=1", "training_iteration=3"}
    assert len(searcher.engine.excluded) == 9


def test_without_max_fidelity_a_stopped_value_is_observed():
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0)
    config = searcher.suggest("t0")
    searcher.on_trial_result("t0", {"loss": loss(config, 1), "training_iteration": 1})
    searcher.on_trial_complete("t0", {"loss": loss(config, 2), "training_iteration": 2})
    assert searcher.engine.y.tolist() == [-loss(config, 2)]


@pytest.mark.parametrize("final", ["result", "none"])
def test_a_trial_restarted_from_scratch_is_judged_by_its_last_life(final):
    # MedianStoppingRule pauses a trial when too few others have reached its epoch; a trial
    # without checkpoints resumes from scratch. One paused at its last epoch, then stopped
    # early in its second life, did not end at the full fidelity, as its final result
    # (and Tune's ResultGrid) says.
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=9)
    config = searcher.suggest("t0")
    for epoch in [*range(1, 10), 1, 2]:  # paused at 9 (a pause's result reaches it)
        searcher.on_trial_result("t0", {"loss": loss(config, epoch), "training_iteration": epoch})
    last = {"loss": loss(config, 3), "training_iteration": 3}
    if final == "result":  # stopped at 3: the stopping result reaches only on_trial_complete
        searcher.on_trial_complete("t0", last)
    else:  # paused again at 3 when the run ended
        searcher.on_trial_result("t0", last)
        searcher.on_trial_complete("t0", None)
    assert searcher.history[-1]["outcome"] == "stopped"
    assert searcher.counts["stopped_early"] == 1 and len(searcher.engine.y) == 0


def test_errors_are_failures_whatever_the_fidelity():
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=9)
    searcher.suggest("t0")
    searcher.on_trial_complete("t0", error=True)
    assert searcher.engine.n_failed == 1 and searcher.counts["stopped_early"] == 0


def test_state_round_trip_keeps_the_curves(tmp_path):
    kw = dict(metric="loss", mode="min", seed=0, max_fidelity=9)
    searcher = RMBOSearcher(SPACE, **kw)
    run_by_hand(searcher, 8, lambda i: 9 if i % 4 == 0 else 1 + 2 * (i % 2))
    searcher.save(str(tmp_path / "state.json"))
    again = RMBOSearcher(SPACE, **kw)
    again.restore(str(tmp_path / "state.json"))
    assert again._fidelity.values == searcher._fidelity.values
    assert again.engine.online_tasks == searcher.engine.online_tasks
    np.testing.assert_allclose(
        list(again.suggest("n").values()), list(searcher.suggest("n").values()), atol=1e-6
    )


def epochs(config):
    for epoch in range(1, 10):
        tune.report({"loss": loss(config, epoch), "epoch": epoch})


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize(
    "scheduler",
    [
        ASHAScheduler(time_attr="epoch", metric="loss", mode="min", max_t=9, reduction_factor=3),
        HyperBandScheduler(time_attr="epoch", metric="loss", mode="min", max_t=9),
        MedianStoppingRule(
            time_attr="epoch", metric="loss", mode="min", grace_period=1, min_samples_required=2
        ),
    ],
    ids=["asha", "hyperband", "median"],
)
def test_with_a_scheduler_in_tune(ray_local, tmp_path, scheduler):
    # MedianStoppingRule has no maximum: the searcher is told it.
    budget = {"max_fidelity": 9} if isinstance(scheduler, MedianStoppingRule) else {}
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0, scheduler=scheduler, **budget)
    scheduler = copy.deepcopy(scheduler)  # a fresh one for each run of the suite
    results = tune.Tuner(
        epochs,
        param_space=SPACE,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=12,
            max_concurrent_trials=2,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="fid", verbose=0),
    ).fit()
    assert len(results) == 12 and not results.errors
    done = {r.metrics["trial_id"]: r.metrics["epoch"] for r in results}
    full = sorted(t for t, e in done.items() if e >= 9)
    observed = sorted(r["trial_id"] for r in searcher.history if r.get("outcome") == "observed")
    assert observed == full
    if isinstance(scheduler, ASHAScheduler):  # the others stop trials only in some runs
        assert len(full) < 12
    assert searcher.counts["stopped_early"] + len(full) + searcher.counts["not_run"] == 12
    assert len(searcher.engine.y) == len(full)
    assert "epoch=1" in searcher.engine.online_tasks


def test_pbt_is_refused():
    with pytest.raises(ValueError, match="PopulationBasedTraining"):
        RMBOSearcher(
            metric="loss",
            mode="min",
            scheduler=PopulationBasedTraining(hyperparam_mutations={"a": [0.1, 0.2]}),
        )


def test_earlier_experiments_keep_only_trials_that_reached_the_full_budget():
    import pandas as pd

    rows = []
    for trial, (a, stop) in enumerate([(0.1, 9), (0.2, 1), (0.3, 9), (0.4, 3), (0.5, 9)]):
        for epoch in range(1, stop + 1):
            rows.append(
                {
                    "trial_id": f"t{trial}",
                    "config/a": a,
                    "config/b": 0.5,
                    "training_iteration": epoch,
                    "loss": loss({"a": a, "b": 0.5}, epoch),
                }
            )
    frame = pd.DataFrame(rows)
    with_fidelity = RMBOSearcher(
        SPACE, metric="loss", mode="min", meta_tasks=frame, max_fidelity=9
    )
    with_fidelity.suggest("t")
    assert with_fidelity.engine.meta.sizes.tolist() == [3]
    plain = RMBOSearcher(SPACE, metric="loss", mode="min", meta_tasks=frame)
    plain.suggest("t")
    assert plain.engine.meta.sizes.tolist() == [5]


def test_a_damaged_state_is_rebuilt_with_its_stopped_trials(tmp_path):
    kw = dict(metric="loss", mode="min", seed=0, max_fidelity=9)
    searcher = RMBOSearcher(SPACE, **kw)
    run_by_hand(searcher, 6, lambda i: 9 if i % 3 == 0 else 1)
    path = tmp_path / "searcher-state.json"
    searcher.save(str(path))
    path.write_text(path.read_text()[:40])
    fresh = RMBOSearcher(**kw)
    fresh.restore(str(path))
    assert np.array_equal(fresh.engine.y, searcher.engine.y)
    assert np.allclose(fresh.engine.excluded, searcher.engine.excluded)
    assert len(fresh.engine.pending) == 0
    # the learning curves come back, and with them the level meta-tasks
    assert fresh._fidelity.state_dict()["values"] == searcher._fidelity.state_dict()["values"]
    assert fresh._fidelity.stopped == searcher._fidelity.stopped
    searcher.suggest("next")
    fresh.suggest("next")
    assert fresh.engine.online_tasks == searcher.engine.online_tasks == ["training_iteration=1"]


@pytest.mark.ray
@pytest.mark.slow
def test_asha_run_killed_and_restored_observes_each_trial_once(tmp_path):
    from tests.test_faults import (
        _env,
        _kill_driver,
        _latest_state,
        _n_observed,
        _output,
        _run_driver,
        _wait_for_state,
    )

    n, exp_dir = 16, str(tmp_path / "exp")
    env = _env(RESUME_ASHA="1", RESUME_STEP_S="0.3")
    proc = _run_driver([tmp_path, "exp", "start", n, 2], env)
    if _wait_for_state(exp_dir, proc, lambda s: _n_observed(s) >= 4) is None:
        pytest.fail(f"the run finished before the kill:\n{proc.stdout.read()}")
    _kill_driver(proc, exp_dir)
    restore = _run_driver([tmp_path, "exp", "restore", n, 2], env)
    out = _output(restore, 600)
    assert restore.returncode == 0 and "DONE" in out, out
    ran = int(out.split("DONE ")[1].split()[0])
    final = _latest_state(exp_dir)
    outcome, judged_worse = {}, set()
    for record in final["history"]:
        if record.get("outcome") is not None:
            assert record["trial_id"] not in outcome  # never twice
            outcome[record["trial_id"]] = record["outcome"]
        if record.get("stopped_as") == "worse":
            assert record["trial_id"] not in judged_worse  # judged once
            judged_worse.add(record["trial_id"])
    assert sorted(set(outcome.values())) == ["observed", "stopped"], outcome
    assert len(outcome) == ran  # every trial Tune ran is observed or stopped, once
    assert all(outcome[t] == "stopped" for t in judged_worse)
    observed = sum(o == "observed" for o in outcome.values())
    # A stopped trial's value never reaches the target GP: the trial enters it only
    # as a failure (worse than every finished trial) once its level is judged sound.
    assert len(final["engine"]["X"]) == observed + len(judged_worse)
    assert sum(v is None for v in final["engine"]["y"]) == len(judged_worse)
    assert final["counts"]["stopped_early"] == ran - observed
    assert final["counts"]["stopped_judged_worse"] == len(judged_worse)
    assert final["engine"]["online_tasks"][0]["name"] == "step=1"


def test_stopped_trials_count_as_worse_once_their_level_ranks_like_the_next():
    tr = FidelityTracker("epoch", 9, [1, 3])
    for k in range(6):  # level 1 ranks exactly as level 3; level 3 as the full budget
        tr.observe(f"t{k}", [0.1 * k], {"epoch": 3}, float(k))
    tr.finish("s", None, full=False)  # stopped before any level: never judged
    tr.observe("u", [0.9], {"epoch": 1}, -1.0)
    tr.finish("u", None, full=False)
    assert tr.agrees(1.0) and not tr.agrees(3.0)  # no trial reached the full budget yet
    assert tr.judged_worse() == ["u"] and tr.judged_worse() == []
    reversed_tr = FidelityTracker("epoch", 9, [1, 3])
    for k in range(6):
        reversed_tr.observe(f"t{k}", [0.1 * k], {"epoch": 1}, float(-k))
        reversed_tr.observe(f"t{k}", [0.1 * k], {"epoch": 3}, float(k))
    reversed_tr.observe("u", [0.9], {"epoch": 1}, -10.0)
    reversed_tr.finish("u", None, full=False)
    assert not reversed_tr.agrees(1.0) and reversed_tr.judged_worse() == []


def test_the_searcher_fails_judged_stopped_trials_and_says_so():
    searcher = RMBOSearcher(SPACE, metric="loss", mode="min", seed=0, max_fidelity=9)
    run_by_hand(searcher, 14, lambda i: 9 if i % 4 == 0 else 3 if i % 2 else 1)
    searcher.suggest("next")  # judged at the next suggestion
    worse = [r for r in searcher.history if r.get("stopped_as") == "worse"]
    assert worse and all(r["outcome"] == "stopped" for r in worse)
    assert searcher.counts["stopped_judged_worse"] == len(worse) == searcher.engine.n_failed
    assert len(searcher.engine.y) == 4  # the target's values are still full-budget ones only
