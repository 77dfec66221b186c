"""RepeatPlan / RepeatBackwardPlan and their Triton candidates (kernels_repeat).

**Formulas**: over an [outer, rows, inner] view, y[b, o, :] = x[b, src(o), :] with
src(o) = o // repeats, or for a tensor of counts the row s with T[s-1] <= o < T[s] (T the
running total of the counts, a binary search); the indices overload writes src(o) itself.
Backward: dx[b, s, :] = the sum of dy[b, o, :] over s's band of output rows.

**Dtypes / shape**: forward every element kind, backward floats; counts int32 or int64; any
non-negative strides of the 3-D view.

**Workspace**: the running total of the counts (int64, one per row; none for a constant).

**Precision**: the forward is an exact copy; the backward sums each band in row order
(bit-stable, no atomics). Counts past `output_rows` (a wrong output_size) are clipped to the
last row instead of read out of bounds.
"""

from __future__ import annotations

import torch

from ...backends.triton_support import RecipeCache, acc_type, next_pow2
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels_repeat as KR
from .descriptors_repeat import (
    RepeatArgs,
    RepeatBackwardArgs,
    RepeatBackwardDescriptor,
    RepeatDescriptor,
)
from .plans import check_int32

#: elements a [ROWS, BLOCK_I] step covers, by element size
STEP_ELEMS = {1: 2048, 2: 2048, 4: 2048, 8: 1024}
MAX_BLOCK_I = {1: 256, 2: 128, 4: 64, 8: 32}
#: rows a program takes at most (its row math: a search per row)
MAX_ROWS = 64
TOTAL_BLOCK = 1024
WARPS = 4


@register_plan
class RepeatPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = RepeatDescriptor
    args_type = RepeatArgs
    partner = "RepeatBackwardPlan"


@register_plan
class RepeatBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = RepeatBackwardDescriptor
    args_type = RepeatBackwardArgs
    partner = "RepeatPlan"
    is_backward = True


def repeat_tile(inner: int, itemsize: int) -> tuple[int, int]:
    """(ROWS, BLOCK_I)."""
    bi = min(next_pow2(max(inner, 1)), MAX_BLOCK_I[itemsize])
    return min(MAX_ROWS, max(1, STEP_ELEMS[itemsize] // bi)), bi


def search_steps(n: int) -> int:
    return max(1, (n + 1).bit_length())


def _workspace(desc) -> int:
    return cdiv(desc.input_shape[1] * 8, 16) * 16 if desc.repeats is None else 0


def _totals(desc, counts, workspace):
    """The running total of the counts in the workspace (int64)."""
    n = desc.input_shape[1]
    totals = workspace[:n * 8].view(torch.int64)
    KR.running_total_kernel[(1,)](counts, totals, n, counts.stride(0), BLOCK=TOTAL_BLOCK)
    return totals


_RECIPES = RecipeCache()


def _forward_recipe(desc, xs, ys):
    outer, n, inner = desc.input_shape
    rows = desc.output_rows
    itemsize = 8 if desc.index else desc.element.itemsize
    roww, bi = repeat_tile(1 if desc.index else inner, itemsize)
    roww = min(roww, next_pow2(rows))
    blocks = cdiv(rows, roww)
    grid = (outer * blocks,)
    check_int32("RepeatPlan", grid[0], blocks * roww, n, inner)
    # (repeats 0 leaves nothing to launch: 1 only keeps the division defined)
    ints = [n, rows, inner, desc.repeats or 1, blocks, *xs, *ys]
    const = dict(STEPS=search_steps(n), COUNTS=desc.repeats is None, INDEX=desc.index,
                 ROWS=roww, BLOCK_I=bi, num_warps=WARPS)
    return grid, ints, const


@register_candidate(RepeatPlan)
class TritonRepeat(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_repeat_gather"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee(MathPrecision.EXACT, desc.element)

    def workspace_size(self, desc) -> int:
        return _workspace(desc)

    def launch(self, desc, args, workspace) -> None:
        counted = desc.repeats is None
        totals = _totals(desc, args.counts, workspace) if counted else args.y
        x = args.y if args.x is None else args.x
        xs = (0, 0, 0) if args.x is None else args.x.stride()
        ys = args.y.stride()
        grid, ints, const = _RECIPES.get((desc, xs, ys), lambda: _forward_recipe(desc, xs, ys))
        KR.repeat_kernel[grid](x, args.y, totals, *ints, **const)


def _backward_recipe(desc, dys, dxs):
    outer, n, inner = desc.input_shape
    roww, bi = repeat_tile(inner, desc.element.itemsize)
    roww = min(roww, next_pow2(n))
    blocks = cdiv(n, roww)
    grid = (outer * blocks,)
    check_int32("RepeatBackwardPlan", grid[0], blocks * roww, inner)
    ints = [n, inner, 0 if desc.repeats is None else desc.repeats, blocks]
    const = dict(COUNTS=desc.repeats is None, ACC=acc_type(desc.element), ROWS=roww,
                 BLOCK_I=bi, num_warps=WARPS)
    return grid, ints, (*dys, *dxs), const


@register_candidate(RepeatBackwardPlan)
class TritonRepeatBackward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_repeat_segment_sum"

    def workspace_size(self, desc) -> int:
        return _workspace(desc)

    def launch(self, desc, args, workspace) -> None:
        counted = desc.repeats is None
        totals = _totals(desc, args.counts, workspace) if counted else args.dx
        counts = args.counts if counted else args.dx
        rs = args.counts.stride(0) if counted else 0
        key = (desc, args.dy.stride(), args.dx.stride())
        grid, ints, strides, const = _RECIPES.get(
            key, lambda: _backward_recipe(desc, args.dy.stride(), args.dx.stride()))
        KR.repeat_backward_kernel[grid](args.dy, args.dx, totals, counts, *ints, rs, *strides,
                                        **const)

