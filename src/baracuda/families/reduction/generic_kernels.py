"""The reduction with a caller's combine function (a `@triton.jit` function passed as a
constexpr), in the layout of the family's reduce_kernel (kernels.py):

A launch sees the input as [kept K, reduced R] after the host merged dims (layout.py): each
program takes BLOCK_K kept lines and walks their reduced elements BLOCK_R at a time, every lane
of the [BLOCK_K, BLOCK_R] tile folding its elements into its own value in order; the lanes
then merge in a fixed tree (`fold_lanes`). Masked lanes (tails, empty lines, an empty
reduction) hold the monoid's identity, so they change nothing. Lines too long for one program
are cut into `n_split` chunks whose values go to the workspace, and
`generic_combine_kernel` folds them in the same fixed tree, in chunk order. No atomics.

Lanes hold elements j, j + BLOCK_R, ... of a line, so the combine must be commutative as well
as associative (documented on GenericReductionPlan).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import INTERP, reduce_with, round_to
from .kernels import offsets


@triton.jit
def fold_lanes(a, COMBINE: tl.constexpr):
    """COMBINE over axis 1 of a [rows, lanes] tile (lanes a power of two): `tl.reduce` on the
    GPU; under the interpreter, whose `tl.reduce` calls the combine once per element, the same
    fixed tree as halvings of whole tiles (reshape + split)."""
    if INTERP:
        ROWS: tl.constexpr = a.shape[0]
        LANES: tl.constexpr = a.shape[1]
        for i in tl.static_range(16):
            if (LANES >> i) > 1:
                p, q = tl.split(tl.reshape(a, [ROWS, LANES >> (i + 1), 2]))
                a = COMBINE(p, q).to(a.dtype)
        return tl.reshape(a, [ROWS])
    else:
        return reduce_with(a, 1, COMBINE)


@triton.jit
def generic_reduce_kernel(
    x_ptr, y_ptr, ws_ptr,
    K, R, chunk,
    KS1, KS2, KS3,
    xk0, xk1, xk2, xk3,
    yk0, yk1, yk2, yk3,
    RS1, RS2, RS3,
    xr0, xr1, xr2, xr3,
    COMBINE: tl.constexpr, IDENTITY: tl.constexpr, ACC: tl.constexpr,
    BLOCK_K: tl.constexpr, BLOCK_R: tl.constexpr, K_DIMS: tl.constexpr, R_DIMS: tl.constexpr,
    PARTIAL: tl.constexpr,
):
    """Program (i, s): kept lines [i BLOCK_K, (i + 1) BLOCK_K), reduced chunk s of `chunk`
    elements; PARTIAL writes the chunk's value to ws [n_split, K] instead of y."""
    pid_k = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)
    kmask = k < K
    x_rows = x_ptr + offsets(k, KS1, KS2, KS3, xk0, xk1, xk2, xk3, K_DIMS)
    ident = tl.full([BLOCK_K, BLOCK_R], IDENTITY, ACC)
    acc = ident
    start = split * chunk
    end = tl.minimum(start + chunk, R)
    lanes = tl.arange(0, BLOCK_R).to(tl.int64)
    for r0 in range(start, end, BLOCK_R):
        r = r0 + lanes
        valid = kmask[:, None] & (r < end)[None, :]
        r_off = offsets(r, RS1, RS2, RS3, xr0, xr1, xr2, xr3, R_DIMS)
        x = tl.load(x_rows[:, None] + r_off[None, :], mask=valid, other=0).to(ACC)
        acc = COMBINE(acc, tl.where(valid, x, ident)).to(ACC)
    v = fold_lanes(acc, COMBINE)
    if PARTIAL:
        tl.store(ws_ptr + split * K + k, v, mask=kmask)
    else:
        y_off = offsets(k, KS1, KS2, KS3, yk0, yk1, yk2, yk3, K_DIMS)
        tl.store(y_ptr + y_off, round_to(v, y_ptr.dtype.element_ty), mask=kmask)


@triton.jit
def generic_combine_kernel(
    ws_ptr, y_ptr, K, n_split,
    KS1, KS2, KS3,
    yk0, yk1, yk2, yk3,
    COMBINE: tl.constexpr, IDENTITY: tl.constexpr, ACC: tl.constexpr,
    BLOCK_K: tl.constexpr, SPLIT_P: tl.constexpr, K_DIMS: tl.constexpr,
):
    """The chunks' values of BLOCK_K lines folded in a fixed tree over chunk order, stored."""
    pid_k = tl.program_id(0).to(tl.int64)
    k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)
    kmask = k < K
    s = tl.arange(0, SPLIT_P).to(tl.int64)
    m = kmask[:, None] & (s < n_split)[None, :]
    ident = tl.full([BLOCK_K, SPLIT_P], IDENTITY, ACC)
    part = tl.load(ws_ptr + s[None, :] * K + k[:, None], mask=m, other=0).to(ACC)
    v = fold_lanes(tl.where(m, part, ident), COMBINE)
    y_off = offsets(k, KS1, KS2, KS3, yk0, yk1, yk2, yk3, K_DIMS)
    tl.store(y_ptr + y_off, round_to(v, y_ptr.dtype.element_ty), mask=kmask)
