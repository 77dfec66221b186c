"""Column-split backward for the longest rows (RMSNorm and LayerNorm): rows of more chunks
than the chunk-exchange backward (kernels_exchange.py) holds resident at once; shorter long
rows exchange, which reads dy and x from DRAM once instead of twice.

A row of 32K+ elements does not fit a program's registers, and a program that streams whole
rows must keep its dgamma partial (M floats) in global memory, re-reading and re-writing it
for every row, which runs far below the memory bandwidth. Here the work is split the other
way:

1. `row_grad_stats_kernel`, one program per row: c1 = mean(w dy xhat) (and for LayerNorm
   c2 = mean(w dy)) into a small [2, rows] buffer of the workspace; reads dy and x once.
2. `col_grad_kernel`, grid (column blocks, row chunks): each program owns BLOCK_C columns of a
   chunk of rows, writes dx = (w dy - xhat c1 - c2) rstd row by row and keeps its dgamma /
   dbeta partial in registers, stored once into row `chunk` of the [chunks, M] partials
   (ACCUM: added, when one problem takes several launches). `partial_sum_kernel` then sums
   the chunks per column in a fixed order: deterministic, no atomics.

xhat and dx come from `_xhat` / `_dx` in kernels.py, shared with the in-register backward, so
the two paths keep one formula (only the order of the c1 / c2 row sums differs).

Traffic: dy and x are read twice and dx written once (5 row passes for the ideal 3), all
streaming, with programs enough to fill every SM.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...core.runtime import cdiv
from .kernels import _col_off, _cols, _dx, _row_off, _store_param_partials, _xhat


@triton.jit
def row_grad_stats_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, c_ptr,
    n_rows, M, O1, O2, IN1, IN2,
    gs0, gs1, gs2, gsa, gsb, gsc,
    xs0, xs1, xs2, xsa, xsb, xsc,
    wsa, wsb, wsc, ms0, ms1, ms2, ts0, ts1, ts2,
    RMS: tl.constexpr, HAS_W: tl.constexpr, NI: tl.constexpr, ACC: tl.constexpr,
    BLOCK_N: tl.constexpr, COL64: tl.constexpr,
):
    """c[row] = sum(w dy xhat) / M; c[n_rows + row] = sum(w dy) / M (LayerNorm)."""
    row = tl.program_id(0).to(tl.int64)
    cols0 = _cols(BLOCK_N, COL64)
    g_row = dy_ptr + _row_off(row, O1, O2, gs0, gs1, gs2)
    x_row = x_ptr + _row_off(row, O1, O2, xs0, xs1, xs2)
    rstd = tl.load(rstd_ptr + _row_off(row, O1, O2, ts0, ts1, ts2)).to(ACC)
    if RMS:
        mean = 0.0
    else:
        mean = tl.load(mean_ptr + _row_off(row, O1, O2, ms0, ms1, ms2)).to(ACC)
    a1 = tl.zeros([BLOCK_N], ACC)
    a2 = tl.zeros([BLOCK_N], ACC)
    for start in range(0, M, BLOCK_N):
        cols = start + cols0
        cm = cols < M
        dy = tl.load(g_row + _col_off(cols, IN1, IN2, gsa, gsb, gsc, NI), mask=cm,
                     other=0.0).to(ACC)
        x = tl.load(x_row + _col_off(cols, IN1, IN2, xsa, xsb, xsc, NI), mask=cm,
                    other=0.0).to(ACC)
        if HAS_W:
            dy = dy * tl.load(w_ptr + _col_off(cols, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                              other=0.0).to(ACC)
        a1 += dy * _xhat(x, mean, rstd, cm, RMS)
        a2 += dy
    tl.store(c_ptr + row, tl.sum(a1, 0) / M)
    if not RMS:
        tl.store(c_ptr + n_rows + row, tl.sum(a2, 0) / M)


@triton.jit
def col_grad_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, c_ptr, dh_ptr, dx_ptr, part_ptr,
    n_rows, M, O1, O2, IN1, IN2, chunk_rows, n_chunks,
    gs0, gs1, gs2, gsa, gsb, gsc,
    xs0, xs1, xs2, xsa, xsb, xsc,
    hs0, hs1, hs2, hsa, hsb, hsc,
    ds0, ds1, ds2, dsa, dsb, dsc,
    wsa, wsb, wsc, ms0, ms1, ms2, ts0, ts1, ts2,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_DB: tl.constexpr, HAS_RES: tl.constexpr,
    ACCUM: tl.constexpr, NI: tl.constexpr, ACC: tl.constexpr, BLOCK_C: tl.constexpr,
    COL64: tl.constexpr,
):
    """dx for columns [pid_c * BLOCK_C, +BLOCK_C) of rows [pid_r * chunk_rows, +chunk_rows);
    part_ptr: [n_chunks, M] dgamma partials (HAS_W), then [n_chunks, M] dbeta (HAS_DB)."""
    pid_c = tl.program_id(0)
    pid_r = tl.program_id(1).to(tl.int64)
    cols = pid_c * BLOCK_C + _cols(BLOCK_C, COL64)
    cm = cols < M
    go = _col_off(cols, IN1, IN2, gsa, gsb, gsc, NI)
    xo = _col_off(cols, IN1, IN2, xsa, xsb, xsc, NI)
    do = _col_off(cols, IN1, IN2, dsa, dsb, dsc, NI)
    if HAS_W:
        w = tl.load(w_ptr + _col_off(cols, IN1, IN2, wsa, wsb, wsc, NI), mask=cm,
                    other=0.0).to(ACC)
    dg = tl.zeros([BLOCK_C], ACC)
    db = tl.zeros([BLOCK_C], ACC)
    r0 = pid_r * chunk_rows
    r1 = tl.minimum(r0 + chunk_rows, n_rows)
    for row in range(r0, r1):
        rstd = tl.load(rstd_ptr + _row_off(row, O1, O2, ts0, ts1, ts2)).to(ACC)
        c1 = tl.load(c_ptr + row)
        dy = tl.load(dy_ptr + _row_off(row, O1, O2, gs0, gs1, gs2) + go, mask=cm,
                     other=0.0).to(ACC)
        x = tl.load(x_ptr + _row_off(row, O1, O2, xs0, xs1, xs2) + xo, mask=cm,
                    other=0.0).to(ACC)
        if RMS:
            mean = rstd  # unused by _xhat (RMSNorm: no mean row)
        else:
            mean = tl.load(mean_ptr + _row_off(row, O1, O2, ms0, ms1, ms2)).to(ACC)
        xhat = _xhat(x, mean, rstd, cm, RMS)
        if HAS_W:
            wdy = dy * w
            dg += dy * xhat
        else:
            wdy = dy
        if HAS_DB:
            db += dy
        if RMS:
            c2 = c1  # unused by _dx; RMS stats have no c2 row
        else:
            c2 = tl.load(c_ptr + n_rows + row)
        dx = _dx(wdy, xhat, c1, c2, rstd, RMS)
        if HAS_RES:
            dx += tl.load(dh_ptr + _row_off(row, O1, O2, hs0, hs1, hs2)
                          + _col_off(cols, IN1, IN2, hsa, hsb, hsc, NI), mask=cm,
                          other=0.0).to(ACC)
        tl.store(dx_ptr + _row_off(row, O1, O2, ds0, ds1, ds2) + do,
                 dx.to(dx_ptr.dtype.element_ty), mask=cm)
    _store_param_partials(part_ptr, pid_r, n_chunks, M, cols, cm, dg, db, HAS_W, HAS_DB,
                          ACCUM)


def launch_shape(m: int, rows: int, sms: int) -> tuple[int, int, int]:
    """(BLOCK_C, rows per chunk, chunks): 1K-column blocks and enough row chunks for about
    eight programs per SM (more chunks beat fewer); each chunk keeps at least 8 rows (its
    partial row is M floats)."""
    block_c = 1024
    if rows == 0:
        return block_c, 1, 0
    col_blocks = cdiv(m, block_c)
    chunks = max(1, min(cdiv(8 * sms, col_blocks), cdiv(rows, 8)))
    chunk_rows = cdiv(rows, chunks)
    return block_c, chunk_rows, cdiv(rows, chunk_rows)
