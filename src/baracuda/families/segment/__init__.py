"""Segment reductions (jax.ops.segment_sum / mean / max / min / prod), sorted and unsorted ids,
forward and deterministic backward."""

from .descriptors import (
    SegmentArgs,
    SegmentBackwardArgs,
    SegmentBackwardDescriptor,
    SegmentDescriptor,
    SegmentKind,
)
from .plans import (
    SegmentMaxBackwardPlan,
    SegmentMaxPlan,
    SegmentMeanBackwardPlan,
    SegmentMeanPlan,
    SegmentMinBackwardPlan,
    SegmentMinPlan,
    SegmentProdBackwardPlan,
    SegmentProdPlan,
    SegmentSumBackwardPlan,
    SegmentSumPlan,
    UnsortedSegmentMaxBackwardPlan,
    UnsortedSegmentMaxPlan,
    UnsortedSegmentMeanBackwardPlan,
    UnsortedSegmentMeanPlan,
    UnsortedSegmentMinBackwardPlan,
    UnsortedSegmentMinPlan,
    UnsortedSegmentProdBackwardPlan,
    UnsortedSegmentProdPlan,
    UnsortedSegmentSumBackwardPlan,
    UnsortedSegmentSumPlan,
)

__all__ = [
    "SegmentArgs", "SegmentBackwardArgs", "SegmentBackwardDescriptor", "SegmentDescriptor",
    "SegmentKind",
    "SegmentMaxBackwardPlan", "SegmentMaxPlan", "SegmentMeanBackwardPlan", "SegmentMeanPlan",
    "SegmentMinBackwardPlan", "SegmentMinPlan", "SegmentProdBackwardPlan", "SegmentProdPlan",
    "SegmentSumBackwardPlan", "SegmentSumPlan",
    "UnsortedSegmentMaxBackwardPlan", "UnsortedSegmentMaxPlan",
    "UnsortedSegmentMeanBackwardPlan", "UnsortedSegmentMeanPlan",
    "UnsortedSegmentMinBackwardPlan", "UnsortedSegmentMinPlan",
    "UnsortedSegmentProdBackwardPlan", "UnsortedSegmentProdPlan",
    "UnsortedSegmentSumBackwardPlan", "UnsortedSegmentSumPlan",
]
