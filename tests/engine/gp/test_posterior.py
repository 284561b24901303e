import numpy as np
import pytest

from rmbo_tune.engine.gp.likelihood import GPHyperparameters
from rmbo_tune.engine.gp.posterior import GaussianProcess, ScaledGP, normal_scores, standardization
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


def test_a_warped_gp_is_the_gp_of_the_warped_inputs_with_gradients_in_the_raw_ones(rng):
    X, Xs = rng.random((14, 2)), rng.random((6, 2))
    y = np.sin(5 * X[:, 0] ** 0.4) + X[:, 1]
    warp = np.array([[0.4, 1.3], [1.0, 0.7]])
    hp = GPHyperparameters(np.array([0.3, 0.6]), 1.1, 1e-3, warp)
    gp = GaussianProcess(X, y, hp, kind="matern52", mean=0.1)
    plain = GPHyperparameters(hp.lengthscales, hp.signal_var, hp.noise_var)
    ref = GaussianProcess(hp.inputs(X), y, plain, kind="matern52", mean=0.1)
    for a, b in zip(gp.predict(Xs), ref.predict(hp.inputs(Xs)), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-10)
    x = Xs[0]
    _, _, dmu, dsigma = gp.predict_with_grad(x)
    np.testing.assert_allclose(
        dmu, finite_difference(lambda v: gp.predict(v[None])[0][0], x), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        dsigma, finite_difference(lambda v: gp.predict(v[None])[1][0], x), rtol=1e-5, atol=1e-7
    )


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


def test_normal_scores_are_monotone_standard_normal_quantiles_with_shared_ties():
    z = normal_scores(np.array([5.0, 1e300, -3.0, 5.0]))
    # ranks 2.5, 4, 1, 2.5 of 4: Phi^-1((rank - 1/2) / 4); the outlier only takes the top rank
    expected = [0.0, 1.1503493803760079, -1.1503493803760079, 0.0]
    np.testing.assert_allclose(z, expected, atol=1e-12)
    assert normal_scores(np.array([])).shape == (0,)


def test_package_reexports_the_engine_names():
    # Other engine modules import these from rmbo_tune.engine.gp itself.
    import rmbo_tune.engine.gp as gp_package
    from rmbo_tune.engine.gp import factor, likelihood, linalg, posterior

    assert gp_package.GaussianProcess is posterior.GaussianProcess
    assert gp_package.ScaledGP is posterior.ScaledGP
    assert gp_package.FixedPointFactor is factor.FixedPointFactor
    assert gp_package.GPHyperparameters is likelihood.GPHyperparameters
    assert gp_package.fit_hyperparameters is likelihood.fit_hyperparameters
    assert gp_package.safe_cholesky is linalg.safe_cholesky
    assert set(gp_package.__all__) <= set(dir(gp_package))
