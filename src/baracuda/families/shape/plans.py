"""CopyPlan, SumDimsPlan (its gradient's sum over broadcast dims) and CatPlan, on Triton.

**CopyPlan**: y[i] = x[src(i)] for any strides on both sides (zero strides included: a
broadcast source), rank 0..8; src reverses flipped dims (a negated stride from the dim's last
element) and rolls rolled ones ((i + r) mod n, a select). The host drops unit dims, orders
the dims by y's strides (y's fastest dim last) and merges the ones contiguous in both
tensors (not rolled ones). The tile is [TB, TA]: A is y's fastest dim; B is x's fastest dim
when that differs from A (a transposed copy, loaded along B and stored along A: the compiler
converts the tile's layout through shared memory), else the next dim out. A flipped A is read
as one ascending run per tile row and reversed in registers (vector loads both ways). Offsets
inside a tile are int32 unless a tile can reach past 2**31 elements; outer offsets are int64
scalars.

**SumDimsPlan**: y = x summed over `dims` (keepdim): each program sums BLOCK outputs over the
reduced elements in order (deterministic, no atomics), accumulating in f32 (f64 for f64).
Few outputs with long sums are cut into chunks along the sum: partial sums go to the
workspace and a second launch adds them in chunk order (still deterministic).

**CatPlan**: up to eight [rows, w_i] inputs (each its own dtype, cast to y's) into y's column
ranges, one launch: programs are cut into consecutive ranges, one per input.

**Precision**: copies are exact (a cast rounds as torch's); sums are deterministic.
"""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import acc_type, next_pow2, sm_count
from ...core.layout import collapse_dims, row_major_strides
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels as K
from .descriptors import (
    CatArgs,
    CatDescriptor,
    CopyArgs,
    CopyDescriptor,
    SumDimsArgs,
    SumDimsDescriptor,
)


@register_plan
class CopyPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = CopyDescriptor
    args_type = CopyArgs
    partner = "CopyPlan"


@register_plan
class SumDimsPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = SumDimsDescriptor
    args_type = SumDimsArgs
    is_backward = True


@register_plan
class CatPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = CatDescriptor
    args_type = CatArgs


#: Bytes one copy program moves each way (16 KB: enough in flight per SM at 2 programs/SM)
TILE_BYTES = 16384
#: Edge of a transposed copy's square tile (64 x 64 elements through shared memory)
TRANSPOSE_TILE = 64
#: Elements per tile at most (1-byte elements: registers hold offsets per element)
MAX_TILE_ELEMS = 8192
INT32_LIMIT = 1 << 31

_EXACT = PrecisionGuarantee(MathPrecision.EXACT, ElementKind.F64)


def copy_dims(desc: CopyDescriptor, x_strides, y_strides):
    """[(extent, x stride, y stride, roll)] of the copy, unit dims dropped, ordered by y's
    strides (fastest last), mergeable neighbours merged; and x's element offset of the
    source's first element (flips start from their dim's last element)."""
    shape = desc.shape
    rolls = desc.rolls or (0,) * len(shape)
    xs = list(x_strides)
    base = 0
    for d in desc.flips:
        if shape[d] > 0:
            base += (shape[d] - 1) * xs[d]
            xs[d] = -xs[d]
    dims = [(n, xs[d], y_strides[d], rolls[d]) for d, n in enumerate(shape) if n != 1]
    dims.sort(key=lambda t: -abs(t[2]))  # stable: equal y strides keep their order
    merged: list[tuple[int, int, int, int]] = []
    for dim in reversed(dims):  # innermost first
        if merged:
            n_in, x_in, y_in, r_in = merged[-1]
            n, x, y, r = dim
            if r == 0 and r_in == 0 and x == x_in * n_in and y == y_in * n_in:
                merged[-1] = (n * n_in, x_in, y_in, 0)
                continue
        merged.append(dim)
    merged.reverse()
    return merged, base


def copy_config(desc: CopyDescriptor, x_strides, y_strides) -> dict:
    """The launch of a copy: dims padded to [6 outer, B, A], tile shape, grid, int width."""
    dims, base = copy_dims(desc, x_strides, y_strides)
    transposed = False
    if len(dims) >= 2:
        a = dims[-1]
        # a broadcast dim (x stride 0) reads one element: never the tile's load dim
        read = [i for i in range(len(dims) - 1) if dims[i][1] != 0]
        b_idx = min(read, key=lambda i: (abs(dims[i][1]), -i)) if read else None
        if b_idx is not None and abs(dims[b_idx][1]) < abs(a[1]):
            transposed = True
            dims.append(dims.pop(b_idx))
            dims[-1], dims[-2] = dims[-2], dims[-1]
    pad = K.OUTER_DIMS + 2 - len(dims)
    dims = [(1, 0, 0, 0)] * pad + dims
    (nb, xsb, ysb, _), (na, xsa, ysa, _) = dims[-2], dims[-1]
    itemsize = max(desc.element.itemsize, desc.output_element.itemsize)
    if transposed:
        ta = min(TRANSPOSE_TILE, next_pow2(na))
        tb = min(TRANSPOSE_TILE, next_pow2(nb))
    else:
        elems = min(TILE_BYTES // itemsize, MAX_TILE_ELEMS)
        ta = min(next_pow2(na), elems)
        tb = min(next_pow2(nb), max(1, elems // ta))
    reach = max((nb + tb) * abs(xsb) + (na + ta) * abs(xsa),
                (nb + tb) * abs(ysb) + (na + ta) * abs(ysa))
    tiles_b, tiles_a = cdiv(nb, tb), cdiv(na, ta)
    outer = math.prod(d[0] for d in dims[:-2])
    return {"dims": dims, "base": base, "TB": tb, "TA": ta, "tiles_b": tiles_b,
            "tiles_a": tiles_a, "grid": outer * tiles_b * tiles_a,
            "ROLL": any(d[3] for d in dims), "WIDE": reach >= INT32_LIMIT,
            "num_warps": 8 if ta * tb >= 4096 else 4, "transposed": transposed}


def copy_scalars(cfg: dict) -> list[int]:
    dims = cfg["dims"]
    return [*(d[0] for d in dims), *(d[1] for d in dims), *(d[2] for d in dims),
            *(d[3] for d in dims), cfg["tiles_b"], cfg["tiles_a"]]


def _shifted(t: torch.Tensor, offset: int) -> torch.Tensor:
    """t's storage seen from `offset` elements after t's first element (a flipped source's
    base); t itself when the offset is 0."""
    if offset == 0:
        return t
    return t.as_strided((1,), (1,), t.storage_offset() + offset)


def launch_copy(desc: CopyDescriptor, x: torch.Tensor, y: torch.Tensor) -> None:
    if y.numel() == 0:
        return
    cfg = copy_config(desc, x.stride(), y.stride())
    K.copy_kernel[(cfg["grid"],)](_shifted(x, cfg["base"]), y, *copy_scalars(cfg),
                                  TB=cfg["TB"], TA=cfg["TA"], ROLL=cfg["ROLL"],
                                  WIDE=cfg["WIDE"],
                                  num_warps=cfg["num_warps"])


@register_candidate(CopyPlan)
class TritonStridedCopy(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_strided_copy"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return _EXACT if desc.output_element.itemsize >= desc.element.itemsize or \
            not desc.output_element.is_float else PrecisionGuarantee.for_element(
                desc.output_element)

    def launch(self, desc, args, workspace) -> None:
        launch_copy(desc, args.x, args.y)


# -- sum over broadcast dims -------------------------------------------------------------------
SUM_BLOCK = 256
#: Sums are cut into chunks when fewer than this many programs per SM would run ...
PROGRAMS_PER_SM = 4
#: ... each chunk at least this many terms long
MIN_CHUNK_TERMS = 512


def _padded(shape, strides, n: int = 8):
    pad = n - len(shape)
    return [1] * pad + list(shape), [[0] * pad + list(s) for s in strides]


def sum_config(desc: SumDimsDescriptor, x_strides, y_strides):
    """(kept extents[8], [x, y] kept strides[8], reduced extents[8], x reduced strides[8])."""
    shape = desc.input_shape
    kept = [d for d in range(len(shape)) if d not in desc.dims]
    red = list(desc.dims)
    if kept:
        k_shape, k_strides = collapse_dims([shape[d] for d in kept],
                                           [[x_strides[d] for d in kept],
                                            [y_strides[d] for d in kept]])
    else:
        k_shape, k_strides = (1,), ((0,), (0,))
    if red:
        r_shape, r_strides = collapse_dims([shape[d] for d in red],
                                           [[x_strides[d] for d in red]])
    else:
        r_shape, r_strides = (1,), ((0,),)
    k_shape, k_strides = _padded(k_shape, k_strides)
    r_shape, r_strides = _padded(r_shape, r_strides)
    return k_shape, k_strides, r_shape, r_strides[0]


def sum_parts(desc: SumDimsDescriptor) -> tuple[int, int, int]:
    """(outputs M, terms K per output, chunks C): few outputs with long sums are cut into C
    chunks along the terms (partial sums in the workspace, added in order by a second
    launch), so that the GPU has enough programs."""
    shape = desc.input_shape
    k = math.prod(shape[d] for d in desc.dims)
    m = math.prod(n for i, n in enumerate(shape) if i not in desc.dims)
    programs = cdiv(m, SUM_BLOCK)
    chunks = 1
    if m and programs < PROGRAMS_PER_SM * sm_count() and k >= 2 * MIN_CHUNK_TERMS:
        chunks = min(cdiv(PROGRAMS_PER_SM * sm_count(), programs), k // MIN_CHUNK_TERMS)
    return m, k, max(chunks, 1)


def _acc_dtype(desc) -> torch.dtype:
    return torch.float64 if desc.element is ElementKind.F64 else torch.float32


def sum_workspace_bytes(desc: SumDimsDescriptor) -> int:
    m, _, chunks = sum_parts(desc)
    return 0 if chunks == 1 else chunks * m * _acc_dtype(desc).itemsize


def _sum_launch(x, y, m, k, k_shape, kx, ky, r_shape, rx, chunks, acc) -> None:
    k_chunk = cdiv(k, chunks)
    part_stride = m if chunks > 1 else 0
    K.sum_dims_kernel[(cdiv(m, SUM_BLOCK), chunks)](
        x, y, m, k, *k_shape[1:], *kx, *ky, *r_shape[1:], *rx, k_chunk, part_stride,
        BLOCK=SUM_BLOCK, ACC=acc, num_warps=4)


def launch_sum(desc: SumDimsDescriptor, x: torch.Tensor, y: torch.Tensor,
               workspace: torch.Tensor | None) -> None:
    if y.numel() == 0:
        return
    k_shape, (kx, ky), r_shape, rx = sum_config(desc, x.stride(), y.stride())
    m, k, chunks = sum_parts(desc)
    acc = acc_type(desc.element)
    if chunks == 1:
        _sum_launch(x, y, m, k, k_shape, kx, ky, r_shape, rx, 1, acc)
        return
    # pass 1: partials[c, m] (m row-major over the kept dims); pass 2: their ordered sum
    dense = list(row_major_strides(k_shape))
    parts = workspace[:chunks * m * _acc_dtype(desc).itemsize].view(_acc_dtype(desc))
    _sum_launch(x, parts, m, k, k_shape, kx, dense, r_shape, rx, chunks, acc)
    _sum_launch(parts, y, m, chunks, k_shape, dense, ky, [1] * 7 + [chunks], [0] * 7 + [m],
                1, acc)


@register_candidate(SumDimsPlan)
class TritonSumDims(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_ordered_sum_dims"

    def workspace_size(self, desc) -> int:
        return sum_workspace_bytes(desc)

    def launch(self, desc, args, workspace) -> None:
        launch_sum(desc, args.x, args.y, workspace)


# -- concatenation ------------------------------------------------------------------------------
def cat_config(desc: CatDescriptor, row_strides, y_row: int) -> dict:
    itemsize = max(e.itemsize for e in (*desc.elements, desc.output_element))
    elems = min(TILE_BYTES // itemsize, MAX_TILE_ELEMS)
    tc = min(next_pow2(max(max(desc.widths), 1)), elems)
    tr = min(next_pow2(max(desc.rows, 1)), max(1, elems // tc))
    starts, total = [], 0
    for w in desc.widths:
        starts.append(total)
        total += cdiv(desc.rows, tr) * cdiv(w, tc)
    reach = tr * max(*row_strides, y_row) + tc + sum(desc.widths)
    return {"TR": tr, "TC": tc, "starts": starts, "grid": total,
            "WIDE": reach >= INT32_LIMIT, "num_warps": 8 if tr * tc >= 4096 else 4}


def launch_cat(desc: CatDescriptor, xs: list[torch.Tensor], y: torch.Tensor) -> None:
    if y.numel() == 0:
        return
    n = len(xs)
    rows = [x.stride(0) if desc.rows > 1 else 0 for x in xs]
    cfg = cat_config(desc, rows, y.stride(0))
    cols, c = [], 0
    for w in desc.widths:
        cols.append(c)
        c += w
    pad = K.MAX_CAT_INPUTS - n
    ptrs = [*xs, *([xs[0]] * pad)]
    starts = cfg["starts"][1:] + [cfg["grid"]] * (pad + 1)
    K.cat_kernel[(cfg["grid"],)](
        y, *ptrs, *(rows + [0] * pad), *(list(desc.widths) + [0] * pad), *(cols + [0] * pad),
        *starts[:K.MAX_CAT_INPUTS - 1], desc.rows, y.stride(0) if desc.rows > 1 else 0,
        N=n, TR=cfg["TR"], TC=cfg["TC"], WIDE=cfg["WIDE"], num_warps=cfg["num_warps"])


@register_candidate(CatPlan)
class TritonCat(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_multi_input_cat"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.output_element)

    def launch(self, desc, args, workspace) -> None:
        launch_cat(desc, args.inputs(), args.y)
