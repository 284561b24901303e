import numpy as np
import pytest

from rmbo_tune.engine.gp import GPHyperparameters, ScaledGP
from rmbo_tune.engine.kernels import kernel
from rmbo_tune.engine.meta_basis import MetaBasisGP
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


def _basis(rng, target, meta, weights):
    fixed = rng.random((200, 2))
    mu_fixed = meta.predict(fixed)[0]
    return MetaBasisGP(target, meta, weights, fixed, mu_fixed), fixed


def test_posterior_is_the_gp_with_the_basis_added_to_the_kernel(rng):
    meta = _meta(rng, [_f, lambda X: X[:, 0] ** 2])
    w = np.array([0.7, 0.3])
    target = _target(rng, lambda X: np.cos(4 * X[:, 1]) + 0.5 * _f(X))
    basis, fixed = _basis(rng, target, meta, w)
    Xs = rng.random((7, 2))

    # Exact GP on the standardized outputs with kernel k + s2 m m^T (s2 = 1).
    g = target.gp

    def m(X):
        return (w @ meta.predict(X)[0] - basis.m_loc) / basis.m_scale

    def k2(A, B):
        return kernel(A, B, HYPER.lengthscales, HYPER.signal_var, "matern52") + np.outer(
            m(A), m(B)
        )

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


def test_gradients_match_finite_differences(rng):
    meta = _meta(rng, [_f, lambda X: -X[:, 1]])
    target = _target(rng, _f)
    basis, _ = _basis(rng, target, meta, np.array([0.5, 0.5]))
    for x in rng.random((4, 2)):
        mu, sd, dmu, dsd = basis.predict_with_grad(x)
        np.testing.assert_allclose((mu, sd), [v[0] for v in basis.predict(x[None])], rtol=1e-9)
        fd_mu = finite_difference(lambda z: basis.predict(z[None])[0][0], x)
        fd_sd = finite_difference(lambda z: basis.predict(z[None])[1][0], x)
        np.testing.assert_allclose(dmu, fd_mu, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(dsd, fd_sd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(("sign", "low", "high"), [(1.0, 0.5, 2.0), (-1.0, -2.0, -0.5)])
def test_the_coefficient_follows_the_targets_relation_to_the_tasks(rng, sign, low, high):
    meta = _meta(rng, [_f])
    target = _target(rng, lambda X: sign * _f(X))
    basis, _ = _basis(rng, target, meta, np.array([1.0]))
    assert low < basis.coef < high


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
