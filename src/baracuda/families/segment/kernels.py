"""Segment backward kernels (the forward is `backends.triton_rows.grouped_reduce_kernel`).

Program (row block, column block) reads each row's segment and writes its gradient once:
coalesced writes, zeros for dropped rows. max / min send the gradient to exactly the row the
forward's argmax names.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_rows import K_MAX, K_MEAN, K_MIN, K_SUM, col_offset


@triton.jit
def segment_backward_kernel(
    g_ptr, ids_ptr, arg_ptr, x_ptr, st_ptr, zc_ptr, cnt_ptr, dx_ptr, N, S, D, ids_stride,
    S1, S2, S3,
    gr, gs0, gs1, gs2, gs3,
    ar, as0, as1, as2, as3,
    xr, xs0, xs1, xs2, xs3,
    dr, ds0, ds1, ds2, ds3,
    KIND: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
    FLAT: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    rm = rows < N
    cm = cols < D
    seg = tl.load(ids_ptr + rows * ids_stride, mask=rm, other=-1).to(tl.int64)
    valid = rm & (seg >= 0) & (seg < S)
    seg = tl.where(valid, seg, 0)
    m2 = valid[:, None] & cm[None, :]
    g_off = col_offset(cols, S1, S2, S3, gs0, gs1, gs2, gs3, FLAT)
    g = tl.load(g_ptr + seg[:, None] * gr + g_off[None, :], mask=m2, other=0.0).to(ACC)
    if KIND == K_SUM:
        v = g
    elif KIND == K_MAX or KIND == K_MIN:
        # every row written once (zeros included): no separate memset of grad_data
        a_off = col_offset(cols, S1, S2, S3, as0, as1, as2, as3, FLAT)
        a = tl.load(arg_ptr + seg[:, None] * ar + a_off[None, :], mask=m2, other=-1)
        v = tl.where(a == rows[:, None], g, 0.0)
    elif KIND == K_MEAN:
        cnt = tl.load(cnt_ptr + seg, mask=valid, other=1)
        v = g / tl.maximum(cnt, 1).to(ACC)[:, None]
    else:
        x_off = col_offset(cols, S1, S2, S3, xs0, xs1, xs2, xs3, FLAT)
        x = tl.load(x_ptr + rows[:, None] * xr + x_off[None, :], mask=m2, other=1.0).to(ACC)
        st_off = seg[:, None] * D + cols[None, :]
        p = tl.load(st_ptr + st_off, mask=m2, other=1.0)
        z = tl.load(zc_ptr + st_off, mask=m2, other=0)
        # d prod / d x_i = product of the others: p / x_i without zeros; with one zero only
        # the zero's own gradient survives; with two or more every gradient is 0
        v = tl.where(z == 0, g * p / x, tl.where((z == 1) & (x == 0.0), g * p, 0.0))
    v = tl.where(m2, v, 0.0)
    d_off = col_offset(cols, S1, S2, S3, ds0, ds1, ds2, ds3, FLAT)
    tl.store(dx_ptr + rows[:, None] * dr + d_off[None, :], v.to(dx_ptr.dtype.element_ty),
             mask=rm[:, None] & cm[None, :])


@triton.jit
def segment_argmax_scatter_kernel(
    g_ptr, arg_ptr, dx_ptr, S, D, N,
    S1, S2, S3,
    gr, gs0, gs1, gs2, gs3,
    ar, as0, as1, as2, as3,
    dr, ds0, ds1, ds2, ds3,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, FLAT: tl.constexpr,
):
    """max / min backward onto a zeroed grad_data: grad_out[s, d] goes to row argmax[s, d].
    Rows belong to one segment each, so no two (s, d) hit one element: plain stores."""
    segs = tl.program_id(0).to(tl.int64) * BLOCK_S + tl.arange(0, BLOCK_S)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    m = (segs < S)[:, None] & (cols < D)[None, :]
    a_off = col_offset(cols, S1, S2, S3, as0, as1, as2, as3, FLAT)
    a = tl.load(arg_ptr + segs[:, None] * ar + a_off[None, :], mask=m, other=-1)
    ok = m & (a >= 0) & (a < N)
    g_off = col_offset(cols, S1, S2, S3, gs0, gs1, gs2, gs3, FLAT)
    g = tl.load(g_ptr + segs[:, None] * gr + g_off[None, :], mask=ok, other=0.0)
    d_off = col_offset(cols, S1, S2, S3, ds0, ds1, ds2, ds3, FLAT)
    tl.store(dx_ptr + tl.where(ok, a, 0) * dr + d_off[None, :], g, mask=ok)
