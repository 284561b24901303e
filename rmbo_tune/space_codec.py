"""JSON codec of search spaces and configs, for the searcher's state and history files.

:class:`~rmbo_tune.searcher.RMBOSearcher` saves its state as JSON (never a pickle) so that a
restored experiment needs no ``space=``: :func:`space_to_json` and :func:`space_from_json`
carry a :class:`~rmbo_tune.space.SearchSpace` through it. Categories that JSON cannot hold
exactly are tagged: tuples as ``{"__tuple__": [...]}``, dicts as ``{"__dict__": {...}}``,
anything else as ``{"__repr__": "..."}``, which cannot be decoded (restoring then asks for
``space=``). :func:`config_to_json` makes a config JSON-safe for the suggestion history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rmbo_tune.space import Dimension, SearchSpace


def config_to_json(obj: Any) -> Any:
    """A config (or any nested value) with only JSON types: str keys, lists, numbers.

    Parameters
    ----------
    obj : object
        A config, list or value; numpy scalars become Python numbers, tuples lists, and
        values JSON has no type for their ``repr``.

    Returns
    -------
    object
        A value that ``json.dumps`` accepts.
    """
    if isinstance(obj, Mapping):
        return {str(k): config_to_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [config_to_json(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return repr(obj)


def point_to_json(obj: Any) -> Any:
    """A ``points_to_evaluate`` entry with only JSON types that :func:`point_from_json`
    turns back into the same config: as :func:`config_to_json`, but a tuple is tagged
    (``{"__tuple__": [...]}``), since a category may be one."""
    if isinstance(obj, tuple):
        return {"__tuple__": [point_to_json(v) for v in obj]}
    if isinstance(obj, Mapping):
        return {str(k): point_to_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [point_to_json(v) for v in obj]
    return config_to_json(obj)


def point_from_json(obj: Any) -> Any:
    """Inverse of :func:`point_to_json` (an untagged list stays a list, as states written
    before tuples were tagged hold them)."""
    if isinstance(obj, dict):
        if set(obj) == {"__tuple__"}:
            return tuple(point_from_json(v) for v in obj["__tuple__"])
        return {k: point_from_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [point_from_json(v) for v in obj]
    return obj


def _category_to_json(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [_category_to_json(v) for v in value]}
    if isinstance(value, list):
        return [_category_to_json(v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: _category_to_json(v) for k, v in value.items()}}
    return {"__repr__": repr(value)}


def _category_from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_category_from_json(v) for v in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(_category_from_json(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _category_from_json(v) for k, v in value["__dict__"].items()}
        raise ValueError(
            f"the saved search space has a category that JSON cannot hold ({value['__repr__']}); "
            "pass space= to RMBOSearcher when restoring this experiment"
        )
    return value


def space_to_json(space: SearchSpace) -> dict:
    """A search space as a JSON-safe dict (its dimensions and single-valued choices).

    Parameters
    ----------
    space : SearchSpace
        The space to save; its constants are left out (Tune merges them itself).

    Returns
    -------
    dict
        ``{"dimensions": [...], "fixed": [[path, value], ...]}``, read by
        :func:`space_from_json`.
    """
    dims = [
        {
            "path": list(d.path),
            "kind": d.kind,
            "low": d.low,
            "high": d.high,
            "log": d.log,
            "q": d.q,
            "categories": [_category_to_json(c) for c in d.categories],
        }
        for d in space.dimensions
    ]
    fixed = [[list(p), _category_to_json(v)] for p, v in space.fixed_choices.items()]
    return {"dimensions": dims, "fixed": fixed}


def space_from_json(state: Mapping[str, Any]) -> SearchSpace:
    """Rebuild the search space saved by :func:`space_to_json`.

    Parameters
    ----------
    state : mapping
        The dict :func:`space_to_json` returned, after a JSON round trip.

    Returns
    -------
    SearchSpace
        A space that encodes and decodes as the saved one did.

    Raises
    ------
    ValueError
        A category that was saved as its ``repr`` (JSON could not hold it).
    """
    dims = [
        Dimension(
            tuple(d["path"]),
            d["kind"],
            low=d["low"],
            high=d["high"],
            log=d["log"],
            q=d["q"],
            categories=tuple(_category_from_json(c) for c in d["categories"]),
        )
        for d in state["dimensions"]
    ]
    space = SearchSpace(dims)
    space.fixed_choices = {tuple(p): _category_from_json(v) for p, v in state["fixed"]}
    return space
