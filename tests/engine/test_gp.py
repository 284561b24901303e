import numpy as np
import pytest

from rmbo_tune.engine.gp import (
    CholeskyError,
    FixedPointFactor,
    GaussianProcess,
    GPHyperparameters,
    ScaledGP,
    fit_gp,
    fit_hyperparameters,
    log_marginal_likelihood,
    log_marginal_likelihood_value,
    safe_cholesky,
    squared_differences,
    standardization,
)
from rmbo_tune.engine.kernels import kernel
from tests.conftest import finite_difference


def _closed_form(X, y, Xs, hp, kind, mean):
    K = kernel(X, X, hp.lengthscales, hp.signal_var, kind) + hp.noise_var * np.eye(len(X))
    Ks = kernel(Xs, X, hp.lengthscales, hp.signal_var, kind)
    Kinv = np.linalg.inv(K)  # reference implementation only
    mu = mean + Ks @ Kinv @ (y - mean)
    var = hp.signal_var - np.einsum("ij,jk,ik->i", Ks, Kinv, Ks)
    return mu, var


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_posterior_equals_closed_form(kind, rng):
    X, Xs = rng.random((12, 2)), rng.random((9, 2))
    y = np.sin(5 * X[:, 0]) + X[:, 1]
    hp = GPHyperparameters(np.array([0.3, 0.6]), 1.4, 0.02)
    gp = GaussianProcess(X, y, hp, kind=kind, mean=0.3)
    mu, sigma = gp.predict(Xs)
    mu_ref, var_ref = _closed_form(X, y, Xs, hp, kind, 0.3)
    np.testing.assert_allclose(mu, mu_ref, atol=1e-8)
    np.testing.assert_allclose(sigma**2, var_ref, atol=1e-8)


def test_prediction_gradients_match_finite_differences(rng):
    X = rng.random((15, 2))
    y = np.cos(4 * X[:, 0]) * X[:, 1]
    gp = GaussianProcess(
        X, y, GPHyperparameters(np.array([0.25, 0.5]), 1.0, 1e-3), kind="matern52"
    )
    x = rng.random(2)
    mu, sigma, dmu, dsigma = gp.predict_with_grad(x)
    assert mu == pytest.approx(gp.predict(x[None])[0][0], abs=1e-12)
    assert sigma == pytest.approx(gp.predict(x[None])[1][0], abs=1e-12)
    np.testing.assert_allclose(
        dmu, finite_difference(lambda v: gp.predict(v[None])[0][0], x), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        dsigma, finite_difference(lambda v: gp.predict(v[None])[1][0], x), rtol=1e-5, atol=1e-7
    )


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_log_marginal_likelihood_gradient_matches_finite_differences(kind, rng):
    X = rng.random((20, 3))
    y = np.sin(6 * X[:, 0]) + 0.3 * X[:, 2] + 0.05 * rng.standard_normal(20)
    theta = np.log([0.3, 0.5, 1.1, 0.9, 0.01])
    _, grad = log_marginal_likelihood(theta, X, y - y.mean(), kind)
    fd = finite_difference(lambda t: log_marginal_likelihood(t, X, y - y.mean(), kind)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_likelihood_from_precomputed_differences_is_the_same(kind, rng):
    X = rng.random((15, 4))
    y = np.cos(5 * X[:, 1]) + 0.1 * rng.standard_normal(15)
    theta = np.log([0.2, 0.4, 0.9, 2.0, 1.3, 0.02])
    D = squared_differences(X)
    assert D.shape == (4, 15, 15)
    lml, grad = log_marginal_likelihood(theta, X, y, kind)
    lml_d, grad_d = log_marginal_likelihood(theta, X, y, kind, D=D)
    assert lml_d == pytest.approx(lml, rel=1e-12)
    np.testing.assert_allclose(grad_d, grad, rtol=1e-9, atol=1e-12)
    assert log_marginal_likelihood_value(theta, X, y, kind, D=D) == pytest.approx(lml, rel=1e-12)


def test_fit_recovers_known_lengthscale_from_200_samples():
    # Draw y from a GP with SE length scale 0.2 and check type-II ML lands within 1.5x.
    rng = np.random.default_rng(7)
    X = rng.random((200, 1))
    true = GPHyperparameters(np.array([0.2]), 1.0, 1e-2)
    K = kernel(X, X, true.lengthscales, 1.0, "se") + true.noise_var * np.eye(200)
    y = safe_cholesky(K) @ rng.standard_normal(200)
    hp = fit_hyperparameters(X, y - y.mean(), kind="se", rng=rng, n_restarts=3)
    assert 0.2 / 1.5 < hp.lengthscales[0] < 0.2 * 1.5


def test_fit_improves_likelihood_over_default(rng):
    X = rng.random((40, 2))
    y = np.sin(8 * X[:, 0])
    hp = fit_hyperparameters(X, y - y.mean(), kind="matern52", rng=rng)
    default = GPHyperparameters.default(2)
    assert (
        log_marginal_likelihood(hp.to_theta(), X, y - y.mean(), "matern52")[0]
        > log_marginal_likelihood(default.to_theta(), X, y - y.mean(), "matern52")[0]
    )
    # The ARD length scale of the irrelevant dimension grows past the relevant one.
    assert hp.lengthscales[1] > hp.lengthscales[0]


def test_safe_cholesky_adds_jitter_for_duplicates_and_raises_when_hopeless():
    X = np.zeros((5, 1))
    K = kernel(X, X, np.array([0.3]), 1.0, "se")  # rank one
    L = safe_cholesky(K)
    np.testing.assert_allclose(L @ L.T, K, atol=1e-3)
    with pytest.raises(CholeskyError, match="not positive definite"):
        safe_cholesky(-np.eye(3))


def test_log_marginal_likelihood_is_minus_inf_when_factorization_fails():
    X = np.zeros((4, 1))
    # exp(800) overflows to inf: the covariance cannot be factorized.
    with np.errstate(over="ignore", invalid="ignore"):
        lml, grad = log_marginal_likelihood(np.array([0.0, 800.0, -5.0]), X, np.ones(4), "se")
    assert lml == -np.inf
    assert np.all(grad == 0.0)
    with pytest.raises(CholeskyError, match="NaN or inf"):
        safe_cholesky(np.full((2, 2), np.nan))


def test_with_pending_keeps_mean_and_shrinks_variance(rng):
    X = 0.3 * rng.random((8, 1))
    gp = GaussianProcess(
        X, np.sin(6 * X[:, 0]), GPHyperparameters(np.array([0.2]), 1.0, 1e-3), kind="se"
    )
    Xp = np.array([[0.5]])  # far from the data, where the variance is large
    Xs = np.linspace(0, 1, 11)[:, None]
    mu0, s0 = gp.predict(Xs)
    mu1, s1 = gp.with_pending(Xp).predict(Xs)
    np.testing.assert_allclose(mu1, mu0, atol=1e-8)
    assert np.all(s1 <= s0 + 1e-12)
    assert s1[5] < 0.5 * s0[5]


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_fixed_point_factor_grown_matches_the_full_posterior(kind, rng):
    X, Z, P = rng.random((15, 3)), rng.random((40, 3)), rng.random((2, 3))
    y = np.sin(4 * X[:, 0]) + X[:, 1] * X[:, 2]
    hp = GPHyperparameters(np.array([0.3, 0.5, 0.8]), 1.3, 1e-3)
    factor = FixedPointFactor(X[:4], Z, hp, kind=kind)
    for x in X[4:]:
        factor.append(x)  # also grows the row buffer past its first capacity
    full = GaussianProcess(X, y, hp, kind=kind, mean=0.2)
    gp = factor.gp(y, mean=0.2)
    np.testing.assert_allclose(gp.L, full.L, atol=1e-10)
    mu, sigma, same = factor.predict(gp)
    mu_ref, sigma_ref = full.predict(Z)
    np.testing.assert_allclose(mu, mu_ref, atol=1e-9)
    np.testing.assert_allclose(sigma, sigma_ref, atol=1e-9)
    assert same is gp
    mu_p, sigma_p, gp_p = factor.predict(gp, P)
    ref_p = full.with_pending(P)
    np.testing.assert_allclose(mu_p, mu_ref, atol=1e-9)
    np.testing.assert_allclose(sigma_p, ref_p.predict(Z)[1], atol=1e-9)
    Xs = rng.random((5, 3))
    for a, b in zip(gp_p.predict(Xs), ref_p.predict(Xs), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-9)
    factor.keep_points(10)
    np.testing.assert_allclose(factor.predict(gp)[1], sigma_ref[:10], atol=1e-9)
    with pytest.raises(ValueError, match="not built from this factor"):
        factor.predict(full)


def test_fixed_point_factor_refactorizes_when_a_point_is_repeated(rng):
    X, Z = rng.random((6, 2)), rng.random((20, 2))
    y = X.sum(1)
    hp = GPHyperparameters(np.array([0.4, 0.4]), 1.0, 1e-6)  # noise at the floor
    factor = FixedPointFactor(X, Z, hp, kind="se")
    factor.append(X[2])  # the pivot would be ~noise: refactorized (with jitter if needed)
    assert factor.n_obs == 7 and np.all(np.isfinite(factor.L))
    gp = factor.gp(np.append(y, y[2]))
    mu, sigma, _ = factor.predict(gp, X[:1])  # a pending point on an observation
    ref = GaussianProcess(np.vstack([X, X[2]]), np.append(y, y[2]), hp, kind="se", mean=0.0)
    np.testing.assert_allclose(mu, ref.predict(Z)[0], atol=1e-5)
    assert np.all(np.isfinite(sigma))
    p = np.array([[0.31, 0.77]])
    _, s_once, _ = factor.predict(gp, p)
    _, s_twice, gp_twice = factor.predict(gp, np.vstack([p, p]))  # two pending, the same
    np.testing.assert_allclose(s_twice, s_once, atol=1e-4)
    assert gp_twice.n_obs == 9 and np.all(np.isfinite(gp_twice.predict(Z)[1]))


def test_log_marginal_likelihood_value_matches_the_gradient_version(rng):
    X, y = rng.random((10, 2)), rng.standard_normal(10)
    theta = np.array([-1.0, 0.2, 0.1, -4.0])
    assert log_marginal_likelihood_value(theta, X, y, "matern52") == pytest.approx(
        log_marginal_likelihood(theta, X, y, "matern52")[0], rel=1e-12
    )


def test_loo_matches_explicit_refits(rng):
    X = rng.random((10, 2))
    y = X.sum(1) + 0.1 * rng.standard_normal(10)
    hp = GPHyperparameters(np.array([0.4, 0.4]), 1.0, 0.05)
    gp = GaussianProcess(X, y, hp, kind="matern52", mean=0.0)
    mu, var = gp.loo()
    for i in [0, 4, 9]:
        keep = np.arange(10) != i
        sub = GaussianProcess(X[keep], y[keep], hp, kind="matern52", mean=0.0)
        m, s = sub.predict(X[i : i + 1])
        assert mu[i] == pytest.approx(m[0], abs=1e-8)
        assert var[i] == pytest.approx(s[0] ** 2 + hp.noise_var, abs=1e-8)


def test_scaled_gp_reports_on_outer_scale(rng):
    X = rng.random((20, 1))
    y = 1000.0 + 50.0 * np.sin(6 * X[:, 0])
    m = ScaledGP.fit(X, y, kind="matern52", rng=rng, n_restarts=1)
    mu, sigma = m.predict(X)
    np.testing.assert_allclose(mu, y, atol=2.0)
    r = m.rescaled(1000.0, 50.0)
    mu2, sigma2 = r.predict(X)
    np.testing.assert_allclose(mu2, (mu - 1000.0) / 50.0, atol=1e-9)
    np.testing.assert_allclose(sigma2, sigma / 50.0, atol=1e-12)


def test_standardization_guards_zero_spread():
    assert standardization(np.array([3.0, 3.0]))[1] == 3.0
    assert standardization(np.array([])) == (0.0, 1.0)
    loc, scale = standardization(np.array([1.0, 3.0]))
    assert (loc, scale) == (2.0, 1.0)


def test_fit_gp_handles_constant_outputs(rng):
    X = rng.random((5, 2))
    gp = fit_gp(X, np.full(5, 2.0), rng=rng)
    mu, sigma = gp.predict(X)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(sigma))


def test_normal_scores_are_monotone_standard_normal_quantiles_with_shared_ties():
    from rmbo_tune.engine.gp import normal_scores

    z = normal_scores(np.array([5.0, 1e300, -3.0, 5.0]))
    # ranks 2.5, 4, 1, 2.5 of 4: Phi^-1((rank - 1/2) / 4); the outlier only takes the top rank
    expected = [0.0, 1.1503493803760079, -1.1503493803760079, 0.0]
    np.testing.assert_allclose(z, expected, atol=1e-12)
    assert normal_scores(np.array([])).shape == (0,)
