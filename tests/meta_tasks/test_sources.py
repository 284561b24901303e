"""Reading a sources argument: one source, a list, a dict, and pairs never split in two."""

from __future__ import annotations

import numpy as np
import pytest

from rmbo_tune.meta_tasks._sources import check_path, is_pair, is_path, normalize_sources

CONFIGS = [{"x": 1}, {"x": 2}]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ((CONFIGS, [1.0, 2.0]), True),
        ([CONFIGS, np.array([1.0, 2.0])], True),
        (([], []), True),
        (([], [1.0]), False),  # empty configs make a pair only with empty values
        (([{"x": 1}, 5], [1.0, 2.0]), False),  # every config a dict
        ((CONFIGS, "ab"), False),
        ((CONFIGS, {"a": 1}), False),
        ((CONFIGS, iter([1.0, 2.0])), False),  # values must be sized
        (((CONFIGS, [1.0, 2.0]), (CONFIGS, [3.0, 4.0])), False),  # two pairs
        (["a", "b"], False),
        ((CONFIGS, [1.0], [2.0]), False),
    ],
)
def test_is_pair(obj, expected):
    assert is_pair(obj) is expected


def test_normalize_sources_keeps_pairs_and_paths_whole(tmp_path):
    pair = (CONFIGS, [1.0, 2.0])
    assert normalize_sources(pair) == [(None, pair)]
    assert normalize_sources("runs/exp") == [(None, "runs/exp")]
    assert normalize_sources(tmp_path) == [(None, tmp_path)]
    assert normalize_sources([pair, "a"]) == [(None, pair), (None, "a")]
    assert normalize_sources(("a", "b")) == [(None, "a"), (None, "b")]
    assert normalize_sources({"one": pair, 2: "b"}) == [("one", pair), ("2", "b")]
    frame = object()
    assert normalize_sources(frame) == [(None, frame)]
    with pytest.raises(TypeError, match="must not be None"):
        normalize_sources(None)


def test_is_path(tmp_path):
    assert is_path("s3://bucket/x") and is_path(tmp_path)
    assert not is_path(b"bytes") and not is_path((CONFIGS, [1.0, 2.0]))


def test_check_path_names_what_is_missing(tmp_path, monkeypatch):
    (tmp_path / "exp_1").mkdir()
    check_path(tmp_path / "exp_1")
    check_path(str(tmp_path / "exp_*"))
    check_path("s3://bucket/not/checked/here")
    monkeypatch.setenv("HOME", str(tmp_path))
    check_path("~/exp_1")
    with pytest.raises(
        FileNotFoundError, match=r"meta_tasks: no path matches the glob '.*nope_\*'"
    ):
        check_path(str(tmp_path / "nope_*"))
    with pytest.raises(FileNotFoundError, match="meta_tasks: no such file or directory: '~/gone'"):
        check_path("~/gone")
