"""The reduction custom ops (torch.library, differentiable) behind the torch functions: one
for single-output kinds, one for two-output kinds (max / min with a dim, var_mean, std_mean,
aminmax), one for every gradient."""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from .descriptors import (
    ReductionArgs,
    ReductionBackwardArgs,
    ReductionBackwardDescriptor,
    ReductionDescriptor,
    needs_x,
    needs_y,
    needs_y2,
    reduced_shape,
)
from .descriptors import ReductionKind as K
from .layout import gathering
from .plans import ReductionBackwardPlan, ReductionPlan


def _axes(x: torch.Tensor, dims: list[int]) -> tuple[int, ...]:
    return tuple(dims) if x.dim() else (0,)


def _out_shape(x: torch.Tensor, dims: list[int], keepdim: bool) -> tuple[int, ...]:
    return reduced_shape(tuple(x.shape), tuple(dims) if x.dim() else (), keepdim)


def _second_dtype(kind: K, dtype: torch.dtype) -> torch.dtype:
    return torch.int64 if kind in (K.MAX, K.MIN) else dtype


def _run(x: torch.Tensor, kind: K, dims: list[int], keepdim: bool, correction: float,
         dtype: torch.dtype, two: bool):
    desc = ReductionDescriptor.cached(kind, tuple(x.shape), _axes(x, dims), keepdim, x.dtype,
                                      torch.int64 if kind in (K.ARGMAX, K.ARGMIN) else dtype,
                                      float(correction))
    shape = _out_shape(x, dims, keepdim)
    y = torch.empty(shape, dtype=dtype, device=x.device)
    y2 = torch.empty(shape, dtype=_second_dtype(kind, dtype), device=x.device) if two else None
    run_plan(ReductionPlan, desc, ReductionArgs(x=x, y=y, y2=y2))
    return (y, y2) if two else y


def _reduce_impl(x: torch.Tensor, kind: str, dims: list[int], keepdim: bool,
                 correction: float, dtype: torch.dtype) -> torch.Tensor:
    return _run(x, K(kind), dims, keepdim, correction, dtype, False)


def _reduce_fake(x: torch.Tensor, kind: str, dims: list[int], keepdim: bool,
                 correction: float, dtype: torch.dtype) -> torch.Tensor:
    return x.new_empty(_out_shape(x, dims, keepdim), dtype=dtype)


def _reduce2_impl(x: torch.Tensor, kind: str, dims: list[int], keepdim: bool,
                  correction: float) -> tuple[torch.Tensor, torch.Tensor]:
    return _run(x, K(kind), dims, keepdim, correction, x.dtype, True)


def _reduce2_fake(x: torch.Tensor, kind: str, dims: list[int], keepdim: bool,
                  correction: float) -> tuple[torch.Tensor, torch.Tensor]:
    shape = _out_shape(x, dims, keepdim)
    return (x.new_empty(shape),
            x.new_empty(shape, dtype=_second_dtype(K(kind), x.dtype)))


def _backward_impl(dy: torch.Tensor, dy2: torch.Tensor | None, x: torch.Tensor | None,
                   y: torch.Tensor | None, y2: torch.Tensor | None, kind: str,
                   shape: list[int], dims: list[int], keepdim: bool, correction: float,
                   dtype: torch.dtype) -> torch.Tensor:
    k = K(kind)
    axes = tuple(dims) if shape else (0,)
    desc = ReductionBackwardDescriptor.cached(k, tuple(shape), axes, keepdim, dtype, dy.dtype,
                                              float(correction))
    dx = torch.empty(tuple(shape), dtype=dtype, device=dy.device)
    run_plan(ReductionBackwardPlan, desc,
             ReductionBackwardArgs(dy=dy, dx=dx, x=x, y=y, dy2=dy2, y2=y2))
    return dx


def _backward_fake(dy: torch.Tensor, dy2: torch.Tensor | None, x: torch.Tensor | None,
                   y: torch.Tensor | None, y2: torch.Tensor | None, kind: str,
                   shape: list[int], dims: list[int], keepdim: bool, correction: float,
                   dtype: torch.dtype) -> torch.Tensor:
    return dy.new_empty(tuple(shape), dtype=dtype)


reduce_backward = define_op("reduction_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output) -> None:
    x, kind, dims, keepdim, correction = inputs[:5]
    k = K(kind)
    ctx.kind, ctx.dims, ctx.keepdim, ctx.correction = k, list(dims), keepdim, correction
    ctx.shape, ctx.dtype = list(x.shape), x.dtype
    y, y2 = output if isinstance(output, tuple) else (output, None)
    keep = (x if needs_x(k) else None, y if needs_y(k) else None, y2 if needs_y2(k) else None)
    ctx.flags = tuple(t is not None for t in keep)
    ctx.save_for_backward(*(t for t in keep if t is not None))


def _grad(ctx, dy, dy2=None) -> torch.Tensor:
    saved = list(ctx.saved_tensors)
    x, y, y2 = (saved.pop(0) if flag else None for flag in ctx.flags)
    k = ctx.kind
    dims = ctx.dims if ctx.shape else []
    if k is K.SUM:  # torch's own: dy broadcast as a view (no launch, nothing written)
        for d in ([] if ctx.keepdim else dims):
            dy = dy.unsqueeze(d)
        dx = dy.expand(ctx.shape)
        return dx if dx.dtype == ctx.dtype else dx.to(ctx.dtype)
    if k in (K.VAR_MEAN, K.STD_MEAN, K.AMINMAX):
        dy2 = torch.zeros_like(dy) if dy2 is None else dy2
    else:
        dy2 = None  # (max / min: the indices have no gradient)
    return reduce_backward(dy, dy2, x, y, y2, k.value, ctx.shape, dims, ctx.keepdim,
                           ctx.correction, ctx.dtype)


def _grad1(ctx, dy):
    return _grad(ctx, dy), None, None, None, None, None


def _grad2(ctx, dy, dy2):
    return _grad(ctx, dy, dy2), None, None, None, None


reduce_op = define_op("reduction", _reduce_impl, _reduce_fake, backward=_grad1,
                      setup_context=_setup)
reduce2_op = define_op("reduction2", _reduce2_impl, _reduce2_fake, backward=_grad2,
                       setup_context=_setup)
#: the torch functions' entry points: any set of axes (layout.gathering)
reduce_any = gathering(reduce_op, 2)
reduce2_any = gathering(reduce2_op, 2)
