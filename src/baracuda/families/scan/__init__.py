"""Scan family: cumsum, cumprod, cummax, cummin, logcumsumexp, diff, cumulative_trapezoid and
gradient (a three-point stencil), forward and backward; and `associative_scan`, the scan with
a caller's `@triton.jit` combine function (forward only)."""

from ...core.registry import export_public
from . import descriptors, descriptors_gradient, generic, plans, plans_gradient
from .generic import associative_scan  # noqa: F401 - the family's public function

__all__ = [*export_public(globals(), descriptors, plans, descriptors_gradient, plans_gradient,
                          generic), *generic.__all__]
