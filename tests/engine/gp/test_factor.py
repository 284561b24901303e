import numpy as np
import pytest

from rmbo_tune.engine.gp.factor import FixedPointFactor
from rmbo_tune.engine.gp.likelihood import GPHyperparameters
from rmbo_tune.engine.gp.posterior import GaussianProcess


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


def test_fixed_point_factor_of_a_warped_gp_matches_its_posterior(rng):
    X, Z = rng.random((10, 2)), rng.random((30, 2))
    y = np.sin(4 * X[:, 0] ** 0.3) + X[:, 1]
    hp = GPHyperparameters(np.array([0.3, 0.5]), 1.0, 1e-3, np.array([[0.3, 1.0], [1.0, 2.0]]))
    factor = FixedPointFactor(X[:3], Z, hp, kind="matern52")
    for x in X[3:]:
        factor.append(x)
    full = GaussianProcess(X, y, hp, kind="matern52")
    mu, sigma, _ = factor.predict(factor.gp(y, mean=full.mean))
    for a, b in zip((mu, sigma), full.predict(Z), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-9)
    # Fewer fixed points, one more observation and a pending point: still the posterior.
    x, P = rng.random(2), rng.random((1, 2))
    factor.keep_points(12)
    factor.append(x)
    X2, y2 = np.vstack([X, x]), np.append(y, 0.5)
    full = GaussianProcess(X2, y2, hp, kind="matern52")
    mu, sigma, _ = factor.predict(factor.gp(y2, mean=full.mean), P)
    np.testing.assert_allclose(mu, full.predict(Z[:12])[0], atol=1e-9)
    np.testing.assert_allclose(sigma, full.with_pending(P).predict(Z[:12])[1], atol=1e-9)


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
