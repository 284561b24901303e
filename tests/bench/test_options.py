"""Engine options from the benchmarks' command lines."""

from __future__ import annotations

import pytest

from rmbo_tune.bench.options import parse_options


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
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        parse_options([item])


def test_unknown_or_invalid_options_are_named_at_once() -> None:
    with pytest.raises(ValueError, match="n_polsh"):
        parse_options(["n_polsh=1"])
    with pytest.raises(ValueError, match="n_polish"):
        parse_options(["n_polish=-1"])
