"""Row norms of long rows by chunk exchange (backends/triton_exchange.py): a row longer
than one program's tile is cut into n_chunks chunks of BLOCK_N columns, one program each.

Forward (program id = row * n_chunks + chunk): each program loads its chunk once, writes its
partial sums to the workspace, waits at the row's counter for the row's other chunks, adds
the row's partials in chunk order (every program of the row gets the same bits) and writes its
chunk of y from the registers it holds: x is read from DRAM once, where the two-pass loop of
kernels.py reads it twice.

Partials are the sums of d and d^2 with d = x - k, k = the row's first element for LayerNorm
(0 for RMSNorm): sums merge by addition, and the shift keeps the variance from cancelling when
|mean| >> std, as in the loop. A program that stops waiting (SPIN polls) recomputes the other
chunks' partials itself with the same code (`_chunk_sums`), so the result is bit-identical.

Backward (`row_norm_bwd_exchange_kernel`): the same exchange of sum(w dy xhat) and sum(w dy)
per row, by groups of rows so that dgamma / dbeta stay in registers over many rows.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.line_reduce import clamped_variance
from ...backends.triton_exchange import arrive, arrive_and_wait, wait_all
from .kernels import (
    _col_off,
    _cols,
    _dx,
    _residual_sum,
    _row_off,
    _store_param_partials,
    _xhat,
)


@triton.jit
def _chunk_input(x_row, r_row, cols, mask, IN1, IN2, xsa, xsb, xsc, rsa, rsb, rsc,
                 NI: tl.constexpr, HAS_RES: tl.constexpr, ACC: tl.constexpr,
                 h_ty: tl.constexpr):
    """The normalized input of a chunk as stored: x, or h = x + residual rounded to the
    element type (what the fused residual variant writes and its backward sees)."""
    x = tl.load(x_row + _col_off(cols, IN1, IN2, xsa, xsb, xsc, NI)[None, :], mask=mask,
                other=0.0)
    if HAS_RES:
        r = tl.load(r_row + _col_off(cols, IN1, IN2, rsa, rsb, rsc, NI)[None, :], mask=mask,
                    other=0.0)
        x = _residual_sum(x, r, ACC, h_ty)
    return x


@triton.jit
def _chunk_sums(x, k, mask, ACC: tl.constexpr):
    """A chunk's partial: sum(d), sum(d^2) for d = x - k over its valid columns."""
    d = tl.where(mask, x.to(ACC) - k[:, None], 0.0)
    return tl.sum(d, 1), tl.sum(d * d, 1)


@triton.jit
def row_norm_fwd_exchange_kernel(
    x_ptr, r_ptr, h_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, ws_ptr, cnt_ptr,
    n_rows, M, O1, O2, IN1, IN2, n_chunks, eps, eps_lo,
    xs0, xs1, xs2, xsa, xsb, xsc,
    rs0, rs1, rs2, rsa, rsb, rsc,
    hs0, hs1, hs2, hsa, hsb, hsc,
    ys0, ys1, ys2, ysa, ysb, ysc,
    wsa, wsb, wsc, bsa, bsb, bsc,
    ms0, ms1, ms2, ts0, ts1, ts2,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, HAS_RES: tl.constexpr,
    NI: tl.constexpr, ACC: tl.constexpr, BLOCK_N: tl.constexpr, COL64: tl.constexpr,
    PARTS: tl.constexpr, SPIN: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    row = pid // n_chunks
    chunk = pid - row * n_chunks
    rows = row + tl.arange(0, 1).to(tl.int64)  # [1]: the row as a one-row tile
    cols0 = _cols(BLOCK_N, COL64)
    cols = chunk * BLOCK_N + cols0
    mask = (cols < M)[None, :]
    h_ty: tl.constexpr = h_ptr.dtype.element_ty
    one = tl.full([], 1.0, ACC)
    eps_a = eps * one + eps_lo * one  # eps arrives as two fp32 halves (f64 inputs)
    x_row = x_ptr + _row_off(rows, O1, O2, xs0, xs1, xs2)[:, None]
    r_row = r_ptr + _row_off(rows, O1, O2, rs0, rs1, rs2)[:, None]
    x = _chunk_input(x_row, r_row, cols, mask, IN1, IN2, xsa, xsb, xsc, rsa, rsb, rsc,
                     NI, HAS_RES, ACC, h_ty)
    if HAS_RES:
        h_row = h_ptr + _row_off(rows, O1, O2, hs0, hs1, hs2)[:, None]
        tl.store(h_row + _col_off(cols, IN1, IN2, hsa, hsb, hsc, NI)[None, :], x, mask=mask)
    if RMS:
        k = tl.zeros([1], ACC)
    else:
        # k as a masked tile load: one scalar load instead saves a few registers but runs
        # slower
        first = (cols0 < 1)[None, :]
        x0 = _chunk_input(x_row, r_row, cols0, first, IN1, IN2, xsa, xsb, xsc, rsa, rsb, rsc,
                          NI, HAS_RES, ACC, h_ty)
        k = tl.sum(x0.to(ACC), 1)
    s1, s2 = _chunk_sums(x, k, mask, ACC)
    tl.store(ws_ptr + 2 * pid + tl.arange(0, 1), s1)
    tl.store(ws_ptr + 2 * pid + 1 + tl.arange(0, 1), s2)
    j = tl.arange(0, PARTS)
    if arrive_and_wait(cnt_ptr + row, n_chunks, SPIN):
        part = ws_ptr + 2 * (row * n_chunks + j)
        p1 = tl.load(part, mask=j < n_chunks, other=0.0, volatile=True)
        p2 = tl.load(part + 1, mask=j < n_chunks, other=0.0, volatile=True)
    else:  # not every chunk ran: compute the row's partials here, the same bits
        p1 = tl.zeros([PARTS], ACC)
        p2 = tl.zeros([PARTS], ACC)
        for kk in range(0, n_chunks):
            c = kk * BLOCK_N + cols0
            m_k = (c < M)[None, :]
            xk = _chunk_input(x_row, r_row, c, m_k, IN1, IN2, xsa, xsb, xsc, rsa, rsb, rsc,
                              NI, HAS_RES, ACC, h_ty)
            a1, a2 = _chunk_sums(xk, k, m_k, ACC)
            p1 = tl.where(j == kk, tl.sum(a1, 0), p1)
            p2 = tl.where(j == kk, tl.sum(a2, 0), p2)
    t1 = tl.sum(p1, 0) / M
    if RMS:
        mean = tl.zeros([1], ACC)
        var = tl.zeros([1], ACC) + tl.sum(p2, 0) / M
    else:
        mean = k + t1
        var = clamped_variance(tl.sum(p2, 0) / M - t1 * t1) + tl.zeros([1], ACC)
    rstd = 1.0 / tl.sqrt(var + eps_a)
    y = (x.to(ACC) - mean[:, None]) * rstd[:, None]
    cm = cols < M
    if HAS_W:
        w = tl.load(w_ptr + _col_off(cols, IN1, IN2, wsa, wsb, wsc, NI), mask=cm, other=0.0)
        y = y * w.to(ACC)[None, :]
    if HAS_B:
        b = tl.load(b_ptr + _col_off(cols, IN1, IN2, bsa, bsb, bsc, NI), mask=cm, other=0.0)
        y = y + b.to(ACC)[None, :]
    y_row = y_ptr + _row_off(rows, O1, O2, ys0, ys1, ys2)[:, None]
    tl.store(y_row + _col_off(cols, IN1, IN2, ysa, ysb, ysc, NI)[None, :],
             y.to(y_ptr.dtype.element_ty), mask=mask)
    first_chunk = chunk == 0
    if not RMS:
        tl.store(mean_ptr + _row_off(rows, O1, O2, ms0, ms1, ms2),
                 mean.to(mean_ptr.dtype.element_ty), mask=first_chunk)
    tl.store(rstd_ptr + _row_off(rows, O1, O2, ts0, ts1, ts2),
             rstd.to(rstd_ptr.dtype.element_ty), mask=first_chunk)


@triton.jit
def _grad_terms(dy, x, w, mean, rstd, mask, RMS: tl.constexpr, HAS_W: tl.constexpr):
    """(xhat, w dy) of a backward chunk and its partials sum(w dy xhat), sum(w dy): the one
    computation of both the exchanging and the no-wait path, so they give the same bits."""
    xhat = _xhat(x, mean, rstd, mask, RMS)
    if HAS_W:
        wdy = dy * w
    else:
        wdy = dy
    return xhat, wdy, tl.sum(wdy * xhat, 0), tl.sum(wdy, 0)


@triton.jit
def _row_stats(mean_ptr, rstd_ptr, row, O1, O2, ms0, ms1, ms2, ts0, ts1, ts2,
               RMS: tl.constexpr, ACC: tl.constexpr):
    """(mean, rstd) of a row; RMSNorm has no mean (rstd stands in, unused by _xhat)."""
    rstd = tl.load(rstd_ptr + _row_off(row, O1, O2, ts0, ts1, ts2)).to(ACC)
    if RMS:
        return rstd, rstd
    return tl.load(mean_ptr + _row_off(row, O1, O2, ms0, ms1, ms2)).to(ACC), rstd


@triton.jit
def _grad_chunk(dy_ptr, x_ptr, row, cols, mask, O1, O2, IN1, IN2, gs0, gs1, gs2, gsa, gsb,
                gsc, xs0, xs1, xs2, xsa, xsb, xsc, NI: tl.constexpr, ACC: tl.constexpr,
                POLICY: tl.constexpr):
    """dy and x of one chunk of a row, in ACC."""
    dy = tl.load(dy_ptr + _row_off(row, O1, O2, gs0, gs1, gs2)
                 + _col_off(cols, IN1, IN2, gsa, gsb, gsc, NI), mask=mask, other=0.0,
                 eviction_policy=POLICY).to(ACC)
    x = tl.load(x_ptr + _row_off(row, O1, O2, xs0, xs1, xs2)
                + _col_off(cols, IN1, IN2, xsa, xsb, xsc, NI), mask=mask, other=0.0,
                eviction_policy=POLICY).to(ACC)
    return dy, x


@triton.jit
def _row_coefs(ws_ptr, cnt_ptr, row, n_chunks, dy_ptr, x_ptr, w_ptr, mean, rstd, cols0, M,
               O1, O2, IN1, IN2, gs0, gs1, gs2, gsa, gsb, gsc, xs0, xs1, xs2, xsa, xsb, xsc,
               wsa, wsb, wsc, RMS: tl.constexpr, HAS_W: tl.constexpr, NI: tl.constexpr,
               ACC: tl.constexpr, BLOCK_N: tl.constexpr, PARTS: tl.constexpr,
               SPIN: tl.constexpr):
    """c1 = mean(w dy xhat), c2 = mean(w dy) of a row whose chunks all arrived (or, after
    SPIN polls, recomputed here from every chunk with the same code: the same bits)."""
    j = tl.arange(0, PARTS)
    if wait_all(cnt_ptr + row, n_chunks, SPIN):
        part = ws_ptr + 2 * (row * n_chunks + j)
        p1 = tl.load(part, mask=j < n_chunks, other=0.0, volatile=True)
        p2 = p1
        if not RMS:
            p2 = tl.load(part + 1, mask=j < n_chunks, other=0.0, volatile=True)
    else:
        p1 = tl.zeros([PARTS], ACC)
        p2 = tl.zeros([PARTS], ACC)
        for kk in range(0, n_chunks):
            c = kk * BLOCK_N + cols0
            m_k = c < M
            dy_k, x_k = _grad_chunk(dy_ptr, x_ptr, row, c, m_k, O1, O2, IN1, IN2, gs0, gs1,
                                    gs2, gsa, gsb, gsc, xs0, xs1, xs2, xsa, xsb, xsc, NI, ACC,
                                    "")
            w_k = 1.0
            if HAS_W:
                w_k = tl.load(w_ptr + _col_off(c, IN1, IN2, wsa, wsb, wsc, NI), mask=m_k,
                              other=0.0).to(ACC)
            _, _, b1, b2 = _grad_terms(dy_k, x_k, w_k, mean, rstd, m_k, RMS, HAS_W)
            p1 = tl.where(j == kk, b1, p1)
            p2 = tl.where(j == kk, b2, p2)
    return tl.sum(p1, 0) / M, tl.sum(p2, 0) / M


@triton.jit
def row_norm_bwd_exchange_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dh_ptr, dx_ptr, part_ptr, ws_ptr, cnt_ptr,
    n_rows, M, O1, O2, IN1, IN2, G, n_chunks, group_rows,
    gs0, gs1, gs2, gsa, gsb, gsc,
    xs0, xs1, xs2, xsa, xsb, xsc,
    hs0, hs1, hs2, hsa, hsb, hsc,
    ds0, ds1, ds2, dsa, dsb, dsc,
    wsa, wsb, wsc, ms0, ms1, ms2, ts0, ts1, ts2,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_DB: tl.constexpr, HAS_RES: tl.constexpr,
    ACCUM: tl.constexpr, NI: tl.constexpr, ACC: tl.constexpr, BLOCK_N: tl.constexpr,
    COL64: tl.constexpr, PARTS: tl.constexpr, SPIN: tl.constexpr, AHEAD: tl.constexpr,
):
    """Backward of long rows: program id = group * n_chunks + chunk. A group's n_chunks
    programs walk its group_rows rows together, AHEAD rows apart in two roles per step:

    - publish row r: load its chunk of dy and x from DRAM (asking L2 to keep it), add
      dy xhat (dy) to the chunk's dgamma (dbeta) partial, write sum(w dy xhat) (and
      sum(w dy)) to the workspace and arrive at the row's counter;
    - finish row r - AHEAD, published AHEAD steps earlier, so its chunks have usually all
      arrived by now: gather the row's partials in chunk order (every program of the row gets
      the same bits; after SPIN polls a program recomputes them itself, the same bits), then
      re-read its chunk (an L2 hit) and write dx.

    Finishing right after publishing (dx from the registers just loaded) paid the exchange's
    round trips on every row; a second, cheap read takes them off the critical path. The
    re-read comes after the poll, so nothing larger than gamma and the dgamma / dbeta
    partials is live across it (more programs per SM). Those partials stay in registers over
    the group's rows and are stored once into row `group` of the [G, M] partials (then
    [G, M] dbeta), summed in a fixed order by partial_sum_kernel. DRAM traffic: dy and x
    read once, dx written once (the column split reads dy and x twice)."""
    tl.static_assert(AHEAD >= 1)  # a row is finished only after its own arrival
    pid = tl.program_id(0)
    group = (pid // n_chunks).to(tl.int64)
    chunk = pid - (pid // n_chunks) * n_chunks
    cols0 = _cols(BLOCK_N, COL64)
    cols = chunk * BLOCK_N + cols0
    cm = cols < M
    w = 1.0
    if HAS_W:
        w = tl.load(w_ptr + _col_off(cols, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                    other=0.0).to(ACC)
    dg = tl.zeros([BLOCK_N], ACC)
    db = tl.zeros([BLOCK_N], ACC)
    r0 = group * group_rows
    r1 = tl.minimum(r0 + group_rows, n_rows)
    for step in range(r0, r1 + AHEAD):
        if step < r1:  # publish row `step`
            mean, rstd = _row_stats(mean_ptr, rstd_ptr, step, O1, O2, ms0, ms1, ms2,
                                    ts0, ts1, ts2, RMS, ACC)
            dy, x = _grad_chunk(dy_ptr, x_ptr, step, cols, cm, O1, O2, IN1, IN2, gs0, gs1,
                                gs2, gsa, gsb, gsc, xs0, xs1, xs2, xsa, xsb, xsc, NI, ACC,
                                "evict_last")
            xhat, _, a1, a2 = _grad_terms(dy, x, w, mean, rstd, cm, RMS, HAS_W)
            if HAS_W:
                dg += dy * xhat
            if HAS_DB:
                db += dy
            slot = ws_ptr + 2 * (step * n_chunks + chunk)
            tl.store(slot, a1)
            if not RMS:
                tl.store(slot + 1, a2)
            arrive(cnt_ptr + step)
        done = step - AHEAD
        if done >= r0:  # finish row `done`
            mean, rstd = _row_stats(mean_ptr, rstd_ptr, done, O1, O2, ms0, ms1, ms2,
                                    ts0, ts1, ts2, RMS, ACC)
            c1, c2 = _row_coefs(ws_ptr, cnt_ptr, done, n_chunks, dy_ptr, x_ptr, w_ptr, mean,
                                rstd, cols0, M, O1, O2, IN1, IN2, gs0, gs1, gs2, gsa, gsb, gsc,
                                xs0, xs1, xs2, xsa, xsb, xsc, wsa, wsb, wsc, RMS, HAS_W, NI,
                                ACC, BLOCK_N, PARTS, SPIN)
            dy, x = _grad_chunk(dy_ptr, x_ptr, done, cols, cm, O1, O2, IN1, IN2, gs0, gs1,
                                gs2, gsa, gsb, gsc, xs0, xs1, xs2, xsa, xsb, xsc, NI, ACC,
                                "evict_first")
            xhat, wdy, _, _ = _grad_terms(dy, x, w, mean, rstd, cm, RMS, HAS_W)
            dx = _dx(wdy, xhat, c1, c2, rstd, RMS)
            if HAS_RES:
                dx += tl.load(dh_ptr + _row_off(done, O1, O2, hs0, hs1, hs2)
                              + _col_off(cols, IN1, IN2, hsa, hsb, hsc, NI), mask=cm,
                              other=0.0).to(ACC)
            tl.store(dx_ptr + _row_off(done, O1, O2, ds0, ds1, ds2)
                     + _col_off(cols, IN1, IN2, dsa, dsb, dsc, NI),
                     dx.to(dx_ptr.dtype.element_ty), mask=cm, eviction_policy="evict_first")
    _store_param_partials(part_ptr, group, G, M, cols, cm, dg, db, HAS_W, HAS_DB, ACCUM)
