"""Embedding lookup and its deterministic gradient."""

from .descriptors import (
    EmbeddingArgs,
    EmbeddingBackwardArgs,
    EmbeddingBackwardDescriptor,
    EmbeddingBagArgs,
    EmbeddingBagDescriptor,
    EmbeddingDescriptor,
    EmbeddingRenormArgs,
    EmbeddingRenormDescriptor,
)
from .plans import EmbeddingBackwardPlan, EmbeddingPlan, EmbeddingRenormPlan
from .plans_bag import EmbeddingBagPlan

__all__ = ["EmbeddingArgs", "EmbeddingBackwardArgs", "EmbeddingBackwardDescriptor",
           "EmbeddingBackwardPlan", "EmbeddingDescriptor", "EmbeddingPlan",
           "EmbeddingRenormArgs", "EmbeddingRenormDescriptor", "EmbeddingRenormPlan",
           "EmbeddingBagArgs", "EmbeddingBagDescriptor", "EmbeddingBagPlan"]
