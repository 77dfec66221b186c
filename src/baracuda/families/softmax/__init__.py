"""Softmax family: softmax and log_softmax, forward and backward."""

from ...core.registry import export_public
from . import descriptors, plans, plans_smem  # plans_smem registers the Hopper candidate

__all__ = export_public(globals(), descriptors, plans, plans_smem)
