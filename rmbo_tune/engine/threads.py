"""One BLAS thread for the engine's public calls.

The engine's matrices are small (hundreds of rows), so more threads gain nothing, and they
lose a great deal when other processes compete for the cores: in a Tune driver beside the
trials, or on a busy machine, a multithreaded BLAS made one ``tell`` take seconds instead of
milliseconds. The limit is applied with threadpoolctl and lifted when the call returns;
without threadpoolctl installed the engine runs unchanged.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - the package depends on it; the engine does not
    ThreadpoolController = None

_F = TypeVar("_F", bound=Callable[..., Any])
_BLAS: Any = None
_ENABLED = True


@contextlib.contextmanager
def blas_limit(enabled: bool) -> Iterator[None]:
    """Switch the engine's one-thread limit on or off inside the block (it is on outside
    any block): off for a caller that manages BLAS threads itself, or to measure what the
    limit gains (``python -m rmbo_tune.bench.blas_threads``)."""
    global _ENABLED
    saved, _ENABLED = _ENABLED, bool(enabled)
    try:
        yield
    finally:
        _ENABLED = saved


def one_blas_thread(method: _F) -> _F:
    """Decorate ``method`` to run with BLAS limited to one thread (restored afterwards)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _BLAS
        if _BLAS is None:
            _BLAS = ThreadpoolController() if ThreadpoolController is not None else False
        on = _BLAS and _ENABLED
        limit = _BLAS.limit(limits=1, user_api="blas") if on else contextlib.nullcontext()
        with limit:
            return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
