"""Loss family: cross-entropy (class indices or probabilities, weights, ignore_index, label
smoothing) and NLL, forward, backward and a fused loss + gradient plan.

Each module names what it exports in its `__all__`; the package re-exports those."""

# plans_smem: imported for its registration (the Hopper candidate)
from . import descriptors, plans, plans_smem  # noqa: F401
from .descriptors import *  # noqa: F403
from .plans import *  # noqa: F403

__all__ = sorted([*descriptors.__all__, *plans.__all__])
