"""PadPlan / PadBackwardPlan and their Triton candidates.

**Formulas**: per dim, output index o reads input index t = o - low; outside [0, n) the
fill value (constant), the mirror image without the edge, t -> -t or 2(n-1) - t (reflect),
the nearest edge, clamp(t, 0, n-1) (replicate), or t mod n (circular). Negative pads crop.
Backward (reflect / replicate / circular): dx[i] = the sum of dy[o] over the o that read i,
per dim at most 3 images (reflect, circular) or a band as long as the larger pad plus one
(replicate's edges); constant pads differentiate as a constant pad of dy with negated pads.

**Dtypes / shape**: forward every element kind, rank 1..8, any pads, any non-negative
strides (unpadded neighbouring dims collapsed on the host); backward floats, pads on the last
three dims at most, rank up to 5. f16/bf16 gradients sum in f32, f64 in f64.

**Workspace**: none.

**Precision**: the forward is an exact copy; the backward sums each input's sources in a
fixed order (bit-stable, no atomics).
"""

from __future__ import annotations

import math

import triton.language as tl

from ...backends.triton_support import RecipeCache, acc_type, next_pow2
from ...core import validate as V
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels as K
from .descriptors import (
    MODE_CODES,
    PadArgs,
    PadBackwardArgs,
    PadBackwardDescriptor,
    PadDescriptor,
    PadMode,
)

#: elements a program writes (ROWS whole rows) by element size: 8-16 KB per program
PROGRAM_ELEMS = {1: 8192, 2: 8192, 4: 4096, 8: 2048}
#: the column block of one step, by element size (a [ROWS, BLOCK_W] tile of 16 elements per
#: thread at most); and the most rows a program takes (narrow last dims: row math per thread)
MAX_BLOCK_W = {1: 256, 2: 128, 4: 64, 8: 32}
MAX_ROWS = 32
OUTER_DIMS = 7
WARPS = 4
#: the backward holds an accumulator and several images' offsets per element: more threads
#: per tile keep them in registers
BACKWARD_WARPS = 8


@register_plan
class PadPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = PadDescriptor
    args_type = PadArgs
    partner = "PadBackwardPlan"


@register_plan
class PadBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = PadBackwardDescriptor
    args_type = PadBackwardArgs
    partner = "PadPlan"
    is_backward = True


def tile(width: int, itemsize: int) -> tuple[int, int]:
    """(ROWS, BLOCK_W): whole rows per program (PROGRAM_ELEMS at most), walked in column
    blocks."""
    width = max(width, 1)
    bw = min(next_pow2(width), MAX_BLOCK_W[itemsize])
    rows = max(1, PROGRAM_ELEMS[itemsize] // width)
    rows = min(MAX_ROWS, 1 << (rows.bit_length() - 1), max(1, 2048 // bw))
    return rows, bw


_BITS_TL = {2: tl.int16, 4: tl.int32, 8: tl.int64}


def bits_type(element: ElementKind):
    """The integer type a float fill's bits travel in (None: integer elements pass values)."""
    return _BITS_TL[element.itemsize] if element.is_float else None


def collapse_pad_dims(sizes, in_sizes, lows, x_strides, y_strides):
    """[(out size, in size, low, x stride, y stride)] with unit unpadded dims dropped and
    neighbouring unpadded dims merged where both tensors' strides allow."""
    dims = []
    for n_out, n_in, lo, xs, ys in zip(sizes, in_sizes, lows, x_strides, y_strides):
        if n_out == 1 and n_in == 1 and lo == 0:
            continue
        if dims:
            po, pi, pl, pxs, pys = dims[-1]
            unpadded = po == pi and pl == 0 and n_out == n_in and lo == 0
            if unpadded and pxs == xs * n_in and pys == ys * n_out:
                dims[-1] = (po * n_out, po * n_in, 0, xs, ys)
                continue
        dims.append((n_out, n_in, lo, xs, ys))
    return dims or [(1, 1, 0, 0, 0)]


_RECIPES = RecipeCache()
INT32_LIMIT = (1 << 31) - 1


def check_int32(who: str, *values: int) -> None:
    """The kernels index rows and dims in int32 (64-bit division is a slow subroutine)."""
    if max(values, default=0) > INT32_LIMIT:
        raise V.Unsupported(f"{who}: a row count or extent of {max(values)} is past the "
                            f"kernels' int32 row indexing ({INT32_LIMIT})")


def read_region(desc) -> tuple[list[int], list[int], list[int]]:
    """(extents, low pads, starts) of the part of the input each dim reads: circular pads
    crop first (negative pads) and then wrap inside what is left, as torch does; every other
    mode maps output indices onto the whole input."""
    if desc.mode is not PadMode.CIRCULAR:
        return list(desc.input_shape), [lo for lo, _ in desc.pads], [0] * len(desc.pads)
    sizes = [n + min(lo, 0) + min(hi, 0) for n, (lo, hi) in zip(desc.input_shape, desc.pads)]
    return sizes, [max(lo, 0) for lo, _ in desc.pads], [max(-lo, 0) for lo, _ in desc.pads]


def _forward_recipe(desc, x_strides, y_strides):
    sizes, lows, starts = read_region(desc)
    shift = sum(s * st for s, st in zip(starts, x_strides))
    dims = collapse_pad_dims(desc.output_shape, sizes, lows, x_strides, y_strides)
    if len(dims) > OUTER_DIMS + 1:
        raise V.Unsupported(f"PadPlan: at most {OUTER_DIMS + 1} dims after collapsing "
                            f"unpadded ones, got {len(dims)}")
    outer = [(1, 1, 0, 0, 0)] * (OUTER_DIMS + 1 - len(dims)) + dims[:-1]
    w_out, w_in, lw, xsw, ysw = dims[-1]
    rows = math.prod(d[0] for d in outer)
    roww, bw = tile(w_out, desc.element.itemsize)
    roww = min(roww, next_pow2(rows))
    grid = (cdiv(rows, roww),)
    check_int32("PadPlan", rows + roww, w_out + bw, grid[0], *sizes, *desc.output_shape)
    ints = [shift, rows, w_out, w_in, lw, xsw, ysw]
    for k in range(5):
        ints += [d[k] for d in outer]
    const = dict(MODE=MODE_CODES[desc.mode], BITS=bits_type(desc.element), ROWS=roww,
                 BLOCK_W=bw, num_warps=WARPS)
    return grid, ints, const


@register_candidate(PadPlan)
class TritonPad(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_pad_gather"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee(MathPrecision.EXACT, desc.element)

    def launch(self, desc, args, workspace) -> None:
        key = (desc, args.x.stride(), args.y.stride())
        grid, ints, const = _RECIPES.get(
            key, lambda: _forward_recipe(desc, args.x.stride(), args.y.stride()))
        K.pad_kernel[grid](args.x, args.y, desc.fill, *ints,
                           **const)


def band_count(mode: PadMode, n: int, lo: int, hi: int) -> int:
    """How many outputs at most read one input index along a dim."""
    if (lo, hi) == (0, 0):
        return 1
    if mode is PadMode.REPLICATE:
        return n + lo + hi if n == 1 else max(lo, hi, 0) + 1
    return 3


def interior(mode: PadMode, extent: int, n: int, lo: int, n_out: int, shift: int,
             count: int) -> list[int]:
    """[start, stop) of the input indices along a dim that only their direct image reads
    (pad_backward_kernel's images): a tile inside it needs one load per element. n, lo and
    shift are the read region's extent, low pad and start (read_region)."""
    if count == 1:
        return [0, extent]
    if mode is PadMode.REFLECT:  # mirrors reach i in [1, lo] and [n - 1 - hi, n - 2]
        return [lo + 1, n - 1 - (n_out - n - lo)]
    if mode is PadMode.SYMMETRIC:  # mirrors reach i in [0, lo) and [n - hi, n)
        return [lo, n - (n_out - n - lo)]
    if mode is PadMode.REPLICATE:  # the edges' bands
        return [1, n - 1]
    # circular: the wrapped images reach i >= shift + n - lo and i < n_out - n - lo + shift
    return [n_out - n - lo + shift, shift + n - lo]


def _backward_recipe(desc, dy_strides, dx_strides):
    lead = 5 - len(desc.input_shape)
    shape = (1,) * lead + desc.input_shape
    pads = ((0, 0),) * lead + desc.pads
    out = (1,) * lead + desc.output_shape
    dys = (0,) * lead + tuple(dy_strides)
    dxs = (0,) * lead + tuple(dx_strides)
    sizes, lows, starts = read_region(desc)
    sizes, lows, starts = [1] * lead + sizes, [0] * lead + lows, [0] * lead + starts
    counts = [band_count(desc.mode, n, lo, hi) for n, (lo, hi) in zip(shape, pads)]
    rows = math.prod(shape[:4])
    roww, bw = tile(shape[4], desc.element.itemsize)
    roww = min(max(1, roww // 2), next_pow2(rows))  # (an accumulator and images per element)
    grid = (cdiv(rows, roww),)
    check_int32("PadBackwardPlan", rows + roww, shape[4] + bw, grid[0], *out)
    ints = [rows, shape[4], sizes[4], out[4], lows[4], counts[4], starts[4], dys[4], dxs[4],
            shape[1], shape[2], shape[3], sizes[2], sizes[3], out[2], out[3], lows[2], lows[3],
            counts[2], counts[3], starts[2], starts[3], dys[0], dys[1], dys[2], dys[3],
            dxs[0], dxs[1], dxs[2], dxs[3]]
    for k in (4, 3, 2):
        ints += interior(desc.mode, shape[k], sizes[k], lows[k], out[k], starts[k], counts[k])
    const = dict(MODE=MODE_CODES[desc.mode], ROWS=roww, BLOCK_W=bw, num_warps=BACKWARD_WARPS)
    return grid, ints, const


@register_candidate(PadBackwardPlan)
class TritonPadBackward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_pad_gather_backward"

    def supports(self, desc, pref, arch) -> str | None:
        if len(desc.input_shape) > 5:
            return f"rank {len(desc.input_shape)} > 5"
        return None

    def launch(self, desc, args, workspace) -> None:
        key = (desc, args.dy.stride(), args.dx.stride())
        grid, ints, const = _RECIPES.get(
            key, lambda: _backward_recipe(desc, args.dy.stride(), args.dx.stride()))
        K.pad_backward_kernel[grid](args.dy, args.dx, *ints, ACC=acc_type(desc.element),
                                    **const)
