import numpy as np
import pytest

from rmbo_tune.engine.baselines import (
    RGPE,
    TAF,
    ranking_losses,
    rgpe_weights,
    taf_weights,
)
from rmbo_tune.engine.gp import GPHyperparameters, ScaledGP
from rmbo_tune.engine.meta_models import MetaTaskModels
from tests.conftest import finite_difference


def test_ranking_loss_counts_discordant_pairs():
    y = np.array([1.0, 2.0, 3.0])
    assert ranking_losses(np.array([1.0, 2.0, 3.0]), y) == 0
    assert ranking_losses(np.array([3.0, 2.0, 1.0]), y) == 3
    assert ranking_losses(np.array([[2.0, 1.0, 3.0]]), y).tolist() == [1]


def _setup(rng):
    f = lambda X: np.sin(6 * X[:, 0])  # noqa: E731
    hp = GPHyperparameters(np.array([0.2]), 1.0, 1e-3)
    Xm = rng.random((20, 1))
    similar = ScaledGP.from_hyper(Xm, f(Xm), hp, kind="se")
    opposite = ScaledGP.from_hyper(Xm, -f(Xm), hp, kind="se")
    Xt = rng.random((10, 1))
    target = ScaledGP.from_hyper(Xt, f(Xt), hp, kind="se")
    return MetaTaskModels([similar, opposite]), target, Xt, f(Xt)


def test_rgpe_gives_the_similar_task_the_weight(rng):
    meta, target, Xt, yt = _setup(rng)
    w, wt = rgpe_weights(meta, target.gp, Xt, yt, n_samples=200, rng=rng)
    assert w.sum() + wt == pytest.approx(1.0)
    assert w[0] > 0.5 and w[1] == 0.0  # the anti-correlated task is dropped
    w0, wt0 = rgpe_weights(meta, target.gp, Xt[:1], yt[:1], n_samples=10, rng=rng)
    np.testing.assert_allclose(np.append(w0, wt0), 1 / 3)


def test_taf_weights_use_ranking_discordance():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    mu = np.stack([y, -y, np.array([1.0, 2.0, 4.0, 3.0])])
    w = taf_weights(mu, y, bandwidth=0.5)
    assert w[0] == 0.75 and w[1] == 0.0 and 0 < w[2] < 0.75


def test_baseline_gradients_match_finite_differences(rng):
    meta, target, _Xt, yt = _setup(rng)
    acqs = [
        RGPE(target, 1.0, meta, np.array([0.6, 0.1]), 0.3, None),
        TAF(target, float(yt.max()), meta, np.array([0.7, 0.2]), np.array([0.1, -0.5]), None),
    ]
    x = np.array([0.37])
    for a in acqs:
        val, grad = a.value_and_grad(x)
        assert val == pytest.approx(a.values(x[None])[0], abs=1e-9)
        np.testing.assert_allclose(
            grad, finite_difference(lambda v, a=a: a.values(v[None])[0], x), rtol=1e-4, atol=1e-6
        )


def test_target_loss_compares_leave_one_out_samples_with_observed_values():
    from rmbo_tune.engine.baselines import loo_ranking_losses

    y = np.array([0.0, 1.0, 2.0])
    # Each LOO sample at x_j equal to y_j: every ordered pair right.
    assert loo_ranking_losses(y[None, :], y)[0] == 0
    # The sample at x_0 is above every other observation: (0, 1) and (0, 2) are wrong, and the
    # comparisons (1, 0), (2, 0) use the observed y_0 = 0, so they stay right.
    assert loo_ranking_losses(np.array([[5.0, 1.0, 2.0]]), y)[0] == 2
