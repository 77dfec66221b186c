"""torch.nn.functional.gumbel_softmax on the random family's stream.

The Gumbel noise is -log(-log(u)) with u drawn by RandomPlan (uniform, backends/philox.py)
on [tiny, 1) in float32 (float64 for float64 logits): u < 1 keeps -log(u) > 0 and u >= tiny
keeps it finite, so no element is ever infinite (torch's -log(Exp(1)) reaches +inf when its
exponential draw is 0). The softmax over `dim`, the temperature and the straight-through
estimator are torch ops on that noise, differentiable as torch's (the noise carries no
gradient). A fused Triton row kernel (noise, softmax and its backward in one pass) is the
planned replacement: this family may not import the softmax family."""

from __future__ import annotations

import warnings

import torch

from .descriptors import Dist
from .torch_common import fill_into

__all__ = ["gumbel_softmax"]


def gumbel_noise(like: torch.Tensor, generator=None) -> torch.Tensor:
    """Standard Gumbel draws in like's shape (contiguous), in float32, or float64 for
    float64 input."""
    dtype = torch.float64 if like.dtype == torch.float64 else torch.float32
    u = torch.empty(like.shape, dtype=dtype, device=like.device)
    fill_into(u, Dist.UNIFORM, torch.finfo(dtype).tiny, 1.0, generator)
    return -torch.log(-torch.log(u))


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1, *, generator=None
                   ) -> torch.Tensor:
    """torch.nn.functional.gumbel_softmax: softmax((logits + g) / tau) over dim with g
    standard Gumbel; hard=True returns the one-hot of the argmax with the soft sample's
    gradient (straight-through). `generator` (keyword-only, not in torch) picks the stream."""
    if eps != 1e-10 and not torch.compiler.is_compiling():
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    if not logits.is_floating_point():
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {logits.dtype}")
    g = gumbel_noise(logits, generator)
    y_soft = ((logits + g.to(logits.dtype)) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = torch.zeros_like(logits, memory_format=torch.legacy_contiguous_format).scatter_(
        dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
