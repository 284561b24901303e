"""The engine's saved state: plain data, checked on load with errors that name the problem."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmbo_tune.engine import MetaBO
from rmbo_tune.engine import metabo as metabo_module
from rmbo_tune.engine import state as st
from tests.conftest import saturating_tasks


def _engine(n_obs: int = 6, **options) -> MetaBO:
    rng = np.random.default_rng(0)
    opt = MetaBO(2, [(rng.random((10, 2)), rng.standard_normal(10))], seed=1, **options)
    for _ in range(n_obs):
        x = opt.ask()
        opt.tell(x, float(-np.sum((x - 0.4) ** 2)))
    return opt


def test_dump_is_plain_json_data_with_every_key() -> None:
    saved = st.dump(_engine())
    assert set(st.KEYS) <= set(saved)
    assert json.loads(json.dumps(saved)) == saved
    assert saved["version"] == st.STATE_VERSION


@pytest.mark.parametrize("bad", [{}, {"version": 2}])
def test_missing_keys_are_named(bad) -> None:
    with pytest.raises(ValueError, match=r"missing keys .*'dim'"):
        MetaBO.from_state_dict(bad)


def test_not_a_dict_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="must be a dict, got list"):
        MetaBO.from_state_dict([1, 2])  # type: ignore[arg-type]


def test_unknown_version_is_refused() -> None:
    saved = st.dump(_engine())
    saved["version"] = 99  # every key present, the version unknown
    with pytest.raises(ValueError, match="unsupported MetaBO state version 99"):
        MetaBO.from_state_dict(saved)


def test_emptied_observations_are_refused_at_load() -> None:
    saved = st.dump(_engine())
    saved["X"] = []
    with pytest.raises(ValueError, match="0 rows in X but 6 values in y"):
        MetaBO.from_state_dict(saved)


def test_wrong_width_and_non_finite_values_are_refused() -> None:
    saved = st.dump(_engine())
    saved["X"] = [[*row, 0.5] for row in saved["X"]]
    with pytest.raises(ValueError, match=r"X must have shape \(n, 2\), got \(6, 3\)"):
        MetaBO.from_state_dict(saved)
    saved = st.dump(_engine())
    saved["y"][2] = float("nan")
    with pytest.raises(ValueError, match="y contains NaN"):
        MetaBO.from_state_dict(saved)


def test_factor_base_beyond_the_observations_is_refused() -> None:
    saved = st.dump(_engine())
    saved["factor_base"] = 7
    with pytest.raises(ValueError, match=r"factor_base 7 is not in \[0, 6\]"):
        MetaBO.from_state_dict(saved)


def test_load_refits_nothing() -> None:
    opt = _engine(8)
    twin = st.load(MetaBO, st.dump(opt), None)
    assert twin.target.hyper.to_dict() == opt.target.hyper.to_dict()
    assert [h.to_dict() for h in twin._meta_hypers] == [h.to_dict() for h in opt._meta_hypers]
    np.testing.assert_array_equal(twin.ask(), opt.ask())


def test_failed_evaluations_survive_a_round_trip_in_order() -> None:
    opt = _engine(3)
    x = opt.ask()
    opt.fail(x)
    opt.tell(opt.ask(), -0.1)
    saved = json.loads(json.dumps(st.dump(opt)))
    assert saved["y"][3] is None
    twin = MetaBO.from_state_dict(saved)
    np.testing.assert_array_equal(twin.target.X_fit, opt.target.X_fit)
    np.testing.assert_array_equal(twin.target.failed, [x])
    np.testing.assert_array_equal(twin.ask(), opt.ask())


def test_a_contested_probe_continues_identically_after_a_round_trip() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((12, 1))
    opt = MetaBO(1, [(X, X[:, 0])], seed=1, probe_after=2)  # the task says "go right"
    for _ in range(2):
        x = opt.ask()
        opt.tell(x, -float(x[0]))  # the target is best on the left: contested
    twin = MetaBO.from_state_dict(json.loads(json.dumps(st.dump(opt))))
    assert twin.options.probe_after == 2
    np.testing.assert_array_equal(twin.ask(), opt.ask())
    assert twin.history[-1]["branch"] == opt.history[-1]["branch"] == "probe"


def test_a_thinned_meta_task_is_thinned_alike_after_a_round_trip() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    opt = MetaBO(2, [(X, -((X - 0.3) ** 2).sum(1))], seed=1, max_meta_observations=20)
    for _ in range(3):
        x = opt.ask()
        opt.tell(x, float(-np.sum((x - 0.4) ** 2)))
    saved = json.loads(json.dumps(st.dump(opt)))
    assert len(saved["meta_tasks"][0]["X"]) == 60  # the state keeps every observation
    twin = MetaBO.from_state_dict(saved)
    np.testing.assert_array_equal(twin.meta.models[0].gp.X, opt.meta.models[0].gp.X)
    np.testing.assert_array_equal(twin.ask(), opt.ask())


def test_a_state_without_max_meta_observations_fits_every_observation() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    saved = st.dump(MetaBO(2, [(X, X[:, 0])], seed=1, max_meta_observations=None))
    del saved["options"]["max_meta_observations"]
    assert MetaBO.from_state_dict(saved).meta.sizes.tolist() == [300]


def test_a_state_without_input_warp_keeps_the_inputs_unwarped() -> None:
    saved = st.dump(_engine(input_warp=20))
    assert saved["options"]["input_warp"] == 20
    del saved["options"]["input_warp"]
    assert MetaBO.from_state_dict(saved).options.input_warp is None


def test_a_state_without_meta_prior_mean_keeps_rm_gp_ts_without_it() -> None:
    saved = st.dump(_engine(method="rm-gp-ts"))
    assert saved["options"]["meta_prior_mean"] is None
    assert MetaBO.from_state_dict(saved).options.prior_mean("rm-gp-ts")
    del saved["options"]["meta_prior_mean"]
    assert MetaBO.from_state_dict(saved).options.meta_prior_mean is False


def test_a_state_without_meta_basis_tasks_keeps_the_basis_without_them() -> None:
    saved = st.dump(_engine(meta_basis_tasks=2.0))
    assert saved["options"]["meta_basis_tasks"] == 2.0
    del saved["options"]["meta_basis_tasks"]
    assert MetaBO.from_state_dict(saved).options.meta_basis_tasks == 0.0


def test_given_observations_are_counted_after_a_round_trip() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((20, 2))
    opt = MetaBO(2, [(X, -((X - 0.3) ** 2).sum(1))], seed=1)
    for x in rng.random((5, 2)):  # told without being suggested: given
        opt.tell(x, float(-np.sum((x - 0.3) ** 2)))
    x = opt.ask()
    opt.tell(x, float(-np.sum((x - 0.3) ** 2)))
    saved = json.loads(json.dumps(st.dump(opt)))
    assert saved["n_given"] == 5
    twin = MetaBO.from_state_dict(saved)
    assert twin.n_given == 5
    np.testing.assert_array_equal(twin.ask(), opt.ask())
    with pytest.raises(ValueError, match="n_given 7 is not in"):
        MetaBO.from_state_dict({**saved, "n_given": 7})
    # A state written before the count: nothing given, the basis waits for nu.
    del saved["n_given"]
    assert MetaBO.from_state_dict(saved).n_given == 0


def test_a_warped_target_round_trips_with_its_warp() -> None:
    rng = np.random.default_rng(3)
    X = rng.random((30, 2))
    opt = MetaBO(2, [(X, -((X - 0.3) ** 2).sum(1))], seed=2, input_warp=4)
    for _ in range(5):
        x = opt.ask()
        opt.tell(x, float(-np.sum((x - 0.4) ** 2)))
    assert opt.target.hyper.warp is not None
    twin = MetaBO.from_state_dict(json.loads(json.dumps(st.dump(opt))))
    np.testing.assert_array_equal(twin.target.hyper.warp, opt.target.hyper.warp)
    np.testing.assert_array_equal(twin.ask(), opt.ask())


def test_the_tasks_warp_is_fitted_once_and_round_trips(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    # More than WARP_TASKS: which are fitted depends on the generator.
    tasks = saturating_tasks(rng, 10)
    opt = MetaBO(2, tasks, seed=2)  # the default learns the warp from the tasks
    for i in range(6):
        # Fitted when the target's first fit is due (the 5th observation), not at the build.
        assert (opt.task_warp is None) == (i < opt.options.min_fit_observations)
        x = opt.ask()
        opt.tell(x, float(min(10 * x[0], 1.0) - (x[1] - 0.4) ** 2))
    assert opt.task_warp.shape == (2, 2)
    assert opt.target.prior.log_warp_loc == tuple(opt.task_warp.ravel())
    assert opt.target.hyper.warp is not None  # warped from the first fit
    saved = json.loads(json.dumps(st.dump(opt)))

    def refit(*args, **kwargs):
        raise AssertionError("the restored engine refitted the tasks' warp")

    monkeypatch.setattr(metabo_module, "fit_task_warps", refit)
    twin = MetaBO.from_state_dict(saved)
    np.testing.assert_array_equal(twin.task_warp, opt.task_warp)
    np.testing.assert_array_equal(twin.ask(), opt.ask())
    saved["task_warp"] = [[0.0, 0.0]]
    with pytest.raises(ValueError, match=r"task_warp must be finite of shape \(2, 2\)"):
        MetaBO.from_state_dict(saved)
    assert MetaBO(2, tasks, seed=2, input_warp=None).task_warp is None


def test_a_restored_engine_fits_the_tasks_warp_to_the_given_tasks_not_the_online_ones():
    rng = np.random.default_rng(3)
    tasks = saturating_tasks(rng, 4)
    opt = MetaBO(2, tasks, seed=2)
    X = rng.random((12, 2))  # an early-stopped rung: saved with the meta-tasks
    opt.update_meta_task("rung", X, np.sin(9 * X[:, 1]))

    def f(x):
        return float(min(10 * x[0], 1.0) - (x[1] - 0.4) ** 2)

    for _ in range(2):
        x = opt.ask()
        opt.tell(x, f(x))
    twin = MetaBO.from_state_dict(json.loads(json.dumps(st.dump(opt))))
    assert twin.task_warp is None  # not yet fitted: the restored engine fits it
    for engine in (opt, twin):
        for _ in range(4):
            x = engine.ask()
            engine.tell(x, f(x))
    np.testing.assert_array_equal(twin.task_warp, opt.task_warp)
    only_online = MetaBO(2, [], seed=2)
    only_online.update_meta_task("rung", X, np.sin(9 * X[:, 1]))
    x = only_online.ask()
    only_online.tell(x, f(x))
    twin = MetaBO.from_state_dict(json.loads(json.dumps(st.dump(only_online))))
    for _ in range(5):
        x = twin.ask()
        twin.tell(x, f(x))
    assert twin.task_warp is None and twin.target.hyper.warp is None


def test_a_version_2_state_keeps_the_tasks_means_in_rm_gp_ucbs_meta_term() -> None:
    saved = st.dump(_engine())
    assert saved["options"]["tau"] is None
    saved["version"] = 2  # saved when tau=None meant 0 in RM-GP-UCB's meta term
    assert MetaBO.from_state_dict(saved).options.tau == 0.0
    assert MetaBO.from_state_dict({**saved, "method": "rm-gp-ts"}).options.tau is None
    saved["version"] = st.STATE_VERSION
    assert MetaBO.from_state_dict(saved).options.tau is None
