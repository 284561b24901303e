"""The target GP: output scaling, the refit schedule, the prior hyperparameters."""

from __future__ import annotations

import numpy as np
import pytest

from rmbo_tune.engine.gp import GPHyperparameters
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.priors import LogNormalPrior
from rmbo_tune.engine.target import (
    REFIT_ALWAYS_UNTIL,
    TargetModel,
    initial_hyper,
    warps_at,
)


def _model(meta_scale=None, **options) -> TargetModel:
    opt = MetaBOOptions.from_kwargs(options)
    return TargetModel(
        2,
        opt,
        hyper=GPHyperparameters.default(2, noise_floor=opt.noise_floor),
        prior=None,
        meta_scale=meta_scale,
        cached_points=np.random.default_rng(0).random((16, 2)),
        n_fixed=16,
    )


def _fill(model: TargetModel, n: int, rng: np.random.Generator, refit: bool = True) -> list[int]:
    bases = []
    for _ in range(n):
        x = rng.random(2)
        model.add(x, float(np.sin(4 * x).sum()))
        if refit:
            model.refit(rng)
        bases.append(model.factor_base)
    return bases


def test_refit_after_every_observation_then_after_20_percent_growth() -> None:
    rng = np.random.default_rng(0)
    model = _model()
    bases = _fill(model, 36, rng)
    first = model.options.min_fit_observations
    fitted_at = sorted({b for b in bases if b})
    assert fitted_at == [*range(first, REFIT_ALWAYS_UNTIL + 1), 24, 29, 35]


def test_inputs_are_warped_from_the_observation_input_warp_names() -> None:
    rng = np.random.default_rng(1)
    model = _model(input_warp=8)
    _fill(model, 7, rng)
    assert model.factor_base == 7 and model.hyper.warp is None
    _fill(model, 1, rng)
    assert model.factor_base == 8 and model.hyper.warp.shape == (2, 2)
    # The posterior is the GP of the warped inputs.
    X = model.X_fit
    mu, _ = model.model().predict(X)
    assert np.corrcoef(mu, model.scaled_y())[0, 1] > 0.9
    assert _model().options.input_warp == "tasks"  # the default: only the tasks' warp
    assert _model(variant="paper").options.input_warp is None


def test_the_tasks_warp_applies_from_the_first_fit_when_the_tasks_gave_one() -> None:
    centred = LogNormalPrior.default(2).centred_warp(np.zeros((2, 2)), 0.25)
    assert warps_at("tasks", 5, centred) and warps_at("tasks", 50, centred)
    assert not warps_at("tasks", 5, LogNormalPrior.default(2))  # no meta-tasks
    assert not warps_at("tasks", 5, None)
    assert not warps_at(8, 7, None) and warps_at(8, 8, None)
    assert not warps_at(None, 100, centred)


def test_rank_warp_makes_outliers_harmless() -> None:
    m = _model()
    for i, v in enumerate([0.0, 1.0, 2.0, 1e9]):
        m.add(np.array([i / 4, 0.5]), v)
    z = m.scaled_y()
    assert np.all(np.diff(z) > 0) and np.abs(z).max() < 2
    m_none = _model(target_warp="none")
    for i, v in enumerate([0.0, 1.0, 2.0, 1e9]):
        m_none.add(np.array([i / 4, 0.5]), v)
    assert np.ptp(m_none.scaled_y()[:3]) < 1e-6  # the outlier swallows the rest


def test_scaled_outputs_are_kept_read_only_until_the_next_observation() -> None:
    m = _model()
    for i, v in enumerate([0.0, 1.0, 2.0]):
        m.add(np.array([i / 4, 0.5]), v)
    z = m.scaled_y()
    assert m.scaled_y() is z and not z.flags.writeable
    m.add(np.array([0.9, 0.1]), 0.5)
    z4 = m.scaled_y()
    assert len(z4) == 4 and z4[3] < z4[2]  # recomputed from all four
    np.testing.assert_array_equal(m.shrunk(2.0).scaled_y(), z4)  # same observations


def test_shared_scaling_borrows_the_meta_tasks_scale() -> None:
    m = _model(meta_scale=(10.0, 2.0), output_scaling="shared")
    m.add(np.array([0.1, 0.1]), 12.0)
    m.add(np.array([0.9, 0.9]), 14.0)
    assert m.borrows_meta_scale()
    np.testing.assert_allclose(m.scaled_y(), [1.0, 2.0])
    assert not _model(meta_scale=(10.0, 2.0)).borrows_meta_scale()  # "rank": its own scale


def test_posterior_hallucinates_pending_points() -> None:
    rng = np.random.default_rng(3)
    m = _model()
    _fill(m, 6, rng)
    mu, sigma, _ = m.posterior(None, with_meta_inputs=False)
    p = m.cached_points[:1]
    mu_p, sigma_p, _ = m.posterior(p, with_meta_inputs=False)
    assert sigma_p[0] < 0.5 * sigma[0]
    np.testing.assert_allclose(mu_p[0], mu[0], atol=1e-8)


def test_initial_hyper_takes_the_median_meta_length_scales_but_unit_signal() -> None:
    hypers = [GPHyperparameters(np.array([0.1 * k, 1.0]), 9.0, 1e-3) for k in (1, 2, 3)]
    h = initial_hyper(hypers, 2, 1e-6)
    np.testing.assert_allclose(h.lengthscales, [0.2, 1.0])
    assert h.signal_var == 1.0
    assert h.noise_var == pytest.approx(1e-3)
    default = initial_hyper([], 2, 1e-6)
    assert default.to_dict() == GPHyperparameters.default(2, noise_floor=1e-6).to_dict()


def test_failed_evaluations_are_imputed_below_every_success() -> None:
    m = _model()
    m.add(np.array([0.1, 0.1]), np.nan)
    np.testing.assert_array_equal(m.scaled_y(), [-1.0])  # no success yet
    for i, v in enumerate([3.0, 1.0, 2.0]):
        m.add(np.array([0.2 + i / 10, 0.5]), v)
    m.add(np.array([0.9, 0.9]), np.nan)
    z = m.scaled_y()
    assert len(z) == len(m.X_fit) == 5 and len(m.X) == 3 and len(m.failed) == 2
    ok = z[1:4]
    np.testing.assert_allclose(z[[0, 4]], ok.min() - 1.0)
    np.testing.assert_array_equal(m.y, [3.0, 1.0, 2.0])


def test_initial_hyper_takes_each_columns_median_over_the_tasks_that_recorded_it() -> None:
    hypers = [
        GPHyperparameters(np.array([0.1, 0.8]), 9.0, 1e-3),
        GPHyperparameters(np.array([0.3]), 9.0, 1e-3).expanded(np.array([True, False])),
        GPHyperparameters(np.array([0.2, 0.6]), 9.0, 1e-3),
    ]
    np.testing.assert_allclose(initial_hyper(hypers, 2, 1e-6).lengthscales, [0.2, np.sqrt(0.48)])
    none = [GPHyperparameters(np.array([0.3]), 9.0, 1e-3).expanded(np.array([True, False]))]
    h = initial_hyper(none, 2, 1e-6)
    np.testing.assert_allclose(h.lengthscales, [0.3, GPHyperparameters.default(2).lengthscales[1]])


def test_a_shrunk_copy_divides_the_length_scales_and_leaves_the_model_as_it_was() -> None:
    rng = np.random.default_rng(4)
    m = _model()
    _fill(m, 8, rng)
    mu, sigma, _ = m.posterior(None, with_meta_inputs=False)
    ell = m.hyper.lengthscales.copy()
    s = m.shrunk(2.0)
    np.testing.assert_allclose(s.hyper.lengthscales, ell / 2.0)
    assert s.hyper.signal_var == m.hyper.signal_var and s.hyper.noise_var == m.hyper.noise_var
    np.testing.assert_array_equal(s.X_fit, m.X_fit)
    np.testing.assert_array_equal(s.scaled_y(), m.scaled_y())
    _, sigma_s, _ = s.posterior(None, with_meta_inputs=False)
    # Shorter length scales: the cached points between the observations are less certain.
    assert np.mean(sigma_s) > np.mean(sigma)
    # The model itself is untouched, its factor and predictions included.
    np.testing.assert_array_equal(m.hyper.lengthscales, ell)
    mu2, sigma2, _ = m.posterior(None, with_meta_inputs=False)
    np.testing.assert_array_equal(mu2, mu)
    np.testing.assert_array_equal(sigma2, sigma)


def test_a_shrunk_copys_factor_is_kept_and_grown_to_the_same_numbers() -> None:
    rng = np.random.default_rng(6)
    m = _model()
    _fill(m, 6, rng, refit=False)
    first = m.shrunk(2.0)
    first.posterior(None, with_meta_inputs=False)
    m.add(rng.random(2), 0.3)
    kept = m.shrunk(2.0)
    assert kept._factor is first._factor  # grown by the new observation, not rebuilt
    mu, sigma, _ = kept.posterior(None, with_meta_inputs=False)
    m._shrunk.clear()
    mu0, sigma0, _ = m.shrunk(2.0).posterior(None, with_meta_inputs=False)
    np.testing.assert_array_equal(mu, mu0)
    np.testing.assert_array_equal(sigma, sigma0)
    # Another factor, or a refit (new base and length scales), builds its own.
    assert m.shrunk(4.0)._factor is not kept._factor
    m.refit(rng)
    assert m.shrunk(2.0)._factor is not kept._factor
