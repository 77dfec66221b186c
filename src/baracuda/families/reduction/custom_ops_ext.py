"""The reduction custom ops with an order or a mask (torch.library, differentiable): the norms,
logmeanexp, ptp, the bitwise reductions and hash, and torch.masked's reductions; one forward
op and one gradient op."""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from .custom_ops import reduce2_op
from .descriptors import (
    ReductionArgs,
    ReductionBackwardArgs,
    ReductionBackwardDescriptor,
    ReductionDescriptor,
    needs_x,
    needs_y,
    reduced_shape,
)
from .descriptors import ReductionKind as K
from .layout import gathering
from .plans import ReductionBackwardPlan, ReductionPlan


def _axes(shape, dims: list[int]) -> tuple[int, ...]:
    return tuple(dims) if len(shape) else (0,)


def _out_shape(x: torch.Tensor, dims: list[int], keepdim: bool) -> tuple[int, ...]:
    return reduced_shape(tuple(x.shape), tuple(dims) if x.dim() else (), keepdim)


def _ext_impl(x: torch.Tensor, mask: torch.Tensor | None, kind: str, dims: list[int],
              keepdim: bool, correction: float, order: float,
              dtype: torch.dtype) -> torch.Tensor:
    k = K(kind)
    out = torch.int64 if k in (K.ARGMAX, K.ARGMIN) else dtype
    desc = ReductionDescriptor.cached(k, tuple(x.shape), _axes(x.shape, dims), keepdim,
                                      x.dtype, out, float(correction), float(order),
                                      mask is not None)
    y = torch.empty(_out_shape(x, dims, keepdim), dtype=out, device=x.device)
    run_plan(ReductionPlan, desc, ReductionArgs(x=x, y=y, mask=mask))
    return y


def _ext_fake(x: torch.Tensor, mask: torch.Tensor | None, kind: str, dims: list[int],
              keepdim: bool, correction: float, order: float,
              dtype: torch.dtype) -> torch.Tensor:
    out = torch.int64 if K(kind) in (K.ARGMAX, K.ARGMIN) else dtype
    return x.new_empty(_out_shape(x, dims, keepdim), dtype=out)


def _ext_backward_impl(dy: torch.Tensor, x: torch.Tensor | None, y: torch.Tensor | None,
                       y2: torch.Tensor | None, mask: torch.Tensor | None, kind: str,
                       shape: list[int], dims: list[int], keepdim: bool, correction: float,
                       order: float, dtype: torch.dtype) -> torch.Tensor:
    desc = ReductionBackwardDescriptor.cached(K(kind), tuple(shape), _axes(shape, dims),
                                              keepdim, dtype, dy.dtype, float(correction),
                                              float(order), mask is not None)
    dx = torch.empty(tuple(shape), dtype=dtype, device=dy.device)
    run_plan(ReductionBackwardPlan, desc,
             ReductionBackwardArgs(dy=dy, dx=dx, x=x, y=y, y2=y2, mask=mask))
    return dx


def _ext_backward_fake(dy: torch.Tensor, x: torch.Tensor | None, y: torch.Tensor | None,
                       y2: torch.Tensor | None, mask: torch.Tensor | None, kind: str,
                       shape: list[int], dims: list[int], keepdim: bool, correction: float,
                       order: float, dtype: torch.dtype) -> torch.Tensor:
    return dy.new_empty(tuple(shape), dtype=dtype)


reduce_ext_backward = define_op("reduction_ext_backward", _ext_backward_impl,
                                _ext_backward_fake)


def _setup(ctx, inputs, output) -> None:
    x, mask, kind, dims, keepdim, correction, order = inputs[:7]
    k = K(kind)
    ctx.kind, ctx.dims, ctx.keepdim = k, list(dims), keepdim
    ctx.correction, ctx.order = correction, order
    ctx.shape, ctx.dtype = list(x.shape), x.dtype
    # ptp's gradient reads the line's min and max, recomputed from x in the backward
    keep = (x if needs_x(k) else None,
            output if needs_y(k) and k is not K.PTP else None, mask)
    ctx.flags = tuple(t is not None for t in keep)
    ctx.save_for_backward(*(t for t in keep if t is not None))


def _grad(ctx, dy):
    saved = list(ctx.saved_tensors)
    x, y, mask = (saved.pop(0) if flag else None for flag in ctx.flags)
    dims = ctx.dims if ctx.shape else []
    y2 = None
    if ctx.kind is K.PTP:
        y, y2 = reduce2_op(x, K.AMINMAX.value, dims, ctx.keepdim, 0.0)
    dx = reduce_ext_backward(dy, x, y, y2, mask, ctx.kind.value, ctx.shape, dims,
                             ctx.keepdim, ctx.correction, ctx.order, ctx.dtype)
    return dx, None, None, None, None, None, None, None


reduce_ext_op = define_op("reduction_ext", _ext_impl, _ext_fake, backward=_grad,
                          setup_context=_setup)
#: the torch functions' entry point: any set of axes, the mask moving with x
reduce_ext_any = gathering(reduce_ext_op, 3, mask_at=1)
