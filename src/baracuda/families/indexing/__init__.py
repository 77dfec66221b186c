"""Indexing: index_select / index_add / index_copy / index_reduce (deterministic, sort-based),
gather, scatter / scatter_reduce (destination-owned), masked_fill, one_hot, deterministic
compaction for nonzero / masked_select / masked_scatter, the strided region copy behind the
select / slice / diagonal / as_strided scatters and dynamic slices, and unravel_index."""

from ...core.registry import export_public
from . import descriptors, descriptors_region, plans, plans_mask, plans_region

__all__ = export_public(globals(), descriptors, descriptors_region, plans, plans_mask,
                        plans_region)
