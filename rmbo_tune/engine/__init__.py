"""The meta-BO engine: numpy and scipy only; never imports ray.

Public names: :class:`MetaBO`, :class:`MetaBOOptions`, the method lists (:data:`METHODS`,
:data:`META_METHODS`, :data:`ROBUST_METHODS`),
:class:`SearchSpaceExhausted` and :class:`CholeskyError` (both :class:`RMBOError`).
"""

from rmbo_tune.engine.metabo import MetaBO
from rmbo_tune.engine.methods import META_METHODS, METHODS, ROBUST_METHODS
from rmbo_tune.engine.options import MetaBOOptions
from rmbo_tune.engine.types import CholeskyError, RMBOError, SearchSpaceExhausted

__all__ = [
    "META_METHODS",
    "METHODS",
    "ROBUST_METHODS",
    "CholeskyError",
    "MetaBO",
    "MetaBOOptions",
    "RMBOError",
    "SearchSpaceExhausted",
]
