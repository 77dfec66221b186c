"""Normalization family: RMSNorm and LayerNorm (with a fused residual variant), GroupNorm,
BatchNorm and InstanceNorm; forward and deterministic backward."""

from ...core.registry import export_public

# plans_smem registers the Hopper candidates
from . import descriptors, descriptors_channel, plans, plans_channel, plans_smem

__all__ = export_public(globals(), descriptors, descriptors_channel, plans, plans_channel,
                        plans_smem)
