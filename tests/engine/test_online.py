"""Online meta-tasks: tasks of the current search that grow between asks."""

import numpy as np
import pytest

from rmbo_tune.engine import MetaBO
from rmbo_tune.engine.meta_weights import ranking_gaps
from rmbo_tune.engine.online import OnlineTask, count_given_tasks, joining_gap


def bowl(X, c=0.3):
    return -((np.atleast_2d(X) - c) ** 2).sum(1)


def _continue_alike(opt, again, f, n):
    """``again`` (restored from ``opt``) suggests what ``opt`` does for ``n`` more steps."""
    for _ in range(n):
        a, b = opt.ask(), again.ask()
        np.testing.assert_allclose(a, b, atol=1e-6)
        opt.tell(a, float(f(a)[0]))
        again.tell(b, float(f(b)[0]))


def test_joining_gap_sums_the_prefix_gaps():
    rng = np.random.default_rng(0)
    mu, y = rng.normal(size=6), rng.normal(size=6)
    expected = sum(ranking_gaps(mu[None, :s], y[:s])[0] for s in range(2, 7))
    assert joining_gap(mu, y) == pytest.approx(expected)
    assert joining_gap(y, y) == 0.0  # a task that ranks every pair right
    assert joining_gap(-y, y) == pytest.approx(3.0 * 5)  # every prefix's pairs wrong
    assert joining_gap(mu[:1], y[:1]) == 0.0


def test_refit_schedule():
    task = OnlineTask("epoch=1", 0)
    assert task.needs_fit(3)
    task.fit_size = 10
    assert not task.needs_fit(11) and task.needs_fit(12)
    assert task.to_dict() == {"name": "epoch=1", "index": 0, "fit_size": 10}


def test_online_task_joins_grows_and_is_weighted():
    rng = np.random.default_rng(1)
    X0 = rng.uniform(size=(20, 2))
    opt = MetaBO(dim=2, meta_tasks=[(X0, bowl(X0, 0.8))], seed=0)
    # Four target observations spread over the square (the engine's own first points stay
    # near the earlier task's optimum, where five random points of the new task rank badly).
    for x in np.array([[0.1, 0.2], [0.35, 0.3], [0.9, 0.8], [0.6, 0.5]]):
        opt.tell(x, float(bowl(x)[0]))
    X1 = rng.uniform(size=(5, 2))
    opt.update_meta_task("epoch=1", X1, bowl(X1))
    assert opt.online_tasks == ["epoch=1"] and opt.n_meta_tasks == 1  # rebuilt lazily
    opt.ask()
    assert opt.n_meta_tasks == 2
    # It joined with the gaps it would have accrued: it ranks the target's pairs right,
    # the earlier task (optimum at 0.8) does not, so it weighs more at once.
    assert opt.meta_weights[1] > opt.meta_weights[0]
    X2 = np.vstack([X1, rng.uniform(size=(6, 2))])
    opt.update_meta_task("epoch=1", X2, bowl(X2))
    opt.ask()
    assert opt.meta.sizes.tolist() == [20, 11]
    assert opt.history[-1]["weights"] is not None and len(opt.history[-1]["weights"]) == 2


def test_online_tasks_of_a_cold_engine_and_nu_bound():
    opt = MetaBO(dim=2, seed=0)
    r = opt.weight_state.r  # options.r None: the decay rate at this dimension
    for t in range(1, 4):
        x = opt.ask()
        opt.tell(x, float(bowl(x)[0]))
        assert opt.nu == pytest.approx(r**t)  # decays without tasks: nu_t <= r^t holds
    X = np.random.default_rng(2).uniform(size=(6, 2))
    opt.update_meta_task("epoch=1", X, bowl(X))
    x = opt.ask()
    assert opt.history[-1]["branch"] == "combined"
    opt.tell(x, float(bowl(x)[0]))
    assert opt.nu <= r**4 + 1e-12


def test_methods_without_meta_tasks_ignore_online_tasks():
    opt = MetaBO(dim=2, method="gp-ucb", seed=0)
    X = np.random.default_rng(3).uniform(size=(4, 2))
    opt.update_meta_task("epoch=1", X, bowl(X))
    opt.ask()
    assert opt.online_tasks == [] and opt.n_meta_tasks == 0


def test_bad_online_task_names_it():
    opt = MetaBO(dim=2, seed=0)
    with pytest.raises(ValueError, match=r"'epoch=1'.*NaN"):
        opt.update_meta_task("epoch=1", [[0.1, 0.2]], [np.nan])
    with pytest.raises(ValueError, match="name"):
        opt.update_meta_task("", [[0.1, 0.2]], [1.0])


def test_dropped_points_are_not_suggested_again_and_not_observed():
    cands = np.linspace(0, 1, 5)[:, None]
    opt = MetaBO(dim=1, candidates=cands, seed=0)
    seen = []
    for _ in range(5):
        x = opt.ask()
        seen.append(float(x[0]))
        opt.drop(x)
    assert sorted(seen) == cands[:, 0].tolist()  # each once: dropped ones are excluded
    assert len(opt.y) == 0 and opt.n_failed == 0 and len(opt.pending) == 0


@pytest.mark.parametrize("gap_estimate", ["ranking", "bound"])
def test_state_round_trip_with_online_tasks(gap_estimate):
    rng = np.random.default_rng(4)
    opt = MetaBO(dim=2, seed=0, gap_estimate=gap_estimate)
    for k in range(8):
        x = opt.ask()
        if k % 2:
            opt.drop(x)
        else:
            opt.tell(x, float(bowl(x)[0]))
        X = rng.uniform(size=(3 + k, 2))
        opt.update_meta_task("epoch=1", X, bowl(X, 0.35))
    saved = opt.state_dict()
    again = MetaBO.from_state_dict(saved)
    assert again.online_tasks == ["epoch=1"] and len(again.excluded) == 4
    # The fixed candidates were drawn before the online task existed; so are the restored.
    np.testing.assert_array_equal(again._fixed, opt._fixed)
    _continue_alike(opt, again, bowl, 3)
    assert again.nu == pytest.approx(opt.nu)


@pytest.mark.parametrize("method", ["warm-start", "portfolio"])
def test_a_restored_warm_start_keeps_the_points_of_the_tasks_given_at_construction(method):
    rng = np.random.default_rng(4)
    X0 = rng.uniform(size=(20, 2))
    opt = MetaBO(dim=2, meta_tasks=[(X0, bowl(X0, 0.35))], method=method, seed=0)
    for k in range(2):
        x = opt.ask()
        opt.tell(x, float(bowl(x)[0]))
        X = rng.uniform(size=(6 + k, 2))
        opt.update_meta_task("epoch=1", X, bowl(X, 0.8))  # another optimum than the task's
    again = MetaBO.from_state_dict(opt.state_dict())
    assert again.n_initial == opt.n_initial == 1
    _continue_alike(opt, again, bowl, 4)


def test_only_changed_tasks_are_rebuilt_and_predicted_again():
    rng = np.random.default_rng(5)
    tasks = [(X := rng.uniform(size=(15, 2)), bowl(X, c)) for c in (0.2, 0.7)]
    opt = MetaBO(dim=2, meta_tasks=tasks, seed=0)
    before = opt.meta.models[:2]
    for k in range(6):
        X = rng.uniform(size=(3 + k, 2))
        opt.update_meta_task("epoch=1", X, bowl(X, 0.3))
        if k >= 2:
            opt.update_meta_task("epoch=3", X[:3], bowl(X[:3], 0.35))
        x = opt.ask()
        opt.tell(x, float(bowl(x)[0]))
    assert opt.meta.models[:2] == before  # the earlier tasks' GPs were never rebuilt
    mu, sigma = opt.meta.predict(opt._fixed)
    cache = opt._meta_cache_get()
    np.testing.assert_allclose(cache.mu, mu, atol=1e-10)
    np.testing.assert_allclose(cache.sigma, sigma, atol=1e-10)


def test_the_tasks_given_at_construction_are_those_before_the_first_online_one():
    online = {"epoch=1": OnlineTask("epoch=1", 3), "epoch=2": OnlineTask("epoch=2", 4)}
    assert count_given_tasks(online, 5) == 3
    assert count_given_tasks({}, 5) == 5


def test_a_task_joining_between_ask_and_tell_counts_each_observation_once():
    rng = np.random.default_rng(1)
    X1, X2 = rng.uniform(size=(25, 2)), rng.uniform(size=(25, 2))

    def f(X):
        X = np.atleast_2d(X)
        return bowl(X, 0.3) + 0.3 * np.sin(9 * X[:, 0])

    opt = MetaBO(dim=2, meta_tasks=[(X1, f(X1)), (X2, bowl(X2, 0.6))], seed=0, probe=False)
    for k in range(5):
        x = opt.ask()
        if k == 4:  # as a caller may, after the ask that would have rebuilt it
            opt.update_meta_task("copy", X2, bowl(X2, 0.6))
        opt.tell(x, float(f(x)[0]))
    last = opt.weight_state.last_gaps[2]
    assert last > 0.0  # the latest pair ordering it gets wrong: counted twice, it would show
    mu = opt.meta.means(opt.target.X)[2]
    assert opt.weight_state.cumulative_gaps[2] == pytest.approx(joining_gap(mu, opt.y))


@pytest.mark.parametrize("scaling", ["shared", "per-task", "rank"])
@pytest.mark.parametrize("n_given", [0, 3])
def test_a_restored_engine_borrows_the_scale_of_every_task(scaling, n_given):
    rng = np.random.default_rng(1)

    def f(X):
        X = np.atleast_2d(X)
        return 10.0 * (bowl(X, 0.3) + 0.3 * np.sin(9 * X[:, 0]))

    tasks = [
        (X := rng.uniform(size=(20, 2)), f(X) + 0.1 * k * np.cos(5 * X[:, 1])) for k in range(3)
    ]
    opt = MetaBO(dim=2, meta_tasks=tasks[:n_given], seed=3, output_scaling=scaling, probe=False)
    for _ in range(2):  # inside the cold engine's initial design
        x = opt.ask()
        opt.tell(x, float(f(x)[0]))
    Xo = rng.uniform(size=(15, 2))
    opt.update_meta_task("level", Xo, 100.0 + 50.0 * f(Xo))  # on another scale than the tasks'
    again = MetaBO.from_state_dict(opt.state_dict())
    assert again.target.meta_scale == opt.target.meta_scale
    _continue_alike(opt, again, f, 5)


def test_online_tasks_tie_a_categoricals_length_scales():
    levels = np.linspace(0.0, 1.0, 6)
    cands = np.array([[*np.eye(3)[k], v] for k in range(3) for v in levels])

    def f(X, shift):
        return X[:, :3] @ np.array([0.0, 1.0, 0.4]) - (X[:, 3] - shift) ** 2

    task = (cands, f(cands, 0.3))
    opt = MetaBO(dim=4, meta_tasks=[task], candidates=cands, seed=0, onehot_lengthscales="group")
    opt.update_meta_task("level", cands[::2], f(cands[::2], 0.6))
    opt.ask()
    for hyper in opt._meta_hypers:
        ell = hyper.lengthscales
        assert ell[0] == ell[1] == ell[2]  # one length scale for the categorical's columns
