import numpy as np
import pytest
from scipy.spatial.distance import cdist

from rmbo_tune.engine import MetaBO
from rmbo_tune.engine.gp import GaussianProcess, GPHyperparameters, ScaledGP
from rmbo_tune.engine.gp.posterior import UNRECORDED_PULL
from rmbo_tune.engine.meta_models import (
    _MEANS_KEPT,
    SEARCHED_CROWDING,
    MetaTaskModels,
    agreed_warp,
    clip_outliers,
    crowding_correlation,
    disagreement,
    fit_meta_models,
    fit_task_warps,
    searched_score,
    thin,
)
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.priors import LogNormalPrior
from tests.conftest import bowl, finite_difference, searched_rows


@pytest.fixture(params=["matern52", "se"])
def models(request, rng):
    kind = request.param
    out = []
    for i, n in enumerate([5, 12, 9]):  # unequal sizes exercise the padding
        X = rng.random((n, 2))
        y = (i + 1) * np.sin(5 * X[:, 0]) + 10 * i
        hp = GPHyperparameters(np.array([0.2 + 0.1 * i, 0.5]), 1.0 + i, 1e-3)
        out.append(ScaledGP.from_hyper(X, y, hp, kind=kind).rescaled(3.0, 2.0))
    return out


def test_stacked_predictions_equal_individual_gps(models, rng):
    stack = MetaTaskModels(models)
    Xs = rng.random((50, 2))
    mu, sigma = stack.predict(Xs)
    for i, m in enumerate(models):
        mu_i, sigma_i = m.predict(Xs)
        np.testing.assert_allclose(mu[i], mu_i, atol=1e-9)
        np.testing.assert_allclose(sigma[i], sigma_i, atol=1e-7)
    # The means alone are the same numbers, chunk by chunk.
    np.testing.assert_array_equal(stack.means(Xs), mu)


def test_stacked_gradients_match_finite_differences(models, rng):
    stack = MetaTaskModels(models)
    x = rng.random(2)
    mu, sigma, dmu, dsigma = stack.predict_with_grad(x)
    np.testing.assert_allclose(mu, stack.predict(x[None])[0][:, 0], atol=1e-9)
    np.testing.assert_allclose(sigma, stack.predict(x[None])[1][:, 0], atol=1e-7)
    for i in range(len(models)):
        np.testing.assert_allclose(
            dmu[i],
            finite_difference(lambda v, i=i: stack.predict(v[None])[0][i, 0], x),
            rtol=1e-5,
            atol=1e-6,
        )
        np.testing.assert_allclose(
            dsigma[i],
            finite_difference(lambda v, i=i: stack.predict(v[None])[1][i, 0], x),
            rtol=1e-4,
            atol=1e-6,
        )


def test_the_last_points_gradient_prediction_is_reused_and_read_only(models, rng):
    stack = MetaTaskModels(models)
    x, other = rng.random(2), rng.random(2)
    first = stack.predict_with_grad(x)
    assert stack.predict_with_grad(x.copy()) is first  # the same point: no recomputation
    fresh = MetaTaskModels(models).predict_with_grad(other)
    for a, b in zip(stack.predict_with_grad(other), fresh, strict=True):
        np.testing.assert_array_equal(a, b)  # another point: recomputed
    with pytest.raises(ValueError, match="read-only"):
        first[0][0] = 0.0


def test_joint_posterior_matches_marginals(models, rng):
    stack = MetaTaskModels(models)
    Xt = rng.random((6, 2))
    mu, cov = stack.joint_posterior(Xt)
    mu_m, sigma_m = stack.predict(Xt)
    np.testing.assert_allclose(mu, mu_m, atol=1e-9)
    np.testing.assert_allclose(np.diagonal(cov, axis1=1, axis2=2), sigma_m**2, atol=1e-7)


def test_concatenated_meta_outputs_are_on_the_common_scale(models):
    stack = MetaTaskModels(models)
    assert stack.y_all.shape == (26,) and stack.X_all.shape == (26, 2)
    assert np.bincount(stack.task_index).tolist() == [5, 12, 9]
    mu, _ = stack.predict(stack.X_all[:5])
    # noise 1e-3 on standardized outputs: the GP nearly interpolates its own data
    np.testing.assert_allclose(mu[0], stack.y_all[:5], atol=0.05 * np.ptp(stack.y_all[:5]) + 1e-3)


def test_chunked_prediction_handles_many_points(models, rng, monkeypatch):
    import rmbo_tune.engine.meta_models as mm

    monkeypatch.setattr(mm, "_CHUNK_ELEMENTS", 50)
    stack = MetaTaskModels(models)
    Xs = rng.random((37, 2))
    mu, _sigma = stack.predict(Xs)
    np.testing.assert_allclose(mu[1], models[1].predict(Xs)[0], atol=1e-9)


def test_clip_outliers_keeps_ordinary_data_and_clips_a_diverged_run():
    y = np.linspace(0.0, 1.0, 21)
    same, n = clip_outliers(y)
    assert n == 0 and same is y
    y[3] = 1e300
    clipped, n = clip_outliers(y)
    assert n == 1 and np.all(np.isfinite(clipped)) and clipped[3] < 100
    np.testing.assert_array_equal(np.delete(clipped, 3), np.delete(y, 3))
    flat = np.zeros(10)
    assert clip_outliers(flat) == (flat, 0)


@pytest.mark.parametrize("scaling", ["shared", "per-task"])
def test_a_huge_meta_value_is_clipped_with_a_warning_not_a_crash(scaling):
    rng = np.random.default_rng(0)
    X = rng.random((20, 2))
    y = -((X - 0.3) ** 2).sum(1)
    y[3] = 1e300
    with pytest.warns(RuntimeWarning, match=r"meta_tasks\[0\]: 1 of 20 values"):
        opt = MetaBO(2, [(X, y), (X, -((X - 0.5) ** 2).sum(1))], seed=0, output_scaling=scaling)
    for _ in range(4):
        x = opt.ask()
        opt.tell(x, float(-((x - 0.3) ** 2).sum()))
    assert np.all(np.isfinite(opt.meta_weights)) and 0 < opt.nu < 1


def test_thin_keeps_a_small_task_whole():
    X = np.random.default_rng(0).random((20, 3))
    np.testing.assert_array_equal(thin(X, X[:, 0], 20), np.arange(20))
    np.testing.assert_array_equal(thin(X, X[:, 0], None), np.arange(20))


def test_thin_keeps_the_best_quarter_and_covers_the_rest():
    rng = np.random.default_rng(0)
    # A search that clustered: 900 points near the optimum at 0.3, 100 spread out.
    X = np.vstack(
        [np.clip(0.3 + 0.02 * rng.standard_normal((900, 2)), 0, 1), rng.random((100, 2))]
    )
    y = -((X - 0.3) ** 2).sum(1)
    keep = thin(X, y, 64)
    assert len(keep) == 64 and len(np.unique(keep)) == 64
    np.testing.assert_array_equal(keep, np.sort(keep))
    assert set(np.argsort(-y)[:16]) <= set(keep)
    # Every spread-out point is near a kept one; a random subset of 64 would mostly hold
    # the cluster and leave the rest of the square far from any kept point.
    gap = cdist(X[900:], X[keep]).min(axis=1).max()
    random_gap = cdist(X[900:], X[rng.choice(1000, 64, replace=False)]).min(axis=1).max()
    assert gap < 0.2 < random_gap
    np.testing.assert_array_equal(thin(X, y, 64), keep)  # deterministic


def test_thin_never_picks_a_row_twice_among_duplicates():
    X = np.zeros((50, 2))
    keep = thin(X, np.arange(50.0), 10)
    assert len(np.unique(keep)) == 10


def test_a_large_meta_task_is_fitted_to_max_meta_observations_rows():
    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    tasks = [(X, -((X - 0.5) ** 2).sum(1)), (X[:40], X[:40, 0])]
    opt = MetaBO(2, tasks, seed=0, max_meta_observations=100)
    np.testing.assert_array_equal(opt.meta.sizes, [100, 40])
    whole = MetaBO(2, tasks, seed=0, max_meta_observations=None)
    np.testing.assert_array_equal(whole.meta.sizes, [300, 40])
    # The kept rows carry the normal scores of the whole task, standardized.
    keep = thin(X, tasks[0][1], 100)
    kept, full = opt.meta.y_all[:100], whole.meta.y_all[:300][keep]
    np.testing.assert_allclose(np.corrcoef(kept, full)[0, 1], 1.0)


def test_only_a_large_meta_task_skips_the_restarts_that_screen_worse(monkeypatch):
    from rmbo_tune.engine.meta_models import ALWAYS_RESTART_ROWS

    seen: dict[int, bool] = {}
    fit = ScaledGP.fit.__func__

    def recording(cls, X, y, **kwargs):
        seen[len(X)] = kwargs["promising_restarts_only"]
        return fit(cls, X, y, **kwargs)

    monkeypatch.setattr(ScaledGP, "fit", classmethod(recording))
    rng = np.random.default_rng(0)
    small, large = ALWAYS_RESTART_ROWS, ALWAYS_RESTART_ROWS + 1
    tasks = [(X, np.sin(5 * X[:, 0])) for X in (rng.random((small, 2)), rng.random((large, 2)))]
    MetaBO(2, tasks, seed=0)
    assert seen == {small: False, large: True}


def test_the_tasks_warp_stretches_where_their_functions_change():
    # Every task saturates along x0 beyond 0.1 (a penalty past which nothing changes) and
    # varies smoothly along x1: the median warp of their fits spreads [0, 0.1] of x0 over
    # much more of the warped axis and leaves x1 near the identity.
    rng = np.random.default_rng(0)
    tasks = []
    for i in range(10):
        X = rng.random((40, 2))
        tasks.append((X, np.minimum(10 * X[:, 0], 1.0) + np.sin(3 * X[:, 1] + 0.2 * i)))
    log_warp = fit_task_warps(tasks, MetaBOOptions(), rng, LogNormalPrior.default(2))
    assert log_warp.shape == (2, 2)
    a, b = np.exp(log_warp)

    def warp(x, k):
        return 1 - (1 - x ** a[k]) ** b[k]

    assert warp(0.1, 0) > 0.3
    assert abs(warp(0.5, 1) - 0.5) < 0.15


def test_the_agreed_warp_keeps_what_the_tasks_share_and_drops_what_they_split_on():
    # Column 0: every task warps the same way; column 1: half one way, half the other;
    # column 2: one direction, but spread (|m| / s = 2.7): shrunk by (s / m)^2.
    logs = np.array([[0.5, 0.4, 0.1], [0.5, -0.4, 0.9], [0.5, 0.4, 0.5], [0.5, -0.4, 0.6]])
    agreed = agreed_warp(logs)
    assert agreed[0] == 0.5  # no spread: the median itself
    assert agreed[1] == 0.0  # the median is 0
    m, s = 0.55, 1.2533 * np.std(logs[:, 2], ddof=1) / 2
    assert agreed[2] == pytest.approx(m * (1 - (s / m) ** 2))
    assert 0 < agreed[2] < m
    spread = np.array([[1.0], [-1.0], [0.2]])  # |m| well inside one standard error
    assert agreed_warp(spread)[0] == 0.0


def test_the_warp_of_noise_tasks_is_near_the_identity_and_two_tasks_give_none():
    rng = np.random.default_rng(4)
    noise = [(rng.random((40, 2)), rng.standard_normal(40)) for _ in range(8)]
    log_warp = fit_task_warps(noise, MetaBOOptions(), rng, LogNormalPrior.default(2))
    a, b = np.exp(log_warp)
    x = np.linspace(0, 1, 101)[:, None]
    assert np.abs(1 - (1 - x**a) ** b - x).max() < 0.02  # their median moves x by 0.035
    two = fit_task_warps(noise[:2], MetaBOOptions(), rng, LogNormalPrior.default(2))
    np.testing.assert_array_equal(two, np.zeros((2, 2)))


def test_crowding_tells_a_searchs_rows_from_random_ones():
    rng = np.random.default_rng(0)
    random_tasks = [(X, bowl(X)) for X in rng.random((10, 50, 3))]
    searched_tasks = [(X, bowl(X)) for X in (searched_rows(rng) for _ in range(10))]
    scores = [crowding_correlation(X, y) for X, y in random_tasks]
    assert abs(np.median(scores)) < 0.15
    assert min(crowding_correlation(X, y) for X, y in searched_tasks) > 0.5
    assert searched_score(random_tasks) < SEARCHED_CROWDING <= searched_score(searched_tasks)


def test_disagreement_is_what_a_second_point_adds_to_the_tasks_mean_percentile():
    # Seven tasks over 5 points, percentiles 0, 0.25, ..., 1: four rate point 0 best, three
    # point 4. The consensus is point 0; point 4 lifts the group of three from 0 to 1.
    down, up = [4.0, 3, 2, 1, 0], [0.0, 1, 2, 3, 4]
    mu = np.array([down] * 4 + [up] * 3)
    assert disagreement(mu) == pytest.approx(3 / 7)
    # Order only: any increasing map of a task's means gives the same score.
    assert disagreement(np.exp(mu) * np.arange(1, 8)[:, None]) == pytest.approx(3 / 7)
    # One task alone is not a group: its own best region, or a noisy task's, scores 0.
    assert disagreement(np.array([down] * 4 + [up])) == 0.0
    assert disagreement(np.array([down] * 4)) == 0.0  # agreeing tasks: nothing to add
    assert disagreement(mu[:1]) == 0.0 and disagreement(mu[:, :1]) == 0.0


def test_tasks_in_groups_disagree_more_than_tasks_that_share_an_optimum():
    rng = np.random.default_rng(2)
    X = rng.random((400, 3))
    shifted = [0.3 + rng.normal(0.0, 0.05, 3) for _ in range(12)]
    groups = [0.15 + 0.7 * (k % 2) + rng.normal(0.0, 0.05, 3) for k in range(12)]
    agree = disagreement(np.array([-((X - c) ** 2).sum(1) for c in shifted]))
    split = disagreement(np.array([-((X - c) ** 2).sum(1) for c in groups]))
    assert agree < 0.03 and split > 0.1


def test_crowding_is_zero_where_it_is_undefined():
    rng = np.random.default_rng(1)
    X = rng.random((6, 2))
    assert crowding_correlation(X, bowl(X)) == 0.0  # at most k + 1 rows
    X = rng.random((20, 2))
    assert crowding_correlation(X, np.ones(20)) == 0.0  # constant values
    assert crowding_correlation(np.zeros((20, 2)), bowl(X)) == 0.0  # one point repeated
    assert searched_score([]) == 0.0
    X = searched_rows(rng, n=19)
    assert crowding_correlation(X, bowl(X)) > 0.4
    assert searched_score([(X, bowl(X))]) == 0.0  # too few rows to tell a search


def test_a_task_that_did_not_record_a_column_is_fitted_on_the_others_and_constant_along_it():
    rng = np.random.default_rng(0)
    X = rng.random((30, 3))
    X[:, 1] = 0.5  # filled: the task never varied x1
    y = bowl(X[:, [0, 2]])
    unrecorded = [np.array([False, True, False])]
    models, hypers, _ = fit_meta_models([(X, y)], [None], MetaBOOptions(), rng, None, unrecorded)
    np.testing.assert_array_equal(hypers[0].unrecorded, [False, True, False])
    P = rng.random((5, 3))
    Q = P.copy()
    Q[:, 1] = rng.random(5)
    # the same along x1 but for the tie-break towards the rows' place, 0.5
    pull = UNRECORDED_PULL * ((Q[:, 1] - 0.5) ** 2 - (P[:, 1] - 0.5) ** 2)
    np.testing.assert_allclose(models.predict(P)[0][0] - models.predict(Q)[0][0], pull, atol=1e-14)
    np.testing.assert_array_equal(models.predict(P)[1], models.predict(Q)[1])
    mu, _, dmu, dsigma = models.predict_with_grad(P[0])
    assert mu[0] == pytest.approx(models.predict(P[:1])[0][0, 0], abs=1e-12)
    assert dmu[0, 1] == pytest.approx(-2 * UNRECORDED_PULL * (P[0, 1] - 0.5)) and dsigma[0, 1] == 0
    # the same GP as one on the recorded columns alone
    h = hypers[0]
    alone = GPHyperparameters(h.lengthscales[[0, 2]], h.signal_var, h.noise_var)
    inner = models.models[0].gp
    gp = GaussianProcess(X[:, [0, 2]], inner.y, alone, kind="matern52", mean=0.0)
    np.testing.assert_allclose(inner.predict(P)[0], gp.predict(P[:, [0, 2]])[0], atol=1e-6)


def test_the_agreed_warp_of_a_column_leaves_out_the_tasks_that_did_not_record_it():
    logs = np.array([[0.5, np.nan], [0.5, 0.4], [0.5, np.nan], [0.5, 0.4]])
    np.testing.assert_array_equal(agreed_warp(logs), [0.5, 0.0])  # two tasks: too few
    logs = np.vstack([logs, [[0.5, 0.4]]])
    np.testing.assert_allclose(agreed_warp(logs), [0.5, 0.4])


def test_the_last_means_are_kept_read_only_and_recomputed_for_other_points() -> None:
    rng = np.random.default_rng(2)
    tasks = [(rng.random((20, 2)), rng.random(20)) for _ in range(3)]
    models, _, _ = fit_meta_models(tasks, [None] * 3, MetaBOOptions(), rng, None)
    X = rng.random((5, 2))
    first = models.means(X)
    again = models.means(X.copy())
    assert again is first and not first.flags.writeable
    np.testing.assert_array_equal(first, models.predict(X)[0])
    other = models.means(X[:3])
    assert other.shape == (3, 3)
    np.testing.assert_array_equal(other, first[:, :3])
    # Other point sets asked for in between do not evict it until more than
    # _MEANS_KEPT of them were.
    for _ in range(_MEANS_KEPT - 2):
        models.means(rng.random((4, 2)))
    assert models.means(X) is first
    for _ in range(_MEANS_KEPT):
        models.means(rng.random((4, 2)))
    recomputed = models.means(X)
    assert recomputed is not first
    np.testing.assert_array_equal(recomputed, first)
