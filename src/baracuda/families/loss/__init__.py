"""Loss family: cross-entropy (class indices or probabilities, weights, ignore_index, label
smoothing) and NLL, forward, backward and a fused loss + gradient plan."""

from . import plans_smem  # noqa: F401  (registers the Hopper candidate)
from .descriptors import (
    CrossEntropyLossArgs,
    CrossEntropyLossBackwardArgs,
    CrossEntropyLossBackwardDescriptor,
    CrossEntropyLossDescriptor,
    CrossEntropyLossFusedArgs,
    LossReduction,
    NllLossArgs,
    NllLossBackwardArgs,
    NllLossBackwardDescriptor,
    NllLossDescriptor,
)
from .plans import (
    CrossEntropyLossBackwardPlan,
    CrossEntropyLossFusedPlan,
    CrossEntropyLossPlan,
    NllLossBackwardPlan,
    NllLossPlan,
)

__all__ = [
    "CrossEntropyLossArgs", "CrossEntropyLossBackwardArgs", "CrossEntropyLossBackwardDescriptor",
    "CrossEntropyLossBackwardPlan", "CrossEntropyLossDescriptor", "CrossEntropyLossFusedArgs",
    "CrossEntropyLossFusedPlan", "CrossEntropyLossPlan", "LossReduction", "NllLossArgs",
    "NllLossBackwardArgs", "NllLossBackwardDescriptor", "NllLossBackwardPlan",
    "NllLossDescriptor", "NllLossPlan",
]
