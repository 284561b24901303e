"""The search space and configs through JSON, as the searcher's state holds them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ray import tune

from rmbo_tune.space import SearchSpace
from rmbo_tune.space_codec import config_to_json, space_from_json, space_to_json
from tests.test_space import MIXED


def _round_trip(space: SearchSpace) -> SearchSpace:
    return space_from_json(json.loads(json.dumps(space_to_json(space))))


def test_a_space_survives_json_and_decodes_the_same(rng):
    space = SearchSpace.from_tune(
        {
            **MIXED,
            "t": tune.choice([("a", 1), {"k": [1, 2]}, [3, None]]),
            "one": tune.randint(4, 5),
        }
    )
    restored = _round_trip(space)
    assert restored.names == space.names and restored.dim == space.dim
    assert restored.fixed_choices == space.fixed_choices == {("single",): "only", ("one",): 4}
    for x in rng.random((50, space.dim)):
        assert restored.decode(x) == space.decode(x)
    categories = restored.dimensions[-1].categories
    assert categories == (("a", 1), {"k": [1, 2]}, [3, None]) and type(categories[0]) is tuple


def test_a_category_json_cannot_hold_asks_for_the_space():
    space = SearchSpace.from_tune({"f": tune.choice([len, "x"])})
    saved = json.loads(json.dumps(space_to_json(space)))
    assert saved["dimensions"][0]["categories"][0] == {"__repr__": repr(len)}
    with pytest.raises(ValueError, match="pass space= to RMBOSearcher"):
        space_from_json(saved)


def test_config_to_json_keeps_json_types_only():
    config = {"a": np.int64(3), 1: (np.float32(0.5), [None, True]), "f": len, "s": "x"}
    out = config_to_json(config)
    assert out == {"a": 3, "1": [0.5, [None, True]], "f": repr(len), "s": "x"}
    assert type(out["a"]) is int
    assert json.loads(json.dumps(out)) == out
