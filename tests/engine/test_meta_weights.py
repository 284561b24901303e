import numpy as np
import pytest

from rmbo_tune.engine.meta_weights import (
    MetaWeightState,
    beta_schedule,
    comparison_information,
    decay_rate,
    function_gaps,
    ranking_gaps,
)


def test_gap_is_distance_to_the_farther_confidence_bound():
    y = np.array([1.0, 2.0, 0.0, 5.0])
    idx = np.array([0, 0, 1, 1])
    mu = np.array([1.5, 1.0, 0.0, 1.0])
    sigma = np.array([0.1, 0.2, 0.3, 0.0])
    beta = 2.0
    U, L = mu + beta * sigma, mu - beta * sigma
    per = np.maximum(np.abs(y - U), np.abs(y - L))
    np.testing.assert_allclose(
        function_gaps(y, idx, 2, mu, sigma, beta), [per[:2].mean(), per[2:].mean()]
    )
    np.testing.assert_allclose(
        function_gaps(y, idx, 2, mu, sigma, beta, aggregation="max"),
        [per[:2].max(), per[2:].max()],
    )


def test_weights_start_uniform_and_favour_small_gaps():
    s = MetaWeightState(3)
    np.testing.assert_allclose(s.weights, 1 / 3)
    s.update(np.array([0.1, 0.1, 3.0]))
    w = s.weights
    assert w[0] == pytest.approx(w[1]) and w[2] < 0.05
    assert w.sum() == pytest.approx(1.0)


def test_weights_never_nan_with_huge_gaps_or_many_updates():
    s = MetaWeightState(4)
    s.update(np.array([1e6, 1e6, 1e6, 1e6]))
    assert np.all(np.isfinite(s.weights)) and s.weights.sum() == pytest.approx(1.0)
    s.update(np.array([1e6, 0.0, 1e6, 1e6]))
    assert s.weights[1] == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    s = MetaWeightState(4, nu_floor=0.0)
    for _ in range(1000):
        s.update(rng.uniform(0, 50, 4))
        assert np.all(np.isfinite(s.weights)) and np.isfinite(s.nu)
    assert s.weights.sum() == pytest.approx(1.0)


def test_nu_starts_at_one_never_increases_and_decays_faster_with_larger_gaps():
    small, large = MetaWeightState(2, nu_floor=0.0), MetaWeightState(2, nu_floor=0.0)
    assert small.nu == large.nu == 1.0
    prev_s, prev_l = 1.0, 1.0
    for _ in range(10):
        small.update(np.array([0.2, 0.3]))  # (gap)^(-eps) > 1: decay is r
        large.update(np.array([4.0, 8.0]))  # (gap)^(-eps) < r: faster decay
        assert small.nu <= prev_s and large.nu <= prev_l
        prev_s, prev_l = small.nu, large.nu
    assert small.nu == pytest.approx(0.7**10)
    assert large.nu < small.nu / 10


def test_an_observation_the_search_did_not_choose_lowers_nu_only_by_its_evidence():
    given = MetaWeightState(2, nu_floor=0.0)
    given.update(np.array([0.2, 0.3]), scheduled=False)  # ordered well: no decay
    assert given.nu == 1.0
    given.update(np.array([0.0, 0.0]), scheduled=False)  # no pair to compare yet
    assert given.nu == 1.0
    given.update(np.array([1.5, 1.5]), scheduled=False)  # no better than chance
    assert given.nu == pytest.approx(1.5**-0.7)
    given.update(np.array([0.2, 0.3]))  # one of the search's own: r at most, as before
    assert given.nu == pytest.approx(0.7 * 1.5**-0.7)
    np.testing.assert_allclose(given.cumulative_gaps, [1.9, 2.1])  # weights learn from all
    # Half the tasks right, half wrong: the tasks' mean gap (1.5) decides, not the gap
    # weighted by weights just learned from the same pairs (0.14, which would keep nu).
    split = MetaWeightState(2, nu_floor=0.0)
    split.update(np.array([0.0, 3.0]), scheduled=False)
    assert split.weights[1] < 0.05 and split.nu == pytest.approx(1.5**-0.7)


def test_nu_floor_switches_the_meta_tasks_off():
    s = MetaWeightState(1, nu_floor=0.1)
    for _ in range(7):
        s.update(np.array([0.0]))
    assert s.nu == 0.0 and not s.active


def test_fixed_weights_stay_uniform():
    s = MetaWeightState(2, learn_weights=False)
    s.update(np.array([0.0, 100.0]))
    np.testing.assert_allclose(s.weights, 0.5)


def test_update_rejects_bad_gaps():
    with pytest.raises(ValueError, match="finite"):
        MetaWeightState(2).update(np.array([np.nan, 1.0]))


def test_state_round_trip():
    s = MetaWeightState(2)
    s.update(np.array([0.5, 1.5]))
    t = MetaWeightState(2)
    t.load_state_dict(s.state_dict())
    assert t.nu == s.nu
    np.testing.assert_array_equal(t.weights, s.weights)


def test_beta_schedule():
    assert beta_schedule(1, 4, beta=None, beta_scale=0.2) == pytest.approx(
        np.sqrt(0.8 * np.log(2))
    )
    assert beta_schedule(10, 4, beta=1.5, beta_scale=0.2) == 1.5


def test_decay_rate_is_the_papers_up_to_six_dimensions_and_slower_beyond():
    assert decay_rate(None, 1) == decay_rate(None, 6) == pytest.approx(0.7)
    # nu falls by 0.7 per dim / 6 observations in wider spaces.
    assert decay_rate(None, 12) == pytest.approx(np.sqrt(0.7))
    assert decay_rate(None, 11) ** (11 / 6) == pytest.approx(0.7)
    rates = [decay_rate(None, d) for d in range(6, 40)]
    assert np.all(np.diff(rates) > 0) and max(rates) < 1.0
    assert decay_rate(0.5, 20) == 0.5  # given explicitly, whatever the dimension


def test_ranking_gaps_count_wrongly_ordered_pairs_ties_in_y_left_out():
    y = np.array([0.0, 1.0, 2.0, 2.0])
    mu = np.array(
        [
            [0.0, 1.0, 2.0, 3.0],  # every comparable pair right
            [3.0, 2.0, 1.0, 0.0],  # every comparable pair wrong
            [0.0, 0.0, 0.0, 0.0],  # all ties: half
            [0.0, 2.0, 1.0, 5.0],  # pair (1, 2) wrong out of 5 comparable pairs
        ]
    )
    gaps = ranking_gaps(mu, y)
    np.testing.assert_allclose(gaps, 3.0 * np.array([0.0, 1.0, 0.5, 0.2]))


def test_ranking_gaps_are_invariant_to_monotone_maps_and_zero_without_pairs(rng):
    mu = rng.standard_normal((3, 7))
    y = rng.standard_normal(7)
    np.testing.assert_allclose(ranking_gaps(np.exp(3 * mu), 5 * y + 2), ranking_gaps(mu, y))
    np.testing.assert_array_equal(ranking_gaps(mu[:, :1], y[:1]), np.zeros(3))
    np.testing.assert_array_equal(ranking_gaps(mu[:, :2], np.ones(2)), np.zeros(3))


def test_comparison_information_prefers_splits_and_confident_agreement_over_coin_flips():
    w = np.full(4, 0.25)
    # Columns: every task unsure; the tasks split two against two; all confident "above".
    p = np.array([[0.5, 1.0, 1.0], [0.5, 1.0, 1.0], [0.5, 0.0, 1.0], [0.5, 0.0, 1.0]])
    info = comparison_information(p, w, nu=0.7)
    assert info[0] == pytest.approx(0.0, abs=1e-12)
    assert info[1] > info[2] > 0.0
    # With the tasks' weight gone only the coin and the mirror image are left: a confident
    # prediction still tells them apart, a split of the tasks no longer does.
    info = comparison_information(p, w, nu=0.0)
    assert info[1] == pytest.approx(0.0, abs=1e-12) and info[2] > 0.0
    # Symmetric in "above" and "below", never negative.
    assert np.allclose(comparison_information(1.0 - p, w, 0.7), comparison_information(p, w, 0.7))
    rng = np.random.default_rng(0)
    assert (comparison_information(rng.random((4, 100)), w, 0.4) >= -1e-12).all()


def test_ranking_gaps_of_values_at_the_float_limit_do_not_overflow():
    y = np.array([1e308, -1e308, 0.0])
    with np.errstate(over="raise"):
        gaps = ranking_gaps(np.array([y, -y]), y)
    np.testing.assert_allclose(gaps, [0.0, 3.0])
