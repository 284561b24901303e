import numpy as np
import pytest
from scipy import stats

from rmbo_tune.engine.gp import GPHyperparameters, ScaledGP
from rmbo_tune.engine.kernels import kernel
from rmbo_tune.engine.meta_basis import (
    INTERCEPT_VAR,
    MetaBasisGP,
    MetaBasisSample,
    evidence_gain,
)
from rmbo_tune.engine.meta_models import MetaTaskModels
from tests.conftest import finite_difference

HYPER = GPHyperparameters(np.array([0.3, 0.5]), 1.0, 1e-3)


def _meta(rng, fns):
    """Meta-task GPs fitted to 40 noiseless points of each function."""
    models = []
    for f in fns:
        X = rng.random((40, 2))
        models.append(ScaledGP.from_hyper(X, f(X), HYPER, kind="matern52"))
    return MetaTaskModels(models)


def _f(X):
    return np.sin(6 * X[:, 0]) + X[:, 1]


def _target(rng, f, n=12):
    X = rng.random((n, 2))
    return ScaledGP.from_hyper(X, f(X), HYPER, kind="matern52")


def _assert_gradients(model, points):
    """``predict_with_grad`` agrees with ``predict`` and with its finite differences."""
    for x in points:
        mu, sd, dmu, dsd = model.predict_with_grad(x)
        np.testing.assert_allclose((mu, sd), [v[0] for v in model.predict(x[None])], rtol=1e-9)
        fd_mu = finite_difference(lambda z: model.predict(z[None])[0][0], x)
        fd_sd = finite_difference(lambda z: model.predict(z[None])[1][0], x)
        np.testing.assert_allclose(dmu, fd_mu, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(dsd, fd_sd, rtol=1e-4, atol=1e-6)


def _basis(rng, target, meta, weights, task_var=0.0):
    fixed = rng.random((200, 2))
    mu_fixed = meta.predict(fixed)[0]
    return MetaBasisGP(target, meta, weights, fixed, mu_fixed, task_var=task_var), fixed


@pytest.mark.parametrize("task_var", [0.0, 1.5])
def test_posterior_is_the_gp_with_the_basis_added_to_the_kernel(rng, task_var):
    meta = _meta(rng, [_f, lambda X: X[:, 0] ** 2, lambda X: np.cos(3 * X[:, 1])])
    w = np.array([0.6, 0.3, 0.1])
    target = _target(rng, lambda X: np.cos(4 * X[:, 1]) + 0.5 * _f(X))
    basis, fixed = _basis(rng, target, meta, w, task_var)
    Xs = rng.random((7, 2))

    # Exact GP on the standardized outputs with kernel k + v + s2 m m^T (s2 = 1), plus
    # task_var / M times the tasks' deviations from the weighted mean, D D^T.
    g = target.gp
    loc, scale = basis.basis.loc, basis.basis.scale

    def m(X):
        return (w @ meta.predict(X)[0] - loc) / scale

    def dev(X):
        mu = meta.predict(X)[0]
        return (mu - w @ mu) / scale  # (M, n)

    def k2(A, B):
        k = kernel(A, B, HYPER.lengthscales, HYPER.signal_var, "matern52")
        tasks = task_var / len(w) * dev(A).T @ dev(B)
        return k + INTERCEPT_VAR + np.outer(m(A), m(B)) + tasks

    K = k2(g.X, g.X) + HYPER.noise_var * np.eye(len(g.X))
    Ks = k2(Xs, g.X)
    mean = g.mean + Ks @ np.linalg.solve(K, g.y - g.mean)
    var = np.diag(k2(Xs, Xs)) - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    mu, sigma = basis.predict(Xs)
    np.testing.assert_allclose(mu, target.loc + target.scale * mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sigma, target.scale * np.sqrt(var), rtol=1e-5, atol=1e-8)

    # The same from the target GP's cached predictions at the fixed candidates.
    mu_f, sigma_f = basis.fixed_predictions(*target.predict(fixed))
    np.testing.assert_allclose((mu_f, sigma_f), basis.predict(fixed), rtol=1e-9, atol=1e-12)


def test_the_tasks_mean_as_prior_mean_is_the_gp_with_that_mean_function(rng):
    # coefficient_mean=b0, bound=False: the mean is that of a GP with prior mean b0 m(x)
    # and kernel k + v + m m^T (the residual y - b0 m(X) regressed), the std the target
    # GP's own.
    meta = _meta(rng, [_f, lambda X: X[:, 0] ** 2])
    w = np.array([0.7, 0.3])
    target = _target(rng, lambda X: 0.5 * _f(X) + X[:, 0], n=6)
    fixed = rng.random((200, 2))
    mu_fixed = meta.predict(fixed)[0]
    model = MetaBasisGP(target, meta, w, fixed, mu_fixed, coefficient_mean=1.0, bound=False)
    g, loc, scale = target.gp, model.basis.loc, model.basis.scale

    def m(X):
        return (w @ meta.predict(X)[0] - loc) / scale

    def k2(A, B):
        k = kernel(A, B, HYPER.lengthscales, HYPER.signal_var, "matern52")
        return k + INTERCEPT_VAR + np.outer(m(A), m(B))

    Xs = rng.random((7, 2))
    K = k2(g.X, g.X) + HYPER.noise_var * np.eye(len(g.X))
    mean = m(Xs) + k2(Xs, g.X) @ np.linalg.solve(K, g.y - m(g.X))
    mu, sigma = model.predict(Xs)
    np.testing.assert_allclose(mu, target.loc + target.scale * mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sigma, target.predict(Xs)[1], rtol=1e-12)
    mu_f, sigma_f = model.fixed_predictions(*target.predict(fixed))
    np.testing.assert_allclose((mu_f, sigma_f), model.predict(fixed), rtol=1e-9, atol=1e-12)
    _assert_gradients(model, Xs[:3])


def test_the_coefficients_uncertainty_is_largest_where_the_tasks_rate_the_space_worst(rng):
    # Two observations where the tasks are high, in the tasks' order (a search that
    # followed them). The variance the zero-mean coefficients add grows with
    # |m(x) - m(X)|: it is largest at the tasks' very worst points, which a bound counting
    # it rewards. With the tasks' mean as prior mean the coefficient is pulled towards 1
    # and the bound is the GP's own.
    meta = _meta(rng, [_f])
    fixed = rng.random((400, 2))
    mu_fixed = meta.predict(fixed)[0]
    X = fixed[np.argsort(-mu_fixed[0])[[0, 40]]]
    target = ScaledGP.from_hyper(X, np.array([1.0, 0.0]), HYPER, kind="matern52")
    zero = MetaBasisGP(target, meta, np.array([1.0]), fixed, mu_fixed)
    prior = MetaBasisGP(
        target, meta, np.array([1.0]), fixed, mu_fixed, coefficient_mean=1.0, bound=False
    )
    assert 0.0 < zero.coef < prior.coef
    far = np.min(np.linalg.norm(fixed[:, None] - X[None], axis=2), axis=1) > 0.3
    rank = np.argsort(np.argsort(-mu_fixed[0]))  # 0: the tasks' best
    _, sigma = target.predict(fixed)
    extra = zero.predict(fixed)[1] ** 2 - sigma**2
    assert rank[np.argmax(np.where(far, extra, -np.inf))] >= 390
    np.testing.assert_allclose(prior.predict(fixed)[1], sigma, rtol=1e-12)


def test_pending_points_are_hallucinated_at_the_models_own_mean(rng):
    # GP-BUCB on the model with the basis: the mean is the one of the observations alone,
    # the variance the exact one given the observed and the pending inputs.
    meta = _meta(rng, [_f])
    fixed = rng.random((200, 2))
    mu_fixed = meta.predict(fixed)[0]
    target = _target(rng, lambda X: _f(X) + 2.0)
    P = fixed[np.argsort(-mu_fixed[0])[:3]]  # pending where the tasks are high
    pending = ScaledGP(target.gp.with_pending(P), target.loc, target.scale)
    alone = MetaBasisGP(target, meta, np.array([1.0]), fixed, mu_fixed)
    both = MetaBasisGP(pending, meta, np.array([1.0]), fixed, mu_fixed, observed=target)
    Xs = np.vstack([rng.random((6, 2)), P])
    np.testing.assert_allclose(both.predict(Xs)[0], alone.predict(Xs)[0], rtol=1e-9)
    assert both.coef == pytest.approx(alone.coef)
    # Hallucinated at the target GP's mean instead, the outputs at P disagree with m there.
    naive = MetaBasisGP(pending, meta, np.array([1.0]), fixed, mu_fixed)
    assert not np.allclose(naive.predict(P)[0], alone.predict(P)[0], rtol=1e-3)

    def m(X):
        return (meta.predict(X)[0][0] - both.basis.loc) / both.basis.scale

    def k2(A, B):
        k = kernel(A, B, HYPER.lengthscales, HYPER.signal_var, "matern52")
        return k + INTERCEPT_VAR + np.outer(m(A), m(B))

    XP = np.vstack([target.gp.X, P])
    K = k2(XP, XP) + HYPER.noise_var * np.eye(len(XP))
    Ks = k2(Xs, XP)
    var = np.diag(k2(Xs, Xs)) - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(both.predict(Xs)[1], target.scale * np.sqrt(var), rtol=1e-5)
    mu_f, sigma_f = both.fixed_predictions(*pending.predict(fixed))
    np.testing.assert_allclose((mu_f, sigma_f), both.predict(fixed), rtol=1e-9, atol=1e-12)
    _assert_gradients(both, Xs[:3])


@pytest.mark.parametrize("task_var", [0.0, 1.0])
def test_gradients_match_finite_differences(rng, task_var):
    meta = _meta(rng, [_f, lambda X: -X[:, 1]])
    target = _target(rng, _f)
    basis, _ = _basis(rng, target, meta, np.array([0.5, 0.5]), task_var)
    _assert_gradients(basis, rng.random((4, 2)))


def test_the_tasks_deviations_let_the_target_follow_a_task_the_weights_rate_low(rng):
    # Two tasks, the target is the one with weight 0.1. With the weighted mean alone the
    # model can only scale m, which the first task dominates; the deviation columns carry
    # the second task's own shape, and a few observations pick it out.
    g1, g2 = _f, lambda X: np.cos(5 * X[:, 0]) - X[:, 1]
    meta = _meta(rng, [g1, g2])
    w = np.array([0.9, 0.1])
    target = _target(rng, g2, n=8)
    mean_only, fixed = _basis(rng, target, meta, w)
    fixed_mu = meta.predict(fixed)[0]
    with_tasks = MetaBasisGP(target, meta, w, fixed, fixed_mu, task_var=1.0)
    corr = [np.corrcoef(b.predict(fixed)[0], g2(fixed))[0, 1] for b in (mean_only, with_tasks)]
    assert 1 - corr[1] < 0.5 * (1 - corr[0])
    # The deviations only add variance (the tasks' disagreement the target has not
    # resolved).
    extra = with_tasks.predict(fixed)[1] ** 2 - mean_only.predict(fixed)[1] ** 2
    assert np.all(extra >= -1e-12) and extra.max() > 1e-3


@pytest.mark.parametrize(("sign", "low", "high"), [(1.0, 0.5, 2.0), (-1.0, -2.0, -0.5)])
def test_the_coefficient_follows_the_targets_relation_to_the_tasks(rng, sign, low, high):
    meta = _meta(rng, [_f])
    target = _target(rng, lambda X: sign * _f(X))
    basis, _ = _basis(rng, target, meta, np.array([1.0]))
    assert low < basis.coef < high


def test_the_coefficient_is_not_pulled_to_zero_by_observations_where_the_tasks_are_high(rng):
    # The target is the tasks' function plus a constant, observed only where the tasks'
    # mean is high (as a search that followed them has): m(X) is far above its mean over
    # the candidates, the standardized outputs average zero. The intercept takes the level,
    # the coefficient the shape, and the model extrapolates the tasks' shape to the rest.
    meta = _meta(rng, [_f])
    fixed = rng.random((400, 2))
    mu_fixed = meta.predict(fixed)[0]
    X = fixed[np.argsort(-mu_fixed[0])[:15]]
    target = ScaledGP.from_hyper(X, _f(X) + 3.0, HYPER, kind="matern52")
    basis = MetaBasisGP(target, meta, np.array([1.0]), fixed, mu_fixed)
    assert basis.coef > 1.0
    # Without the intercept the coefficient halves and the correlation is about 0.5.
    assert np.corrcoef(basis.predict(fixed)[0], _f(fixed))[0, 1] > 0.9


def test_unrelated_tasks_get_a_small_coefficient_and_add_uncertainty_only(rng):
    meta = _meta(rng, [lambda X: np.sin(9 * X[:, 1])])
    target = _target(rng, lambda X: np.cos(5 * X[:, 0]), n=30)
    basis, fixed = _basis(rng, target, meta, np.array([1.0]))
    assert abs(basis.coef) < 0.3
    _, sigma = target.predict(fixed)
    assert np.all(basis.predict(fixed)[1] >= sigma - 1e-12)


def test_a_flat_meta_task_mean_leaves_the_target_gp_unchanged(rng):
    meta = _meta(rng, [lambda X: np.full(len(X), 0.3)])
    target = _target(rng, _f)
    basis, _ = _basis(rng, target, meta, np.array([1.0]))
    Xs = rng.random((9, 2))
    for got, want in zip(basis.predict(Xs), target.predict(Xs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_evidence_gain_is_the_rise_in_log_marginal_likelihood(rng):
    target = _target(rng, _f, n=9)
    g = target.gp
    H = rng.normal(size=(9, 3))
    K = g.L @ g.L.T
    r = g.y - g.mean
    with_h = stats.multivariate_normal(np.zeros(9), K + H @ H.T).logpdf(r)
    alone = stats.multivariate_normal(np.zeros(9), K).logpdf(r)
    assert evidence_gain(H, g.L, g.alpha) == pytest.approx(with_h - alone, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_evidence_keeps_the_deviations_only_for_a_target_that_departs_from_the_mean(seed):
    rng = np.random.default_rng(seed)
    g1, g2 = _f, lambda X: np.cos(5 * X[:, 0]) - X[:, 1]
    meta = _meta(rng, [g1, g2])
    w = np.array([0.9, 0.1])
    fixed = rng.random((200, 2))
    fixed_mu = meta.predict(fixed)[0]

    def chosen(f):
        target = _target(rng, f, n=10)
        return MetaBasisGP(target, meta, w, fixed, fixed_mu, task_var="evidence").basis.task_var

    assert chosen(g2) >= 1.0  # the task the weights rate low
    assert chosen(lambda X: 0.9 * g1(X) + 0.1 * g2(X)) == 0.0  # the weighted mean itself


def _samples(rng, target, meta, w, fixed, n, scale=1.0, task_var=0.0, coefficient_mean=None):
    mu_fixed = meta.predict(fixed)[0]
    return [
        MetaBasisSample(
            target,
            meta,
            w,
            mu_fixed,
            n_features=400,
            rng=rng,
            scale=scale,
            task_var=task_var,
            coefficient_mean=coefficient_mean,
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("task_var", [0.0, 1.0])
def test_samples_follow_the_basis_posterior(rng, task_var):
    # RM-GP-TS's draws from g + c + b m (+ the tasks' deviations): mean and spread of the
    # basis GP's posterior (random features approximate the kernel, hence the tolerances).
    meta = _meta(rng, [_f, lambda X: X[:, 0] ** 2])
    w = np.array([0.7, 0.3])
    target = _target(rng, lambda X: 0.8 * _f(X) + 0.3 * X[:, 0])
    basis, fixed = _basis(rng, target, meta, w, task_var)
    Xs = rng.random((6, 2))
    draws = np.array(
        [s.values(Xs) for s in _samples(rng, target, meta, w, fixed, 200, task_var=task_var)]
    )
    mu, sigma = basis.predict(Xs)
    np.testing.assert_allclose(draws.mean(0), mu, atol=0.05 + 4 * sigma.max() / 20)
    np.testing.assert_allclose(draws.std(0), sigma, rtol=0.25, atol=0.02)
    # Scaled deviations: twice the spread about the same mean.
    wide = np.array(
        [s.values(Xs) for s in _samples(rng, target, meta, w, fixed, 200, 2.0, task_var)]
    )
    np.testing.assert_allclose(wide.std(0), 2 * sigma, rtol=0.25, atol=0.04)


def test_prior_mean_samples_follow_that_model_with_the_target_gps_spread(rng):
    # meta_prior_mean for RM-GP-TS: the coefficients at the posterior mean of the model with
    # the tasks' mean as prior mean (MetaBasisGP, bound=False), g drawn about it.
    meta = _meta(rng, [_f, lambda X: X[:, 0] ** 2])
    w = np.array([0.7, 0.3])
    target = _target(rng, lambda X: 0.5 * _f(X) + X[:, 0], n=6)
    fixed = rng.random((200, 2))
    model = MetaBasisGP(
        target, meta, w, fixed, meta.predict(fixed)[0], coefficient_mean=1.0, bound=False
    )
    samples = _samples(rng, target, meta, w, fixed, 300, coefficient_mean=1.0)
    for s in samples[:3]:
        np.testing.assert_allclose(s.basis_w, model.beta_bar, rtol=1e-9)
    Xs = rng.random((6, 2))
    draws = np.array([s.values(Xs) for s in samples])
    mu, sigma = model.predict(Xs)
    np.testing.assert_allclose(draws.mean(0), mu, atol=0.05 + 4 * sigma.max() / np.sqrt(300))
    np.testing.assert_allclose(draws.std(0), target.predict(Xs)[1], rtol=0.25, atol=0.02)
    # Coefficient prior centred on 0 instead: a different mean where the target is unseen.
    zero = MetaBasisGP(target, meta, w, fixed, meta.predict(fixed)[0], bound=False)
    assert model.coef > zero.coef


@pytest.mark.parametrize("task_var", [0.0, 1.0])
@pytest.mark.parametrize("coefficient_mean", [None, 1.0])
def test_a_sample_reads_the_fixed_candidates_and_has_gradients(rng, task_var, coefficient_mean):
    meta = _meta(rng, [_f, lambda X: -X[:, 1]])
    w = np.array([0.5, 0.5])
    target = _target(rng, _f)
    fixed = rng.random((50, 2))
    (sample,) = _samples(
        rng, target, meta, w, fixed, 1, task_var=task_var, coefficient_mean=coefficient_mean
    )
    np.testing.assert_allclose(sample.values(fixed, fixed=True), sample.values(fixed), rtol=1e-9)
    for x in rng.random((3, 2)):
        val, grad = sample.value_and_grad(x)
        assert val == pytest.approx(sample.values(x[None])[0], rel=1e-9)
        fd = finite_difference(lambda z: sample.values(z[None])[0], x)
        np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)
