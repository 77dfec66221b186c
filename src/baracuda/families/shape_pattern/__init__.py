"""Shape-pattern family: copies whose source index is a pattern of the destination index —
pads (constant, reflect, replicate, circular), triangles (tril / triu), diagonals (diag,
diag_embed, block_diag) and repeats (repeat_interleave), forward and backward."""

from ...core.registry import export_public
from . import (
    descriptors,
    descriptors_matrix,
    descriptors_repeat,
    plans,
    plans_matrix,
    plans_repeat,
)

__all__ = [*export_public(globals(), descriptors, plans, descriptors_matrix, plans_matrix,
                          descriptors_repeat, plans_repeat)]
