"""Engine options from the benchmarks' command lines."""

from __future__ import annotations

import pytest

from rmbo_tune.bench.options import method_list, parse_options


def test_values_are_json_or_strings() -> None:
    assert parse_options(["n_polish=0", "kernel=se", "beta=0.5", "learn_weights=false"]) == {
        "n_polish": 0,
        "kernel": "se",
        "beta": 0.5,
        "learn_weights": False,
    }
    assert parse_options([]) == {}


@pytest.mark.parametrize("item", ["n_polish", "=3"])
def test_malformed_items_are_named(item: str) -> None:
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_options([item])


def test_unknown_or_invalid_options_are_named_at_once() -> None:
    with pytest.raises(ValueError, match="n_polsh"):
        parse_options(["n_polsh=1"])
    with pytest.raises(ValueError, match="n_polish"):
        parse_options(["n_polish=-1"])


def test_count_arguments_refuse_zero_negative_and_non_integers() -> None:
    import argparse

    from rmbo_tune.bench.options import nonnegative_int, positive_int

    assert positive_int("3") == 3 and nonnegative_int("0") == 0
    for bad, fn in (("0", positive_int), ("-3", positive_int), ("-1", nonnegative_int)):
        with pytest.raises(argparse.ArgumentTypeError, match="must be >= "):
            fn(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=r"'2\.5' is not an integer"):
        positive_int("2.5")


def test_tolerances_are_numbers_at_least_zero() -> None:
    import argparse

    from rmbo_tune.bench.options import nonnegative_float

    assert nonnegative_float("0") == 0.0 and nonnegative_float("0.01") == 0.01
    for bad in ("-0.1", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a number >= 0"):
            nonnegative_float(bad)


def test_integer_lists_are_comma_separated_counts() -> None:
    import argparse

    from rmbo_tune.bench.options import positive_int_list

    assert positive_int_list("5, 10,25,") == [5, 10, 25]
    with pytest.raises(argparse.ArgumentTypeError, match="must be >= 1, got 0"):
        positive_int_list("5,0")
    with pytest.raises(argparse.ArgumentTypeError, match="expected comma-separated"):
        positive_int_list(",")


def test_method_lists_take_commas_or_several_texts_and_name_unknown_ones() -> None:
    known = ["a", "b", "c"]
    assert method_list("b,a,", known) == ["b", "a"]
    assert method_list(["c", "a,b"], known) == ["c", "a", "b"]
    with pytest.raises(ValueError, match=r"unknown method\(s\) \['x'\] in --methods"):
        method_list("a,x", known)
    with pytest.raises(ValueError, match=r"unknown method\(s\) \[\]"):
        method_list(",", known)
