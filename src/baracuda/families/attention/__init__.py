"""Attention family: scaled dot-product attention (flash-style, GQA, masks, dropout) forward
and backward, rotary embeddings, KV-cache append."""

from ...core.registry import export_public
from . import (  # plans_cudnn registers the cuDNN candidates
    descriptors,
    plans,
    plans_cudnn,
    plans_rope,
)

__all__ = export_public(globals(), descriptors, plans, plans_rope, plans_cudnn)
