"""Creation family: constant fills (zeros / ones / full and their _like / new_ forms, fill_,
zero_), ranges (arange, linspace, logspace, iota), band matrices (eye, tri) and the triangle
index lists (tril_indices, triu_indices); `empty*` are torch allocations with no kernel."""

from ...core.registry import export_public
from . import descriptors, plans

__all__ = [*export_public(globals(), descriptors, plans)]
