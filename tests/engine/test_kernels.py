import numpy as np
import pytest

from rmbo_tune.engine.kernels import (
    check_kernel,
    contract_grad_log_ell,
    kernel,
    kernel_from_r2,
    kernel_grad_x,
    kumaraswamy,
    kumaraswamy_grad_log_params,
    kumaraswamy_grad_x,
    scaled_sqdist,
)
from tests.conftest import finite_difference

KINDS = ["matern52", "se"]


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_is_symmetric_psd_with_signal_variance_on_diagonal(kind, rng):
    X = rng.random((30, 3))
    K = kernel(X, X, np.array([0.2, 0.5, 1.0]), 1.7, kind)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(K), 1.7, atol=1e-9)
    assert np.linalg.eigvalsh(K).min() > -1e-9


def test_matern52_closed_form_at_known_distance():
    x, z = np.array([[0.0]]), np.array([[0.3]])
    r = 0.3 / 0.5
    expected = 2.0 * (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    assert kernel(x, z, np.array([0.5]), 2.0, "matern52")[0, 0] == pytest.approx(expected, 1e-12)
    assert kernel(x, z, np.array([0.5]), 2.0, "se")[0, 0] == pytest.approx(
        2.0 * np.exp(-0.5 * r**2), 1e-12
    )


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_in_x_matches_finite_differences(kind, rng):
    Z = rng.random((7, 2))
    ell = np.array([0.3, 0.7])
    x = rng.random(2)
    _, dk = kernel_grad_x(x, Z, ell, 1.3, kind)
    for j in range(len(Z)):
        fd = finite_difference(
            lambda v, j=j: kernel(v[None], Z[j : j + 1], ell, 1.3, kind)[0, 0], x
        )
        np.testing.assert_allclose(dk[j], fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_in_log_lengthscale_matches_finite_differences(kind, rng):
    # tr(W dK/dlog ell_k) for a random symmetric W, against finite differences of tr(W K).
    X = rng.random((6, 3))
    log_ell = np.log([0.2, 0.4, 0.9])
    A = rng.standard_normal((6, 6))
    W = A + A.T
    _, G = kernel_from_r2(scaled_sqdist(X, X, np.exp(log_ell)), 0.8, kind)
    got = contract_grad_log_ell(X, np.exp(log_ell), W * G)
    fd = finite_difference(lambda le: np.sum(W * kernel(X, X, np.exp(le), 0.8, kind)), log_ell)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-8)


def test_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="kernel must be one of"):
        check_kernel("rbf")


def test_kumaraswamy_warp_is_a_monotone_map_of_the_unit_interval_fixing_its_ends(rng):
    x = np.linspace(0.0, 1.0, 101)[:, None]
    np.testing.assert_allclose(kumaraswamy(x, np.ones((2, 1))), x, atol=1e-15)  # the identity
    for a, b in [(0.3, 1.0), (1.0, 3.0), (2.5, 0.4)]:
        u = kumaraswamy(x, np.array([[a], [b]]))[:, 0]
        assert u[0] == 0.0 and u[-1] == 1.0  # a binary column is left as it is
        assert np.all(np.diff(u) > 0)
    # a < 1 stretches the low end: the lower tenth takes more than half of the range.
    assert kumaraswamy(np.array([[0.1]]), np.array([[0.3], [1.0]]))[0, 0] > 0.5


def test_kumaraswamy_derivatives_match_finite_differences(rng):
    warp = np.exp(0.5 * rng.standard_normal((2, 3)))
    X = rng.uniform(0.05, 0.95, size=(6, 3))
    d_log_a, d_log_b = kumaraswamy_grad_log_params(X, warp)
    for k in range(3):
        for j, grad in enumerate((d_log_a, d_log_b)):

            def moved(t, k=k, j=j):
                w = warp.copy()
                w[j, k] = np.exp(np.log(w[j, k]) + t[0])
                return kumaraswamy(X, w)[:, k]

            fd = [finite_difference(lambda t, i=i: moved(t)[i], np.zeros(1))[0] for i in range(6)]
            np.testing.assert_allclose(grad[:, k], fd, rtol=1e-5, atol=1e-8)
    x = X[0]
    fd = finite_difference(lambda v: kumaraswamy(v[None], warp)[0] @ np.ones(3), x)
    np.testing.assert_allclose(kumaraswamy_grad_x(x, warp), fd, rtol=1e-5)
    # At the ends no parameter moves the warp.
    ends = np.array([[0.0, 1.0, 0.5]])
    for grad in kumaraswamy_grad_log_params(ends, warp):
        assert grad[0, 0] == 0.0 and grad[0, 1] == 0.0 and np.all(np.isfinite(grad))
