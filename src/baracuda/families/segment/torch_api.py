"""jax.ops.segment_sum / segment_max / segment_min / segment_prod (and segment_mean) on
baracuda plans, for torch tensors, differentiable with respect to `data`.

Signature: (data, segment_ids, num_segments=None, indices_are_sorted=False,
unique_indices=False, bucket_size=None). `num_segments=None` means max(segment_ids) + 1, read
from the device (a sync; pass it explicitly under torch.compile). `indices_are_sorted=True`
promises ascending ids (as in jax, results are unspecified otherwise); `unique_indices` and
`bucket_size` are accepted and ignored (hints only in jax too). Ids outside
[0, num_segments) are dropped; an empty segment gives 0 / -inf / +inf / 1 (sum and mean / max /
min / prod). max / min split the gradient evenly among the rows holding the extremum, per
column (as torch.segment_reduce and jax do; a NaN output splits it among the NaN rows).
Any layout of data and of the upstream gradient works (one the kernels cannot index, more than
4 strided inner dims, is copied). Malformed calls raise InvalidProblem (SegmentArgumentError,
also a TypeError, for an argument of the wrong type); more segments than the plans' int32
positions raise Unsupported.
"""

from __future__ import annotations

import operator

import torch

from ...backends.rows import MAX_INNER_DIMS, collapses
from ...backends.torch_ops import define_op, run_plan
from ...core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from .descriptors import (
    MAX_ROWS,
    SegmentArgs,
    SegmentBackwardArgs,
    SegmentBackwardDescriptor,
    SegmentDescriptor,
    SegmentKind,
)
from .plans import BACKWARD_PLANS, FORWARD_PLANS

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"]

_EXTREMAL = ("max", "min")


class SegmentArgumentError(ArgumentTypeError):
    """An argument of the wrong type (not a tensor, ids not int32 / int64, num_segments not an
    int): core's ArgumentTypeError (a TypeError, as jax raises, and an InvalidProblem)."""


def _kernel_ready(t: torch.Tensor, *others: torch.Tensor) -> torch.Tensor:
    """`t` itself when its inner dims [D...], with those of `others` and a dense output,
    collapse to the kernels' strided dims (plans.MAX_INNER_DIMS), else a contiguous copy
    (rare layouts: a permutation or padding of 5 or more inner dims). An empty tensor is
    contiguous whatever its strides: it is replaced by a dense one (nothing to copy)."""
    if t.dim() <= MAX_INNER_DIMS + 1 or collapses(t.shape[1:], (t, *others)):
        return t
    if t.numel() == 0:
        return torch.empty(t.shape, dtype=t.dtype, device=t.device)
    return t.contiguous()


def _desc(cls, data, ids, num_segments):
    return cls.cached(tuple(data.shape), num_segments, data.dtype, ids.dtype)


def _forward(data: torch.Tensor, segment_ids: torch.Tensor, num_segments: int, kind: str,
             indices_are_sorted: bool) -> tuple[torch.Tensor, torch.Tensor]:
    data = _kernel_ready(data)
    out = data.new_empty((num_segments, *data.shape[1:]))
    shape = out.shape if kind in _EXTREMAL else (0,)
    arg = torch.empty(shape, dtype=torch.int64, device=data.device)
    plan = FORWARD_PLANS[(SegmentKind(kind), indices_are_sorted)]
    run_plan(plan, _desc(SegmentDescriptor, data, segment_ids, num_segments),
             SegmentArgs(data, segment_ids, out, arg if kind in _EXTREMAL else None))
    return out, arg


def _forward_fake(data, segment_ids, num_segments, kind, indices_are_sorted):
    out = data.new_empty((num_segments, *data.shape[1:]))
    shape = out.shape if kind in _EXTREMAL else (0,)
    return out, torch.empty(shape, dtype=torch.int64, device=data.device)


def _backward_impl(grad_out: torch.Tensor, segment_ids: torch.Tensor, out: torch.Tensor | None,
                   data: torch.Tensor | None, num_rows: int, kind: str,
                   indices_are_sorted: bool) -> torch.Tensor:
    if data is not None:  # prod, max, min (these with the forward's `out`)
        data = _kernel_ready(data)
        grad_out = _kernel_ready(grad_out, data)
        if out is not None:
            out = _kernel_ready(out, data, grad_out)
    else:
        grad_out = _kernel_ready(grad_out)
    shape = (num_rows, *grad_out.shape[1:])
    dx = grad_out.new_empty(shape)
    desc = SegmentBackwardDescriptor.cached(tuple(shape), grad_out.shape[0], grad_out.dtype,
                                            segment_ids.dtype)
    plan = BACKWARD_PLANS[(SegmentKind(kind), indices_are_sorted)]
    run_plan(plan, desc, SegmentBackwardArgs(grad_out, segment_ids, dx, out, data))
    return dx


def _backward_fake(grad_out, segment_ids, out, data, num_rows, kind, indices_are_sorted):
    return grad_out.new_empty((num_rows, *grad_out.shape[1:]))


_segment_backward = define_op("segment_reduce_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output):
    data, ids, _, kind, srt = inputs
    ctx.kind, ctx.sorted, ctx.num_rows = kind, srt, data.shape[0]
    extremal = kind in _EXTREMAL
    ctx.save_for_backward(ids, output[0] if extremal else None,
                          data if extremal or kind == "prod" else None)
    ctx.set_materialize_grads(True)


def _autograd(ctx, grad_out, grad_arg):
    ids, out, data = ctx.saved_tensors
    dx = _segment_backward(grad_out, ids, out, data, ctx.num_rows, ctx.kind, ctx.sorted)
    return dx, None, None, None, None


_segment_reduce = define_op("segment_reduce", _forward, _forward_fake, backward=_autograd,
                            setup_context=_setup)


def _num_segments(who: str, segment_ids: torch.Tensor, num_segments) -> int:
    name = "num_segments"
    if num_segments is None:  # jax: max(segment_ids) + 1 (a device sync)
        num_segments = max(int(segment_ids.max()) + 1, 0) if segment_ids.numel() else 0
        name = "num_segments (max(segment_ids) + 1)"
    if isinstance(num_segments, (bool, float)) or (
            isinstance(num_segments, torch.Tensor) and num_segments.is_floating_point()):
        raise SegmentArgumentError(f"{who}: num_segments must be an int or None, got "
                                   f"{num_segments!r}")
    try:
        s = operator.index(num_segments)
    except TypeError:
        raise SegmentArgumentError(f"{who}: num_segments must be an int or None, got "
                                   f"{type(num_segments).__name__}") from None
    if s < 0:
        raise InvalidProblem(f"{who}: num_segments must be >= 0, got {s}")
    if s > MAX_ROWS:  # (before the output is allocated)
        raise Unsupported(f"{who}: {name} must be <= {MAX_ROWS}, got {s}")
    return s


def _call(kind: str, data, segment_ids, num_segments, indices_are_sorted):
    who = f"segment_{kind}"
    for name, t in (("data", data), ("segment_ids", segment_ids)):
        if not isinstance(t, torch.Tensor):
            raise SegmentArgumentError(f"{who}: {name} must be a torch.Tensor, got "
                                       f"{type(t).__name__}")
    if segment_ids.dim() != 1 or data.dim() < 1 or segment_ids.shape[0] != data.shape[0]:
        raise InvalidProblem(
            f"{who}: segment_ids must be 1-D with data.shape[0] entries; got "
            f"segment_ids.shape {tuple(segment_ids.shape)}, data.shape {tuple(data.shape)}")
    if segment_ids.dtype not in (torch.int32, torch.int64):
        raise SegmentArgumentError(f"{who}: segment_ids must be int32 or int64, got "
                                   f"{segment_ids.dtype}")
    s = _num_segments(who, segment_ids, num_segments)
    out, _ = _segment_reduce(data, segment_ids, s, kind, bool(indices_are_sorted))
    return out


def _jax_segment_op(kind: str, doc: str):
    """The public jax.ops-signature function of one reduction (unique_indices and bucket_size
    are accepted and ignored, as hints)."""

    def op(data: torch.Tensor, segment_ids: torch.Tensor, num_segments: int | None = None,
           indices_are_sorted: bool = False, unique_indices: bool = False,
           bucket_size: int | None = None) -> torch.Tensor:
        return _call(kind, data, segment_ids, num_segments, indices_are_sorted)

    op.__name__ = op.__qualname__ = f"segment_{kind}"
    op.__doc__ = doc
    return op


segment_sum = _jax_segment_op(
    "sum", "jax.ops.segment_sum: out[s] = sum of data[i] with segment_ids[i] == s.")
segment_mean = _jax_segment_op(
    "mean", "Mean per segment (0 for an empty segment), with jax.ops' segment signature.")
segment_max = _jax_segment_op(
    "max", "jax.ops.segment_max (-inf for an empty segment); the gradient is split evenly "
    "among tied maximal rows.")
segment_min = _jax_segment_op(
    "min", "jax.ops.segment_min (+inf for an empty segment); the gradient is split evenly "
    "among tied minimal rows.")
segment_prod = _jax_segment_op(
    "prod", "jax.ops.segment_prod (1 for an empty segment); zeros handled exactly in the "
    "gradient.")
