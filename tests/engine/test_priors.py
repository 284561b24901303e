import numpy as np
import pytest

from rmbo_tune.engine.gp import fit_hyperparameters, log_marginal_likelihood
from rmbo_tune.engine.priors import LogNormalPrior
from tests.conftest import finite_difference


def test_log_density_gradient_matches_finite_differences(rng):
    prior = LogNormalPrior.default(3)
    theta = rng.normal(size=5)
    _, grad = prior.log_density(theta)
    np.testing.assert_allclose(
        grad, finite_difference(lambda t: prior.log_density(t)[0], theta), rtol=1e-6
    )


def test_default_length_scale_median_grows_with_sqrt_dim():
    assert np.exp(LogNormalPrior.default(1).log_ell_loc) == pytest.approx(0.5)
    assert np.exp(LogNormalPrior.default(4).log_ell_loc) == pytest.approx(1.0)


def test_centred_prior_has_one_mean_per_dimension():
    prior = LogNormalPrior.centred_on(np.log([0.1, 2.0]), LogNormalPrior.default(2))
    value, grad = prior.log_density(np.concatenate([np.log([0.1, 2.0]), [0.0, np.log(1e-2)]]))
    assert value == pytest.approx(0.0) and np.allclose(grad, 0.0)


def test_map_fit_keeps_length_scales_off_the_bounds_on_a_few_grid_points(rng):
    # Four points on a binary column with equal outputs per level: maximum likelihood makes
    # that length scale tiny (the levels look unrelated) and the noise vanish; the prior
    # keeps both plausible.
    X = np.array([[0.0, 0.1], [0.0, 0.6], [1.0, 0.3], [1.0, 0.9]])
    y = np.array([-1.0, -1.0, 1.0, 1.0])
    ml = fit_hyperparameters(X, y, kind="matern52", rng=np.random.default_rng(0))
    kw = {"kind": "matern52", "rng": np.random.default_rng(0)}
    prior = LogNormalPrior.default(2)
    mapped = fit_hyperparameters(X, y, prior=prior, **kw)
    assert mapped.lengthscales.min() > 2 * ml.lengthscales.min()

    # MAP maximizes likelihood + prior: it cannot be beaten by the ML optimum on that sum.
    def objective(h):
        return (
            log_marginal_likelihood(h.to_theta(), X, y, "matern52")[0]
            + prior.log_density(h.to_theta())[0]
        )

    assert objective(mapped) >= objective(ml) - 1e-6


def test_the_warp_prior_is_centred_at_the_identity_unless_moved():
    prior = LogNormalPrior.default(2)
    assert prior.log_warp_density(np.zeros(4)) == (0.0, pytest.approx(np.zeros(4)))
    assert prior.log_warp_density(np.zeros(0))[0] == 0.0  # unwarped: nothing to weigh
    centre = np.array([[-0.5, 0.0], [1.0, 0.2]])
    moved = prior.centred_warp(centre, 0.25)
    value, grad = moved.log_warp_density(centre.ravel())
    assert value == 0.0 and np.allclose(grad, 0.0)
    theta = centre.ravel() + np.array([0.1, -0.2, 0.3, 0.0])
    value, grad = moved.log_warp_density(theta)
    assert value == pytest.approx(-0.5 * np.sum((theta - centre.ravel()) ** 2) / 0.25**2)
    fd = finite_difference(lambda z: moved.log_warp_density(z)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5)


def test_a_prior_restricted_to_some_columns_keeps_their_means():
    base = LogNormalPrior.default(3)
    assert base.restricted(np.array([True, False, True])) == base
    centred = LogNormalPrior.centred_on(np.log([0.1, 0.2, 0.3]), base).centred_warp(
        np.arange(6.0).reshape(2, 3), 0.5
    )
    kept = centred.restricted(np.array([True, False, True]))
    np.testing.assert_allclose(kept.log_ell_loc, np.log([0.1, 0.3]))
    assert kept.log_warp_loc == (0.0, 2.0, 3.0, 5.0)


def test_weights_scale_each_term_of_the_density_and_its_gradient(rng):
    prior = LogNormalPrior.default(3)
    theta = rng.normal(size=5)
    weights = np.array([0.5, 0.5, 1.0, 1.0, 1.0])
    _, grad = prior.log_density(theta, weights)
    np.testing.assert_allclose(
        grad, finite_difference(lambda t: prior.log_density(t, weights)[0], theta), rtol=1e-6
    )
    # Two members of a group at the same value, each at weight 1/2: one term's worth.
    tied = theta.copy()
    tied[1] = tied[0]
    one = LogNormalPrior.default(3).log_density(np.delete(tied, 1))[0]
    both = prior.log_density(tied, weights)[0]
    assert both == pytest.approx(one)
