"""The meta-BO engine: numpy and scipy only; never imports ray.

Public names: :class:`MetaBO`, :class:`MetaBOOptions`, :data:`METHODS`,
:class:`SearchSpaceExhausted`.
"""

from rmbo_tune.engine.metabo import MetaBO, SearchSpaceExhausted
from rmbo_tune.engine.options import METHODS, MetaBOOptions

__all__ = ["METHODS", "MetaBO", "MetaBOOptions", "SearchSpaceExhausted"]
