"""Indexing: index_select / index_add / index_copy (deterministic, sort-based), gather,
scatter / scatter_reduce (destination-owned), masked_fill, one_hot, and deterministic
compaction for nonzero / masked_select / masked_scatter."""

from .descriptors import (
    CompactDescriptor,
    GatherArgs,
    GatherDescriptor,
    IndexSelectArgs,
    IndexSelectBackwardArgs,
    IndexSelectBackwardDescriptor,
    IndexSelectDescriptor,
    IndexUpdateArgs,
    IndexUpdateDescriptor,
    MaskedDataDescriptor,
    MaskedFillArgs,
    MaskedFillDescriptor,
    MaskedScatterArgs,
    MaskedSelectArgs,
    NonzeroArgs,
    OneHotArgs,
    OneHotDescriptor,
    ScatterArgs,
    ScatterDescriptor,
    ScatterKind,
)
from .plans import (
    GatherPlan,
    IndexAddPlan,
    IndexCopyPlan,
    IndexSelectBackwardPlan,
    IndexSelectPlan,
    ScatterReducePlan,
)
from .plans_mask import (
    MaskedFillPlan,
    MaskedScatterPlan,
    MaskedSelectPlan,
    NonzeroPlan,
    OneHotPlan,
)

__all__ = [
    "CompactDescriptor", "GatherArgs", "GatherDescriptor", "GatherPlan", "IndexAddPlan",
    "IndexCopyPlan", "IndexSelectArgs", "IndexSelectBackwardArgs",
    "IndexSelectBackwardDescriptor", "IndexSelectBackwardPlan", "IndexSelectDescriptor",
    "IndexSelectPlan", "IndexUpdateArgs", "IndexUpdateDescriptor", "MaskedDataDescriptor",
    "MaskedFillArgs", "MaskedFillDescriptor", "MaskedFillPlan", "MaskedScatterArgs",
    "MaskedScatterPlan", "MaskedSelectArgs", "MaskedSelectPlan", "NonzeroArgs", "NonzeroPlan",
    "OneHotArgs", "OneHotDescriptor", "OneHotPlan", "ScatterArgs", "ScatterDescriptor",
    "ScatterKind", "ScatterReducePlan",
]
