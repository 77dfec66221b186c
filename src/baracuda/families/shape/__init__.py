"""Shape family: strided copies (clone, contiguous, the *_copy views, flip, roll, rot90,
repeat, tile, pixel shuffles) through one copy kernel, the ordered sum that is their
broadcasts' gradient, concatenation of many inputs in one launch, and torch's views."""

from ...core.registry import export_public
from . import descriptors, descriptors_gather, plans, plans_gather

__all__ = export_public(globals(), descriptors, plans, descriptors_gather, plans_gather)
