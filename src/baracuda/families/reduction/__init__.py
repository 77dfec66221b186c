"""Reduction family: sum, mean, prod, nan*, amax / amin, max / min, arg*, all / any,
count_nonzero, var / std (and their means), logsumexp, aminmax, vector norms, logmeanexp, ptp,
torch.masked's reductions (a mask operand); forward and backward; xor / and / or and hash
(forward); and `reduce`, the reduction with a caller's `@triton.jit` combine function (forward
only)."""

from ...core.registry import export_public
from . import descriptors, generic, plans
from .generic import reduce  # noqa: F401 - re-exported through __all__

__all__ = [*export_public(globals(), descriptors, plans, generic), *generic.__all__]
