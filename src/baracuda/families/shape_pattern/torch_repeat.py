"""torch.repeat_interleave on RepeatPlan (both overloads: repeat an input's rows by an int or a
tensor of counts; a tensor of counts -> the indices), differentiable through
RepeatBackwardPlan (each input row sums its band of output rows)."""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from ...core.errors import ArgumentTypeError, InvalidProblem
from ...core.vocab import ElementKind
from .descriptors_repeat import (
    RepeatArgs,
    RepeatBackwardArgs,
    RepeatBackwardDescriptor,
    RepeatDescriptor,
)
from .plans_repeat import RepeatBackwardPlan, RepeatPlan

__all__ = ["repeat_interleave"]


def _view3(shape, dim: int) -> tuple[int, int, int]:
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])


def _out_shape(shape, dim: int, total: int) -> list[int]:
    out = list(shape)
    out[dim] = total
    return out


def _forward_impl(x: torch.Tensor, repeats: int, counts: torch.Tensor | None, dim: int,
                  total: int) -> torch.Tensor:
    """repeats >= 0 (counts None) or the counts (one per row of dim, int32 / int64)."""
    v3 = _view3(tuple(x.shape), dim)
    ce = ElementKind.of(counts.dtype) if counts is not None else ElementKind.I64
    desc = RepeatDescriptor.cached(v3, None if counts is not None else repeats, total,
                                   ElementKind.of(x.dtype), ce)
    y = x.new_empty(_out_shape(x.shape, dim, total))
    run_plan(RepeatPlan, desc, RepeatArgs(y=y.view(desc.output_shape), x=x.reshape(v3),
                                          counts=counts))
    return y


def _forward_fake(x: torch.Tensor, repeats: int, counts: torch.Tensor | None, dim: int,
                  total: int) -> torch.Tensor:
    return x.new_empty(_out_shape(x.shape, dim, total))


def _backward_impl(dy: torch.Tensor, repeats: int, counts: torch.Tensor | None, dim: int,
                   input_shape: list[int]) -> torch.Tensor:
    v3 = _view3(tuple(input_shape), dim)
    ce = ElementKind.of(counts.dtype) if counts is not None else ElementKind.I64
    desc = RepeatBackwardDescriptor.cached(v3, None if counts is not None else repeats,
                                           dy.shape[dim], ElementKind.of(dy.dtype), ce)
    dx = dy.new_empty(input_shape)
    run_plan(RepeatBackwardPlan, desc, RepeatBackwardArgs(
        dy=dy.reshape(desc.output_shape), dx=dx.view(v3), counts=counts))
    return dx


def _backward_fake(dy: torch.Tensor, repeats: int, counts: torch.Tensor | None, dim: int,
                   input_shape: list[int]) -> torch.Tensor:
    return dy.new_empty(input_shape)


_repeat_backward = define_op("repeat_interleave_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output):
    x, ctx.repeats, counts, ctx.dim, _ = inputs
    ctx.shape = list(x.shape)
    ctx.save_for_backward(counts)


def _autograd(ctx, grad):
    (counts,) = ctx.saved_tensors
    return _repeat_backward(grad, ctx.repeats, counts, ctx.dim, ctx.shape), None, None, None, \
        None


_repeat = define_op("repeat_interleave", _forward_impl, _forward_fake, backward=_autograd,
                    setup_context=_setup)


def _indices_impl(counts: torch.Tensor, total: int) -> torch.Tensor:
    n = counts.shape[0]
    desc = RepeatDescriptor.cached((1, n, 1), None, total, ElementKind.I64,
                                   ElementKind.of(counts.dtype), True)
    y = counts.new_empty(total, dtype=torch.int64)
    run_plan(RepeatPlan, desc, RepeatArgs(y=y.view(1, total, 1), counts=counts))
    return y


def _indices_fake(counts: torch.Tensor, total: int) -> torch.Tensor:
    return counts.new_empty(total, dtype=torch.int64)


_indices = define_op("repeat_interleave_indices", _indices_impl, _indices_fake)


def _counts(repeats: torch.Tensor, n: int | None) -> torch.Tensor:
    if repeats.dtype not in (torch.int32, torch.int64):
        raise InvalidProblem(f"repeat_interleave: repeats must be an int32 or int64 tensor, got "
                             f"{repeats.dtype}")
    if repeats.dim() > 1:
        raise InvalidProblem(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got "
                             f"{repeats.dim()}-dim")
    if n is not None and (repeats.dim() == 0 or repeats.numel() == 1):
        return repeats.reshape(1).expand(n)
    if n is not None and repeats.shape[0] != n:
        raise InvalidProblem(f"repeat_interleave: repeats must have the same size as input "
                             f"along dim, but got repeats.size(0) = {repeats.shape[0]} and "
                             f"input.size(dim) = {n}")
    return repeats.reshape(-1)


def _total(counts: torch.Tensor, output_size) -> int:
    """output_size, or the sum of the counts read on the host (torch's sync), which also
    checks them."""
    if output_size is not None:
        if isinstance(output_size, bool) or not isinstance(output_size, int) or output_size < 0:
            raise ArgumentTypeError(f"repeat_interleave: output_size must be an int >= 0, got "
                                    f"{output_size!r}")
        return output_size
    if counts.numel() == 0:
        return 0
    total, low = torch.stack([counts.sum(), counts.min()]).tolist()
    if low < 0:
        raise InvalidProblem("repeat_interleave: repeats can not be negative")
    return int(total)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave: each slice of `input` along `dim` (the flattened input when
    None) repeated `repeats` times (an int, or a tensor of one count per slice); with only a
    tensor of counts, the indices `repeat_interleave(arange(n), counts)` would give.
    `output_size` (the total) avoids reading the counts on the host."""
    if not isinstance(input, torch.Tensor):
        raise ArgumentTypeError(f"repeat_interleave: input must be a Tensor, got "
                                f"{type(input).__name__}")
    if repeats is None:
        counts = _counts(input, None)
        return _indices(counts, _total(counts, output_size))
    x = input.reshape(-1) if dim is None else input
    if x.dim() == 0:
        x = x.reshape(1)
    d = 0 if dim is None else normalize_dim(dim, x.dim(), "repeat_interleave")
    if isinstance(repeats, torch.Tensor):
        if repeats.device != x.device:
            raise InvalidProblem(f"repeat_interleave: repeats on {repeats.device}, input on "
                                 f"{x.device}")
        counts = _counts(repeats, x.shape[d])
        return _repeat(x, 0, counts, d, _total(counts, output_size))
    if isinstance(repeats, bool) or not isinstance(repeats, int):
        raise ArgumentTypeError(f"repeat_interleave: repeats must be an int or a Tensor, got "
                                f"{type(repeats).__name__}")
    if repeats < 0:
        raise InvalidProblem("repeat_interleave: repeats can not be negative")
    return _repeat(x, repeats, None, d, repeats * x.shape[d])
