"""Errors callers may want to tell apart. All are ``ValueError`` subclasses where the cause
is bad input, so ``except ValueError`` keeps working."""

from __future__ import annotations


class RMBOError(Exception):
    """Base class of rmbo-tune's own errors."""


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
