"""Types and errors shared by the engine and the package around it."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
# A boolean mask over columns (a meta-task's unrecorded ones).
Mask = NDArray[np.bool_]


class RMBOError(Exception):
    """Base class of rmbo-tune's own errors."""


class CholeskyError(RMBOError, np.linalg.LinAlgError):
    """A covariance matrix stayed non-positive-definite after the largest jitter."""


class SearchSpaceExhausted(RMBOError, RuntimeError):
    """Every valid point has been observed or is pending."""
