import numpy as np
import pytest

from rmbo_tune.engine.gp import likelihood
from rmbo_tune.engine.gp.likelihood import (
    GPHyperparameters,
    fit_hyperparameters,
    log_marginal_likelihood,
    log_marginal_likelihood_value,
    squared_differences,
)
from rmbo_tune.engine.gp.linalg import safe_cholesky
from rmbo_tune.engine.gp.posterior import GaussianProcess
from rmbo_tune.engine.kernels import kernel
from rmbo_tune.engine.types import CholeskyError
from tests.conftest import finite_difference


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_log_marginal_likelihood_gradient_matches_finite_differences(kind, rng):
    X = rng.random((20, 3))
    y = np.sin(6 * X[:, 0]) + 0.3 * X[:, 2] + 0.05 * rng.standard_normal(20)
    theta = np.log([0.3, 0.5, 1.1, 0.9, 0.01])
    _, grad = log_marginal_likelihood(theta, X, y - y.mean(), kind)
    fd = finite_difference(lambda t: log_marginal_likelihood(t, X, y - y.mean(), kind)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["matern52", "se"])
def test_warped_likelihood_is_the_likelihood_of_the_warped_inputs_with_its_gradient(kind, rng):
    X = rng.random((18, 3))
    X[:, 2] = rng.integers(0, 2, 18)  # a binary column: no warp moves it
    y = np.sin(6 * X[:, 0] ** 0.3) + 0.3 * X[:, 1] + 0.2 * X[:, 2]
    y -= y.mean()
    warp = np.exp(0.4 * rng.standard_normal((2, 3)))
    hp = GPHyperparameters(np.array([0.3, 0.5, 1.1]), 0.9, 0.01, warp)
    theta = hp.to_theta()
    lml, grad = log_marginal_likelihood(theta, X, y, kind, warped=True)
    plain = GPHyperparameters(hp.lengthscales, hp.signal_var, hp.noise_var).to_theta()
    assert lml == pytest.approx(log_marginal_likelihood(plain, hp.inputs(X), y, kind)[0])
    fd = finite_difference(lambda t: log_marginal_likelihood(t, X, y, kind, warped=True)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    assert grad[-1] == 0.0 and grad[-4] == 0.0  # the binary column's a and b
    assert log_marginal_likelihood_value(theta, X, y, kind, warped=True) == pytest.approx(lml)


def test_hyperparameters_with_a_warp_round_trip_through_theta_and_dicts():
    hp = GPHyperparameters(np.array([0.3, 0.5]), 1.2, 0.01, np.array([[0.5, 1.0], [2.0, 1.5]]))
    back = GPHyperparameters.from_theta(hp.to_theta(), warped=True)
    np.testing.assert_allclose(back.warp, hp.warp)
    np.testing.assert_allclose(back.lengthscales, hp.lengthscales)
    assert GPHyperparameters.from_dict(hp.to_dict()).warp.tolist() == hp.warp.tolist()
    plain = GPHyperparameters(np.array([0.3]), 1.0, 0.01)
    assert "warp" not in plain.to_dict()
    assert GPHyperparameters.from_dict(plain.to_dict()).warp is None
    assert plain.with_identity_warp().warp.tolist() == [[1.0], [1.0]]


def test_fit_with_warped_inputs_finds_the_warp_of_a_saturating_response(rng):
    # A response that changes fast at the low end of its input and saturates at the high
    # end (a regularization strength on a log scale): stationary after x -> x^0.25.
    X = rng.random((30, 1))
    y = np.sin(5 * X[:, 0] ** 0.25)
    y -= y.mean()
    warped = fit_hyperparameters(X, y, kind="matern52", rng=rng, warp_inputs=True)
    plain = fit_hyperparameters(X, y, kind="matern52", rng=rng)
    assert warped.warp is not None and plain.warp is None
    assert warped.warp[0, 0] < 0.7  # a < 1: the low end stretched
    lml_w = log_marginal_likelihood(warped.to_theta(), X, y, "matern52", warped=True)[0]
    assert lml_w > log_marginal_likelihood(plain.to_theta(), X, y, "matern52")[0] + 2.0
    assert warped.lengthscales[0] > plain.lengthscales[0]


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


def test_log_marginal_likelihood_is_minus_inf_when_factorization_fails():
    X = np.zeros((4, 1))
    # exp(800) overflows to inf: the covariance cannot be factorized.
    with np.errstate(over="ignore", invalid="ignore"):
        lml, grad = log_marginal_likelihood(np.array([0.0, 800.0, -5.0]), X, np.ones(4), "se")
    assert lml == -np.inf
    assert np.all(grad == 0.0)
    with pytest.raises(CholeskyError, match="NaN or inf"):
        safe_cholesky(np.full((2, 2), np.nan))


def test_log_marginal_likelihood_value_matches_the_gradient_version(rng):
    X, y = rng.random((10, 2)), rng.standard_normal(10)
    theta = np.array([-1.0, 0.2, 0.1, -4.0])
    assert log_marginal_likelihood_value(theta, X, y, "matern52") == pytest.approx(
        log_marginal_likelihood(theta, X, y, "matern52")[0], rel=1e-12
    )


def test_fit_handles_constant_outputs(rng):
    # Centred constant outputs are all zero: the fit and the posterior stay finite.
    X = rng.random((5, 2))
    y = np.full(5, 2.0)
    hyper = fit_hyperparameters(X, y - y.mean(), kind="matern52", rng=rng, n_restarts=3)
    mu, sigma = GaussianProcess(X, y, hyper, kind="matern52").predict(X)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(sigma))


def _count_starts(monkeypatch) -> list[np.ndarray]:
    starts: list[np.ndarray] = []
    minimize = likelihood.optimize.minimize

    def counting(fun, x0, **kwargs):
        starts.append(np.array(x0))
        return minimize(fun, x0, **kwargs)

    monkeypatch.setattr(likelihood.optimize, "minimize", counting)
    return starts


def test_promising_restarts_only_runs_the_restarts_that_screen_better_than_the_first_start(
    rng, monkeypatch
):
    X = rng.random((40, 2))
    y = np.sin(6 * X[:, 0]) + 0.05 * rng.standard_normal(40)
    y = y - y.mean()
    good = fit_hyperparameters(X, y, kind="matern52", rng=rng, n_restarts=3)
    starts = _count_starts(monkeypatch)
    kwargs = {"kind": "matern52", "n_restarts": 3, "promising_restarts_only": True}
    # Started at its own optimum, no random draw screens better: one run, the same optimum.
    again = fit_hyperparameters(X, y, rng=rng, init=good, **kwargs)
    assert len(starts) == 1
    np.testing.assert_allclose(again.to_theta(), good.to_theta(), atol=1e-3)
    # Without the option every restart runs.
    starts.clear()
    fit_hyperparameters(X, y, kind="matern52", rng=rng, n_restarts=3, init=good)
    assert len(starts) == 4
    # Started where the data are interpolated by a rough, noiseless function, the draws
    # screen better: every restart runs, and the fit reaches the same optimum.
    starts.clear()
    bad = GPHyperparameters(np.array([0.01, 0.01]), 0.05, 1e-6)
    fit = fit_hyperparameters(X, y, rng=rng, init=bad, **kwargs)
    assert len(starts) == 4
    assert log_marginal_likelihood(fit.to_theta(), X, y, "matern52")[0] == pytest.approx(
        log_marginal_likelihood(good.to_theta(), X, y, "matern52")[0], abs=1e-3
    )


def test_hyperparameters_of_the_recorded_columns_expand_to_a_kernel_constant_elsewhere():
    fitted = GPHyperparameters(np.array([0.2, 0.4]), 1.5, 1e-3, np.array([[2.0, 1.0], [1.0, 3.0]]))
    full = fitted.expanded(np.array([True, False, True]))
    np.testing.assert_array_equal(full.unrecorded, [False, True, False])
    np.testing.assert_array_equal(full.lengthscales[[0, 2]], [0.2, 0.4])
    np.testing.assert_array_equal(full.warp, [[2.0, 1.0, 1.0], [1.0, 1.0, 3.0]])
    assert full.lengthscales[1] == np.inf  # the kernel is exactly constant along it
    assert full.to_dict()["lengthscales"][1] == likelihood.UNRECORDED_LENGTHSCALE  # JSON
    back = GPHyperparameters.from_dict(full.to_dict())
    np.testing.assert_array_equal(back.lengthscales, full.lengthscales)


def test_tying_maps_between_theta_and_its_groups():
    tying = likelihood.Tying.of(6, [[1, 3], [0, 2]])
    theta = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    phi = tying.reduce(theta)
    np.testing.assert_allclose(phi, [2.0, 3.0, 5.0, 6.0])  # group means, then untied
    np.testing.assert_allclose(tying.expand(phi), [2.0, 3.0, 2.0, 3.0, 5.0, 6.0])
    np.testing.assert_allclose(tying.gradient(np.ones(6)), [2.0, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(tying.prior_weights(), [0.5, 0.5, 0.5, 0.5, 1.0, 1.0])
    with pytest.raises(ValueError, match="overlap"):
        likelihood.Tying.of(6, [[1, 3], [3, 4]])
    with pytest.raises(ValueError, match=r"two of 0\.\.5"):
        likelihood.Tying.of(6, [[1, 9]])


def test_a_tied_fit_gives_a_group_one_length_scale_and_keeps_the_others(rng):
    # Three one-hot columns (a categorical with three values) beside a numeric one.
    cat = rng.integers(3, size=40)
    X = np.column_stack([np.eye(3)[cat], rng.uniform(size=40)])
    y = np.array([0.0, 1.0, 1.2])[cat] + np.sin(6 * X[:, 3])
    y = (y - y.mean()) / y.std()
    free = fit_hyperparameters(X, y, kind="matern52", rng=rng, n_restarts=2)
    tied = fit_hyperparameters(X, y, kind="matern52", rng=rng, n_restarts=2, tied=[[0, 1, 2]])
    assert np.ptp(free.lengthscales[:3]) > 0.1  # column by column they differ
    assert np.ptp(tied.lengthscales[:3]) == 0.0
    theta = tied.to_theta()
    # A local optimum in the tied parameters: the gradient summed over the group vanishes,
    # and so does every other one not held at a bound (the noise at its floor, say).
    _, grad = log_marginal_likelihood(theta, X, y, "matern52")
    lo, hi = np.array(likelihood.theta_bounds(4, 1e-6)).T
    inside = (theta[3:] > lo[3:] + 1e-6) & (theta[3:] < hi[3:] - 1e-6)
    assert abs(grad[:3].sum()) < 1e-3 and np.all(np.abs(grad[3:][inside]) < 1e-3)
