import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from rmbo_tune.bench.synthetic import make_problem
from rmbo_tune.engine import METHODS, MetaBO, SearchSpaceExhausted
from rmbo_tune.engine.acquisition import weighted_improvement
from rmbo_tune.engine.meta_models import disagreement
from tests.conftest import bowl, saturating_tasks, searched_rows


def _paper_problem(k):
    # Appendix E.1: D = 1, SE length scale 0.05, M = 4, N = 20, gaps 0.05, 0.05, 4, 4,
    # noise variance 0.01.
    return make_problem(np.random.default_rng([2022, k]))


def _run(opt, prob, n, noise_rng):
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, float(prob.f(x[None])[0]) + prob.noise_sd * noise_rng.standard_normal())


@pytest.mark.slow
@pytest.mark.parametrize("k", range(5))
def test_paper_variant_dissimilar_meta_tasks_lose_their_weight_within_10_observations(k):
    # The paper's gap bound measures level differences: tasks 3 and 4 (gap 4) lose out.
    prob = _paper_problem(k)
    opt = MetaBO(1, prob.meta_tasks, "rm-gp-ucb", seed=k, variant="paper")
    _run(opt, prob, 10, np.random.default_rng(k))
    w = opt.meta_weights
    assert w[2] < 0.05 and w[3] < 0.05, w
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(1.0)


def test_nu_starts_at_one_and_never_increases():
    prob = _paper_problem(0)
    opt = MetaBO(1, prob.meta_tasks, "rm-gp-ucb", seed=0)
    _run(opt, prob, 8, np.random.default_rng(0))
    nus = [r["nu"] for r in opt.history]
    assert nus[0] == 1.0
    assert all(b <= a for a, b in itertools.pairwise(nus))
    assert nus[-1] <= 0.7**7


@pytest.mark.slow
def test_rm_gp_ts_really_uses_the_meta_tasks():
    # The authors' code had nu stuck at 0, so its TS never took the meta branch.
    first, early = 0, 0
    for k in range(10):
        prob = _paper_problem(k)
        opt = MetaBO(1, prob.meta_tasks, "rm-gp-ts", seed=k)
        _run(opt, prob, 3, np.random.default_rng(k))
        # The branch drawn first: a tasks' sample that repeats an observation escalates and
        # draws again (option escalation), and the record keeps the first draw.
        branches = [r.get("escalated_from", r["branch"]) for r in opt.history]
        first += branches[0] == "meta"
        early += "meta" in branches[1:3]
    assert first == 10  # nu_1 = 1
    # P(meta at t = 2 or 3) = 1 - (1 - nu_2)(1 - nu_3), about 0.6-0.85 with r = 0.7.
    assert early >= 5


@pytest.mark.parametrize("method", METHODS)
def test_state_dict_round_trip_continues_identically(method):
    prob = _paper_problem(1)
    opt = MetaBO(1, prob.meta_tasks, method, seed=3)
    noise = np.random.default_rng(0)
    _run(opt, prob, 6, noise)
    opt.ask()  # leave one pending
    state = json.loads(json.dumps(opt.state_dict()))  # plain data only
    twin = MetaBO.from_state_dict(state)
    for _ in range(5):
        a, b = opt.ask(), twin.ask()
        np.testing.assert_array_equal(a, b)
        y = float(prob.f(a[None])[0])
        opt.tell(a, y)
        twin.tell(b, y)
    assert opt.history == twin.history


@pytest.mark.parametrize("method", ["rm-gp-ucb", "gp-ucb", "rm-gp-ts"])
def test_restore_between_refits_continues_identically(method):
    # After 20 observations the target is refitted every ~20%, and between refits its factor
    # is grown one observation at a time: a restored engine must grow the very same factor.
    rng = np.random.default_rng(1)

    def f(x):
        return float(-np.sum((x - 0.3) ** 2))

    meta = [(rng.random((15, 3)), rng.standard_normal(15)) for _ in range(3)]
    opt = MetaBO(3, meta, method, seed=2)
    for _ in range(27):
        x = opt.ask()
        opt.tell(x, f(x))
    assert opt.target.factor_base == 24  # refits at 20, 24, 29, 35, 42, ...
    opt.ask()  # leave one pending
    twin = MetaBO.from_state_dict(json.loads(json.dumps(opt.state_dict())))
    for _ in range(4):  # crosses the refit at 29
        a, b = opt.ask(), twin.ask()
        np.testing.assert_array_equal(a, b)
        opt.tell(a, f(a))
        twin.tell(b, f(b))
    assert opt.target.factor_base == twin.target.factor_base == 29
    assert opt.history == twin.history


def test_state_written_before_the_factor_base_existed_still_loads():
    rng = np.random.default_rng(0)
    opt = MetaBO(2, [(rng.random((8, 2)), rng.standard_normal(8))], seed=0)
    for _ in range(23):
        x = opt.ask()
        opt.tell(x, float(-np.sum((x - 0.5) ** 2)))
    state = opt.state_dict()
    del state["factor_base"]
    twin = MetaBO.from_state_dict(state)
    assert twin.target.factor_base == 23  # factorized all at once
    x = twin.ask()
    assert x.shape == (2,) and np.all((0 <= x) & (x <= 1))


def test_random_search_never_fits_the_target_gp():
    opt = MetaBO(2, [], "random", seed=0)
    initial = opt.target.hyper
    for _ in range(12):
        x = opt.ask()
        opt.tell(x, float(x.sum()))
    assert opt.target.hyper is initial and opt.target.factor_base == 0


@pytest.mark.parametrize("polish_target", [False, True])
def test_only_acquisitions_with_the_meta_tasks_are_polished_by_default(polish_target, monkeypatch):
    import rmbo_tune.engine.optimize as optimize

    polished = []
    original = optimize._polish
    monkeypatch.setattr(
        optimize, "_polish", lambda acq, x0, n: polished.append(acq) or original(acq, x0, n)
    )
    prob = _paper_problem(1)
    opt = MetaBO(1, prob.meta_tasks, "rm-gp-ucb", seed=0, polish_target=polish_target)
    cold = MetaBO(1, method="gp-ucb", seed=0, n_initial=2, polish_target=polish_target)
    for engine in (opt, cold):
        _run(engine, prob, 6, np.random.default_rng(0))
    records = opt.history + cold.history
    branches = [r["branch"] for r in records]
    assert "combined" in branches and "target" in branches
    # One maximization per suggestion, one more per escalation of a repeat.
    polishing = ("combined", "target") if polish_target else ("combined",)
    expected = sum(1 + r.get("escalations", 0) for r in records if r["branch"] in polishing)
    assert len(polished) == expected


@pytest.mark.parametrize("method", METHODS)
def test_parallel_asks_are_distinct_and_spread(method):
    prob = _paper_problem(2)
    opt = MetaBO(1, prob.meta_tasks, method, seed=0)
    X = np.array([opt.ask() for _ in range(4)])
    d = np.abs(X[:, None, 0] - X[None, :, 0])[np.triu_indices(4, 1)]
    # Random search makes no promise of spread, only of distinct points; the warm start and
    # the portfolio evaluate the meta-tasks' own inputs as they are, however close.
    spread = method not in ("random", "warm-start", "portfolio")
    assert d.min() >= (0.02 if spread else 1e-6), X.ravel()
    assert opt.pending.shape == (4, 1)


def test_parallel_asks_spread_after_observations_too():
    prob = _paper_problem(3)
    opt = MetaBO(1, prob.meta_tasks, "rm-gp-ucb", seed=0)
    _run(opt, prob, 5, np.random.default_rng(0))
    X = np.array([opt.ask() for _ in range(4)])
    d = np.abs(X[:, None, 0] - X[None, :, 0])[np.triu_indices(4, 1)]
    assert d.min() >= 0.02, X.ravel()


@pytest.mark.parametrize("method", METHODS)
def test_candidates_give_rows_never_told_or_pending(method, rng):
    C = rng.random((12, 2))
    meta = [(rng.random((10, 2)), rng.random(10)) for _ in range(2)]
    opt = MetaBO(2, meta, method, candidates=C, seed=1)
    seen = []
    for k in range(12):
        x = opt.ask()
        assert any(np.array_equal(x, c) for c in C)
        assert not any(np.array_equal(x, s) for s in seen)
        seen.append(x)
        if k % 2:
            opt.tell(x, float(x.sum()))
    with pytest.raises(SearchSpaceExhausted, match="all 12 candidates"):
        opt.ask()


def test_failed_evaluations_are_dropped():
    opt = MetaBO(2, seed=0)
    x = opt.ask()
    opt.tell(x, None)
    assert opt.pending.shape == (0, 2) and opt.X.shape == (0, 2) and opt.n_failed == 1
    with pytest.raises(ValueError, match="finite number or None"):
        opt.tell(x, float("nan"))


def test_tell_accepts_points_never_asked_and_resolves_pending():
    opt = MetaBO(2, seed=0)
    opt.tell([0.2, 0.3], 1.0)
    x = opt.ask()
    opt.tell(x, 2.0)
    assert opt.pending.shape == (0, 2)
    np.testing.assert_array_equal(opt.y, [1.0, 2.0])
    x = opt.ask()
    opt.tell(x.astype(np.float32), 3.0)  # told back after a round trip through float32
    assert opt.pending.shape == (0, 2) and opt.n_given == 1  # one of its own iterations


def test_a_failure_retried_is_forgotten_and_pending_until_told():
    opt = MetaBO(2, seed=0)
    for _ in range(6):
        x = opt.ask()
        opt.tell(x, float(-np.sum((x - 0.3) ** 2)))
    x = opt.ask()
    opt.fail(x)
    assert len(opt.target.failed) == 1 and opt.n_failed == 1
    opt.retry(x)
    assert len(opt.target.failed) == 0 and opt.n_failed == 0 and len(opt.pending) == 1
    opt.tell(x, 0.5)
    assert len(opt.y) == 7 and len(opt.pending) == 0
    again = MetaBO.from_state_dict(opt.state_dict())
    np.testing.assert_array_equal(again.ask(), opt.ask())
    with pytest.raises(ValueError, match="no failed evaluation at"):
        opt.retry(x)


def test_projection_is_always_respected():
    grid = lambda X: np.round(np.asarray(X) * 4) / 4  # noqa: E731
    meta = [(grid(np.random.default_rng(0).random((15, 2))), np.arange(15.0))]
    for method in ("rm-gp-ucb", "rm-gp-ts", "gp-ucb", "random"):
        opt = MetaBO(2, meta, method, seed=0, project=grid)
        for _ in range(20):
            x = opt.ask()
            np.testing.assert_array_equal(x, grid(x))
            opt.tell(x, -float(((x - 0.5) ** 2).sum()))
    # 25 grid points: asking past them all exhausts the space.
    opt = MetaBO(2, method="gp-ucb", seed=0, project=grid)
    for _ in range(25):
        opt.ask()
    with pytest.raises(SearchSpaceExhausted):
        opt.ask()


def test_rm_gp_ucb_finds_a_good_point_early_with_a_similar_meta_task():
    prob = _paper_problem(4)
    opt = MetaBO(1, prob.meta_tasks[:2], "rm-gp-ucb", seed=0)
    cold = MetaBO(1, method="random", seed=0)
    _run(opt, prob, 3, np.random.default_rng(0))
    _run(cold, prob, 3, np.random.default_rng(0))
    warm_best = max(prob.f(opt.X))
    assert prob.f_max - warm_best < 0.25 * (
        prob.f_max - prob.f(np.linspace(0, 1, 1001)[:, None]).min()
    )


def test_searcher_rng_is_private():
    state = np.random.get_state()[1].copy()  # noqa: NPY002 - checking global state
    prob = _paper_problem(0)
    opt = MetaBO(1, prob.meta_tasks, "rm-gp-ts", seed=0)
    _run(opt, prob, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_same_seed_same_suggestions():
    prob = _paper_problem(0)
    a = MetaBO(1, prob.meta_tasks, "rm-gp-ts", seed=5)
    b = MetaBO(1, prob.meta_tasks, "rm-gp-ts", seed=5)
    _run(a, prob, 4, np.random.default_rng(0))
    _run(b, prob, 4, np.random.default_rng(0))
    np.testing.assert_array_equal(a.X, b.X)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dim": 0}, "dim must be a positive integer"),
        ({"dim": 2, "method": "ei"}, "method must be one of"),
        ({"dim": 2, "seed": -1}, "seed must be a non-negative integer or None, got -1"),
        (
            {"dim": 2, "meta_tasks": [(np.zeros((3, 3)), np.zeros(3))]},
            r"meta_tasks\[0\] X must have shape \(n, 2\)",
        ),
        (
            {"dim": 1, "meta_tasks": [(np.zeros((3, 1)), [0, np.nan, 1])]},
            r"meta_tasks\[0\] y contains NaN or inf at rows \[1\]",
        ),
        (
            {"dim": 1, "meta_tasks": [(np.zeros((3, 1)), np.zeros(2))]},
            r"meta_tasks\[0\] y must have shape \(3,\)",
        ),
        ({"dim": 1, "meta_tasks": [(np.zeros((0, 1)), np.zeros(0))]}, r"meta_tasks\[0\] is empty"),
        ({"dim": 1, "meta_tasks": [(np.full((2, 1), 1.5), np.zeros(2))]}, "unit cube"),
        ({"dim": 1, "meta_tasks": [np.zeros(3)]}, r"meta_tasks\[0\] must be an \(X, y\) pair"),
        (
            {"dim": 1, "meta_tasks": [(np.zeros((2, 1)), ["0.5", "1"])]},
            r"meta_tasks\[0\] y must hold numbers, got <U3 values such as \['0.5'\]",
        ),
        ({"dim": 1, "candidates": np.zeros((0, 1))}, "at least one row"),
        ({"dim": 1, "candidates": -np.ones((2, 1))}, "candidates must lie in the unit cube"),
        ({"dim": 1, "n_candiates": 5}, r"unknown option\(s\) \['n_candiates'\]"),
        ({"dim": 1, "kernel": "rbf"}, "kernel must be one of"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MetaBO(**kwargs)


def test_bad_tell_inputs():
    opt = MetaBO(2, seed=0)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        opt.tell([0.1, 0.2, 0.3], 1.0)
    with pytest.raises(ValueError, match="unit cube"):
        opt.tell([0.1, 2.0], 1.0)
    with pytest.raises(ValueError, match="MetaBO state is missing keys"):
        MetaBO.from_state_dict({"version": 99})


@pytest.mark.parametrize("y", ["0.5", True, float("nan"), None])
def test_tell_refuses_values_that_are_not_numbers_and_keeps_the_point_pending(y):
    opt = MetaBO(2, seed=0)
    x = opt.ask()
    if y is None:  # a failed evaluation: dropped, counted
        opt.tell(x, y)
        assert opt.n_failed == 1 and len(opt.pending) == 0
        return
    with pytest.raises(ValueError, match="y must be a finite number or None"):
        opt.tell(x, y)
    np.testing.assert_array_equal(opt.pending, [x])
    assert len(opt.y) == 0


def test_importing_the_engine_does_not_import_ray():
    code = "import sys, rmbo_tune.engine; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _target_copies(sign, k):
    # D = 8: three meta-tasks observing sign * f (plus a little noise) at 80 random inputs,
    # f smooth enough (length scale 0.6) for 80 points to tell its ordering.
    prob = make_problem(
        np.random.default_rng([7, k]), gaps=(0.0,), dim=8, n_meta=80, lengthscale=0.6
    )
    rng = np.random.default_rng(k)
    tasks = []
    for _ in range(3):
        X = rng.random((80, 8))
        tasks.append((X, sign * prob.f(X) + 0.01 * rng.standard_normal(80)))
    return prob, tasks


@pytest.mark.slow
@pytest.mark.parametrize("k", range(2))
def test_nu_follows_r_to_the_t_with_copies_of_the_target_and_falls_faster_with_its_negation(k):
    r = 0.7 ** (6 / 8)  # the default at eight dimensions
    prob, copies = _target_copies(1.0, k)
    opt = MetaBO(8, copies, "rm-gp-ucb", seed=k)
    _run(opt, prob, 11, np.random.default_rng(k))
    nus = np.array([rec["nu"] for rec in opt.history])  # nu before observation t = 1..11
    assert np.allclose(nus, r ** np.arange(11), rtol=1e-9), nus
    # Negated, the tasks order the target's pairs wrongly and nu falls below r^t (after the
    # 7th observation here; how soon depends on whether the probe's pair is ordered wrongly
    # by at least 3/4 of the tasks, which sends the second probe to their lowest point).
    prob, negated = _target_copies(-1.0, k)
    opt = MetaBO(8, negated, "rm-gp-ucb", seed=k)
    _run(opt, prob, 8, np.random.default_rng(k))
    nus = np.array([rec["nu"] for rec in opt.history])
    assert nus[-1] < r**7, nus


@pytest.mark.slow
def test_observations_given_before_the_search_inform_the_tasks_without_spending_nu():
    # Five evaluations of the target given up front (a Tune user's evaluated_rewards,
    # HPO-B's initial design): copies of the target order them right, so nu stays at 1
    # until the search's own first iteration, and falls by r per iteration after it;
    # mirror images order them wrongly, and nu falls before the search has asked anything.
    r = 0.7 ** (6 / 8)
    given = np.random.default_rng(3).random((5, 8))
    prob, copies = _target_copies(1.0, 0)
    opt = MetaBO(8, copies, "rm-gp-ucb", seed=0)
    for x in given:
        opt.tell(x, float(prob.f(x[None, :])[0]))
    assert opt.nu == 1.0
    _run(opt, prob, 3, np.random.default_rng(0))
    assert [rec["nu"] for rec in opt.history] == pytest.approx([1.0, r, r**2])
    prob, negated = _target_copies(-1.0, 0)
    opt = MetaBO(8, negated, "rm-gp-ucb", seed=0)
    for x in given:
        opt.tell(x, float(prob.f(x[None, :])[0]))
    assert opt.nu < 0.2
    # Told after being asked (or marked pending), the same points are iterations.
    opt = MetaBO(8, copies, "rm-gp-ucb", seed=0)
    for x in given:
        opt.add_pending(x)
        opt.tell(x, float(prob.f(x[None, :])[0]))
    assert opt.nu == pytest.approx(r**5)


def test_given_points_beyond_the_targets_first_fit_count_as_iterations():
    # Tasks rising with x order every pair of a rising target right (gap 0): the first five
    # given points (min_fit_observations) are free, the next three cost r each, as a
    # finished experiment of the same task fed in should spend nu.
    X = np.linspace(0.0, 1.0, 21)[:, None]
    tasks = [(X, X[:, 0] + 0.1 * k) for k in range(3)]
    opt = MetaBO(1, tasks, "rm-gp-ucb", seed=0)
    for k, x in enumerate(np.linspace(0.05, 0.95, 8)):
        opt.tell([x], float(x))
        assert opt.nu == pytest.approx(0.7 ** max(0, k + 1 - 5))


def test_the_lowest_probe_tests_the_meta_tasks_where_they_predict_the_lowest_value():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    X = np.linspace(0.0, 1.0, 15)[:, None]
    task = (X, -((X[:, 0] - 0.2) ** 2))  # best at 0.2, worst at 1.0
    opt = MetaBO(1, [task, task], "rm-gp-ucb", candidates=grid, seed=0, probe_point="lowest")
    first = opt.ask()
    opt.tell(first, 0.0)
    assert opt.ask()[0] == pytest.approx(1.0)
    assert opt.history[-1]["branch"] == "probe"
    assert abs(first[0] - 0.2) <= 0.05
    off = MetaBO(1, [task, task], "rm-gp-ucb", candidates=grid, seed=0, probe=False)
    off.tell(off.ask(), 0.0)
    off.ask()
    assert off.history[-1]["branch"] == "combined"


def _probe_run(target, tasks, n, **options):
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    options = {"probe_after": 2, **options}
    opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0, **options)
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, target(x[0]))
    return opt


_X15 = np.linspace(0.0, 1.0, 15)[:, None]
_GO_LEFT = (_X15, -_X15[:, 0])  # a meta-task that says "the smaller x, the better"


def test_no_probe_when_the_first_observations_confirm_the_meta_tasks_ranking():
    opt = _probe_run(lambda x: -x, [_GO_LEFT, _GO_LEFT], 3)  # the target agrees
    assert [h["branch"] for h in opt.history] == ["combined"] * 3


def test_the_probe_is_spent_when_the_meta_tasks_rank_the_first_observations_wrongly():
    opt = _probe_run(lambda x: x, [_GO_LEFT, _GO_LEFT], 3, probe_point="lowest")
    assert [h["branch"] for h in opt.history] == ["combined", "combined", "probe"]
    assert opt.history[2]["x"] == [pytest.approx(1.0)]  # where the tasks predict the worst
    # Both tasks ordered the first pair wrongly (gap 3) and the probe's pairs too.
    assert opt.nu < 0.7**3 * 3.0**-0.7


def test_the_contest_is_an_unweighted_mean_over_the_meta_tasks():
    # One task agrees with the target and one is reversed: discordance 1/2, contested,
    # although the weights already favour the agreeing task.
    go_right = (_X15, _X15[:, 0])
    opt = _probe_run(lambda x: -x, [_GO_LEFT, go_right], 3)
    assert opt.meta_weights[0] > opt.meta_weights[1]
    assert opt.history[2]["branch"] == "probe"


def test_probe_after_waits_for_that_many_observations():
    opt = _probe_run(lambda x: x, [_GO_LEFT, _GO_LEFT], 4, probe_after=3)
    assert [h["branch"] for h in opt.history] == ["combined"] * 3 + ["probe"]


def test_the_probe_is_spent_without_evidence_while_evaluations_run():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    opt = MetaBO(1, [_GO_LEFT, _GO_LEFT], "rm-gp-ucb", candidates=grid, seed=0, probe_after=2)
    x1, x2 = opt.ask(), opt.ask()
    opt.tell(x1, -float(x1[0]))  # one result told, one running: nothing to compare
    opt.ask()
    assert opt.history[2]["branch"] == "probe"
    assert x2[0] != pytest.approx(1.0)


def _two_groups():
    # Two meta-tasks best at 0.2 and two best at 0.8: their mixture is best at 0.5.
    X = np.linspace(0.0, 1.0, 21)[:, None]
    left, right = (X, -((X[:, 0] - 0.2) ** 2)), (X, -((X[:, 0] - 0.8) ** 2))
    return [left, left, right, right]


def test_the_informative_probe_tries_the_best_point_of_the_tasks_that_disagree():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    opt = MetaBO(1, _two_groups(), "rm-gp-ucb", candidates=grid, seed=0)
    first = opt.ask()
    opt.tell(first, 0.0)
    second = opt.ask()
    assert opt.history[-1]["branch"] == "probe"
    # The first point is one group's optimum; the probe the other's, which half of the
    # tasks rank above the first point and half below (not where the tasks' mixture is
    # lowest, 0 and 1).
    assert min(abs(first[0] - 0.2), abs(first[0] - 0.8)) <= 0.05
    assert abs(second[0] - (1.0 - first[0])) <= 0.1
    lowest = MetaBO(1, _two_groups(), "rm-gp-ucb", candidates=grid, seed=0, probe_point="lowest")
    lowest.tell(lowest.ask(), 0.0)
    assert lowest.ask()[0] in (0.0, 1.0)


def test_the_gain_probes_go_where_the_tasks_expect_most_gain_over_the_first_point():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    X = np.linspace(0.0, 1.0, 21)[:, None]
    left, right = (X, -((X[:, 0] - 0.2) ** 2)), (X, -((X[:, 0] - 0.8) ** 2))
    tasks = [left, left, left, right]
    probes = {}
    for point in ("gain", "smoothed", "informative"):
        opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0, probe_point=point)
        first = opt.ask()
        opt.tell(first, 0.0)
        probes[point] = opt.ask()[0]
        assert opt.history[-1]["branch"] == "probe"
        assert first[0] == pytest.approx(0.2)  # the majority's optimum
    # The left tasks expect no gain over the first point, the right one most at 0.8; the
    # informative probe stays beside the first point, where the majority rates it best.
    assert probes["gain"] == pytest.approx(0.8)
    assert probes["smoothed"] == pytest.approx(0.8)
    assert abs(probes["informative"] - 0.2) <= 0.1
    # Where no task expects a gain over the first point, the gain probe is the informative.
    asks = []
    for point in ("gain", "smoothed", "informative"):
        opt = MetaBO(1, [left, left], "rm-gp-ucb", candidates=grid, seed=0, probe_point=point)
        opt.tell(np.array([0.2]), 0.0)  # both tasks' optimum
        asks.append(opt.ask()[0])
    np.testing.assert_allclose(asks, asks[1])


def test_the_default_probe_is_smoothed_with_fewer_than_ten_tasks_and_clipped_with_more():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    X = np.linspace(0.0, 1.0, 21)[:, None]
    # One task's own narrow peak at 0.9, the others' broad optimum at 0.3 (where the first
    # point goes): the clipped gain is that one task's, the smoothed gain charges it with
    # the others' losses there.
    others = [(X, -((X[:, 0] - 0.3) ** 2) + 0.01 * k) for k in range(8)]
    peak = (X, -((X[:, 0] - 0.3) ** 2) + 2.0 * np.exp(-(((X[:, 0] - 0.9) / 0.05) ** 2)))

    def probe(tasks, point=None):
        kwargs = {} if point is None else {"probe_point": point}
        opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0, **kwargs)
        opt.tell(opt.ask(), 0.0)
        x = opt.ask()
        assert opt.history[-1]["branch"] == "probe"
        return opt.probe_point, x[0]

    few, many = [peak, *others[:3]], [peak, *others, *others[:1]]
    assert len(few) < 10 <= len(many)
    resolved, x = probe(few)
    assert (resolved, x) == ("smoothed", probe(few, "smoothed")[1])
    resolved, x = probe(many)
    assert (resolved, x) == ("gain", probe(many, "gain")[1])
    assert probe(few, "gain")[1] != probe(few, "smoothed")[1]


def test_a_blind_batch_continues_the_probe_as_a_greedy_portfolio():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    X = np.linspace(0.0, 1.0, 21)[:, None]
    tasks = [(X, -((X[:, 0] - c) ** 2)) for c in (0.2, 0.2, 0.5, 0.8)]
    opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0)
    batch = np.array([opt.ask() for _ in range(4)])
    # The third point is where the tasks gain most over the two pending: the last task's
    # optimum. Then every task's optimum is pending, no point away from them gains, and the
    # penalized acquisition chooses the fourth.
    assert [r["branch"] for r in opt.history] == ["combined", "probe", "portfolio", "combined"]
    np.testing.assert_allclose(np.sort(batch[:3, 0]), [0.225, 0.5, 0.8])
    mu, w = opt.meta.predict(grid)[0], opt.meta_weights
    gain = weighted_improvement(w, mu, opt.meta.predict(batch[:2])[0].max(axis=1))
    assert gain[grid[:, 0] == batch[2, 0]][0] == pytest.approx(gain.max())
    assert min(abs(batch[3, 0] - batch[:3, 0])) >= 0.02
    # Once a value is told, the search is the method's own again.
    opt.tell(batch[0], 0.0)
    opt.ask()
    assert opt.history[-1]["branch"] == "combined"
    # Without the probe, the penalized acquisition spreads the whole batch.
    other = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0, probe=False)
    for _ in range(4):
        other.ask()
    assert {r["branch"] for r in other.history} == {"combined"}


def test_the_portfolio_hands_over_when_only_dropped_points_would_gain():
    grid = np.array([[0.0], [0.2], [0.5], [0.8]])
    X = np.linspace(0.0, 1.0, 21)[:, None]
    tasks = [(X, -((X[:, 0] - c) ** 2)) for c in (0.2, 0.2, 0.5, 0.8)]
    twin = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0)
    third = [twin.ask() for _ in range(3)][-1]
    assert twin.history[-1]["branch"] == "portfolio"
    opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0)
    opt.ask(), opt.ask()
    opt.drop(third)  # stopped early: never suggested again
    x = opt.ask()
    # The last task's gain was only at the dropped point: no portfolio point is left.
    assert opt.history[-1]["branch"] == "combined"
    assert x[0] == pytest.approx(0.0)


def _mirror_run(target, n):
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    X = np.linspace(0.0, 1.0, 15)[:, None]
    task = (X, -((X[:, 0] - 0.2) ** 2))  # best at 0.2, worst at 1.0
    opt = MetaBO(1, [task, task], "rm-gp-ucb", candidates=grid, seed=0)
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, target(x[0]))
    return opt


def test_the_lowest_point_is_probed_next_when_the_target_is_the_tasks_mirror_image():
    opt = _mirror_run(lambda x: (x - 0.2) ** 2, 3)
    assert [h["branch"] for h in opt.history] == ["combined", "probe", "probe"]
    assert opt.history[2]["x"] == [pytest.approx(1.0)]
    # The informative probe came first, short of the tasks' worst point.
    assert opt.history[1]["x"] != [pytest.approx(1.0)]
    # A target that agrees with the tasks gets no second probe.
    agrees = _mirror_run(lambda x: -((x - 0.2) ** 2), 3)
    assert [h["branch"] for h in agrees.history] == ["combined", "probe", "combined"]


def test_no_second_probe_after_points_the_engine_did_not_suggest():
    opt = _mirror_run(lambda x: (x - 0.2) ** 2, 0)
    opt.tell(np.array([0.2]), 0.0)  # the user's own points, in the tasks' mirror image
    opt.tell(np.array([0.9]), 0.49)
    opt.ask()
    assert [h["branch"] for h in opt.history] == ["combined"]


def test_probe_makes_a_misleading_task_lose_nu_at_once():
    grid = np.linspace(0.0, 1.0, 41)[:, None]
    X = np.linspace(0.0, 1.0, 15)[:, None]
    opt = MetaBO(1, [(X, X[:, 0])], "rm-gp-ucb", candidates=grid, seed=0)
    for _ in range(2):  # the task says "go right"
        x = opt.ask()
        opt.tell(x, -float(x[0]))  # the target is best on the left
    assert opt.history[1]["branch"] == "probe"
    assert opt.nu == pytest.approx(0.7 * 3.0**-0.7)  # one wrongly ordered pair: gap 3


def _peaked_tasks(profile, bests=(0.3, 0.32, 0.8)):
    """One meta-task of 31 points per entry of ``bests`` (by default three, best at 0.3,
    0.32 and 0.8), observed there exactly, falling away from it as ``profile`` of the
    distance."""
    rng = np.random.default_rng(0)
    tasks = []
    for best in bests:
        X = rng.random((30, 1))
        tasks.append((np.vstack([X, [[best]]]), np.append(-profile(X[:, 0] - best), 0.0)))
    return tasks


def test_warm_start_evaluates_the_meta_tasks_best_points_first_then_gp_ucb():
    grid = np.linspace(0.0, 1.0, 101)[:, None]
    tasks = _peaked_tasks(np.square)
    opt = MetaBO(1, tasks, "warm-start", candidates=grid, seed=0)
    first = [float(opt.ask()[0]) for _ in range(3)]
    # Ranked by the mean prediction over all tasks: the two near 0.3 agree, 0.8 is alone.
    assert first[:2] in ([0.3, 0.32], [0.32, 0.3]) and first[2] == 0.8
    assert [r["branch"] for r in opt.history] == ["initial"] * 3
    for x in opt.pending:
        opt.tell(x, 0.0)
    opt.ask()
    assert opt.history[-1]["branch"] == "target"


def test_portfolio_evaluates_a_greedy_portfolio_first_then_gp_ucb():
    grid = np.linspace(0.0, 1.0, 101)[:, None]
    tasks = _peaked_tasks(np.abs)
    opt = MetaBO(1, tasks, "portfolio", candidates=grid, seed=0)
    first = [float(opt.ask()[0]) for _ in range(opt.n_initial)]
    # The tasks near 0.3 are served first; the next point serves the task best at 0.8,
    # where the warm start's ranking by the mean over the tasks takes the other 0.3 first.
    assert abs(first[0] - 0.31) <= 0.02 and abs(first[1] - 0.8) <= 0.02, first
    assert {r["branch"] for r in opt.history} == {"initial"}
    for x in opt.pending:
        opt.tell(x, 0.0)
    opt.ask()
    assert opt.history[-1]["branch"] == "target"
    # In the cube, the portfolio is drawn from the inputs the tasks evaluated.
    cube = MetaBO(1, tasks, "portfolio", seed=0)
    x = cube.ask()
    assert np.any(np.all(np.vstack([X for X, _ in tasks]) == x, axis=1))


@pytest.mark.parametrize(
    ("method", "options"),
    [("warm-start", {}), ("portfolio", {}), ("rm-gp-ucb", {"portfolio_start": 3})],
)
def test_points_the_search_did_not_choose_leave_the_warm_points_to_evaluate(method, options):
    grid = np.linspace(0.0, 1.0, 101)[:, None]
    tasks = _peaked_tasks(np.abs)
    fresh = MetaBO(1, tasks, method, candidates=grid, seed=0, **options)
    warm = [float(fresh.ask()[0]) for _ in range(fresh.n_initial)]
    opt = MetaBO(1, tasks, method, candidates=grid, seed=0, **options)
    for x in (0.05, 0.55, 0.95):  # results told before the search (HPO-B's protocol)
        opt.tell([x], 0.0)
    opt.add_pending([0.65])  # a user's point_to_evaluate, in flight
    opt.tell([warm[1]], 0.0)  # a warm point given: it is not evaluated again
    asked = [float(opt.ask()[0]) for _ in range(len(warm) - 1)]
    assert asked == [warm[0], *warm[2:]]
    assert {r["branch"] for r in opt.history} == {"initial"}
    opt.ask()
    assert opt.history[-1]["branch"] != "initial"


def test_portfolio_start_evaluates_the_portfolios_first_points_before_the_acquisition():
    grid = np.linspace(0.0, 1.0, 101)[:, None]
    tasks = _peaked_tasks(np.abs)
    portfolio = MetaBO(1, tasks, "portfolio", candidates=grid, seed=0)
    expected = [float(portfolio.ask()[0]) for _ in range(2)]
    opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0, portfolio_start=2)
    for k in range(4):
        x = opt.ask()
        if k < 2:
            assert float(x[0]) == expected[k]
        opt.tell(x, -abs(float(x[0]) - 0.8))
    # no probe: its turn fell inside the portfolio
    assert [r["branch"] for r in opt.history] == ["initial", "initial", "combined", "combined"]


def test_portfolio_start_gives_way_to_the_lowest_probe_when_the_tasks_look_mirrored():
    grid = np.linspace(0.0, 1.0, 101)[:, None]
    tasks = _peaked_tasks(np.square, bests=(0.3, 0.31, 0.32, 0.8))  # three agree, one alone

    def run(target):
        opt = MetaBO(1, tasks, "rm-gp-ucb", candidates=grid, seed=0, portfolio_start=3)
        for _ in range(4):
            x = opt.ask()
            opt.tell(x, target(float(x[0])))
        return opt

    # The three that agree rank the portfolio's first two points the other way round from
    # this target: the third evaluation probes the tasks' lowest point instead, and the
    # rest of the portfolio is dropped.
    mirrored = run(lambda x: (x - 0.31) ** 2)
    assert [r["branch"] for r in mirrored.history] == ["initial", "initial", "probe", "combined"]
    agrees = run(lambda x: -((x - 0.31) ** 2))
    assert [r["branch"] for r in agrees.history] == ["initial"] * 3 + ["combined"]


def _degenerate_meta_data():
    """Meta-data a user's earlier experiments can leave: (name, meta-tasks) on a 3-D grid."""
    rng = np.random.default_rng(5)
    grid = np.round(rng.random((80, 3)), 1)
    X = grid[:30]
    y = -np.sum((X - 0.3) ** 2, axis=1)
    twice = np.vstack([X, X])
    return grid, [
        ("constant tasks", [(X, np.zeros(30)), (X, np.full(30, 2.0))]),
        ("one to three rows", [(X[:1], y[:1]), (X[:2], y[:2]), (X[:3], y[:3])]),
        ("repeated rows, other values", [(twice, np.concatenate([y, y + 0.3]))] * 2),
        ("values of 1e12 and 1e-12", [(X, 1e12 * y), (X, 1e-12 * y + 5.0)]),
        ("many tasks of two rows", [(grid[rng.choice(80, 2)], rng.random(2)) for _ in range(60)]),
    ]


@pytest.mark.parametrize("method", METHODS)
def test_degenerate_meta_data_gives_valid_distinct_suggestions(method):
    grid, cases = _degenerate_meta_data()
    for name, tasks in cases:
        opt = MetaBO(3, tasks, method, candidates=grid, seed=0)
        seen = set()
        for k in range(8):
            x = opt.ask()
            assert np.all(np.isfinite(x)) and np.all((x >= 0.0) & (x <= 1.0)), name
            assert tuple(x) not in seen, name
            seen.add(tuple(x))
            opt.tell(x, 1.0 if k % 3 else -float(np.sum((x - 0.3) ** 2)))
        assert 0.0 <= opt.nu <= 1.0, name
        w = opt.meta_weights
        assert np.all(np.isfinite(w)) and (len(w) == 0 or w.sum() == pytest.approx(1.0)), name


def test_paper_variant_sets_the_papers_options_unless_given():
    opt = MetaBO(2, [], "gp-ucb", variant="paper", beta_scale=0.5)
    assert opt.options.gap_estimate == "bound" and opt.options.output_scaling == "shared"
    assert not opt.options.hyper_prior and not opt.options.probe
    assert opt.options.beta_scale == 0.5


def test_the_automatic_meta_term_takes_tafs_form_for_searched_tasks_only():

    rng = np.random.default_rng(3)
    random_tasks = [(X, bowl(X)) for X in rng.random((4, 50, 3))]
    searched = [(X, bowl(X)) for X in (searched_rows(rng) for _ in range(4))]
    assert MetaBO(3, random_tasks, seed=0).meta_term == "mean"
    opt = MetaBO(3, searched, seed=0)
    assert opt.meta_term == "taf" and opt.searched_score >= 0.4
    assert MetaBO(3, searched, seed=0, meta_term="mean").meta_term == "mean"
    assert MetaBO(3, searched, seed=0, variant="paper").meta_term == "mean"
    assert MetaBO(3, [], seed=0).meta_term == "mean"


def _grouped_tasks(rng, centres=(0.15, 0.85)):
    """50 random rows of each of 10 tasks peaked at ``centres`` in every coordinate, in turn."""
    return [
        (X, -((X - centres[k % len(centres)]) ** 2).sum(1))
        for k, X in enumerate(rng.random((10, 50, 3)))
    ]


def test_the_automatic_meta_term_takes_tafs_form_where_the_tasks_disagree():
    rng = np.random.default_rng(5)
    agreeing = _grouped_tasks(rng, centres=(0.85,))
    grouped = _grouped_tasks(rng)
    opt = MetaBO(3, agreeing, seed=0)
    assert opt.meta_term == "mean" and opt.disagreement < 0.03
    assert opt.meta_term_source == "default"
    opt = MetaBO(3, grouped, seed=0)
    assert opt.meta_term == "taf" and opt.disagreement >= opt.options.taf_disagreement
    assert opt.meta_term_source == "disagreement"
    assert MetaBO(3, grouped, seed=0, meta_term="taf").meta_term_source == "option"
    assert MetaBO(3, grouped, seed=0, taf_disagreement=None).meta_term == "mean"
    assert MetaBO(3, grouped, seed=0, meta_term="mean").meta_term == "mean"
    assert MetaBO(3, grouped, "gp-ucb", seed=0).meta_term == "mean"  # reads no tasks
    # Online tasks (the search's own lower fidelities) are not earlier tasks: not counted.
    opt = MetaBO(3, agreeing, seed=0)
    for k, X in enumerate(rng.random((5, 50, 3))):
        opt.update_meta_task(f"rung-{k}", X, -((X - 0.15) ** 2).sum(1))
    opt.ask()  # fits the online tasks' GPs and resolves the meta term
    assert opt.meta_term == "mean" and opt.disagreement < 0.03
    assert disagreement(opt._meta_cache_get().mu) > 0.1  # what counting them would give


def test_a_state_written_before_taf_disagreement_keeps_the_tasks_mean():
    opt = MetaBO(3, _grouped_tasks(np.random.default_rng(6)), seed=0)
    state = json.loads(json.dumps(opt.state_dict()))
    assert MetaBO.from_state_dict(state).meta_term == "taf"
    del state["options"]["taf_disagreement"]
    assert MetaBO.from_state_dict(state).meta_term == "mean"


def test_a_restored_engine_keeps_tafs_form_and_continues_identically():

    rng = np.random.default_rng(4)
    opt = MetaBO(3, [(X, bowl(X)) for X in (searched_rows(rng) for _ in range(3))], seed=0)
    for _ in range(3):
        x = opt.ask()
        opt.tell(x, float(bowl(x[None])[0]))
    twin = MetaBO.from_state_dict(json.loads(json.dumps(opt.state_dict())))
    assert twin.meta_term == "taf" and twin.searched_score == opt.searched_score
    for _ in range(3):
        a, b = opt.ask(), twin.ask()
        np.testing.assert_array_equal(a, b)
        y = float(bowl(a[None])[0])
        opt.tell(a, y)
        twin.tell(b, y)


def test_state_of_version_1_loads_with_that_engines_options():
    X = np.random.default_rng(0).random((10, 2))
    opt = MetaBO(
        2, [(X, X.sum(1))], "rm-gp-ucb", seed=0, variant="paper", beta_scale=1.0, ts_scale="beta"
    )
    state = opt.state_dict()
    state["version"] = 1
    for name in ("variant", "gap_estimate", "hyper_prior", "probe", "target_warp", "ts_scale"):
        del state["options"][name]
    restored = MetaBO.from_state_dict(state)
    assert restored.options == opt.options


def _repeats(opt):
    """How many suggestions came within 0.03 length scales of an earlier observation."""
    X, ls = opt.target.X_fit, opt.target.hyper.lengthscales
    d = np.abs(X[:, None, 0] - X[None, :, 0]) / ls[0]
    return int(sum(d[i, :i].min() < 0.03 for i in range(1, len(X))))


@pytest.mark.slow
@pytest.mark.parametrize("form", ["shrink", "beta"])
def test_gp_ucb_stuck_on_a_local_optimum_escalates_and_leaves_it(form):
    # A 1-D GP draw with length scale 0.05 on which GP-UCB (beta_scale 0.2, 2 initial
    # points) fits a length scale of about 0.4 and, without the escalation, evaluates
    # within 0.01 of x = 1 in 47 of 50 evaluations.
    prob = make_problem(np.random.default_rng([0, 5]), gaps=(8.0,) * 4)
    runs = {}
    for n in (0, 4):
        opt = MetaBO(1, method="gp-ucb", seed=5, repeat_escalations=n, escalation=form)
        _run(opt, prob, 30, np.random.default_rng(5))
        runs[n] = opt
    stuck, escaped = runs[0], runs[4]
    assert _repeats(stuck) >= 20
    assert all("escalations" not in r for r in stuck.history)
    assert any(r.get("escalations", 0) > 0 for r in escaped.history)
    assert _repeats(escaped) < _repeats(stuck)
    regret = [prob.f_max - prob.f(o.X).max() for o in (stuck, escaped)]
    assert regret[0] > 0.9 and regret[1] < 0.1, regret


@pytest.mark.slow
@pytest.mark.parametrize("method", ["rm-gp-ucb", "rm-gp-ts"])
def test_a_search_leaves_a_local_optimum_its_dissimilar_tasks_hold_it_on(method):
    # The paper's dissimilar setting (four tasks of gap 8, r = 0.99 so that nu stays large):
    # the tasks' mean, noise that happens to rank the target's evaluations well, peaks
    # near x = 1, a local optimum (regret 0.33); the global one is at x = 0.046. Every
    # suggestion near x = 1 repeats. Shrinking the target's length scales alone left
    # RM-GP-UCB there for all 50 evaluations, as long as nu kept the tasks' term in front,
    # and RM-GP-TS, whose tasks' branch did not escalate, at regret 0.29. Dividing nu at
    # each escalation lets the target's model take over.
    prob = make_problem(np.random.default_rng([0, 1]), gaps=(8.0,) * 4)
    opt = MetaBO(1, prob.meta_tasks, method, seed=1, r=0.99)
    _run(opt, prob, 50, np.random.default_rng(10_001))
    assert any(r.get("escalations", 0) > 0 and r["nu"] > 0.5 for r in opt.history)
    if method == "rm-gp-ts":  # a sample of the tasks that repeated was drawn again
        assert any(r.get("escalated_from") == "meta" for r in opt.history)
    assert prob.f_max - prob.f(opt.X).max() < 0.05


def test_a_repeat_is_measured_between_the_unwarped_inputs():
    # Tasks that saturate along x0 warp the target's x0; the repeat radius is taken between
    # the unwarped inputs (between the warped ones the escalations cost more: options).
    rng = np.random.default_rng(5)
    opt = MetaBO(2, saturating_tasks(rng, 4), seed=1)
    for x in ([0.05, 0.3], [0.9, 0.3], [0.5, 0.7], [0.2, 0.1], [0.7, 0.9], [0.3, 0.5]):
        opt.tell(x, float(min(10 * x[0], 1.0) - (x[1] - 0.3) ** 2))
    hyper = opt.target.hyper
    assert hyper.warp is not None
    ls, seen = hyper.lengthscales, opt.target.X_fit[1]

    def distances(step):
        x = seen - [step, 0.0]
        raw = abs(step) / ls[0]
        warped = np.linalg.norm((hyper.inputs(x[None]) - hyper.inputs(seen[None]))[0] / ls)
        return x, raw, warped

    # A step along x0 on which the raw and the warped distance fall on either side of the
    # radius: the warp compresses x0 at 0.9 (the tasks saturate there) or stretches it.
    steps = np.linspace(0.0, 0.2, 4001)[1:]
    split = [s for s in steps if (distances(s)[1] < 0.03) != (distances(s)[2] < 0.03)]
    assert split, "the warp neither compresses nor stretches x0 at the observation"
    x, raw, warped = distances(split[len(split) // 2])
    assert opt._repeats(x, "target") == (raw < 0.03), (raw, warped)
    assert opt._repeats(x, "combined") == (raw < 0.03)
    assert not opt._repeats(x, "probe")


def test_on_a_finite_candidate_set_a_repeat_is_measured_in_the_sets_own_spacing():
    # A log-spaced parameter scaled linearly: 0.0001 and 0.001 are 0.0009 apart in the
    # cube, less than 0.03 of any length scale above 0.03, yet neighbouring levels of the
    # grid, a fifth of its levels' range apart once they are evenly spread. In the cube,
    # and on an evenly spaced grid, the same step repeats the observation. Without
    # grid_levels the engine models the coordinates, and the repeat test alone takes the
    # set's spacing (gp-ucb has no meta-tasks to choose another).
    log_levels = np.array([0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0])[:, None]
    even = np.linspace(0.0, 1.0, 1001)[:, None]
    engines = {
        name: MetaBO(1, method="gp-ucb", candidates=c, seed=0)
        for name, c in (("cube", None), ("log levels", log_levels), ("even", even))
    }
    for opt in engines.values():
        for x in (1e-3, 0.1, 1.0):
            opt.tell([x], -((np.log10(x) + 3.0) ** 2))
    assert engines["cube"].target.hyper.lengthscales[0] > 0.03
    near = np.array([1e-4])
    assert engines["cube"]._repeats(near, "target")
    assert engines["even"]._repeats(near, "target")
    assert not engines["log levels"]._repeats(near, "target")
    assert not engines["log levels"]._repeats(near, "combined")


def _spaced_grid(column):
    """A 6 x 5 grid whose first column takes the levels ``column``, with a target and
    three meta-tasks defined on the levels' indices, not on their coordinates."""
    i, j = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    i, j = i.ravel(), j.ravel()
    grid = np.column_stack([column[i], j / 4.0])
    tasks = []
    for k, (ci, cj) in enumerate([(3.0, 1.0), (2.5, 2.0), (4.0, 1.5)]):
        rows = np.random.default_rng(k).choice(len(grid), 12, replace=False)
        tasks.append((grid[rows], -((i[rows] - ci) ** 2) - (j[rows] - cj) ** 2))
    return grid, tasks, -((i - 3.2) ** 2) - (j - 1.7) ** 2


@pytest.mark.parametrize("method", ["rm-gp-ucb", "rm-gp-ts", "rgpe"])
def test_grid_levels_make_the_search_blind_to_how_a_column_is_spaced(method):
    # The same grid with its first parameter's levels evenly spaced, and log-spaced scaled
    # linearly (0, 0.003, ..., 0.3, 1): with every column in ranks the engine sees both as
    # the first, and suggests the same rows, given in each grid's own coordinates.
    log = (np.geomspace(1e-3, 1.0, 6) - 1e-3) / (1.0 - 1e-3)
    picks = {}
    for name, column in (("even", np.linspace(0.0, 1.0, 6)), ("log", log)):
        for levels in ("all", "none"):
            grid, tasks, f = _spaced_grid(column)
            opt = MetaBO(2, tasks, method, candidates=grid, seed=0, grid_levels=levels)
            rows = []
            for _ in range(10):
                x = opt.ask()
                (row,) = np.flatnonzero((grid == x).all(axis=1))  # exactly a grid row
                rows.append(int(row))
                opt.tell(x, float(f[row]))
            np.testing.assert_array_equal(opt.X, grid[rows])
            picks[name, levels] = rows
    assert picks["even", "all"] == picks["log", "all"]
    assert picks["even", "all"] == picks["even", "none"]  # evenly spaced: nothing changes
    assert picks["log", "all"] != picks["log", "none"]


def test_grid_levels_survive_a_state_round_trip_with_points_off_the_grid():
    grid, tasks, f = _spaced_grid((np.geomspace(1e-3, 1.0, 6) - 1e-3) / (1.0 - 1e-3))
    opt = MetaBO(2, tasks, candidates=grid, seed=1, grid_levels="all")
    opt.tell([0.002, 0.5], -9.0)  # a warm start between two levels
    opt.add_pending(grid[7])
    state = json.loads(json.dumps(opt.state_dict()))
    twin = MetaBO.from_state_dict(state)
    np.testing.assert_allclose(twin.X, [[0.002, 0.5]])
    np.testing.assert_array_equal(twin.pending, grid[7:8])
    np.testing.assert_array_equal(twin.candidates, grid)
    for _ in range(4):
        a, b = opt.ask(), twin.ask()
        np.testing.assert_array_equal(a, b)
        y = float(f[np.flatnonzero((grid == a).all(axis=1))[0]])
        opt.tell(a, y)
        twin.tell(b, y)
    assert opt.history == twin.history
    bad = {**state, "levels": [[0.5, 0.2], [0.0, 1.0]]}
    with pytest.raises(ValueError, match="levels must be 2 increasing lists"):
        MetaBO.from_state_dict(bad)


@pytest.mark.parametrize("smooth_in", ["ranks", "coordinates"])
def test_grid_levels_keep_the_spacing_the_meta_tasks_are_smooth_in(smooth_in):
    # A 20 x 20 grid whose first column is log-spaced over three decades, scaled linearly.
    # Meta-tasks smooth in that column's ranks (the effect of a log-scale parameter) have it
    # placed in ranks; meta-tasks smooth in its coordinates keep them. The second column is
    # evenly spaced: nothing to choose.
    column = (np.geomspace(1e-3, 1.0, 20) - 1e-3) / (1.0 - 1e-3)
    u = np.linspace(0.0, 1.0, 20)
    i, j = (a.ravel() for a in np.meshgrid(np.arange(20), np.arange(20), indexing="ij"))
    grid = np.column_stack([column[i], u[j]])
    x0 = u[i] if smooth_in == "ranks" else column[i]
    rng = np.random.default_rng(0)
    tasks = []
    for _ in range(6):
        c = rng.uniform(0.2, 0.8, 2)
        y = np.sin(6.0 * (x0 - c[0])) - 4.0 * (u[j] - c[1]) ** 2
        rows = rng.choice(len(grid), 60, replace=False)
        tasks.append((grid[rows], y[rows] + 0.01 * rng.standard_normal(60)))
    opt = MetaBO(2, tasks, candidates=grid, seed=0)
    if smooth_in == "ranks":
        assert [lv is not None for lv in opt.levels.levels] == [True, False]
        twin = MetaBO.from_state_dict(json.loads(json.dumps(opt.state_dict())))
        assert [lv is not None for lv in twin.levels.levels] == [True, False]
        np.testing.assert_array_equal(twin.candidates, grid)
    else:
        assert opt.levels is None
    assert (grid == opt.ask()).all(axis=1).any()  # a row of the grid as given
    assert MetaBO(2, tasks, "gp-ucb", candidates=grid, seed=0).levels is None


@pytest.mark.parametrize("seed", range(3))
def test_a_failing_region_is_not_proposed_again(seed):
    # Every x > 0.5 fails; the best successful value lies at the edge of that region.
    opt = MetaBO(1, seed=seed)
    for x in np.linspace(0.05, 0.45, 5):
        opt.tell([x], float(x))
    failed = []
    for _ in range(20):
        x = opt.ask()
        if x[0] > 0.5:
            failed.append(float(x[0]))
            opt.fail(x)
        else:
            opt.tell(x, float(x[0]))
    # Once the boundary is found the bound repeats it, and the escalation explores the
    # rest of the cube, the far side of the failing region included (4-6 of 20 fail).
    assert len(failed) <= 6 and opt.n_failed == len(failed)
    ok = opt.X[:, 0]
    for i, a in enumerate(failed):
        # Never again within 0.01 of a failure (about the length scale fitted at the
        # boundary), unless nearer still to a success (the model then has evidence that the
        # neighbourhood succeeds: the boundary is being refined).
        for b in failed[:i]:
            assert abs(a - b) >= 0.01 or np.abs(ok - a).min() < abs(a - b), (a, b)
    assert opt.y.max() > 0.48  # and the search still closes in on the boundary
    np.testing.assert_array_equal(np.sort(opt.target.failed[:, 0]), np.sort(failed))


def test_the_tasks_warp_needs_a_prior_and_agreeing_tasks():
    # Four tasks that saturate along x0: warped from the first fit. Without a prior
    # (maximum likelihood) there is none to centre, and two tasks are too few to agree.
    rng = np.random.default_rng(5)
    tasks = saturating_tasks(rng, 4)
    noise_rng = np.random.default_rng(0)
    for given, hyper_prior, warped in ((tasks, True, True), (tasks, False, False)):
        opt = MetaBO(2, given, seed=1, hyper_prior=hyper_prior)
        for _ in range(6):
            x = opt.ask()
            opt.tell(x, float(min(10 * x[0], 1.0) + 0.01 * noise_rng.standard_normal()))
        assert (opt.target.hyper.warp is not None) == warped
        assert (opt.task_warp is not None) == warped
    two = MetaBO(2, tasks[:2], seed=1)
    for _ in range(6):
        x = two.ask()
        two.tell(x, float(min(10 * x[0], 1.0)))
    np.testing.assert_array_equal(two.task_warp, np.zeros((2, 2)))
    assert two.target.hyper.warp is None and two.target.prior.log_warp_loc is None


@pytest.mark.parametrize(
    "method", ["rm-gp-ucb", "rm-gp-ts", "rgpe", "taf", "warm-start", "portfolio"]
)
def test_meta_tasks_that_did_not_record_a_column_still_guide_the_search(method):
    # The earlier experiments searched x0 and x2 (a bowl peaked at 0.3) and left x1 out:
    # their column is NaN. The first suggestion is near their peak in x0 and x2; after the
    # first fits (the target's, the tasks' warp) a state round trip continues identically.
    rng = np.random.default_rng(0)
    tasks = []
    for _ in range(4):
        X = rng.random((30, 3))
        y = bowl(X[:, [0, 2]])
        X[:, 1] = np.nan
        tasks.append((X, y))
    grid = np.array(
        list(itertools.product(np.linspace(0, 1, 6), [0.0, 0.01, 0.1, 1.0], np.linspace(0, 1, 6)))
    )
    for candidates in (None, grid):
        opt = MetaBO(3, tasks, method, candidates=candidates, seed=0)
        x = opt.ask()
        assert abs(x[0] - 0.3) <= 0.15 and abs(x[2] - 0.3) <= 0.15, x
        # x1 ties for the tasks: on the grid, the level nearest the middle of its range; in
        # the cube, the middle itself
        assert x[1] == (0.1 if candidates is not None else 0.5), x
        for _ in range(6):
            opt.tell(x, float(bowl(x[None, [0, 2]])[0] - 0.1 * x[1]))
            x = opt.ask()
        restored = MetaBO.from_state_dict(json.loads(json.dumps(opt.state_dict())))
        np.testing.assert_array_equal(restored.ask(), opt.ask())


def test_grouped_onehot_lengthscales_tie_each_categoricals_columns(rng):
    # A categorical with four values beside a number, as a grid; the meta-tasks and the
    # target prefer different categories by different amounts.
    grid = np.array([[*np.eye(4)[c], x] for c in range(4) for x in np.linspace(0, 1, 9)])

    def f(X, shift):
        return X[:, :4] @ np.array([0.0, 0.3, 1.0, 0.2 + shift]) - (X[:, 4] - 0.6) ** 2

    tasks = [(grid, f(grid, s) + 0.01 * rng.normal(size=len(grid))) for s in (0.0, 0.5, 0.9)]
    for option, tied in (("column", False), ("group", True)):
        opt = MetaBO(5, tasks, candidates=grid, seed=0, onehot_lengthscales=option)
        for _ in range(6):
            x = opt.ask()
            opt.tell(x, float(f(x[None, :], 0.4)[0]))
        hypers = [*opt._meta_hypers, opt.target.hyper]
        assert all((np.ptp(h.lengthscales[:4]) == 0.0) == tied for h in hypers), option
