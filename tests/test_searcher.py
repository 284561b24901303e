"""RMBOSearcher against real Ray Tune (a local 2-CPU Ray, tiny budgets).

Kill-and-resume and multi-node tests, which need Ray instances of their own, are in
test_searcher_cluster.py.
"""

import math
import os
import pickle

import numpy as np
import pytest
from ray import tune
from ray.tune.search import Searcher

from rmbo_tune import RMBOSearcher
from tests.conftest import bowl, searched_rows
from tests.test_space import MIXED, valid

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_local")]


def quadratic(config):
    tune.report({"loss": (config["x"] - 0.3) ** 2 + (config["y"] - 0.7) ** 2})


SPACE = {"x": tune.uniform(0, 1), "y": tune.uniform(0, 1)}


def _tuner(trainable, searcher, tmp_path, *, num_samples, space=SPACE, concurrent=None, **tc):
    return tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=num_samples,
            max_concurrent_trials=concurrent,
            reuse_actors=True,
            **tc,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="exp", verbose=0),
    )


def mixed_trainable(config):
    ok, _checks = valid(config)
    tune.report(
        {
            "score": float(config["u"]) + (1.0 if config["ch"] == "relu" else 0.0),
            "valid": float(ok),
        }
    )


def test_tuner_over_a_nested_mixed_space_suggests_only_valid_values(tmp_path):
    searcher = RMBOSearcher(metric="score", mode="max", seed=0)
    results = _tuner(mixed_trainable, searcher, tmp_path, num_samples=10, space=MIXED).fit()
    assert len(results) == 10 and not results.errors
    assert all(r.metrics["valid"] == 1.0 for r in results)
    assert all(r.config["const"] == "fixed" for r in results)  # constants merged by Tune
    assert len(searcher.history) == 10


def test_tune_run_works_too(tmp_path):
    searcher = RMBOSearcher(metric="loss", mode="min", seed=1)
    analysis = tune.run(
        quadratic,
        config=SPACE,
        search_alg=searcher,
        num_samples=6,
        storage_path=str(tmp_path),
        verbose=0,
        reuse_actors=True,
    )
    assert len(analysis.trials) == 6
    assert searcher.engine.X.shape == (6, 2)


def _drive(searcher, f, n):
    """The Searcher protocol without Ray: suggest, evaluate, complete."""
    values = []
    for i in range(n):
        cfg = searcher.suggest(str(i))
        v = f(cfg)
        searcher.on_trial_complete(str(i), {"v": v})
        values.append(v)
    return values


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["min", "max"])
def test_both_modes_optimize_in_the_right_direction(mode):
    # Branin-like 2-D function; 10 seeds, 15 evaluations each. Random search's mean best is
    # typically 2-3x worse; we ask for a 30% margin.
    sign = 1.0 if mode == "min" else -1.0

    def f(c):
        x, y = 15 * c["x"] - 5, 15 * c["y"]
        return sign * (
            (y - 5.1 / (4 * np.pi**2) * x**2 + 5 / np.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x)
            + 10
        )

    best = {}
    for method in ("gp-ucb", "random"):
        runs = []
        for seed in range(10):
            s = RMBOSearcher(space=SPACE, metric="v", mode=mode, method=method, seed=seed)
            vals = _drive(s, f, 15)
            runs.append(sign * (min(vals) if mode == "min" else max(vals)))
        best[method] = float(np.mean(runs))  # the (positive) Branin value reached
    assert best["gp-ucb"] < 0.7 * best["random"], best


def test_metric_and_mode_may_come_from_tune_config(tmp_path):
    searcher = RMBOSearcher(seed=0)
    results = _tuner(quadratic, searcher, tmp_path, num_samples=3, metric="loss", mode="min").fit()
    assert len(results) == 3 and not results.errors
    assert searcher.metric == "loss" and searcher.mode == "min"


def test_missing_metric_is_a_clear_error():
    s = RMBOSearcher(space=SPACE, mode="max")
    with pytest.raises(ValueError, match="RMBOSearcher needs a metric"):
        s.suggest("t0")
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        RMBOSearcher(mode="maximize")
    with pytest.raises(ValueError, match=r"unknown option\(s\)"):
        RMBOSearcher(n_candiates=3)


def test_points_to_evaluate_run_first(tmp_path):
    points = [{"x": 0.1, "y": 0.2}, {"x": 0.9}]
    searcher = RMBOSearcher(metric="loss", mode="min", points_to_evaluate=points, seed=0)
    _tuner(quadratic, searcher, tmp_path, num_samples=4).fit()
    first = [h["config"] for h in searcher.history[:2]]
    assert first[0] == {"x": 0.1, "y": 0.2}
    assert first[1]["x"] == 0.9 and 0 <= first[1]["y"] < 1  # missing key filled in
    assert [h["branch"] for h in searcher.history[:2]] == ["points_to_evaluate"] * 2


def test_evaluated_rewards_are_observed_not_run(tmp_path):
    points = [{"x": 0.1, "y": 0.2}, {"x": 0.9, "y": 0.9}]
    searcher = RMBOSearcher(
        metric="loss",
        mode="min",
        points_to_evaluate=points,
        evaluated_rewards=[0.29, 0.68],
        seed=0,
    )
    results = _tuner(quadratic, searcher, tmp_path, num_samples=3).fit()
    run = [r.config for r in results]
    assert {"x": 0.1, "y": 0.2} not in run
    assert searcher.engine.X.shape == (5, 2)  # 2 told up front + 3 run
    np.testing.assert_allclose(searcher.engine.y[:2], [-0.29, -0.68])  # min -> negated
    # Only the 3 trials run are iterations of nu's schedule (r = 0.7 in two dimensions).
    assert searcher.engine.nu == pytest.approx(0.7**3)


def test_five_evaluated_rewards_give_the_target_the_tasks_mean_at_once():
    rng = np.random.default_rng(0)

    def loss(c):
        return (c["x"] - 0.3) ** 2 + (c["y"] - 0.6) ** 2

    cfgs = [{"x": float(a), "y": float(b)} for a, b in rng.random((30, 2))]
    points = [{"x": float(a), "y": float(b)} for a, b in rng.random((5, 2))]
    s = RMBOSearcher(
        space=SPACE,
        metric="loss",
        mode="min",
        meta_tasks=[(cfgs, [loss(c) for c in cfgs])],
        points_to_evaluate=points,
        evaluated_rewards=[loss(p) for p in points],
        seed=0,
    )
    s.suggest("t0")
    assert s.engine.n_given == 5 and s.engine.nu > s.engine.options.meta_basis_nu
    # The target model carries the task's mean from the first suggestion, positively.
    assert s.engine.history[-1]["mean_coefficient"] > 0


def test_add_evaluated_trials_feeds_a_finished_experiment(tmp_path):
    first = _tuner(
        quadratic, RMBOSearcher(metric="loss", mode="min", seed=0), tmp_path, num_samples=4
    ).fit()
    analysis = tune.ExperimentAnalysis(first.experiment_path)
    s = RMBOSearcher(space=SPACE, metric="loss", mode="min", seed=1)
    s.add_evaluated_trials(analysis, "loss")
    assert s.engine.X.shape == (4, 2) and s.counts["added"] == 4


def test_every_record_says_how_far_the_earlier_tasks_are_trusted():
    configs = [{"x": a, "y": 0.5} for a in (0.1, 0.4, 0.7)]
    meta = {"old": (configs, [0.3, 0.2, 0.1])}
    searcher = RMBOSearcher(
        space=SPACE, metric="v", mode="max", meta_tasks=meta, points_to_evaluate=[{"x": 0.5}]
    )
    searcher.suggest("given")
    searcher.on_trial_complete("ghost", {"v": 1.0, "config": {"x": 0.2, "y": 0.3}})
    for record in searcher.history:  # a point given, a trial adopted
        assert record["nu"] == 1.0 and record["weights"] == {"old": 1.0}


def test_a_space_tried_in_full_finishes_the_search_with_a_warning(caplog):
    searcher = RMBOSearcher({"c": tune.choice([1, 2, 3])}, metric="v", mode="max", seed=0)
    configs = []
    for i in range(3):
        configs.append(searcher.suggest(str(i))["c"])
        searcher.on_trial_complete(str(i), {"v": float(i)})
    with caplog.at_level("WARNING", logger="rmbo_tune.searcher"):
        assert searcher.suggest("3") == Searcher.FINISHED
    assert sorted(configs) == [1, 2, 3] and "has been tried" in caplog.text


def test_points_to_evaluate_run_as_written():
    space = {"lr": tune.loguniform(1e-5, 1e-1), "n": tune.randint(1, 10)}
    s = RMBOSearcher(space, metric="loss", mode="min", seed=0, points_to_evaluate=[{"lr": 1e-3}])
    config = s.suggest("t0")
    assert config["lr"] == 1e-3 and 1 <= config["n"] < 10


def test_a_pruned_evaluated_point_is_not_observed():
    s = RMBOSearcher(space=SPACE, metric="loss", mode="min", seed=0)
    s.add_evaluated_point({"x": 0.2, "y": 0.3}, 0.5)
    s.add_evaluated_point({"x": 0.7, "y": 0.1}, 9.0, pruned=True)  # a scheduler's stop
    assert s.engine.X.shape == (1, 2)
    assert s.counts["added"] == 1 and s.counts["added_pruned"] == 1


def test_concurrent_suggestions_are_distinct_and_limited():
    s = RMBOSearcher(space=SPACE, metric="v", mode="max", seed=0)
    s.set_max_concurrency(4)
    configs = [s.suggest(f"t{i}") for i in range(4)]
    assert s.suggest("t4") is None  # the searcher honours the limit itself
    xs = np.array([[c["x"], c["y"]] for c in configs])
    d = np.sqrt(((xs[:, None] - xs[None]) ** 2).sum(-1))[np.triu_indices(4, 1)]
    assert d.min() > 0.02
    s.on_trial_complete("t0", {"v": 1.0})
    assert s.suggest("t5") is not None


@pytest.mark.parametrize("limit", [4, None])
def test_tuner_runs_with_and_without_a_concurrency_limit(tmp_path, limit):
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    results = _tuner(quadratic, searcher, tmp_path, num_samples=6, concurrent=limit).fit()
    assert len(results) == 6 and not results.errors
    configs = {tuple(sorted(r.config.items())) for r in results}
    assert len(configs) == 6


def flaky(config):
    kind = int(config["k"])
    if kind == 0:
        raise RuntimeError("boom")
    if kind == 1:
        tune.report({"loss": float("nan")})
    elif kind == 2:
        tune.report({"loss": float("inf")})
    elif kind == 3:
        return  # never reports anything
    elif kind == 4:
        tune.report({"other": 1.0})  # reports, but not the metric
    else:
        tune.report({"loss": config["x"]})


def test_failures_nan_inf_and_missing_metrics_never_reach_the_gp(tmp_path, monkeypatch):
    # Tune itself aborts the experiment when a result lacks the searcher's metric, unless
    # strict metric checking is off; a trial that reports nothing passes either way.
    monkeypatch.setenv("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    searcher = RMBOSearcher(
        metric="loss",
        mode="min",
        seed=0,
        points_to_evaluate=[{"k": k, "x": 0.5} for k in range(5)],
    )
    space = {"k": tune.randint(0, 9), "x": tune.uniform(0, 1)}
    results = _tuner(flaky, searcher, tmp_path, num_samples=12, space=space, concurrent=2).fit()
    assert len(results) == 12  # the search went on to num_samples
    engine = searcher.engine
    assert np.all(np.isfinite(engine.y))
    c = searcher.counts
    assert c["errored"] >= 1 and c["non_finite"] >= 2 and c["missing_metric"] >= 2
    assert c["observed"] == len(engine.y)
    assert c["observed"] + c["errored"] + c["non_finite"] + c["missing_metric"] == 12


def test_same_seed_same_configs_and_global_rng_untouched(tmp_path):
    state = np.random.get_state()[1].copy()  # noqa: NPY002 - checking global state
    runs = []
    for i in range(2):
        s = RMBOSearcher(metric="loss", mode="min", seed=42)
        res = _tuner(quadratic, s, tmp_path / str(i), num_samples=5, concurrent=1).fit()
        runs.append([h["config"] for h in s.history])
        assert len(res) == 5
    assert runs[0] == runs[1]
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_history_names_meta_tasks_and_is_written_beside_the_checkpoint(tmp_path):
    rng = np.random.default_rng(0)
    xs = rng.random((15, 2))
    meta = {
        "close": (
            [{"x": a, "y": b} for a, b in xs],
            [(a - 0.3) ** 2 + (b - 0.7) ** 2 for a, b in xs],
        ),
        "far": ([{"x": a, "y": b} for a, b in xs], [-((a - 0.3) ** 2) for a, b in xs]),
    }
    searcher = RMBOSearcher(metric="loss", mode="min", meta_tasks=meta, seed=0)
    results = _tuner(quadratic, searcher, tmp_path, num_samples=6).fit()
    rec = searcher.history[-1]
    assert set(rec["weights"]) == {"close", "far"} and set(rec["gaps"]) == {"close", "far"}
    assert rec["weights"]["close"] > rec["weights"]["far"]
    assert searcher.history[0]["nu"] == 1.0
    path = os.path.join(results.experiment_path, "rmbo_history.json")
    import json

    with open(path) as fh:
        saved = json.load(fh)
    assert saved["meta_tasks"] == ["close", "far"] and len(saved["suggestions"]) == 6


def test_pickled_searcher_stays_small_and_restore_keeps_meta_tasks(tmp_path):
    rng = np.random.default_rng(0)
    space = {"a": tune.uniform(0, 1), "b": tune.loguniform(1e-4, 1), "c": tune.randint(0, 50)}
    meta = []
    for _ in range(50):
        cfgs = [
            {"a": float(a), "b": float(b), "c": int(c)}
            for a, b, c in zip(
                rng.random(200),
                10 ** rng.uniform(-4, 0, 200),
                rng.integers(0, 50, 200),
                strict=True,
            )
        ]
        meta.append((cfgs, list(rng.random(200))))
    s = RMBOSearcher(space=space, metric="v", mode="max", meta_tasks=meta, seed=0, n_restarts=0)
    size_before = len(pickle.dumps(s))
    s.suggest("t0")
    s.on_trial_complete("t0", {"v": 0.5})
    size_after = len(pickle.dumps(s))
    assert size_before < 1_000_000 and size_after < 1_000_000, (size_before, size_after)
    ckpt = tmp_path / "searcher-state.pkl"
    s.save(str(ckpt))
    with open(ckpt, "rb") as fh:
        assert fh.read(1) == b"{"  # JSON, not a pickle
    restored = pickle.loads(pickle.dumps(s))
    restored.restore(str(ckpt))
    assert restored.engine.n_meta_tasks == 50
    assert restored.suggest("t1") == s.suggest("t1")


def test_save_restore_round_trip_without_a_constructor_space(tmp_path):
    s = RMBOSearcher(metric="v", mode="max", seed=3)
    s.set_search_properties(
        None, None, {"x": tune.uniform(0, 1), "c": tune.choice(["a", ("t", 1)])}
    )
    for i in range(3):
        s.suggest(str(i))
        s.on_trial_complete(str(i), {"v": float(i)})
    s.suggest("pending")
    s.save(str(tmp_path / "state"))
    fresh = RMBOSearcher(seed=3)  # as unpickled from tuner.pkl: no space, no metric
    fresh.restore(str(tmp_path / "state"))
    assert fresh.metric == "v" and fresh.engine.X.shape == (3, 3)  # x + one-hot of 2
    assert fresh.suggest("next") == s.suggest("next")
    fresh.on_trial_complete("pending", {"v": 10.0})
    fresh.on_trial_complete("pending", {"v": 10.0})  # never twice
    assert fresh.engine.X.shape == (4, 3)
    assert not math.isnan(fresh.engine.y[-1])


def test_the_tasks_input_warp_survives_save_and_restore(tmp_path):
    rng = np.random.default_rng(1)
    space = {"a": tune.uniform(0, 1), "b": tune.loguniform(1e-4, 1)}
    meta = []
    for _ in range(4):
        cfgs = [{"a": float(a), "b": float(b)} for a, b in rng.random((30, 2)) ** [1, 4]]
        meta.append((cfgs, [min(50 * c["b"], 1.0) - (c["a"] - 0.4) ** 2 for c in cfgs]))
    s = RMBOSearcher(space=space, metric="v", mode="max", meta_tasks=meta, seed=0)
    for i in range(6):
        cfg = s.suggest(str(i))
        s.on_trial_complete(str(i), {"v": min(50 * cfg["b"], 1.0) - (cfg["a"] - 0.5) ** 2})
    assert s.engine.task_warp.shape == (2, 2) and s.engine.target.hyper.warp is not None
    s.save(str(tmp_path / "state"))
    fresh = RMBOSearcher(seed=0)
    fresh.restore(str(tmp_path / "state"))
    np.testing.assert_array_equal(fresh.engine.task_warp, s.engine.task_warp)
    assert fresh.suggest("next") == s.suggest("next")


def _shifted(shift):
    def trainable(config):
        tune.report({"loss": (config["x"] - 0.3 - shift) ** 2 + (config["y"] - 0.7) ** 2})

    return trainable


def test_warm_start_from_earlier_experiments_given_by_glob(tmp_path):
    prior = tmp_path / "prior"
    for name, shift in [("src_close", 0.02), ("src_far", -0.25)]:
        tune.Tuner(
            _shifted(shift),
            param_space=SPACE,
            tune_config=tune.TuneConfig(
                num_samples=15,
                reuse_actors=True,
                search_alg=RMBOSearcher(method="random", metric="loss", mode="min", seed=7),
            ),
            run_config=tune.RunConfig(storage_path=str(prior), name=name, verbose=0),
        ).fit()
    searcher = RMBOSearcher(metric="loss", mode="min", meta_tasks=str(prior / "src_*"), seed=0)
    results = _tuner(quadratic, searcher, tmp_path / "target", num_samples=5, concurrent=1).fit()
    assert len(results) == 5 and not results.errors
    assert searcher.engine.n_meta_tasks == 2
    assert set(searcher.history[-1]["weights"]) == {"src_close", "src_far"}
    # Warm-started (seeded sources, sequential trials, so deterministic): the best of 5
    # trials is close to the optimum (0.3, 0.7); a random config's loss averages about 0.3.
    best = min(r.metrics["loss"] for r in results)
    assert best < 0.02, best
    with pytest.raises(FileNotFoundError, match="no path matches the glob"):
        RMBOSearcher(meta_tasks=str(prior / "nothing_*"))
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        RMBOSearcher(meta_tasks=str(tmp_path / "missing"))


def test_meta_task_row_order_does_not_change_the_search():
    # Two runs of the same earlier experiment list their trials in different orders.
    space = {"a": tune.uniform(0, 1), "b": tune.uniform(0, 1)}
    rng = np.random.default_rng(3)
    configs = [{"a": float(a), "b": float(b)} for a, b in rng.random((15, 2))]
    values = [-((c["a"] - 0.3) ** 2) - (c["b"] - 0.6) ** 2 for c in configs]
    perm = rng.permutation(len(configs))

    def search(cfgs, vals):
        meta = {"t": (cfgs, vals)}
        s = RMBOSearcher(space=space, metric="m", mode="max", seed=0, meta_tasks=meta)
        out = []
        for i in range(4):
            config = s.suggest(f"trial{i}")
            out.append(config)
            s.on_trial_complete(f"trial{i}", {"m": -((config["a"] - 0.4) ** 2)})
        return out

    shuffled = search([configs[i] for i in perm], [values[i] for i in perm])
    assert search(configs, values) == shuffled


def test_engine_options_are_validated_once_and_paper_presets_apply(tmp_path):
    from rmbo_tune.engine import MetaBOOptions

    kwargs = {"variant": "paper", "beta_scale": 0.5, "n_restarts": 0}
    s = RMBOSearcher(space=SPACE, metric="v", mode="max", seed=0, **kwargs)
    for i in range(3):
        s.suggest(str(i))
        s.on_trial_complete(str(i), {"v": float(i)})
    options = s.engine.options
    assert options == MetaBOOptions.from_kwargs(kwargs)
    assert options.gap_estimate == "bound" and options.hyper_prior is False  # the preset
    assert options.beta_scale == 0.5  # an explicit option wins over the preset
    s.save(str(tmp_path / "state"))
    fresh = RMBOSearcher(seed=0)
    fresh.restore(str(tmp_path / "state"))
    assert fresh.engine.options == options
    robust = RMBOSearcher(space=SPACE, metric="v", mode="max", seed=0)
    robust.suggest("0")
    assert robust.engine.options == MetaBOOptions()


@pytest.mark.parametrize("value", ["0.5", True, [0.5]])
def test_a_metric_that_is_not_a_number_is_counted_never_coerced(value, caplog) -> None:
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    searcher.suggest("a")
    searcher.on_trial_complete("a", {"loss": value})
    searcher.suggest("b")
    searcher.on_trial_complete("b", {"loss": 0.25})
    assert searcher.counts["non_numeric"] == 1 and searcher.counts["observed"] == 1
    assert searcher.engine is not None and searcher.engine.y.tolist() == [-0.25]
    assert "not a number" in caplog.text


def test_a_trial_that_told_nothing_usable_is_not_suggested_again() -> None:
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    configs = []
    for i in range(4):  # a trainable that reports the metric as a string
        configs.append(searcher.suggest(str(i))["x"])
        searcher.on_trial_complete(str(i), {"loss": "0.5"})
    assert len(set(configs)) == 4 and searcher.counts["non_numeric"] == 4


@pytest.mark.parametrize("value", [np.array(0.25), np.float32(0.25)])
def test_a_metric_held_in_a_0d_array_is_its_number(value) -> None:
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    searcher.suggest("a")
    searcher.on_trial_complete("a", {"loss": value})
    assert searcher.engine.y.tolist() == [-0.25] and searcher.counts["observed"] == 1


def test_an_errored_trial_counts_against_its_region_and_says_so_in_the_history() -> None:
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    searcher.suggest("a")
    searcher.on_trial_complete("a", error=True)
    searcher.suggest("b")
    searcher.on_trial_complete("b", {"loss": float("nan")})
    searcher.suggest("c")
    searcher.on_trial_complete("c", {"other": 1.0})
    searcher.suggest("d")
    searcher.on_trial_complete("d")  # stopped before it ran (a time budget): no evidence
    engine = searcher.engine
    assert engine is not None and len(engine.target.failed) == 2 and len(engine.y) == 0
    assert len(engine.pending) == 0
    assert [h["outcome"] for h in searcher.history] == ["failed", "failed", "dropped", "dropped"]
    assert searcher.counts["errored"] == 1 and searcher.counts["not_run"] == 1


def test_an_errored_trial_rerun_under_its_id_counts_with_its_new_result() -> None:
    # Tuner.restore(..., resume_errored=True) reruns an errored trial under the same id.
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    searcher.suggest("a")
    searcher.on_trial_complete("a", error=True)
    assert len(searcher.engine.target.failed) == 1
    searcher.on_trial_result("a", {"loss": 0.2})
    assert "a" in searcher._live and len(searcher.engine.pending) == 1
    searcher.on_trial_complete("a", {"loss": 0.1})
    engine = searcher.engine
    assert len(engine.target.failed) == 0 and engine.y.tolist() == [-0.1]
    assert searcher.history[-1]["outcome"] == "observed" and searcher.history[-1]["rerun"] == 1
    searcher.on_trial_complete("a", {"loss": 0.0})  # never twice
    assert engine.y.tolist() == [-0.1]


def test_a_trial_tune_restarted_under_a_new_id_is_adopted_from_its_flat_result(tmp_path):
    # restart_errored: a new id, and results as Tune hands them to searchers (flattened).
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    searcher.set_max_concurrency(1)
    searcher.suggest("a")
    searcher.on_trial_complete("a", {"loss": 0.3})
    searcher.on_trial_result("new", {"loss": 0.5, "config/x": 0.25})
    assert searcher.suggest("b") is None  # the adopted trial holds the one slot
    searcher.on_trial_complete("new", {"loss": 0.2, "config/x": 0.25})
    assert sorted(searcher.engine.y.tolist()) == [-0.3, -0.2]
    assert searcher.history[-1]["branch"] == "adopted"
    # an errored trial restarted as a new one: its failure is taken back
    config = searcher.suggest("c")
    searcher.on_trial_complete("c", error=True)
    searcher.on_trial_result("c2", {"loss": 0.4, "config/x": config["x"]})
    searcher.on_trial_complete("c2", {"loss": 0.4, "config/x": config["x"]})
    assert len(searcher.engine.target.failed) == 0 and len(searcher.engine.y) == 3
    assert searcher._record("c")["restarted_as"] == "c2"
    path = tmp_path / "searcher-state.json"  # a rebuild from the history agrees
    searcher.save(str(path))
    path.write_text(path.read_text()[:40])
    fresh = RMBOSearcher(metric="loss", mode="min", seed=0)
    fresh.restore(str(path))
    assert len(fresh.engine.target.failed) == 0
    assert sorted(fresh.engine.y.tolist()) == sorted(searcher.engine.y.tolist())


def test_a_final_result_without_the_metric_falls_back_to_the_last_reported_value() -> None:
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    searcher.suggest("a")
    searcher.on_trial_result("a", {"loss": 0.5})
    searcher.on_trial_result("a", {"loss": 0.3})
    searcher.on_trial_result("a", {"other": 1.0})
    searcher.on_trial_complete("a", {"other": 1.0})
    assert searcher.engine is not None and searcher.engine.y.tolist() == [-0.3]
    assert searcher.counts["observed"] == 1 and searcher.counts["missing_metric"] == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"metric": 123}, ValueError, "metric must be a metric name"),
        (
            {"points_to_evaluate": [{"x": 0.5}], "evaluated_rewards": [float("nan")]},
            ValueError,
            r"evaluated_rewards\[0\] = nan is not a finite number",
        ),
        ({"meta_tasks": 5}, TypeError, "meta_tasks: 0 is 5 \\(int\\)"),
        ({"meta_metric_map": {"a": "b"}}, TypeError, "meta_metric_map: metric_map\\['a'\\]"),
        ({"meta_metric_map": [1]}, TypeError, "meta_metric_map: metric_map must be a dict"),
    ],
)
def test_bad_arguments_are_refused_by_the_constructor(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        RMBOSearcher(**kwargs)


def test_a_metric_or_mode_given_twice_differently_is_refused() -> None:
    searcher = RMBOSearcher(metric="a", mode="min")
    with pytest.raises(ValueError, match="metric='a' but TuneConfig has metric='b'"):
        searcher.set_search_properties("b", "min", {"x": tune.uniform(0, 1)})
    searcher = RMBOSearcher(metric="a", mode="min")
    with pytest.raises(ValueError, match="mode='min' but TuneConfig has mode='max'"):
        searcher.set_search_properties("a", "max", {"x": tune.uniform(0, 1)})
    assert RMBOSearcher(metric="a", mode="min").set_search_properties("a", None, {})


def test_points_to_evaluate_outside_the_space_are_refused_when_the_space_is_known() -> None:
    searcher = RMBOSearcher(metric="a", mode="min", points_to_evaluate=[{"c": "x"}, {"c": "z"}])
    with pytest.raises(ValueError, match=r"points_to_evaluate\[1\]: c='z' is not one of"):
        searcher.set_search_properties("a", "min", {"c": tune.choice(["x", "y"])})


def _damaged_search(tmp_path):
    """A search with one observed, one failed and one running trial whose state file was
    then truncated, as after a crash mid-write."""
    path = tmp_path / "searcher-state.json"
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0, points_to_evaluate=[{"x": 0.5}])
    searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    for trial_id in "abc":
        searcher.suggest(trial_id)
    searcher.on_trial_complete("a", {"loss": 0.25})
    searcher.on_trial_complete("b", None, error=True)
    searcher.save(str(path))
    path.write_text(path.read_text()[:40])
    # Tuner.restore gives the searcher no space: it comes from the history file
    fresh = RMBOSearcher(metric="loss", mode="min", seed=0, points_to_evaluate=[{"x": 0.5}])
    return searcher, fresh, path


def test_a_damaged_state_file_is_rebuilt_from_the_history_beside_it(tmp_path, caplog) -> None:
    searcher, fresh, path = _damaged_search(tmp_path)
    with caplog.at_level("WARNING"):
        fresh.restore(str(path))
    assert "searcher-state.json is damaged" in caplog.text and "1 running" in caplog.text
    engine, before = fresh.engine, searcher.engine
    assert engine.target.X_list == before.target.X_list  # the observation and the failure
    assert np.array_equal(engine.y, before.y) and len(engine.target.failed) == 1
    assert np.array_equal(engine.pending, before.pending)
    assert engine.nu == before.nu < 1.0  # the observation was one of the search's own
    assert fresh.history == searcher.history and fresh.counts == searcher.counts
    fresh.on_trial_complete("c", {"loss": 0.5})  # the running trial, rerun by Tune
    fresh.on_trial_complete("a", {"loss": 9.0})  # never twice
    assert len(engine.target.X_list) == 3 and engine.y.tolist() == [-0.25, -0.5]
    assert 0.0 <= fresh.suggest("d")["x"] <= 1.0  # points_to_evaluate are not run again
    assert fresh.history[-1]["branch"] != "points_to_evaluate"


def test_results_given_without_a_suggestion_survive_a_rebuild_from_the_history(tmp_path):
    path = tmp_path / "searcher-state.json"
    space = {"x": tune.uniform(0, 1)}
    searcher = RMBOSearcher(space, metric="loss", mode="min", seed=0)
    searcher.add_evaluated_point({"x": 0.1}, 0.3)  # before the first suggestion
    searcher.suggest("a")
    searcher.on_trial_complete("a", {"loss": 0.25})
    searcher.add_evaluated_point({"x": 0.9}, 0.0, error=True)  # after it
    searcher.add_evaluated_point({"x": 0.6}, 0.2)
    searcher.save(str(path))
    kept = RMBOSearcher(space, metric="loss", mode="min", seed=0)
    kept.restore(str(path))  # the state file itself keeps them too
    path.write_text(path.read_text()[:40])
    fresh = RMBOSearcher(space, metric="loss", mode="min", seed=0)
    fresh.restore(str(path))
    for restored in (kept, fresh):
        engine, before = restored.engine, searcher.engine
        assert engine.target.X_list == before.target.X_list
        assert np.array_equal(engine.y, before.y) and len(engine.target.failed) == 1
        assert engine.nu == before.nu  # given results are not the search's iterations
        assert restored.history == searcher.history
    fresh.save(str(path))  # and a second rebuild still has them
    path.write_text(path.read_text()[:40])
    again = RMBOSearcher(space, metric="loss", mode="min", seed=0)
    again.restore(str(path))
    assert np.array_equal(again.engine.y, searcher.engine.y)


def test_a_damaged_state_without_a_usable_history_is_named_with_how_to_go_on(tmp_path) -> None:
    _, fresh, path = _damaged_search(tmp_path)
    (tmp_path / "rmbo_history.json").write_text('{"suggestions": [{"x": [0.5]}]}')
    with pytest.raises(ValueError, match=r"cannot resume: its saved state .*searcher-state\.json"):
        fresh.restore(str(path))
    with pytest.raises(ValueError, match=r"rmbo_history\.json cannot replace it .*suggestion 0"):
        fresh.restore(str(path))


def test_a_finished_trial_it_never_suggested_is_adopted_from_its_config():
    # After a restore, Tune may know a trial the searcher's saved state predates.
    space = {"x": tune.uniform(0, 1), "n": tune.randint(1, 5), "fixed": 3}
    searcher = RMBOSearcher(space, metric="loss", mode="min", seed=0)
    searcher.suggest("known")
    searcher.on_trial_complete("known", {"loss": 0.5})
    searcher.on_trial_complete("ghost", {"loss": 0.1, "config": {"x": 0.25, "n": 2, "fixed": 3}})
    assert sorted(searcher.engine.y.tolist()) == [-0.5, -0.1]
    ghost = searcher.history[-1]
    assert ghost["trial_id"] == "ghost" and ghost["branch"] == "adopted"
    assert ghost["outcome"] == "observed" and ghost["config"] == {"x": 0.25, "n": 2}
    searcher.on_trial_complete("ghost", {"loss": 0.1, "config": {"x": 0.25, "n": 2}})
    assert len(searcher.engine.y) == 2  # never twice
    searcher.on_trial_complete("outside", {"loss": 0.0, "config": {"x": 7.0, "n": 2}})
    searcher.on_trial_complete("no-config", {"loss": 0.0})
    assert len(searcher.engine.y) == 2 and len(searcher.engine.pending) == 0


def test_earlier_searches_are_named_in_the_log_and_take_tafs_form(caplog):

    rng = np.random.default_rng(0)

    def task(X):
        return [{"x": float(a), "y": float(b)} for a, b in X], list(bowl(X))

    searched = [task(searched_rows(rng, n=40, dim=2)) for _ in range(3)]
    with caplog.at_level("INFO", logger="rmbo_tune.searcher"):
        s = RMBOSearcher(space=SPACE, metric="v", mode="max", meta_tasks=searched, seed=0)
        s.suggest("t0")
    assert s.engine.meta_term == "taf" and "look like a search's" in caplog.text
    caplog.clear()
    sampled = [task(rng.random((40, 2))) for _ in range(3)]
    with caplog.at_level("INFO", logger="rmbo_tune.searcher"):
        s = RMBOSearcher(space=SPACE, metric="v", mode="max", meta_tasks=sampled, seed=0)
        s.suggest("t0")
    assert s.engine.meta_term == "mean" and "look like a search's" not in caplog.text


def test_earlier_experiments_in_groups_are_named_in_the_log_and_take_tafs_form(caplog):
    rng = np.random.default_rng(1)

    def task(X, c):
        return [{"x": float(a), "y": float(b)} for a, b in X], list(-((X - c) ** 2).sum(1))

    grouped = [task(rng.random((40, 2)), 0.15 if k % 2 else 0.85) for k in range(10)]
    with caplog.at_level("INFO", logger="rmbo_tune.searcher"):
        s = RMBOSearcher(space=SPACE, metric="v", mode="max", meta_tasks=grouped, seed=0)
        s.suggest("t0")
    assert s.engine.meta_term == "taf" and "fall into groups" in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="rmbo_tune.searcher"):
        s = RMBOSearcher(
            space=SPACE,
            metric="v",
            mode="max",
            meta_tasks=grouped,
            seed=0,
            taf_disagreement=None,
        )
        s.suggest("t0")
    assert s.engine.meta_term == "mean" and "fall into groups" not in caplog.text


def test_a_parameter_searched_before_and_fixed_now_reads_the_trials_at_its_value(caplog):
    # The earlier experiments searched a "mode" that moves their optimum from (0.3, 0.3) to
    # (0.8, 0.8); the new search fixes mode="b". Only the trials at "b" are read, so the
    # first suggestion is near (0.8, 0.8), not at the mixture's compromise.
    rng = np.random.default_rng(0)
    meta = []
    for _ in range(3):
        X = rng.random((40, 2))
        modes = ["a", "b"] * 20
        values = [
            float(bowl(x[None] - (0.5 if m == "b" else 0.0))[0])
            for x, m in zip(X, modes, strict=True)
        ]
        configs = [
            {"x": float(a), "y": float(b), "mode": m} for (a, b), m in zip(X, modes, strict=True)
        ]
        meta.append((configs, values))
    with caplog.at_level("INFO", logger="rmbo_tune"):
        s = RMBOSearcher(
            space={**SPACE, "mode": "b"}, metric="v", mode="max", meta_tasks=meta, seed=0
        )
        config = s.suggest("t0")
    assert abs(config["x"] - 0.8) < 0.15 and abs(config["y"] - 0.8) < 0.15, config
    assert s.engine.n_meta_tasks == 3
    assert "searched mode (now 'b'); only its 20 trials" in caplog.text


def test_earlier_experiments_without_a_parameter_added_since_still_guide_the_search(caplog):
    # The earlier experiments searched x and y; the new search also tunes wd. Their trials
    # lack wd entirely: they are kept, and their models are constant along it.
    rng = np.random.default_rng(0)
    meta = []
    for _ in range(3):
        X = rng.random((30, 2))
        meta.append(([{"x": float(a), "y": float(b)} for a, b in X], list(bowl(X))))
    space = {**SPACE, "wd": tune.loguniform(1e-6, 1e-2)}
    with caplog.at_level("INFO", logger="rmbo_tune"):
        s = RMBOSearcher(space=space, metric="v", mode="max", meta_tasks=meta, seed=0)
        config = s.suggest("t0")
    assert abs(config["x"] - 0.3) < 0.15 and abs(config["y"] - 0.3) < 0.15, config
    assert 1e-6 <= config["wd"] <= 1e-2
    assert s.engine.n_meta_tasks == 3
    assert "did not search wd; its model is constant along it" in caplog.text
