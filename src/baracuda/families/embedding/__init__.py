"""Embedding lookup and its deterministic gradient."""

from ...core.registry import export_public
from . import descriptors, plans, plans_bag

__all__ = export_public(globals(), descriptors, plans, plans_bag)
