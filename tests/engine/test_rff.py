import numpy as np
import pytest

from rmbo_tune.engine.gp import GaussianProcess, GPHyperparameters, ScaledGP
from rmbo_tune.engine.kernels import kernel
from rmbo_tune.engine.rff import RandomFourierFeatures, RFFPosterior
from tests.conftest import finite_difference


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_features_approximate_the_ard_kernel(kind, rng):
    ell = np.array([0.2, 0.8])
    rff = RandomFourierFeatures(ell, 1.5, kind=kind, n_features=20000, rng=rng)
    X = rng.random((30, 2))
    Phi = rff.features(X)
    # Monte Carlo error of 20,000 features is about sqrt(2 / 20000) * s2 ~ 0.015.
    np.testing.assert_allclose(Phi @ Phi.T, kernel(X, X, ell, 1.5, kind), atol=0.06)


def test_feature_gradient_matches_finite_differences(rng):
    rff = RandomFourierFeatures(np.array([0.3, 0.3]), 1.0, kind="matern52", n_features=16, rng=rng)
    x = rng.random(2)
    J = rff.features_grad(x)
    for j in range(16):
        np.testing.assert_allclose(
            J[j], finite_difference(lambda v, j=j: rff.features(v[None])[0, j], x), atol=1e-6
        )


def test_warped_features_approximate_the_kernel_of_the_warped_inputs(rng):
    ell, warp = np.array([0.3, 0.6]), np.array([[0.4, 1.0], [1.0, 2.0]])
    rff = RandomFourierFeatures(ell, 1.0, kind="se", n_features=20000, rng=rng, warp=warp)
    X = rng.random((20, 2))
    U = GPHyperparameters(ell, 1.0, 1e-3, warp).inputs(X)
    Phi = rff.features(X)
    np.testing.assert_allclose(Phi @ Phi.T, kernel(U, U, ell, 1.0, "se"), atol=0.05)
    x = rng.uniform(0.1, 0.9, 2)
    J = rff.features_grad(x)
    for j in range(0, 20000, 4000):
        np.testing.assert_allclose(
            J[j], finite_difference(lambda v, j=j: rff.features(v[None])[0, j], x), atol=1e-6
        )


def test_posterior_samples_center_on_the_gp_mean(rng):
    X = rng.random((25, 1))
    y = 5.0 + 2.0 * np.sin(6 * X[:, 0])
    model = ScaledGP.from_hyper(X, y, GPHyperparameters(np.array([0.2]), 1.0, 1e-3), kind="se")
    post = RFFPosterior(model, n_features=2000, rng=rng)
    Xs = np.linspace(0.05, 0.95, 20)[:, None]
    mu, sigma = model.predict(Xs)
    samples = post.evaluate(Xs, post.sample_weights(rng, size=400))  # (20, 400)
    np.testing.assert_allclose(samples.mean(1), mu, atol=0.15)
    assert np.all(samples.std(1) < 3 * sigma + 0.15)
    # Scaling the deviations scales the spread.
    wide = post.evaluate(Xs, post.sample_weights(rng, scale=3.0, size=400))
    assert wide.std(1).mean() > 2.0 * samples.std(1).mean()


def test_sample_gradient_matches_finite_differences(rng):
    X = rng.random((10, 2))
    model = ScaledGP.from_hyper(X, X.sum(1), GPHyperparameters.default(2), kind="matern52")
    post = RFFPosterior(model, n_features=64, rng=rng)
    w = post.sample_weights(rng)[0]
    x = rng.random(2)
    val, grad = post.evaluate_with_grad(x, w)
    assert val == pytest.approx(post.evaluate(x[None], w)[0])
    np.testing.assert_allclose(
        grad, finite_difference(lambda v: post.evaluate(v[None], w)[0], x), atol=1e-6
    )


def test_pending_rows_shrink_the_spread_and_leave_the_mean(rng):
    # GP-BUCB in the weight regression: the outputs given for the pending rows are not read;
    # the mean is the observations' own, the spread shrinks at the pending inputs.
    hyper = GPHyperparameters(np.array([0.2]), 1.0, 1e-3)
    X = 0.6 * rng.random((12, 1))
    observed = ScaledGP.from_hyper(X, np.sin(6 * X[:, 0]), hyper, kind="se")
    P = np.array([[0.75], [0.85], [0.95]])  # pending where nothing was observed
    made_up = np.concatenate([observed.gp.y, [9.0, -9.0, 9.0]])
    gp = GaussianProcess(np.vstack([X, P]), made_up, hyper, kind="se", mean=observed.gp.mean)
    pending = ScaledGP(gp, observed.loc, observed.scale)
    alone = RFFPosterior(observed, n_features=300, rng=np.random.default_rng(1))
    post = RFFPosterior(pending, n_features=300, rng=np.random.default_rng(1), n_observed=12)
    np.testing.assert_allclose(post.w_mean, alone.w_mean, rtol=1e-10, atol=1e-12)
    spread = post.evaluate(P, post.sample_weights(rng, size=300)).std(1)
    before = alone.evaluate(P, alone.sample_weights(rng, size=300)).std(1)
    assert np.all(spread < 0.5 * before)
