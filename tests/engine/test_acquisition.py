import numpy as np
import pytest
from scipy import integrate, stats

from rmbo_tune.engine import acquisition as acq
from rmbo_tune.engine.gp import GPHyperparameters, ScaledGP
from rmbo_tune.engine.meta_models import MetaTaskModels
from rmbo_tune.engine.rff import RFFPosterior
from tests.conftest import finite_difference


class FakeModel:
    """mu = x0, sigma = 1 + x1: a model known in closed form (emukit/BoTorch style)."""

    def predict(self, X):
        return X[:, 0].copy(), 1.0 + X[:, 1]

    def predict_with_grad(self, x):
        return float(x[0]), float(1 + x[1]), np.array([1.0, 0.0]), np.array([0.0, 1.0])


class FakeMeta:
    """Two meta-tasks: mu_1 = 2 x0, mu_2 = -x1; sigma_i = 0.5."""

    def predict(self, X):
        return np.stack([2 * X[:, 0], -X[:, 1]]), np.full((2, len(X)), 0.5)

    def means(self, X):
        return self.predict(X)[0]

    def predict_with_grad(self, x):
        mu, s = self.predict(x[None])
        return mu[:, 0], s[:, 0], np.array([[2.0, 0.0], [0.0, -1.0]]), np.zeros((2, 2))

    prior_var = np.array([1.0, 1.0])


def test_rm_ucb_is_the_papers_equation_2(rng):
    X = rng.random((5, 2))
    w, nu, beta, tau = np.array([0.3, 0.7]), 0.4, 2.0, 1.5
    a = acq.RMUCB(FakeModel(), beta, FakeMeta(), w, nu, tau, cache=None)
    expected = nu * (0.3 * (2 * X[:, 0] + tau * 0.5) + 0.7 * (-X[:, 1] + tau * 0.5)) + (1 - nu) * (
        X[:, 0] + beta * (1 + X[:, 1])
    )
    np.testing.assert_allclose(a.values(X), expected)
    val, grad = a.value_and_grad(X[0])
    assert val == pytest.approx(expected[0])
    np.testing.assert_allclose(
        grad, finite_difference(lambda v: a.values(v[None])[0], X[0]), atol=1e-7
    )


def test_the_committee_knows_what_any_of_its_members_has_observed(rng):
    task_var, target_var = np.array([2.0, 0.5]), 1.5
    w = np.array([0.5, 0.5])
    # Nobody has observed here: every GP is at its prior, so is the committee.
    unseen = np.sqrt(np.array([[2.0], [0.5]]))
    s_c = acq.committee_std(w, unseen, task_var, np.array([np.sqrt(target_var)]), target_var)
    assert s_c[0] == pytest.approx(np.sqrt(target_var))
    # One task has observed nearby (std 0.1): its gain over its prior counts in full.
    seen = np.array([[0.1], [np.sqrt(0.5)]])
    s_c = acq.committee_std(w, seen, task_var, np.array([np.sqrt(target_var)]), target_var)
    assert s_c[0] == pytest.approx((1 / 1.5 + 1 / 0.01 - 1 / 2.0) ** -0.5)
    # ... or the target has: the same.
    s_c = acq.committee_std(w, unseen, task_var, np.array([0.1]), target_var)
    assert s_c[0] == pytest.approx((1 / 1.5 + 1 / 0.01 - 1 / 1.5) ** -0.5)
    # A task without weight adds nothing; one of half the largest weight, half its gain.
    for weights, share in ((np.array([0.0, 1.0]), 0.0), (np.array([0.25, 0.5]), 0.5)):
        s_c = acq.committee_std(weights, seen, task_var, np.array([1.5**0.5]), 1.5)
        assert s_c[0] == pytest.approx((1 / 1.5 + share * (1 / 0.01 - 1 / 2.0)) ** -0.5)
    # Without any weight the tasks add nothing (never a division by zero).
    s_c = acq.committee_std(np.zeros(2), seen, task_var, np.array([1.5**0.5]), 1.5)
    assert s_c[0] == pytest.approx(1.5**0.5)
    # A noiseless observation (std 0) leaves a finite, tiny spread, never NaN.
    s_c = acq.committee_std(w, np.zeros((2, 3)), task_var, rng.random(3), target_var)
    assert np.all(np.isfinite(s_c)) and np.all(s_c < 1e-9)


def test_rm_ucb_by_default_adds_the_committees_spread_to_the_tasks_mean(rng):
    X = rng.random((5, 2))
    w, nu, beta = np.array([0.3, 0.7]), 0.4, 2.0
    meta = FakeMeta()
    a = acq.RMUCB(FakeModel(), beta, meta, w, nu, None, cache=None, target_var=4.0)
    spread = acq.committee_std(w, np.full((2, 5), 0.5), meta.prior_var, 1 + X[:, 1], 4.0)
    expected = nu * (0.3 * 2 * X[:, 0] - 0.7 * X[:, 1] + spread) + (1 - nu) * (
        X[:, 0] + beta * (1 + X[:, 1])
    )
    np.testing.assert_allclose(a.values(X), expected)
    assert a.value_and_grad(X[0])[0] == pytest.approx(expected[0])


def test_rm_ucb_with_incumbents_counts_each_tasks_improvement_only(rng):
    X = rng.random((6, 2))
    w, nu, beta, inc = np.array([0.3, 0.7]), 0.4, 2.0, np.array([1.0, -0.5])
    a = acq.RMUCB(FakeModel(), beta, FakeMeta(), w, nu, 1.5, None, incumbents=inc)
    gain = 0.3 * np.maximum(2 * X[:, 0] - 1.0, 0) + 0.7 * np.maximum(-X[:, 1] + 0.5, 0)
    target = X[:, 0] + beta * (1 + X[:, 1])
    np.testing.assert_allclose(a.values(X), nu * gain + (1 - nu) * target)
    # Where no task expects to beat its incumbent, only the target's bound counts.
    x = np.array([0.25, 0.75])
    assert a.values(x[None])[0] == pytest.approx((1 - nu) * (0.25 + beta * 1.75))
    x = np.array([0.8, 0.2])  # both tasks expect a gain here
    val, grad = a.value_and_grad(x)
    assert val == pytest.approx(a.values(x[None])[0])
    np.testing.assert_allclose(
        grad, finite_difference(lambda v: a.values(v[None])[0], x), atol=1e-7
    )


def test_expected_improvement_matches_its_definition():
    ei, dmu, ds = acq.expected_improvement(np.array([0.0, 0.3]), np.array([1.0, 0.5]), 0.0)
    assert ei[0] == pytest.approx(1 / np.sqrt(2 * np.pi))
    assert dmu[0] == pytest.approx(0.5) and ds[0] == pytest.approx(1 / np.sqrt(2 * np.pi))
    integral = integrate.quad(lambda f: f * stats.norm.pdf(f, 0.3, 0.5), 0.0, np.inf)[0]
    assert ei[1] == pytest.approx(integral, rel=1e-8)


def test_rm_ucb_in_tafs_form_weighs_the_targets_expected_improvement(rng):
    X = rng.random((6, 2))
    w, nu, inc, best = np.array([0.3, 0.7]), 0.4, np.array([1.0, -0.5]), 0.6
    a = acq.RMUCB(FakeModel(), 2.0, FakeMeta(), w, nu, None, None, incumbents=inc, best_y=best)
    gain = 0.3 * np.maximum(2 * X[:, 0] - 1.0, 0) + 0.7 * np.maximum(-X[:, 1] + 0.5, 0)
    ei = acq.expected_improvement(X[:, 0], 1 + X[:, 1], best)[0]
    np.testing.assert_allclose(a.values(X), nu * gain + (1 - nu) * ei)
    # Where no task expects a gain only the target's expected improvement counts; beta,
    # the bound's multiplier, plays no part.
    x = np.array([0.0, 0.75])
    assert a.values(x[None])[0] == pytest.approx((1 - nu) * ei_at(0.0, 1.75, best))
    x = np.array([0.8, 0.2])
    val, grad = a.value_and_grad(x)
    assert val == pytest.approx(a.values(x[None])[0])
    np.testing.assert_allclose(
        grad, finite_difference(lambda v: a.values(v[None])[0], x), atol=1e-7
    )


def ei_at(mu, sigma, best):
    z = (mu - best) / sigma
    return (mu - best) * stats.norm.cdf(z) + sigma * stats.norm.pdf(z)


def test_smoothed_improvement_runs_from_the_clipped_gain_to_half_the_weighted_difference(rng):
    w, mu, inc = np.array([0.3, 0.7]), rng.normal(size=(2, 9)), np.array([0.2, -0.1])
    d = mu - inc[:, None]
    clipped = acq.weighted_improvement(w, mu, inc)
    np.testing.assert_allclose(acq.smoothed_improvement(w, mu, inc, 0.0), clipped)
    np.testing.assert_allclose(acq.smoothed_improvement(w, mu, inc, 1e-9), clipped, atol=1e-8)
    np.testing.assert_allclose(
        acq.smoothed_improvement(w, mu, inc, 1e4), w @ d / 2.0, rtol=1e-3, atol=1e-4
    )
    # Zero where no task expects a change, and rising with each task's difference.
    assert acq.smoothed_improvement(w, inc[:, None], inc, 0.5)[0] == pytest.approx(0.0)
    grid = np.linspace(-2.0, 2.0, 41)
    one = acq.smoothed_improvement(np.ones(1), grid[None, :], np.zeros(1), 0.5)
    assert np.all(np.diff(one) > 0.0)
    # A task's confident loss counts against a point, less than its gain counts for it.
    assert -one[0] < one[-1]


def test_rm_ucb_uses_the_cache_on_the_fixed_set(rng):
    X = rng.random((4, 2))
    cache = acq.MetaCache(np.zeros((2, 4)), np.zeros((2, 4)))
    a = acq.RMUCB(FakeModel(), 1.0, FakeMeta(), np.array([0.5, 0.5]), 1.0, 1.0, cache)
    np.testing.assert_allclose(a.values(X, fixed=True), 0.0)
    assert not np.allclose(a.values(X), 0.0)


def test_with_nu_zero_rm_ucb_equals_gp_ucb(rng):
    X = rng.random((6, 2))
    a = acq.RMUCB(FakeModel(), 2.0, FakeMeta(), np.array([0.5, 0.5]), 0.0, 1.0, None)
    np.testing.assert_allclose(a.values(X), acq.UCB(FakeModel(), 2.0).values(X))


def _real_models(rng):
    X = rng.random((10, 2))
    hp = GPHyperparameters(np.array([0.3, 0.3]), 1.0, 1e-3)
    target = ScaledGP.from_hyper(X, np.sin(4 * X[:, 0]), hp, kind="matern52")
    meta = [ScaledGP.from_hyper(X, np.cos(3 * X[:, 1]) + i, hp, kind="matern52") for i in range(2)]
    return target, meta


def test_every_acquisition_gradient_matches_finite_differences(rng):
    target, meta = _real_models(rng)
    stack = MetaTaskModels(meta)
    posts = [RFFPosterior(m, n_features=32, rng=rng) for m in meta]
    ws = np.stack([p.sample_weights(rng)[0] for p in posts])
    tpost = RFFPosterior(target, n_features=32, rng=rng)
    acqs = [
        acq.UCB(target, 1.3),
        acq.RMUCB(target, 1.3, stack, np.array([0.2, 0.8]), 0.6, 1.0, None),
        acq.RMUCB(target, 1.3, stack, np.array([0.2, 0.8]), 0.6, None, None, target_var=1.5),
        acq.RMUCB(
            target,
            1.3,
            stack,
            np.array([0.2, 0.8]),
            0.6,
            None,
            None,
            incumbents=np.array([-2.0, -1.0]),
            best_y=0.2,
        ),
        acq.SampledFunction(tpost, tpost.sample_weights(rng)[0]),
        acq.WeightedMetaSample(posts, ws, np.array([0.4, 0.6]), None),
        acq.Penalized(acq.UCB(target, 1.3), rng.random((2, 2)), np.array([0.1, 0.2]), 3.0),
    ]
    x = rng.random(2)
    for a in acqs:
        val, grad = a.value_and_grad(x)
        assert val == pytest.approx(a.values(x[None])[0], abs=1e-9), type(a).__name__
        np.testing.assert_allclose(
            grad,
            finite_difference(lambda v, a=a: a.values(v[None])[0], x),
            rtol=1e-4,
            atol=1e-6,
            err_msg=type(a).__name__,
        )


def test_penalty_pushes_values_down_only_near_pending_points():
    base = acq.UCB(FakeModel(), 0.0)
    pen = acq.Penalized(base, np.array([[0.5, 0.5]]), np.array([0.05, 0.05]), 10.0)
    near, far = np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]])
    assert pen.values(near)[0] == pytest.approx(base.values(near)[0] - 10.0)
    assert pen.values(far)[0] == pytest.approx(base.values(far)[0], abs=1e-12)


def test_weighted_meta_sample_is_the_weighted_sum_of_task_samples(rng):
    _, meta = _real_models(rng)
    posts = [RFFPosterior(m, n_features=32, rng=rng) for m in meta]
    ws = np.stack([p.sample_weights(rng)[0] for p in posts])
    weights = np.array([0.25, 0.75])
    X = rng.random((7, 2))
    expected = sum(w * p.evaluate(X, wi) for w, p, wi in zip(weights, posts, ws, strict=True))
    np.testing.assert_allclose(
        acq.WeightedMetaSample(posts, ws, weights, None).values(X), expected, atol=1e-12
    )


def test_penalty_reuses_known_fixed_values(rng):
    X = rng.random((5, 2))
    base = acq.UCB(FakeModel(), 1.0)
    known = base.values(X)
    pen = acq.Penalized(base, X[:1], np.array([1e-3, 1e-3]), 2.0, known + 100.0)
    np.testing.assert_allclose(pen.values(X, fixed=True)[1:], known[1:] + 100.0, atol=1e-6)
    np.testing.assert_allclose(pen.values(X)[1:], known[1:], atol=1e-6)
