"""Scan family: cumsum, cumprod, cummax, cummin and logcumsumexp, forward and backward."""

from ...core.registry import export_public
from . import descriptors, plans

__all__ = export_public(globals(), descriptors, plans)
