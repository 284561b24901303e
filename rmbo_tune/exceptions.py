"""Errors callers may want to tell apart, all under :class:`RMBOError`.

Those caused by bad input are also ``ValueError`` subclasses, so ``except ValueError`` keeps
working. The engine's own (:class:`CholeskyError`, :class:`SearchSpaceExhausted`) are defined
in :mod:`rmbo_tune.engine.types`, which never imports anything outside the engine.
"""

from __future__ import annotations

from rmbo_tune.engine.types import CholeskyError, RMBOError, SearchSpaceExhausted

__all__ = [
    "CholeskyError",
    "OutOfSpaceError",
    "RMBOError",
    "SearchSpaceExhausted",
    "UnsupportedSearchSpaceError",
]


class UnsupportedSearchSpaceError(RMBOError, ValueError):
    """A search space that cannot be encoded into the unit cube (the message names the key)."""


class OutOfSpaceError(RMBOError, ValueError):
    """A configuration that does not belong to the search space.

    Attributes
    ----------
    reason : str
        "missing_key", "out_of_bounds", "unknown_category" or "wrong_type".
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
