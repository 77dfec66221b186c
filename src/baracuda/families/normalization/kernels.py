"""Row-norm kernels (RMSNorm and LayerNorm; the kind is the RMS constexpr).

A row is the normalized suffix of the input, flattened to M elements; the outer dims (at most
three per launch after host-side collapsing) index rows. Inside a row, flat column c sits at
`_col_off(c, ...)`: c * sc when the suffix collapses to one dim (NI = 1), else decomposed over
up to three collapsed dims [.., IN1, IN2].

Forward: each program owns row groups of BLOCK_R rows (pid, pid + G, ...). SINGLE: the
[BLOCK_R, BLOCK_N] tile stays in registers (one read of x, one write of y). Otherwise the row is
streamed twice in blocks of BLOCK_N through a persistent grid, so the second pass hits L2
(long f32 rows take the chunk exchange of kernels_exchange.py instead).

Backward (rows that fit registers; longer rows take kernels_exchange.py, rows of more than
64 chunks kernels_colsplit.py): persistent
programs (grid G) walk row groups pid, pid + G, ...; dx is written per row and each program
accumulates its own dgamma / dbeta partial over all of its rows, stored once into its row of
the workspace [G, M] (ACCUM: added to it, when one problem takes several launches).
`partial_sum_kernel` then adds the G partials per column in a fixed order: deterministic, no
atomics, and the second stage reads only G * M floats.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.line_reduce import clamped_variance
from ...core.runtime import cdiv


@triton.jit
def _row_off(row, O1, O2, s0, s1, s2):
    """Offset of row `row` (int64) with outer dims [O0, O1, O2] and strides s0..s2."""
    i2 = row % O2
    r = row // O2
    return (r // O1) * s0 + (r % O1) * s1 + i2 * s2


@triton.jit
def _col_off(c, IN1, IN2, sa, sb, sc, NI: tl.constexpr):
    """Offset of flat column c in a normalized suffix collapsed to NI dims [.., IN1, IN2]."""
    if NI == 3:
        return (c // (IN1 * IN2)) * sa + ((c // IN2) % IN1) * sb + (c % IN2) * sc
    if NI == 2:
        return (c // IN2) * sb + (c % IN2) * sc
    return c * sc


@triton.jit
def _cols(BLOCK_N: tl.constexpr, COL64: tl.constexpr):
    """Column indices: int32 (cheaper addresses, fewer registers) unless a row's offsets can
    pass 2**31 (COL64, decided on the host); row offsets are always int64."""
    if COL64:
        return tl.arange(0, BLOCK_N).to(tl.int64)
    return tl.arange(0, BLOCK_N)


@triton.jit
def _residual_sum(x, r, ACC: tl.constexpr, h_ty: tl.constexpr):
    """h = x + r, added in ACC and rounded to the stored type first: the backward sees exactly
    the h the fused residual variant writes. The one source for every forward path."""
    return (x.to(ACC) + r.to(ACC)).to(h_ty)


@triton.jit
def _xhat(x, mean, rstd, mask, RMS: tl.constexpr):
    """Normalized input of the backward, 0 in masked lanes so they add nothing to the row
    sums. Shared with kernels_colsplit.py so both backward paths see the same xhat."""
    if RMS:
        return tl.where(mask, x * rstd, 0.0)
    return tl.where(mask, (x - mean) * rstd, 0.0)


@triton.jit
def _dx(wdy, xhat, c1, c2, rstd, RMS: tl.constexpr):
    """dx = (w dy - xhat c1 - c2) rstd, c1 = mean(w dy xhat), c2 = mean(w dy) (RMSNorm: no
    c2, the mean is not subtracted). The one source of the formula for both backward paths
    (in-register here, column-split in kernels_colsplit.py), so a fix cannot miss one."""
    if RMS:
        return (wdy - xhat * c1) * rstd
    return (wdy - xhat * c1 - c2) * rstd


@triton.jit
def _store_param_partials(part_ptr, row, n_part_rows, M, cols, mask, dg, db,
                          HAS_W: tl.constexpr, HAS_DB: tl.constexpr, ACCUM: tl.constexpr):
    """A backward program's dgamma / dbeta partials into row `row` of the [n_part_rows, M]
    dgamma partials (then [n_part_rows, M] dbeta; dbeta alone when there is no gamma),
    added to what is there under ACCUM (a problem split over several launches)."""
    if HAS_W:
        dg_row = part_ptr + row * M + cols
        if ACCUM:
            dg += tl.load(dg_row, mask=mask, other=0.0)
        tl.store(dg_row, dg, mask=mask)
    if HAS_DB:
        if HAS_W:
            db_row = part_ptr + (n_part_rows + row) * M + cols
        else:
            db_row = part_ptr + row * M + cols
        if ACCUM:
            db += tl.load(db_row, mask=mask, other=0.0)
        tl.store(db_row, db, mask=mask)


@triton.jit
def row_norm_fwd_kernel(
    x_ptr, r_ptr, h_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr,
    n_rows, M, O1, O2, IN1, IN2, G, eps, eps_lo,
    xs0, xs1, xs2, xsa, xsb, xsc,
    rs0, rs1, rs2, rsa, rsb, rsc,
    hs0, hs1, hs2, hsa, hsb, hsc,
    ys0, ys1, ys2, ysa, ysb, ysc,
    wsa, wsb, wsc, bsa, bsb, bsc,
    ms0, ms1, ms2, ts0, ts1, ts2,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, HAS_RES: tl.constexpr,
    NI: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
    SINGLE: tl.constexpr, COL64: tl.constexpr, PIPE: tl.constexpr,
    KEEP: tl.constexpr = "", STREAM: tl.constexpr = "", W_FIRST: tl.constexpr = False,
):
    pid = tl.program_id(0).to(tl.int64)
    cols0 = _cols(BLOCK_N, COL64)
    n_groups = tl.cdiv(n_rows, BLOCK_R)
    # Float scalars arrive as fp32: eps = eps + eps_lo restores it in f64 (f64 inputs).
    one = tl.full([], 1.0, ACC)
    eps_a = eps * one + eps_lo * one
    cm = cols0 < M
    xo = _col_off(cols0, IN1, IN2, xsa, xsb, xsc, NI)[None, :]
    ro = _col_off(cols0, IN1, IN2, rsa, rsb, rsc, NI)[None, :]
    if PIPE:
        # Persistent rows in registers: parameters load once per program, and the next row
        # group's x (and residual) is prefetched while this one is reduced and written (PIPE:
        # rows short enough for the extra registers; else one row per program, as loaded).
        if HAS_W:
            w = tl.load(w_ptr + _col_off(cols0, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                        other=0.0).to(ACC)
        if HAS_B:
            b = tl.load(b_ptr + _col_off(cols0, IN1, IN2, bsa, bsb, bsc, NI), mask=cm,
                        other=0.0).to(ACC)
        rows_n = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
        m_n = (rows_n < n_rows)[:, None] & cm[None, :]
        x_nxt = tl.load(x_ptr + _row_off(rows_n, O1, O2, xs0, xs1, xs2)[:, None] + xo,
                        mask=m_n, other=0.0)
        if HAS_RES:
            r_nxt = tl.load(r_ptr + _row_off(rows_n, O1, O2, rs0, rs1, rs2)[:, None] + ro,
                            mask=m_n, other=0.0)
    for g in range(pid, n_groups, G):
        rows = g * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
        row_ok = rows < n_rows
        x_row = x_ptr + _row_off(rows, O1, O2, xs0, xs1, xs2)[:, None]
        y_row = y_ptr + _row_off(rows, O1, O2, ys0, ys1, ys2)[:, None]
        r_row = r_ptr + _row_off(rows, O1, O2, rs0, rs1, rs2)[:, None]
        h_row = h_ptr + _row_off(rows, O1, O2, hs0, hs1, hs2)[:, None]
        if SINGLE:
            mask = row_ok[:, None] & cm[None, :]
            if PIPE:
                x = x_nxt
                rows_n = rows + G * BLOCK_R
                m_n = (rows_n < n_rows)[:, None] & cm[None, :]
                x_nxt = tl.load(x_ptr + _row_off(rows_n, O1, O2, xs0, xs1, xs2)[:, None] + xo,
                                mask=m_n, other=0.0)
                if HAS_RES:
                    r = r_nxt
                    r_nxt = tl.load(
                        r_ptr + _row_off(rows_n, O1, O2, rs0, rs1, rs2)[:, None] + ro,
                        mask=m_n, other=0.0)
            else:
                if W_FIRST and HAS_W:  # gamma's load in flight with the row's, not after
                    w = tl.load(w_ptr + _col_off(cols0, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                                other=0.0).to(ACC)
                x = tl.load(x_row + xo, mask=mask, other=0.0)
                if HAS_RES:
                    r = tl.load(r_row + ro, mask=mask, other=0.0)
            if HAS_RES:
                # h is rounded to the storage type first: the backward sees exactly this h.
                x = _residual_sum(x, r, ACC, h_ptr.dtype.element_ty)
                tl.store(h_row + _col_off(cols0, IN1, IN2, hsa, hsb, hsc, NI)[None, :], x,
                         mask=mask)
            xf = x.to(ACC)
            if RMS:
                mean = tl.zeros([BLOCK_R], ACC)
                xc = xf
            else:
                mean = tl.sum(xf, 1) / M
                xc = tl.where(mask, xf - mean[:, None], 0.0)
            rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, 1) / M + eps_a)
            y = xc * rstd[:, None]
            if not PIPE:
                if HAS_W and not W_FIRST:
                    w = tl.load(w_ptr + _col_off(cols0, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                                other=0.0).to(ACC)
                if HAS_B:
                    b = tl.load(b_ptr + _col_off(cols0, IN1, IN2, bsa, bsb, bsc, NI), mask=cm,
                                other=0.0).to(ACC)
            if HAS_W:
                y = y * w[None, :]
            if HAS_B:
                y = y + b[None, :]
            tl.store(y_row + _col_off(cols0, IN1, IN2, ysa, ysb, ysc, NI)[None, :],
                     y.to(y_ptr.dtype.element_ty), mask=mask)
        else:
            # Pass 1: per-lane sums of (x - k) and (x - k)^2 with k = the row's first element,
            # so the variance does not cancel catastrophically when |mean| >> std.
            if RMS:
                k = tl.zeros([BLOCK_R], ACC)
            else:
                # one load per row (flat column 0 sits at offset 0), not a masked tile
                x0 = tl.load(x_ptr + _row_off(rows, O1, O2, xs0, xs1, xs2), mask=row_ok,
                             other=0.0)
                if HAS_RES:
                    r0 = tl.load(r_ptr + _row_off(rows, O1, O2, rs0, rs1, rs2), mask=row_ok,
                                 other=0.0)
                    x0 = _residual_sum(x0, r0, ACC, h_ptr.dtype.element_ty)
                k = x0.to(ACC)
            s1 = tl.zeros([BLOCK_R, BLOCK_N], ACC)
            s2 = tl.zeros([BLOCK_R, BLOCK_N], ACC)
            for start in range(0, M, BLOCK_N):
                cols = start + cols0
                mask = row_ok[:, None] & (cols < M)[None, :]
                x = tl.load(x_row + _col_off(cols, IN1, IN2, xsa, xsb, xsc, NI)[None, :],
                            mask=mask, other=0.0, eviction_policy=KEEP)
                if HAS_RES:
                    r = tl.load(r_row + _col_off(cols, IN1, IN2, rsa, rsb, rsc, NI)[None, :],
                                mask=mask, other=0.0, eviction_policy=STREAM)
                    x = _residual_sum(x, r, ACC, h_ptr.dtype.element_ty)
                    tl.store(h_row + _col_off(cols, IN1, IN2, hsa, hsb, hsc, NI)[None, :], x,
                             mask=mask)
                d = tl.where(mask, x.to(ACC) - k[:, None], 0.0)
                s1 += d
                s2 += d * d
            t1 = tl.sum(s1, 1) / M
            if RMS:
                mean = tl.zeros([BLOCK_R], ACC)
                var = tl.sum(s2, 1) / M
            else:
                mean = k + t1
                var = clamped_variance(tl.sum(s2, 1) / M - t1 * t1)
            rstd = 1.0 / tl.sqrt(var + eps_a)
            last = ((M - 1) // BLOCK_N) * BLOCK_N
            for i in range(0, M, BLOCK_N):
                cols = (last - i) + cols0  # backwards: the blocks read last are likeliest in L2
                cm = cols < M
                mask = row_ok[:, None] & cm[None, :]
                if HAS_RES:
                    x = tl.load(h_row + _col_off(cols, IN1, IN2, hsa, hsb, hsc, NI)[None, :],
                                mask=mask, other=0.0, eviction_policy=STREAM)
                else:
                    x = tl.load(x_row + _col_off(cols, IN1, IN2, xsa, xsb, xsc, NI)[None, :],
                                mask=mask, other=0.0, eviction_policy=STREAM)
                y = (x.to(ACC) - mean[:, None]) * rstd[:, None]
                if HAS_W:
                    w = tl.load(w_ptr + _col_off(cols, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                                other=0.0)
                    y = y * w.to(ACC)[None, :]
                if HAS_B:
                    b = tl.load(b_ptr + _col_off(cols, IN1, IN2, bsa, bsb, bsc, NI), mask=cm,
                                other=0.0)
                    y = y + b.to(ACC)[None, :]
                tl.store(y_row + _col_off(cols, IN1, IN2, ysa, ysb, ysc, NI)[None, :],
                         y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy=STREAM)
        if not RMS:
            tl.store(mean_ptr + _row_off(rows, O1, O2, ms0, ms1, ms2),
                     mean.to(mean_ptr.dtype.element_ty), mask=row_ok)
        tl.store(rstd_ptr + _row_off(rows, O1, O2, ts0, ts1, ts2),
                 rstd.to(rstd_ptr.dtype.element_ty), mask=row_ok)


@triton.jit
def row_norm_bwd_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dh_ptr, dx_ptr, part_ptr,
    n_rows, M, O1, O2, IN1, IN2, G,
    gs0, gs1, gs2, gsa, gsb, gsc,
    xs0, xs1, xs2, xsa, xsb, xsc,
    hs0, hs1, hs2, hsa, hsb, hsc,
    ds0, ds1, ds2, dsa, dsb, dsc,
    wsa, wsb, wsc, ms0, ms1, ms2, ts0, ts1, ts2,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_DB: tl.constexpr, HAS_RES: tl.constexpr,
    ACCUM: tl.constexpr, NI: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr, COL64: tl.constexpr, PIPE: tl.constexpr,
    HOLD_W: tl.constexpr = True,
):
    """Rows of up to BLOCK_N elements in registers (longer rows: kernels_exchange.py).
    part_ptr: [G, M] dgamma partials (when HAS_W), then [G, M] dbeta partials (HAS_DB).
    HOLD_W: keep gamma in registers across row groups (else re-read per group, from L1/L2:
    the registers go to the row of 16K elements)."""
    pid = tl.program_id(0).to(tl.int64)
    cols0 = _cols(BLOCK_N, COL64)
    n_groups = tl.cdiv(n_rows, BLOCK_R)
    dg_row = part_ptr + pid * M
    if HAS_W:
        db_row = part_ptr + (G + pid) * M
    else:
        db_row = part_ptr + pid * M
    cm0 = cols0 < M
    if HAS_W and HOLD_W:
        w0 = tl.load(w_ptr + _col_off(cols0, IN1, IN2, wsa, wsb, wsc, NI), mask=cm0,
                     other=0.0).to(ACC)
    dg_acc = tl.zeros([BLOCK_N], ACC)
    db_acc = tl.zeros([BLOCK_N], ACC)
    if ACCUM:
        if HAS_W:
            dg_acc = tl.load(dg_row + cols0, mask=cm0, other=0.0)
        if HAS_DB:
            db_acc = tl.load(db_row + cols0, mask=cm0, other=0.0)
    go = _col_off(cols0, IN1, IN2, gsa, gsb, gsc, NI)[None, :]
    xo = _col_off(cols0, IN1, IN2, xsa, xsb, xsc, NI)[None, :]
    if PIPE:  # prefetch the first row group's dy and x (then each next one in the loop)
        rows_n = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
        m_n = (rows_n < n_rows)[:, None] & cm0[None, :]
        dy_nxt = tl.load(dy_ptr + _row_off(rows_n, O1, O2, gs0, gs1, gs2)[:, None] + go,
                         mask=m_n, other=0.0)
        x_nxt = tl.load(x_ptr + _row_off(rows_n, O1, O2, xs0, xs1, xs2)[:, None] + xo,
                        mask=m_n, other=0.0)
    for g in range(pid, n_groups, G):
        rows = g * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
        row_ok = rows < n_rows
        g_row = dy_ptr + _row_off(rows, O1, O2, gs0, gs1, gs2)[:, None]
        x_row = x_ptr + _row_off(rows, O1, O2, xs0, xs1, xs2)[:, None]
        d_row = dx_ptr + _row_off(rows, O1, O2, ds0, ds1, ds2)[:, None]
        h_row = dh_ptr + _row_off(rows, O1, O2, hs0, hs1, hs2)[:, None]
        rstd = tl.load(rstd_ptr + _row_off(rows, O1, O2, ts0, ts1, ts2), mask=row_ok,
                       other=0.0).to(ACC)
        if RMS:
            mean = tl.zeros([BLOCK_R], ACC)
        else:
            mean = tl.load(mean_ptr + _row_off(rows, O1, O2, ms0, ms1, ms2), mask=row_ok,
                           other=0.0).to(ACC)
        mask = row_ok[:, None] & cm0[None, :]
        if PIPE:
            dy = dy_nxt.to(ACC)
            x = x_nxt.to(ACC)
            rows_n = rows + G * BLOCK_R
            m_n = (rows_n < n_rows)[:, None] & cm0[None, :]
            dy_nxt = tl.load(
                dy_ptr + _row_off(rows_n, O1, O2, gs0, gs1, gs2)[:, None] + go,
                mask=m_n, other=0.0)
            x_nxt = tl.load(x_ptr + _row_off(rows_n, O1, O2, xs0, xs1, xs2)[:, None] + xo,
                            mask=m_n, other=0.0)
        else:
            dy = tl.load(g_row + go, mask=mask, other=0.0).to(ACC)
            x = tl.load(x_row + xo, mask=mask, other=0.0).to(ACC)
        xhat = _xhat(x, mean[:, None], rstd[:, None], mask, RMS)
        if HAS_W:
            if HOLD_W:
                wdy = dy * w0[None, :]
            else:
                wdy = dy * tl.load(w_ptr + _col_off(cols0, IN1, IN2, wsa, wsb, wsc, NI),
                                   mask=cm0, other=0.0).to(ACC)[None, :]
            dg_acc += tl.sum(dy * xhat, 0)
        else:
            wdy = dy
        c1 = tl.sum(wdy * xhat, 1) / M
        if RMS:
            c2 = c1  # unused by _dx: RMSNorm has no mean term
        else:
            c2 = tl.sum(wdy, 1) / M
        dx = _dx(wdy, xhat, c1[:, None], c2[:, None], rstd[:, None], RMS)
        if not RMS:
            # M = 1: y = beta does not depend on x; exact zero (no fma rounding residue),
            # but NaN where rstd = inf (eps = 0): y is NaN there, and torch's dx too
            dx = tl.where(M == 1, 0.0 * rstd[:, None], dx)
        if HAS_DB:
            db_acc += tl.sum(dy, 0)
        if HAS_RES:
            dx += tl.load(h_row + _col_off(cols0, IN1, IN2, hsa, hsb, hsc, NI)[None, :],
                          mask=mask, other=0.0).to(ACC)
        tl.store(d_row + _col_off(cols0, IN1, IN2, dsa, dsb, dsc, NI)[None, :],
                 dx.to(dx_ptr.dtype.element_ty), mask=mask)
    if HAS_W:
        tl.store(dg_row + cols0, dg_acc, mask=cm0)
    if HAS_DB:
        tl.store(db_row + cols0, db_acc, mask=cm0)


@triton.jit
def partial_sum_kernel(
    part_ptr, out_ptr, out2_ptr, G, M, IN1, IN2, osa, osb, osc, os2a, os2b, os2c,
    NI: tl.constexpr, ACC: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """out[c] = sum over g of part[g * M + c], in a fixed order (the second, tiny stage);
    programs of grid axis 1 = 1 sum the next [G, M] block into out2: dgamma and dbeta in one
    launch (a second launch is a visible share of a short-row backward)."""
    second = tl.program_id(1)
    part_ptr += second.to(tl.int64) * G * M
    pid = tl.program_id(0).to(tl.int64)
    cols = pid * BLOCK_C + tl.arange(0, BLOCK_C).to(tl.int64)
    cm = cols < M
    acc = tl.zeros([BLOCK_G, BLOCK_C], ACC)
    gi = tl.arange(0, BLOCK_G).to(tl.int64)
    for start in range(0, G, BLOCK_G):
        g = start + gi
        acc += tl.load(part_ptr + g[:, None] * M + cols[None, :],
                       mask=(g < G)[:, None] & cm[None, :], other=0.0)
    total = tl.sum(acc, 0).to(out_ptr.dtype.element_ty)
    if second == 0:
        tl.store(out_ptr + _col_off(cols, IN1, IN2, osa, osb, osc, NI), total, mask=cm)
    else:
        tl.store(out2_ptr + _col_off(cols, IN1, IN2, os2a, os2b, os2c, NI), total, mask=cm)


def sum_partials(part, outs, g: int, m: int, in1: int, in2: int, ni: int, acc, cfg: dict):
    """outs[k] = the column sums of the k-th [g, m] block of `part` (dgamma's first), in a
    fixed order, one partial_sum_kernel launch for all (the second stage of every norm and
    channel-norm backward). outs: (tensor, (sa, sb, sc)) with the normalized suffix collapsed
    to `ni` dims [.., in1, in2]; g == 0 (an empty batch) writes zeros, the sums over no rows.
    cfg: BLOCK_G, BLOCK_C, num_warps."""
    if not outs:
        return
    if g == 0:
        for out, _ in outs:
            out.zero_()
        return
    (out, stride), (out2, stride2) = outs[0], outs[-1]
    partial_sum_kernel[(cdiv(m, cfg["BLOCK_C"]), len(outs))](
        part, out, out2, g, m, in1, in2, *stride, *stride2, NI=ni, ACC=acc, **cfg)
