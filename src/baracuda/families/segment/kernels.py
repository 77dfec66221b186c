"""Segment reduction kernels: one segment-owned forward and one row-parallel backward source.

Forward: program (segment, column block) owns its output tile and walks the segment's rows in
ascending row order (sorted positions, or the stable permutation of unsorted ids), BLOCK_R rows
at a time, reducing each tile in a fixed tree. No float atomics, so every run is bit-identical.
max / min also keep the row of the winner: the larger value wins, NaN beats everything, and on
ties the smaller row wins (compared by row number, so any order of the rows gives the same
winner); the backward sends the gradient to exactly that row.

Backward: program (row block, column block) reads each row's segment and writes its gradient
once: coalesced writes, zeros for dropped rows.

Inner dims of data [N, D...] are collapsed on the host to at most 4 dims; `line_offset` maps a
flat column to its element offset (extent-1 dims compile away because Triton specializes 1s).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import line_offset

K_SUM: tl.constexpr = tl.constexpr(0)
K_MEAN: tl.constexpr = tl.constexpr(1)
K_MAX: tl.constexpr = tl.constexpr(2)
K_MIN: tl.constexpr = tl.constexpr(3)
K_PROD: tl.constexpr = tl.constexpr(4)
K_PROD_STATS: tl.constexpr = tl.constexpr(5)  # product of non-zeros + zero count (prod bwd)
K_LAST: tl.constexpr = tl.constexpr(6)  # the segment's last row (index_copy: last one wins)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def col_offset(cols, S1, S2, S3, s0, s1, s2, s3, FLAT: tl.constexpr):
    """Element offsets of flat columns; FLAT (one collapsed inner dim) skips the int64
    div/mod of `line_offset`, which costs more than the copy itself in short programs."""
    if FLAT:
        return cols * s3
    return line_offset(cols, S1, S2, S3, s0, s1, s2, s3)


@triton.jit
def segment_reduce_kernel(
    data_ptr, perm_ptr, off_ptr, out_ptr, arg_ptr, D, NSEG,
    S1, S2, S3,
    xr, xs0, xs1, xs2, xs3,
    outr, os0, os1, os2, os3,
    ar, as0, as1, as2, as3,
    base_ptr, br, bs0, bs1, bs2, bs3, alpha,
    KIND: tl.constexpr, SORTED: tl.constexpr, STORE_ARG: tl.constexpr, ACC: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, SEGS: tl.constexpr, FLAT: tl.constexpr,
    HAS_BASE: tl.constexpr,
):
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    cm = cols < D
    x_off = col_offset(cols, S1, S2, S3, xs0, xs1, xs2, xs3, FLAT)
    r_ar = tl.arange(0, BLOCK_R)
    # SEGS consecutive segments per program: many small (or empty) segments, as in an
    # embedding gradient, would otherwise cost one tiny program each
    for j in tl.static_range(SEGS):
        seg = tl.program_id(0).to(tl.int64) * SEGS + j
        seg_ok = seg < NSEG
        start = tl.load(off_ptr + seg, mask=seg_ok, other=0).to(tl.int64)
        end = tl.load(off_ptr + seg + 1, mask=seg_ok, other=0).to(tl.int64)
        if KIND == K_LAST:
            has = end > start
            last = tl.maximum(end - 1, 0)
            if SORTED:
                lrow = last
            else:
                lrow = tl.load(perm_ptr + last, mask=has & seg_ok, other=0).to(tl.int64)
            acc = tl.load(data_ptr + lrow * xr + x_off, mask=cm & has & seg_ok,
                          other=0.0).to(ACC)
        else:
            # identities first: an empty segment (most of them in an embedding gradient)
            # skips the lanes and their cross-warp reduction entirely
            if KIND == K_SUM or KIND == K_MEAN:
                acc = tl.zeros([BLOCK_D], ACC)
            elif KIND == K_PROD or KIND == K_PROD_STATS:
                acc = tl.full([BLOCK_D], 1.0, ACC)
                zc = tl.zeros([BLOCK_D], tl.int32)
            else:
                acc = tl.full([BLOCK_D], -float("inf"), ACC)
                best = tl.full([BLOCK_D], -1, tl.int64)
            if end > start:
                # lane accumulators [BLOCK_R, BLOCK_D]: element-wise updates in the loop, one
                # cross-lane reduction at the end (a fixed tree, so still bit-reproducible)
                if KIND == K_SUM or KIND == K_MEAN:
                    acc2 = tl.zeros([BLOCK_R, BLOCK_D], ACC)
                elif KIND == K_PROD or KIND == K_PROD_STATS:
                    acc2 = tl.full([BLOCK_R, BLOCK_D], 1.0, ACC)
                    zc2 = tl.zeros([BLOCK_R, BLOCK_D], tl.int32)
                else:
                    acc2 = tl.full([BLOCK_R, BLOCK_D], -float("inf"), ACC)
                    pos2 = tl.full([BLOCK_R, BLOCK_D], -1, tl.int32)  # lane winner's row
                for k in range(start, end, BLOCK_R):
                    pos = k + r_ar
                    rm = pos < end
                    if SORTED:
                        rows = pos.to(tl.int64)
                    else:
                        rows = tl.load(perm_ptr + pos, mask=rm, other=0).to(tl.int64)
                    m2 = rm[:, None] & cm[None, :]
                    x_ptrs = data_ptr + rows[:, None] * xr + x_off[None, :]
                    x = tl.load(x_ptrs, mask=m2, other=0.0).to(ACC)
                    if KIND == K_SUM or KIND == K_MEAN:
                        acc2 += x
                    elif KIND == K_PROD:
                        acc2 *= tl.where(m2, x, 1.0)
                    elif KIND == K_PROD_STATS:
                        z = m2 & (x == 0.0)
                        zc2 += z.to(tl.int32)
                        acc2 *= tl.where(m2 & ~z, x, 1.0)
                    else:
                        if KIND == K_MIN:
                            x = -x  # min(x) = -max(-x): exact, NaN stays NaN
                        # ties (and NaN against NaN) go to the smaller row, compared by row
                        # number: the result does not depend on the order rows arrive in, so
                        # unsorted ids need only an unordered bucketing, not a stable sort
                        r2 = rows.to(tl.int32)[:, None]
                        xn = x != x
                        an = acc2 != acc2
                        better = (x > acc2) | (xn & ~an)
                        tie = ((x == acc2) | (xn & an)) & (r2 < pos2)
                        take = m2 & (better | tie | (pos2 < 0))
                        acc2 = tl.where(take, x, acc2)
                        pos2 = tl.where(take, r2, pos2)
                if KIND == K_SUM or KIND == K_MEAN:
                    acc = tl.sum(acc2, axis=0)
                elif KIND == K_PROD:
                    acc = tl.reduce(acc2, 0, _mul)
                elif KIND == K_PROD_STATS:
                    acc = tl.reduce(acc2, 0, _mul)
                    zc = tl.sum(zc2, axis=0)
                else:
                    nan2 = acc2 != acc2
                    hit2 = pos2 >= 0
                    any_nan = tl.max(nan2.to(tl.int32), axis=0) > 0
                    vmax = tl.max(tl.where(hit2 & ~nan2, acc2, -float("inf")), axis=0)
                    cand = hit2 & tl.where(any_nan[None, :], nan2, (acc2 == vmax[None, :]) & ~nan2)
                    first = tl.min(tl.where(cand, pos2, 2147483647), axis=0)
                    best = tl.where(first < 2147483647, first.to(tl.int64), -1)
                    acc = tl.where(any_nan, float("nan"), vmax)
        o_off = seg * outr + col_offset(cols, S1, S2, S3, os0, os1, os2, os3, FLAT)
        if KIND == K_MEAN:
            cnt = (end - start).to(ACC)
            acc = acc / tl.maximum(cnt, 1.0)
        if KIND == K_MIN:
            acc = -acc
        if KIND == K_PROD_STATS:
            # workspace stats: dense [S, D] in the compute type and int32
            tl.store(out_ptr + seg * D + cols, acc, mask=cm & seg_ok)
            tl.store(arg_ptr + seg * D + cols, zc, mask=cm & seg_ok)
        else:
            if HAS_BASE:  # index_add / index_copy: out = base + alpha * sum, or the last row
                b_off = seg * br + col_offset(cols, S1, S2, S3, bs0, bs1, bs2, bs3, FLAT)
                b = tl.load(base_ptr + b_off, mask=cm & seg_ok, other=0.0).to(ACC)
                if KIND == K_LAST:
                    acc = tl.where(end > start, acc, b)
                else:
                    acc = b + alpha * acc
            tl.store(out_ptr + o_off, acc.to(out_ptr.dtype.element_ty), mask=cm & seg_ok)
        if STORE_ARG:  # best is already a row number (-1: empty segment)
            a_off = seg * ar + col_offset(cols, S1, S2, S3, as0, as1, as2, as3, FLAT)
            tl.store(arg_ptr + a_off, best, mask=cm & seg_ok)


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
