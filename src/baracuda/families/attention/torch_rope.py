"""Rotary embedding for torch (flash_attn.layers.rotary.apply_rotary_emb's leading arguments)
on RopePlan, differentiable in x through RopeBackwardPlan."""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from .descriptors import (
    RopeArgs,
    RopeBackwardArgs,
    RopeBackwardDescriptor,
    RopeDescriptor,
    RopeLayout,
)
from .plans_rope import RopeBackwardPlan, RopePlan


def _desc(cls, x, cos, seq_dim: int, interleaved: bool, has_pos: bool):
    layout = RopeLayout.INTERLEAVED if interleaved else RopeLayout.HALF_SPLIT
    return cls(tuple(x.shape), seq_dim, 2 * cos.shape[1], cos.shape[0], layout, x.dtype,
               cos.dtype, has_pos)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
          position_ids: torch.Tensor | None, seq_dim: int, interleaved: bool) -> torch.Tensor:
    y = torch.empty_like(x)
    desc = _desc(RopeDescriptor, x, cos, seq_dim, interleaved, position_ids is not None)
    run_plan(RopePlan, desc, RopeArgs(x, cos, sin, y, position_ids))
    return y


def _rope_fake(x, cos, sin, position_ids, seq_dim, interleaved):
    return torch.empty_like(x)


def _rope_bwd(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
              position_ids: torch.Tensor | None, seq_dim: int,
              interleaved: bool) -> torch.Tensor:
    dy = unit_last(dy)  # an expanded gradient: the kernel needs unit feature stride
    dx = torch.empty_like(dy)
    desc = _desc(RopeBackwardDescriptor, dy, cos, seq_dim, interleaved, position_ids is not None)
    run_plan(RopeBackwardPlan, desc, RopeBackwardArgs(dy, cos, sin, dx, position_ids))
    return dx


_rope_backward = define_op("rope_backward", _rope_bwd, lambda dy, *a: torch.empty_like(dy))


def _setup(ctx, inputs, output):
    _, cos, sin, pos, seq_dim, interleaved = inputs
    ctx.save_for_backward(cos, sin, pos)
    ctx.params = (seq_dim, interleaved)


def _autograd(ctx, dy):
    cos, sin, pos = ctx.saved_tensors
    return _rope_backward(dy, cos, sin, pos, *ctx.params), None, None, None, None, None


_rope_op = define_op("rope", _rope, _rope_fake, backward=_autograd, setup_context=_setup)


def apply_rotary_emb(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                     interleaved: bool = False, position_ids: torch.Tensor | None = None,
                     seq_dim: int = 1) -> torch.Tensor:
    """Rotate the first 2·cos.shape[1] features of x [batch, seqlen, nheads, headdim]
    (seq_dim=2 for [batch, nheads, seqlen, headdim]) by the angles whose cos / sin tables
    are [max_positions, rotary_dim / 2]; rows use position_ids [batch, seqlen] when given,
    else 0..seqlen-1. interleaved=False is GPT-NeoX / Llama's rotate_half; True is GPT-J's.
    Differentiable in x (the tables are treated as constants)."""
    if x.dim() != 4:
        raise RuntimeError(f"apply_rotary_emb: x must be 4-d, got shape {tuple(x.shape)}")
    if seq_dim < 0:
        seq_dim += 4
    # the kernel reads features (and table columns) at unit stride; any other layout torch
    # accepts (a transposed or sliced view) is packed once here, as torch's fused ops do
    x, cos, sin = (unit_last(t) for t in (x, cos, sin))
    return _rope_op(x, cos, sin, position_ids, seq_dim, interleaved)


def unit_last(t: torch.Tensor) -> torch.Tensor:
    """`t` with a unit-stride last dim (the feature or head dim the attention kernels read
    contiguously): packed once when it has another stride, else as is."""
    return t.contiguous() if t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1 else t
