"""Reduction family: sum, mean, prod, nan*, amax / amin, max / min, arg*, all / any,
count_nonzero, var / std (and their means), logsumexp, aminmax; forward and backward."""

from ...core.registry import export_public
from . import descriptors, plans

__all__ = export_public(globals(), descriptors, plans)
