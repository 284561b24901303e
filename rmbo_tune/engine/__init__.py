"""The meta-BO engine: numpy and scipy only; never imports ray.

Public names: :class:`MetaBO`, :class:`MetaBOOptions`, :data:`METHODS`,
:class:`SearchSpaceExhausted` and :class:`CholeskyError` (both :class:`RMBOError`).
"""

from rmbo_tune.engine.metabo import MetaBO
from rmbo_tune.engine.options import METHODS, MetaBOOptions
from rmbo_tune.engine.types import CholeskyError, RMBOError, SearchSpaceExhausted

__all__ = [
    "METHODS",
    "CholeskyError",
    "MetaBO",
    "MetaBOOptions",
    "RMBOError",
    "SearchSpaceExhausted",
]
