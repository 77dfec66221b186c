"""Attention family: scaled dot-product attention (flash-style, GQA, masks, dropout) forward
and backward, rotary embeddings, KV-cache append."""

from . import plans_cudnn  # noqa: F401  - registers the cuDNN candidates
from .descriptors import (
    CausalKind,
    KvCacheAppendArgs,
    KvCacheAppendDescriptor,
    MaskKind,
    RopeArgs,
    RopeBackwardArgs,
    RopeBackwardDescriptor,
    RopeDescriptor,
    RopeLayout,
    SdpaArgs,
    SdpaBackwardArgs,
    SdpaBackwardDescriptor,
    SdpaDescriptor,
)
from .plans import SdpaBackwardPlan, SdpaPlan
from .plans_rope import KvCacheAppendPlan, RopeBackwardPlan, RopePlan

__all__ = [
    "CausalKind", "MaskKind", "SdpaArgs", "SdpaBackwardArgs", "SdpaBackwardDescriptor",
    "SdpaBackwardPlan", "SdpaDescriptor", "SdpaPlan", "KvCacheAppendArgs",
    "KvCacheAppendDescriptor", "KvCacheAppendPlan", "RopeArgs", "RopeBackwardArgs",
    "RopeBackwardDescriptor", "RopeBackwardPlan", "RopeDescriptor", "RopeLayout", "RopePlan",
]
