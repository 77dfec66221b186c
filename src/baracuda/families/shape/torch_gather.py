"""torch.combinations on the table gather: the rows' input indices are a host-built table
(cached per (n, r, with_replacement, device)), the forward one gather launch, the gradient
one gather-form sum over the inverse table (CSR: per input element, its output positions in
order), so it is deterministic without atomics."""

from __future__ import annotations

import functools
import math

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.vocab import ElementKind
from .descriptors_gather import (
    GatherArgs,
    GatherDescriptor,
    GatherSumArgs,
    GatherSumDescriptor,
)
from .plans_gather import TableGatherPlan, TableGatherSumPlan


def count(n: int, r: int, with_replacement: bool) -> int:
    """Rows of combinations(n elements, r)."""
    return math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)


@functools.lru_cache(maxsize=32)
def _tables(n: int, r: int, with_replacement: bool, device: str):
    """(idx [C * r], ptr [n + 1], pos [C * r], largest count) for combinations of n, r >= 1.
    The index rows are torch's own order (lexicographic), built once on the host from an
    arange: the table holds indices, never data."""
    idx = torch.combinations(torch.arange(n, dtype=torch.int64), r, with_replacement)
    idx = idx.reshape(-1)
    pos = torch.argsort(idx, stable=True)  # positions per element, ascending
    counts = torch.bincount(idx, minlength=n)
    ptr = torch.zeros(n + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=ptr[1:])
    degree = int(counts.max()) if n else 0
    return idx.to(device), ptr.to(device), pos.to(device), degree


def _combinations_impl(x: torch.Tensor, r: int, with_replacement: bool) -> torch.Tensor:
    n = x.shape[0]
    c = count(n, r, with_replacement)
    y = x.new_empty((c, r))
    idx = _tables(n, r, with_replacement, str(x.device))[0] if c else \
        torch.empty(0, dtype=torch.int64, device=x.device)
    desc = GatherDescriptor.cached(n, c * r, ElementKind.of(x.dtype))
    run_plan(TableGatherPlan, desc, GatherArgs(x=x, idx=idx, y=y.view(-1)))
    return y


def _combinations_fake(x, r, with_replacement):
    return x.new_empty((count(x.shape[0], r, with_replacement), r))


def _combinations_backward_impl(dy: torch.Tensor, n: int, r: int, with_replacement: bool
                                ) -> torch.Tensor:
    dx = dy.new_empty((n,))
    rows = dy.shape[0]
    if rows:
        _, ptr, pos, degree = _tables(n, r, with_replacement, str(dy.device))
    else:  # no rows: every gradient is an empty sum
        ptr = torch.zeros(n + 1, dtype=torch.int64, device=dy.device)
        pos, degree = torch.empty(0, dtype=torch.int64, device=dy.device), 0
    desc = GatherSumDescriptor.cached(n, rows, r, degree, ElementKind.of(dy.dtype))
    run_plan(TableGatherSumPlan, desc, GatherSumArgs(dy=dy, ptr=ptr, pos=pos, dx=dx))
    return dx


def _combinations_backward_fake(dy, n, r, with_replacement):
    return dy.new_empty((n,))


def _backward_setup(ctx, inputs, output):
    _, ctx.n, ctx.r, ctx.with_replacement = inputs


def _backward_backward(ctx, grad):
    # the gradient is linear in dy: its own gradient is the forward gather of `grad`
    return _combinations(grad, ctx.r, ctx.with_replacement), None, None, None


def _setup(ctx, inputs, output):
    x, ctx.r, ctx.with_replacement = inputs
    ctx.n = x.shape[0]


def _backward(ctx, grad):
    return _combinations_backward(grad, ctx.n, ctx.r, ctx.with_replacement), None, None


_combinations = define_op("shape_combinations", _combinations_impl, _combinations_fake,
                          backward=_backward, setup_context=_setup)
_combinations_backward = define_op("shape_combinations_backward", _combinations_backward_impl,
                                   _combinations_backward_fake, backward=_backward_backward,
                                   setup_context=_backward_setup)


def combinations(input: torch.Tensor, r: int = 2, with_replacement: bool = False
                 ) -> torch.Tensor:
    """torch.combinations: the length-r combinations of a 1-D input's elements as the rows
    of a [C, r] tensor, in torch's order; r = 0 gives an empty 1-D tensor, as torch."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"combinations(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(r, bool) or not isinstance(r, int):
        raise TypeError(f"combinations(): argument 'r' must be int, not {type(r).__name__}")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    return _combinations(input, r, bool(with_replacement))
