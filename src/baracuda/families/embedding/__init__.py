"""Embedding lookup and its deterministic gradient."""

from .bag import EmbeddingBagArgs, EmbeddingBagDescriptor, EmbeddingBagPlan
from .descriptors import (
    EmbeddingArgs,
    EmbeddingBackwardArgs,
    EmbeddingBackwardDescriptor,
    EmbeddingDescriptor,
    EmbeddingRenormArgs,
    EmbeddingRenormDescriptor,
)
from .plans import EmbeddingBackwardPlan, EmbeddingPlan, EmbeddingRenormPlan

__all__ = ["EmbeddingArgs", "EmbeddingBackwardArgs", "EmbeddingBackwardDescriptor",
           "EmbeddingBackwardPlan", "EmbeddingDescriptor", "EmbeddingPlan",
           "EmbeddingRenormArgs", "EmbeddingRenormDescriptor", "EmbeddingRenormPlan",
           "EmbeddingBagArgs", "EmbeddingBagDescriptor", "EmbeddingBagPlan"]
