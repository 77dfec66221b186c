"""Loss family: cross-entropy (class indices or probabilities, weights, ignore_index, label
smoothing) and NLL, forward, backward and a fused loss + gradient plan."""

from ...core.registry import export_public
from . import descriptors, plans, plans_smem  # plans_smem registers the Hopper candidates

__all__ = export_public(globals(), descriptors, plans, plans_smem)
