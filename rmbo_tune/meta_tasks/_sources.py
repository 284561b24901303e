"""What a ``sources`` or ``meta_tasks=`` argument holds: a list of (name, source) entries.

One source, a list of them or a dict naming them: :func:`load_meta_tasks` and
``RMBOSearcher(meta_tasks=...)`` accept the same forms and read them with
:func:`normalize_sources`, so that a ``(configs, values)`` pair is never mistaken for a list of
two sources. :func:`check_path` lets the searcher name a missing path when it is constructed,
long before the search starts and the sources are loaded.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping
from typing import Any


def is_pair(obj: Any) -> bool:
    """Whether ``obj`` is a ``(configs, values)`` pair: a list of dicts and a sized sequence.

    Parameters
    ----------
    obj : object
        A source, or a list of sources.

    Returns
    -------
    bool
        True for a 2-element list or tuple whose first element is a list or tuple of
        mappings and whose second is sized but not a string or mapping; empty configs make a
        pair only with empty values.
    """
    return (
        isinstance(obj, tuple | list)
        and len(obj) == 2
        and isinstance(obj[0], list | tuple)
        and all(isinstance(c, Mapping) for c in obj[0])
        and not isinstance(obj[1], str | bytes | Mapping)
        and hasattr(obj[1], "__len__")
        and (len(obj[0]) > 0 or len(obj[1]) == 0)
    )


def is_path(obj: Any) -> bool:
    """Whether a source is a path, glob or URI (read from storage, not from memory)."""
    return isinstance(obj, str | os.PathLike)


def normalize_sources(sources: Any) -> list[tuple[str | None, Any]]:
    """One source, a list of sources or a dict naming them -> ``[(name or None, source)]``.

    Parameters
    ----------
    sources : object
        A dict (its keys name the sources), a list or tuple of sources, or one source (a
        path, a ``(configs, values)`` pair or any other object).

    Returns
    -------
    list of (str or None, object)
        The sources in order, each with its name (None where the caller named none).

    Raises
    ------
    TypeError
        For ``None``.
    """
    if sources is None:
        raise TypeError("sources must not be None")
    if isinstance(sources, Mapping):
        return [(str(k), v) for k, v in sources.items()]
    if is_pair(sources) or is_path(sources):
        return [(None, sources)]
    if isinstance(sources, list | tuple):
        return [(None, s) for s in sources]
    return [(None, sources)]


def check_path(path: str | os.PathLike) -> None:
    """Check that a local path or glob names something; storage URIs are checked when loaded.

    Parameters
    ----------
    path : str or os.PathLike
        A path (``~`` is expanded), a glob or a URI.

    Raises
    ------
    FileNotFoundError
        Naming the path (or the glob) when nothing exists there.
    """
    path = os.fspath(path)
    if "://" in path:
        return
    expanded = os.path.expanduser(path)
    if glob.has_magic(expanded):
        if not glob.glob(expanded):
            raise FileNotFoundError(f"meta_tasks: no path matches the glob {path!r}")
    elif not os.path.exists(expanded):
        raise FileNotFoundError(f"meta_tasks: no such file or directory: {path!r}")


# Result objects read through their own API, by (module, class name); the module is not
# imported here: an object of a module that was never imported cannot be one.
RESULT_TYPES = (
    ("pandas", "DataFrame"),
    ("ray.tune", "ResultGrid"),
    ("ray.tune", "ExperimentAnalysis"),
)


def instance_of(obj: Any, module: str, name: str) -> bool:
    """``isinstance(obj, module.name)`` without importing ``module``."""
    mod = sys.modules.get(module)
    return mod is not None and isinstance(obj, getattr(mod, name))


def is_loadable(obj: Any) -> bool:
    """A source the loader reads: a path, glob or URI, a DataFrame, a ResultGrid or an
    ExperimentAnalysis (pairs and ``MetaTask`` objects are in memory already)."""
    return is_path(obj) or any(instance_of(obj, m, n) for m, n in RESULT_TYPES)
