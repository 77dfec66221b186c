"""Indexing: index_select / index_add / index_copy (deterministic, sort-based), gather,
scatter / scatter_reduce (destination-owned), masked_fill, one_hot, and deterministic
compaction for nonzero / masked_select / masked_scatter."""

from ...core.registry import export_public
from . import descriptors, plans, plans_mask

__all__ = export_public(globals(), descriptors, plans, plans_mask)
