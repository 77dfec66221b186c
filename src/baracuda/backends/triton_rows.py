"""Row kernels shared by the families: the grouped reduction and the row gather.

Tensors are [rows, D...]; the inner dims are collapsed on the host to at most 4 and a flat
column maps to its element offset through `col_offset` (extent-1 dims compile away because
Triton specializes 1s).

`grouped_reduce_kernel`: program (group, column block) owns its output tile and walks the
group's rows in ascending sorted position (sorted rows, or the stable permutation of
`grouping`), BLOCK_R rows at a time, reducing each tile in a fixed tree. No float atomics, so
every run is bit-identical. max / min also keep the row of the winner: the larger value wins,
NaN beats everything, and on ties the smaller row wins (compared by row number, so any order of
the rows gives the same winner).

`row_gather_kernel`: out row k is source row index[k].
"""

from __future__ import annotations

import triton
import triton.language as tl

from .triton_support import line_offset

K_SUM: tl.constexpr = tl.constexpr(0)
K_MEAN: tl.constexpr = tl.constexpr(1)
K_MAX: tl.constexpr = tl.constexpr(2)
K_MIN: tl.constexpr = tl.constexpr(3)
K_PROD: tl.constexpr = tl.constexpr(4)
K_PROD_STATS: tl.constexpr = tl.constexpr(5)  # product of non-zeros + zero count
K_LAST: tl.constexpr = tl.constexpr(6)  # the group's last row (the last writer wins)


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
def grouped_reduce_kernel(
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
    # SEGS consecutive groups per program: many small (or empty) groups, as in a gradient
    # keyed by token id, would otherwise cost one tiny program each
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
            # identities first: an empty group (most of them in a gradient keyed by token
            # id) skips the lanes and their cross-warp reduction entirely
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
            if HAS_BASE:  # out = base + alpha * sum, or the last row (base if none)
                b_off = seg * br + col_offset(cols, S1, S2, S3, bs0, bs1, bs2, bs3, FLAT)
                b = tl.load(base_ptr + b_off, mask=cm & seg_ok, other=0.0).to(ACC)
                if KIND == K_LAST:
                    acc = tl.where(end > start, acc, b)
                else:
                    acc = b + alpha * acc
            tl.store(out_ptr + o_off, acc.to(out_ptr.dtype.element_ty), mask=cm & seg_ok)
        if STORE_ARG:  # best is already a row number (-1: empty group)
            a_off = seg * ar + col_offset(cols, S1, S2, S3, as0, as1, as2, as3, FLAT)
            tl.store(arg_ptr + a_off, best, mask=cm & seg_ok)


@triton.jit
def row_gather_kernel(src_ptr, idx_ptr, dst_ptr, K, n, D, idx_stride,
                      S1, S2, S3,
                      sr, ss0, ss1, ss2, ss3,
                      dr, ds0, ds1, ds2, ds3,
                      BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr, FLAT: tl.constexpr,
                      CHECK: tl.constexpr):
    ks = tl.program_id(0).to(tl.int64) * BLOCK_K + tl.arange(0, BLOCK_K)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    km = ks < K
    cm = cols < D
    i = tl.load(idx_ptr + ks * idx_stride, mask=km, other=0).to(tl.int64)
    ok = km & (i >= 0) & (i < n)  # out of range reads nothing
    if CHECK:  # CUDA: torch's device-side assert instead of a host sync (rows.ASSERT_LAUNCH)
        tl.device_assert(ok | ~km, "index out of range in self")
    s_off = col_offset(cols, S1, S2, S3, ss0, ss1, ss2, ss3, FLAT)
    v = tl.load(src_ptr + tl.where(ok, i, 0)[:, None] * sr + s_off[None, :],
                mask=ok[:, None] & cm[None, :], other=0)
    d_off = col_offset(cols, S1, S2, S3, ds0, ds1, ds2, ds3, FLAT)
    tl.store(dst_ptr + ks[:, None] * dr + d_off[None, :], v, mask=km[:, None] & cm[None, :])
