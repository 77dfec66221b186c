"""Normalization family: RMSNorm and LayerNorm (with a fused residual variant), GroupNorm,
BatchNorm and InstanceNorm; forward and deterministic backward."""

from . import plans_smem  # noqa: F401  (registers the Hopper candidates)
from .descriptors import (
    LayerNormArgs,
    LayerNormBackwardArgs,
    LayerNormBackwardDescriptor,
    LayerNormDescriptor,
    RMSNormArgs,
    RMSNormBackwardArgs,
    RMSNormBackwardDescriptor,
    RMSNormDescriptor,
)
from .descriptors_channel import (
    BatchNormArgs,
    BatchNormBackwardArgs,
    BatchNormBackwardDescriptor,
    BatchNormDescriptor,
    GroupNormArgs,
    GroupNormBackwardArgs,
    GroupNormBackwardDescriptor,
    GroupNormDescriptor,
    InstanceNormArgs,
    InstanceNormBackwardArgs,
    InstanceNormBackwardDescriptor,
    InstanceNormDescriptor,
)
from .plans import LayerNormBackwardPlan, LayerNormPlan, RMSNormBackwardPlan, RMSNormPlan
from .plans_channel import (
    BatchNormBackwardPlan,
    BatchNormPlan,
    GroupNormBackwardPlan,
    GroupNormPlan,
    InstanceNormBackwardPlan,
    InstanceNormPlan,
)

__all__ = [
    "BatchNormArgs", "BatchNormBackwardArgs", "BatchNormBackwardDescriptor",
    "BatchNormBackwardPlan", "BatchNormDescriptor", "BatchNormPlan", "GroupNormArgs",
    "GroupNormBackwardArgs", "GroupNormBackwardDescriptor", "GroupNormBackwardPlan",
    "GroupNormDescriptor", "GroupNormPlan", "InstanceNormArgs", "InstanceNormBackwardArgs",
    "InstanceNormBackwardDescriptor", "InstanceNormBackwardPlan", "InstanceNormDescriptor",
    "InstanceNormPlan",
    "LayerNormArgs", "LayerNormBackwardArgs", "LayerNormBackwardDescriptor",
    "LayerNormBackwardPlan", "LayerNormDescriptor", "LayerNormPlan", "RMSNormArgs",
    "RMSNormBackwardArgs", "RMSNormBackwardDescriptor", "RMSNormBackwardPlan",
    "RMSNormDescriptor", "RMSNormPlan",
]
