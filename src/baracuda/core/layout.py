"""Host-side layout helpers: coalesce contiguous dims of strided tensors.

Kernels take (shape, strides) with int64 offsets; the fewer dims, the cheaper the index math.
Collapsing never copies: it only re-describes the same memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


def collapse_dims(
    shape: Sequence[int], strides: Sequence[Sequence[int]]
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """Merge adjacent dims that are contiguous in *every* operand; drop extent-1 dims.

    ``shape`` is shared by all operands; ``strides[k]`` are operand k's strides (element units).
    Returns the collapsed shape and per-operand strides (at least one dim, possibly extent 1).
    """
    dims = [(d, [s[i] for s in strides]) for i, d in enumerate(shape) if d != 1]
    if any(d == 0 for d, _ in dims):
        return (0,), tuple((1,) for _ in strides)
    merged: list[tuple[int, list[int]]] = []
    for extent, st in reversed(dims):  # innermost first
        if merged:
            inner_extent, inner_st = merged[-1]
            if all(o == i * inner_extent for o, i in zip(st, inner_st)):
                merged[-1] = (inner_extent * extent, inner_st)
                continue
        merged.append((extent, st))
    merged.reverse()
    if not merged:
        return (1,), tuple((1,) for _ in strides)
    out_shape = tuple(d for d, _ in merged)
    out_strides = tuple(tuple(st[k] for _, st in merged) for k in range(len(strides)))
    return out_shape, out_strides


@dataclass(frozen=True)
class AxisView:
    """A tensor seen as [outer..., axis, inner...] with outer/inner dims collapsed.

    ``rows`` = product of outer and inner extents (the number of independent lines along
    ``axis``); ``row_offsets(k)`` gives each line's start offset for operand k.
    """

    outer_shape: tuple[int, ...]
    outer_strides: tuple[tuple[int, ...], ...]
    extent: int
    axis_strides: tuple[int, ...]

    @property
    def rows(self) -> int:
        n = 1
        for d in self.outer_shape:
            n *= d
        return n


def axis_view(shape: Sequence[int], tensors: Sequence[torch.Tensor], axis: int) -> AxisView:
    """Describe each tensor as independent lines along `axis` (reduction/softmax/scan layout)."""
    others = [i for i in range(len(shape)) if i != axis]
    o_shape = [shape[i] for i in others]
    o_strides = [[t.stride(i) for i in others] for t in tensors]
    if others:
        c_shape, c_strides = collapse_dims(o_shape, o_strides)
    else:
        c_shape, c_strides = (1,), ((0,),) * len(tensors)
    return AxisView(
        outer_shape=c_shape,
        outer_strides=c_strides,
        extent=shape[axis],
        axis_strides=tuple(t.stride(axis) for t in tensors),
    )


def is_dense_rowmajor_lines(view: AxisView) -> bool:
    """Lines are unit-stride and packed back to back in every operand (the fast layout)."""
    return (
        all(s == 1 for s in view.axis_strides)
        and len(view.outer_shape) == 1
        and all(st[0] == view.extent for st in view.outer_strides)
    ) or (view.rows == 1 and all(s == 1 for s in view.axis_strides))


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides torch gives a contiguous tensor of `shape` (a zero extent counts as one,
    as in torch)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """torch.broadcast_shapes for concrete int shapes, without its symbolic-shape machinery
    (which costs tens of microseconds per eager call). Same RuntimeError as torch."""
    rank = max([len(s) for s in shapes] or [0])  # (dynamo cannot trace max's default=)
    out = [1] * rank
    for i, s in enumerate(shapes):
        off = rank - len(s)
        for j, d in enumerate(s):
            o = out[off + j]
            if d != o and d != 1:
                if o != 1:
                    raise RuntimeError(
                        f"Attempting to broadcast a dimension of length {d} at "
                        f"{off + j - rank}! Mismatching argument at index {i} had {tuple(s)}; "
                        f"but expected shape should be broadcastable to {out}"
                    )
                out[off + j] = d
    return tuple(out)
