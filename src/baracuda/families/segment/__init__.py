"""Segment reductions (jax.ops.segment_sum / mean / max / min / prod), sorted and unsorted ids,
forward and deterministic backward."""

from ...core.registry import export_public
from . import descriptors, plans

__all__ = export_public(globals(), descriptors, plans)
