"""The shape family's custom ops: the strided copy (flips, rolls, a memory format), the
broadcast copy (expand, repeat, tile) with its ordered-sum gradient, and the concatenation."""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import Unsupported
from ...core.layout import collapse_dims
from ...core.validate import MAX_RANK
from .descriptors import (
    MAX_CAT_INPUTS,
    CatArgs,
    CatDescriptor,
    CopyArgs,
    CopyDescriptor,
    SumDimsArgs,
    SumDimsDescriptor,
)
from .plans import CatPlan, CopyPlan, SumDimsPlan

FORMATS = {"preserve": torch.preserve_format, "contiguous": torch.contiguous_format,
           "channels_last": torch.channels_last, "channels_last_3d": torch.channels_last_3d}
FORMAT_NAMES = {v: k for k, v in FORMATS.items()}


def run_copy(x: torch.Tensor, y: torch.Tensor, flips=(), rolls=()) -> None:
    """y = x (same shape) through CopyPlan, x's dims flipped / rolled; a plain copy is first
    re-described on its merged dims (rank above 8 then fits when the layouts allow)."""
    if not flips and not any(rolls):
        shape, (xs, ys) = collapse_dims(tuple(x.shape), [x.stride(), y.stride()])
        if len(shape) != x.dim() or x.dim() > MAX_RANK:
            x = x.as_strided(shape, xs)
            y = y.as_strided(shape, ys)
        rolls = ()
    if x.dim() > MAX_RANK:
        raise Unsupported(f"copy: at most {MAX_RANK} dims that do not merge, got "
                          f"{x.dim()} ({tuple(x.shape)})")
    desc = CopyDescriptor.cached(tuple(x.shape), x.dtype, y.dtype, tuple(flips), tuple(rolls))
    run_plan(CopyPlan, desc, CopyArgs(x=x, y=y))


# -- the strided copy --------------------------------------------------------------------------
def _copy_impl(x: torch.Tensor, flips: list[int], rolls: list[int], memory_format: str
               ) -> torch.Tensor:
    y = torch.empty_like(x, memory_format=FORMATS[memory_format])
    run_copy(x, y, tuple(flips), tuple(rolls))
    return y


def _copy_fake(x, flips, rolls, memory_format):
    return torch.empty_like(x, memory_format=FORMATS[memory_format])


def _copy_setup(ctx, inputs, output):
    ctx.flips, ctx.rolls = inputs[1], inputs[2]
    ctx.shape = tuple(inputs[0].shape)


def _copy_backward(ctx, grad):
    # y[i] = x[src(i)]: dx[j] = dy[src^-1(j)], the same flips and the opposite rolls
    back = [(n - r) % n if n else 0 for r, n in zip(ctx.rolls, ctx.shape)]
    return copy_op(grad, ctx.flips, back, "contiguous"), None, None, None


copy_op = define_op("shape_copy", _copy_impl, _copy_fake, backward=_copy_backward,
                    setup_context=_copy_setup)


def copy_of(x: torch.Tensor, memory_format: str = "contiguous", flips=(), rolls=()
            ) -> torch.Tensor:
    """A fresh copy of x (a view, any strides) in one launch; differentiable."""
    return copy_op(x, list(flips), list(rolls), memory_format)


# -- the broadcast copy and its ordered sum ------------------------------------------------------
def _sum_to_impl(grad: torch.Tensor, shape: list[int]) -> torch.Tensor:
    lead = grad.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and grad.shape[lead + i] != 1)
    if not dims:
        out = grad.new_empty(grad.shape)
        run_copy(grad, out)
        return out.view(shape)
    if grad.dim() > MAX_RANK:
        raise Unsupported(f"expand gradient: at most {MAX_RANK} dims, got {grad.dim()}")
    desc = SumDimsDescriptor.cached(tuple(grad.shape), dims, grad.dtype)
    out = grad.new_empty(desc.output_shape)
    run_plan(SumDimsPlan, desc, SumDimsArgs(x=grad, y=out))
    return out.view(shape)


def _sum_to_fake(grad, shape):
    return grad.new_empty(shape)


sum_to = define_op("shape_sum_to", _sum_to_impl, _sum_to_fake)


def _broadcast_impl(x: torch.Tensor, size: list[int]) -> torch.Tensor:
    y = x.new_empty(size)
    run_copy(x.expand(size), y)
    return y


def _broadcast_fake(x, size):
    return x.new_empty(size)


def _broadcast_setup(ctx, inputs, output):
    ctx.shape = list(inputs[0].shape)


def _broadcast_backward(ctx, grad):
    return sum_to(grad, ctx.shape), None


broadcast_copy = define_op("shape_broadcast_copy", _broadcast_impl, _broadcast_fake,
                           backward=_broadcast_backward, setup_context=_broadcast_setup)


# -- concatenation -------------------------------------------------------------------------------
def _as_rows(t: torch.Tensor, dim: int) -> torch.Tensor | None:
    """t as [rows, width] (dims before `dim` merged into rows, the rest into unit-stride
    columns) when its layout allows, else None."""
    step = 1
    for d in range(t.dim() - 1, dim - 1, -1):
        if t.shape[d] != 1 and t.stride(d) != step:
            return None
        step *= t.shape[d]
    rows = math.prod(t.shape[:dim])
    if rows <= 1:
        return t.as_strided((rows, step), (step, 1))
    shape, (st,) = collapse_dims(t.shape[:dim], [t.stride()[:dim]])
    if len(shape) != 1:
        return None
    return t.as_strided((rows, step), (st[0], 1))


def cat_shape(tensors, dim: int) -> list[int]:
    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return shape


def _cat_impl(tensors: list[torch.Tensor], dim: int, dtype: torch.dtype) -> torch.Tensor:
    shape = cat_shape(tensors, dim)
    y = torch.empty(shape, dtype=dtype, device=tensors[0].device)
    rows = math.prod(shape[:dim])
    width = math.prod(shape[dim:])
    y2 = y.view(rows, width)
    pieces = []
    for t in tensors:
        if t.numel() == 0:
            continue
        v = _as_rows(t, dim)
        if v is None:  # a layout whose columns do not run contiguously: made so first
            dense = t.new_empty(t.shape)
            run_copy(t, dense)
            v = _as_rows(dense, dim)
        pieces.append(v)
    col = 0
    for start in range(0, len(pieces), MAX_CAT_INPUTS):
        group = pieces[start:start + MAX_CAT_INPUTS]
        widths = tuple(v.shape[1] for v in group)
        desc = CatDescriptor.cached(rows, widths, tuple(v.dtype for v in group), dtype)
        target = y2[:, col:col + sum(widths)]
        run_plan(CatPlan, desc, CatArgs(target, *group))
        col += sum(widths)
    return y


def _cat_fake(tensors, dim, dtype):
    return tensors[0].new_empty(cat_shape(tensors, dim), dtype=dtype)


def _cat_setup(ctx, inputs, output):
    tensors, dim, _ = inputs
    ctx.dim = dim
    ctx.parts = [(t.shape[dim], t.dtype) for t in tensors]


def _cat_backward(ctx, grad):
    grads, start = [], 0
    for n, dtype in ctx.parts:
        g = grad.narrow(ctx.dim, start, n)
        grads.append(g if g.dtype == dtype else g.to(dtype))
        start += n
    return grads, None, None


cat_op = define_op("shape_cat", _cat_impl, _cat_fake, backward=_cat_backward,
                   setup_context=_cat_setup)
