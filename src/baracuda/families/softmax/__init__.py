"""Softmax family: softmax and log_softmax, forward and backward."""

from . import plans_smem  # noqa: F401  (registers the Hopper candidate)
from .descriptors import (
    SoftmaxArgs,
    SoftmaxBackwardArgs,
    SoftmaxBackwardDescriptor,
    SoftmaxDescriptor,
    SoftmaxKind,
)
from .plans import SoftmaxBackwardPlan, SoftmaxPlan

__all__ = [
    "SoftmaxArgs", "SoftmaxBackwardArgs", "SoftmaxBackwardDescriptor", "SoftmaxBackwardPlan",
    "SoftmaxDescriptor", "SoftmaxKind", "SoftmaxPlan",
]
