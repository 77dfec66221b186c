"""Normalization family: RMSNorm and LayerNorm (with a fused residual variant), GroupNorm,
BatchNorm and InstanceNorm; forward and deterministic backward.

Each module names what it exports in its `__all__`; the package re-exports those."""

# plans_smem: imported for its registrations (the Hopper candidates)
from . import descriptors, descriptors_channel, plans, plans_channel, plans_smem  # noqa: F401
from .descriptors import *  # noqa: F403
from .descriptors_channel import *  # noqa: F403
from .plans import *  # noqa: F403
from .plans_channel import *  # noqa: F403

__all__ = sorted([*descriptors.__all__, *descriptors_channel.__all__, *plans.__all__,
                  *plans_channel.__all__])
