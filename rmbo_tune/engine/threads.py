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
from collections.abc import Callable
from typing import Any, TypeVar

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - the package depends on it; the engine does not
    ThreadpoolController = None

_F = TypeVar("_F", bound=Callable[..., Any])
_BLAS: Any = None


def one_blas_thread(method: _F) -> _F:
    """Decorate ``method`` to run with BLAS limited to one thread (restored afterwards)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _BLAS
        if _BLAS is None:
            _BLAS = ThreadpoolController() if ThreadpoolController is not None else False
        limit = _BLAS.limit(limits=1, user_api="blas") if _BLAS else contextlib.nullcontext()
        with limit:
            return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
