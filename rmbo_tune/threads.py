"""One BLAS thread for engine calls made in the Tune driver.

In the driver, BLAS threads compete with the trials' processes for the same cores; on two
cores that made the searcher's overhead four times larger. The engine's matrices are small
(hundreds of rows), so one thread loses nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

_F = TypeVar("_F", bound=Callable[..., Any])
_BLAS: ThreadpoolController | None = None


def one_blas_thread(method: _F) -> _F:
    """Decorate ``method`` to run with BLAS limited to one thread."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _BLAS
        if _BLAS is None:
            _BLAS = ThreadpoolController()
        with _BLAS.limit(limits=1, user_api="blas"):
            return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
