"""Segment backward kernels (the forward is `backends.triton_rows.grouped_reduce_kernel`).

Program (row block, column block) reads each row's segment and writes its gradient once:
coalesced writes, zeros for dropped rows. max / min split a (segment, column)'s gradient
evenly among the rows equal to its output (as torch does): `segment_ties_kernel` marks those
rows, the grouped reduction counts them per segment, and the backward divides.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_rows import K_MAX, K_MEAN, K_MIN, K_SUM, col_offset


@triton.jit
def _div(a, b):
    """a / b rounded as IEEE division (Triton's f32 `/` is approximate; f64's is exact):
    torch's grad / count, bit for bit."""
    if a.dtype == tl.float32:
        return tl.div_rn(a, b)
    else:
        return a / b


@triton.jit
def segment_ties_kernel(
    x_ptr, o_ptr, ids_ptr, hit_ptr, N, S, D, ids_stride,
    S1, S2, S3,
    xr, xs0, xs1, xs2, xs3,
    orr, os0, os1, os2, os3,
    ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, FLAT: tl.constexpr,
):
    """hit[i, c] = 1 where data[i, c] equals out[ids[i], c] (NaN equal to NaN: a NaN output
    came from the segment's NaN rows), else 0; dense uint8 [N, D]."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    rm = rows < N
    cm = cols < D
    seg = tl.load(ids_ptr + rows * ids_stride, mask=rm, other=-1).to(tl.int64)
    valid = rm & (seg >= 0) & (seg < S)
    seg = tl.where(valid, seg, 0)
    m2 = valid[:, None] & cm[None, :]
    x_off = col_offset(cols, S1, S2, S3, xs0, xs1, xs2, xs3, FLAT)
    o_off = col_offset(cols, S1, S2, S3, os0, os1, os2, os3, FLAT)
    # compared in the compute type: exact for every element type (f16 / bf16 widen to f32)
    x = tl.load(x_ptr + rows[:, None] * xr + x_off[None, :], mask=m2, other=0.0).to(ACC)
    o = tl.load(o_ptr + seg[:, None] * orr + o_off[None, :], mask=m2, other=1.0).to(ACC)
    hit = m2 & ((x == o) | ((x != x) & (o != o)))
    tl.store(hit_ptr + rows[:, None] * D + cols[None, :], hit.to(tl.uint8),
             mask=rm[:, None] & cm[None, :])


@triton.jit
def segment_backward_kernel(
    g_ptr, ids_ptr, x_ptr, st_ptr, dc_ptr, cnt_ptr, hit_ptr, dx_ptr, N, S, D, ids_stride,
    S1, S2, S3,
    gr, gs0, gs1, gs2, gs3,
    xr, xs0, xs1, xs2, xs3,
    dr, ds0, ds1, ds2, ds3,
    KIND: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
    FLAT: tl.constexpr,
):
    """`cnt_ptr`: rows per segment (mean); `st_ptr` / `dc_ptr`: dense [S, D] product of the
    non-zeros (prod) and int32 counts (prod's zeros, max / min's tied rows); `hit_ptr`: dense
    uint8 [N, D] tie marks (max / min)."""
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
    st_off = seg[:, None] * D + cols[None, :]
    if KIND == K_SUM:
        v = g
    elif KIND == K_MAX or KIND == K_MIN:
        hit = tl.load(hit_ptr + rows[:, None] * D + cols[None, :], mask=m2, other=0)
        c = tl.load(dc_ptr + st_off, mask=m2 & (hit != 0), other=1)
        v = tl.where(hit != 0, _div(g, tl.maximum(c, 1).to(ACC)), 0.0)
    elif KIND == K_MEAN:
        cnt = tl.load(cnt_ptr + seg, mask=valid, other=1)
        v = _div(g, tl.maximum(cnt, 1).to(ACC)[:, None])
    else:
        x_off = col_offset(cols, S1, S2, S3, xs0, xs1, xs2, xs3, FLAT)
        x = tl.load(x_ptr + rows[:, None] * xr + x_off[None, :], mask=m2, other=1.0).to(ACC)
        p = tl.load(st_ptr + st_off, mask=m2, other=1.0)
        z = tl.load(dc_ptr + st_off, mask=m2, other=0)
        # d prod / d x_i = product of the others: p / x_i without zeros; with one zero only
        # the zero's own gradient survives; with two or more every gradient is 0
        v = tl.where(z == 0, g * p / x, tl.where((z == 1) & (x == 0.0), g * p, 0.0))
    # every row written once (zeros included): no separate memset of grad_data
    v = tl.where(m2, v, 0.0)
    d_off = col_offset(cols, S1, S2, S3, ds0, ds1, ds2, ds3, FLAT)
    tl.store(dx_ptr + rows[:, None] * dr + d_off[None, :], v.to(dx_ptr.dtype.element_ty),
             mask=rm[:, None] & cm[None, :])
