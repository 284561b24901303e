import numpy as np
import pytest
from ray import tune

from rmbo_tune.exceptions import OutOfSpaceError, UnsupportedSearchSpaceError
from rmbo_tune.space import SearchSpace, flatten, has_domains, unflatten

MIXED = {
    "u": tune.uniform(-1.0, 1.0),
    "opt": {
        "qu": tune.quniform(0.0, 1.0, 0.25),
        "lu": tune.loguniform(1e-5, 1e-1),
        "qlu": tune.qloguniform(1e-3, 1.0, 1e-3),
    },
    "ri": tune.randint(2, 7),
    "qri": tune.qrandint(0, 10, 5),
    "lri": tune.lograndint(1, 1000),
    "qlri": tune.qlograndint(4, 100, 4),
    "ch": tune.choice(["relu", 3, None, True, 2.5]),
    "const": "fixed",
    "single": tune.choice(["only"]),
}


def valid(config):
    """Every value valid for its Tune domain (type, bounds, quantum)."""
    o = config["opt"]
    checks = [
        isinstance(config["u"], float) and -1.0 <= config["u"] < 1.0,
        o["qu"] in (0.0, 0.25, 0.5, 0.75, 1.0),
        1e-5 <= o["lu"] < 1e-1,
        1e-3 - 1e-12 <= o["qlu"] <= 1.0 and abs(o["qlu"] / 1e-3 - round(o["qlu"] / 1e-3)) < 1e-6,
        type(config["ri"]) is int and 2 <= config["ri"] <= 6,
        config["qri"] in (0, 5, 10) and type(config["qri"]) is int,
        type(config["lri"]) is int and 1 <= config["lri"] <= 999,
        type(config["qlri"]) is int and config["qlri"] % 4 == 0 and 4 <= config["qlri"] <= 100,
        any(
            config["ch"] is c or (type(config["ch"]) is type(c) and config["ch"] == c)
            for c in ["relu", 3, None, True, 2.5]
        ),
        config["single"] == "only",
    ]
    return all(checks), checks


def test_every_decoded_point_is_valid_and_round_trips(rng):
    space = SearchSpace.from_tune(MIXED)
    assert space.dim == 8 + 5  # one-hot choice over 5 categories; constants take no column
    X = np.vstack([rng.random((300, space.dim)), np.zeros(space.dim), np.ones(space.dim)])
    for x in X:
        cfg = space.decode(x)
        ok, checks = valid(cfg)
        assert ok, (cfg, checks)
        x2 = space.encode(cfg)
        np.testing.assert_allclose(x2, space.project(x[None])[0], atol=1e-9)
        assert space.decode(x2) == cfg


def test_bounds_follow_tunes_inclusive_and_exclusive_rules():
    space = SearchSpace.from_tune(MIXED)
    top = space.decode(np.ones(space.dim))
    bottom = space.decode(np.zeros(space.dim))
    assert top["ri"] == 6 and bottom["ri"] == 2  # randint: upper exclusive
    assert top["qri"] == 10  # quantized: upper inclusive
    assert top["lri"] == 999  # lograndint: upper exclusive
    assert top["qlri"] == 100 and bottom["qlri"] == 4
    assert top["opt"]["qu"] == 1.0
    assert top["u"] < 1.0  # continuous: never the upper bound itself


def test_every_value_of_a_small_integer_domain_is_reachable(rng):
    space = SearchSpace.from_tune({"k": tune.randint(0, 4), "q": tune.qrandint(0, 10, 5)})
    seen = {(c["k"], c["q"]) for c in (space.decode(x) for x in rng.random((400, 2)))}
    assert {k for k, _ in seen} == {0, 1, 2, 3}
    assert {q for _, q in seen} == {0, 5, 10}


def test_log_dimensions_are_encoded_in_log_space():
    space = SearchSpace.from_tune({"lr": tune.loguniform(1e-4, 1e-0)})
    np.testing.assert_allclose(space.encode({"lr": 1e-2}), [0.5])


def test_choice_distinguishes_true_from_one():
    space = SearchSpace.from_tune({"c": tune.choice([1, True, "1"])})
    assert space.decode(space.encode({"c": True}))["c"] is True
    assert space.decode(space.encode({"c": 1}))["c"] == 1
    assert type(space.decode(space.encode({"c": 1}))["c"]) is int


@pytest.mark.parametrize(
    ("value", "reason"),
    [(5.0, "out_of_bounds"), ("a", "wrong_type"), (float("nan"), "wrong_type")],
)
def test_encode_rejects_values_outside_the_space(value, reason):
    space = SearchSpace.from_tune({"x": tune.uniform(0, 1)})
    with pytest.raises(OutOfSpaceError, match="x=") as info:
        space.encode({"x": value})
    assert info.value.reason == reason


def test_encode_names_missing_keys_and_unknown_categories_and_can_clip():
    space = SearchSpace.from_tune({"a": {"x": tune.uniform(0, 1)}, "c": tune.choice(["p", "q"])})
    with pytest.raises(OutOfSpaceError, match="a/x is missing"):
        space.encode({"c": "p"})
    with pytest.raises(OutOfSpaceError, match=r"c='r' is not one of the categories") as info:
        space.encode({"a": {"x": 0.5}, "c": "r"})
    assert info.value.reason == "unknown_category"
    np.testing.assert_allclose(
        space.encode({"a": {"x": 3.0}, "c": "q"}, clip=True)[0], 1.0, atol=1e-12
    )
    # a key a meta-task's experiment did not search: NaN in every column of its own
    x = space.encode({"a": {"x": 0.25}}, unrecorded={("c",)})
    assert x[0] == pytest.approx(0.25) and np.isnan(x[1:]).all()
    with pytest.raises(OutOfSpaceError, match="a/x is missing"):
        space.encode({"c": "p"}, unrecorded={("c",)})


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({"a": tune.grid_search([1, 2])}, "a: tune.grid_search is not supported"),
        ({"n": {"b": tune.sample_from(lambda _: 1)}}, "n/b: tune.sample_from"),
        ({"r": tune.randn(0, 1)}, "r: tune.randn/qrandn is unbounded"),
        ({"l": [tune.uniform(0, 1)]}, "l: domains inside lists"),
        ({"c": tune.choice([tune.uniform(0, 1), 2])}, "c: conditional spaces"),
        ({1: tune.uniform(0, 1)}, r"the key 1 \(int\) is not a string; name it '1'"),
        ({"n": {2.5: tune.uniform(0, 1)}}, r"n: the key 2.5 \(float\)"),
    ],
)
def test_unsupported_domains_are_refused_naming_the_key(space, message):
    with pytest.raises(UnsupportedSearchSpaceError, match=message):
        SearchSpace.from_tune(space)
    assert issubclass(UnsupportedSearchSpaceError, ValueError)


def test_flatten_and_unflatten_are_inverse():
    nested = {"a": {"b": 1, "c": {"d": 2}}, "e": 3}
    assert flatten(nested) == {("a", "b"): 1, ("a", "c", "d"): 2, ("e",): 3}
    assert unflatten(flatten(nested)) == nested


def test_projection_makes_points_valid(rng):
    space = SearchSpace.from_tune(MIXED)
    P = space.project(rng.random((50, space.dim)))
    np.testing.assert_allclose(space.project(P), P)  # idempotent
    onehot = P[:, 8:]
    assert np.all(onehot.sum(1) == 1.0)


def test_has_domains_tells_a_space_from_a_config():
    assert has_domains({"a": {"b": tune.uniform(0, 1)}, "c": 1})
    assert has_domains({"g": tune.grid_search([1, 2])})
    assert not has_domains({"a": {"b": 0.5}, "c": [1, 2]})
    assert not has_domains({})


def test_encode_partial_fills_missing_keys_with_the_middle_of_their_range():
    space = SearchSpace.from_tune(
        {"x": tune.uniform(0, 1), "k": tune.randint(0, 5), "c": tune.choice(["p", "q"])}
    )
    x = space.encode_partial({"x": 0.1})
    assert space.decode(x) == {"x": 0.1, "k": 2, "c": "p"}
    np.testing.assert_array_equal(space.project(x[None])[0], x)
    with pytest.raises(OutOfSpaceError, match="x=2"):
        space.encode_partial({"x": 2})


def test_integer_bounds_beyond_float_precision_stay_exact() -> None:
    space = SearchSpace.from_tune({"n": tune.randint(0, 2**62)})
    top = space.decode([1.0])["n"]
    assert top == 2**62 - 1 and isinstance(top, int)  # Tune excludes upper itself
    assert space.decode([0.0])["n"] == 0


def test_a_float_range_wider_than_the_largest_float_decodes_evenly() -> None:
    space = SearchSpace.from_tune({"x": tune.uniform(-1e308, 1e308)})
    values = [space.decode([u])["x"] for u in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert all(np.isfinite(values)) and values == sorted(values)
    assert values[2] == 0.0 and values[-1] < 1e308
    np.testing.assert_allclose(space.encode({"x": values[1]}), [0.25])


def test_a_choice_among_dicts_keeps_each_dict_whole():
    adam, sgd = {"name": "adam", "beta": 0.9}, {"name": "sgd", "beta": 0.0}
    space = SearchSpace.from_tune({"lr": tune.uniform(0.0, 1.0), "opt": tune.choice([adam, sgd])})
    assert space.names == ["lr", "opt"] and space.dim == 3
    x = space.encode({"lr": 0.5, "opt": sgd})
    np.testing.assert_allclose(x, [0.5, 0.0, 1.0])
    assert space.decode(x) == {"lr": 0.5, "opt": sgd}
    assert space.flatten({"lr": 0.5, "opt": sgd}) == {("lr",): 0.5, ("opt",): sgd}
    # A partial config (a points_to_evaluate entry) keeps the dict too, or fills it in.
    assert space.decode(space.encode_partial({"opt": sgd}))["opt"] == sgd
    assert space.decode(space.encode_partial({"lr": 0.25}))["lr"] == 0.25


def test_bounds_allow_rounding_relative_to_a_tiny_range():
    space = SearchSpace.from_tune({"a": tune.loguniform(1e-10, 1e-9)})
    assert space.encode({"a": 1e-9 * (1 + 1e-12)})[0] == pytest.approx(1.0)
    for outside in (1.9e-9, 0.0, -5e-10):
        with pytest.raises(OutOfSpaceError) as info:
            space.encode({"a": outside})
        assert info.value.reason == "out_of_bounds"


def test_numpy_array_categories_match_whole_arrays():
    space = SearchSpace.from_tune({"c": tune.choice([np.array([1, 2]), np.array([3, 4])])})
    np.testing.assert_array_equal(space.encode({"c": np.array([3, 4])}), [0.0, 1.0])
    with pytest.raises(OutOfSpaceError) as info:
        space.encode({"c": np.array([9, 9])})
    assert info.value.reason == "unknown_category"


def test_a_given_config_decodes_as_written_where_it_is_valid():
    space = SearchSpace.from_tune(
        {"lr": tune.loguniform(1e-5, 1e-1), "n": tune.randint(1, 10), "a": tune.choice(["x", "y"])}
    )
    given = {"lr": 1e-3, "n": 3.2}  # n is snapped to 3; a is filled in
    x = space.encode_partial(given)
    assert space.decode(x)["lr"] != 1e-3  # the round trip through the log scale
    config = space.decode_as_given(x, given)
    assert config["lr"] == 1e-3 and config["n"] == 3 and config["a"] in ("x", "y")


def test_a_constant_dict_with_keys_that_are_not_strings_is_passed_on_as_it_is():
    weights = {0: 1.0, 1: 5.0}  # scikit-learn's class_weight
    space = SearchSpace.from_tune({"x": tune.uniform(0, 1), "model": {"class_weight": weights}})
    assert space.constants == {("model", "class_weight"): weights} and space.dim == 1
    x = space.encode({"x": 0.5, "model": {"class_weight": weights}})  # a trial's config
    assert space.decode(x) == {"x": 0.5}
