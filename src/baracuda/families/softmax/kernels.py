"""Softmax kernels: one forward and one backward source; kind, layout and pass structure are
constexprs.

Each program owns ROWS lines along the softmax axis. A line that fits in one block (SINGLE)
is read once, reduced in registers and written; a longer line takes an online max/sum pass
(per-lane running max and sum, so no cross-lane reduction inside the loop) and a second pass
that re-reads it (from L2 for lines of moderate length).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import line_offset


@triton.jit
def softmax_fwd_kernel(
    x_ptr, y_ptr, n_rows, N,
    S1, S2, S3,
    xs0, xs1, xs2, xs3, xsn,
    ys0, ys1, ys2, ys3, ysn,
    LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, SINGLE: tl.constexpr,
    ROWS: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    for r in tl.static_range(ROWS):
        row = pid * ROWS + r
        row_ok = row < n_rows
        x_row = x_ptr + line_offset(row, S1, S2, S3, xs0, xs1, xs2, xs3)
        y_row = y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3)
        if SINGLE:
            mask = (cols < N) & row_ok
            x = tl.load(x_row + cols * xsn, mask=mask, other=-float("inf")).to(ACC)
            m = tl.max(x, 0)
            e = tl.exp(x - m)
            s = tl.sum(e, 0)
            if LOG:
                y = x - m - tl.log(s)
            else:
                y = e * (1.0 / s)
            tl.store(y_row + cols * ysn, y.to(y_ptr.dtype.element_ty), mask=mask)
        else:
            m_vec = tl.full([BLOCK], -float("inf"), ACC)
            s_vec = tl.zeros([BLOCK], ACC)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = (c < N) & row_ok
                x = tl.load(x_row + c * xsn, mask=mask, other=-float("inf")).to(ACC)
                m_new = tl.maximum(m_vec, x)
                # lanes still at -inf keep s = 0 (avoids -inf - -inf = NaN)
                alive = m_new > -float("inf")
                scale = tl.where(alive, tl.exp(m_vec - m_new), 1.0)
                add = tl.where(alive, tl.exp(x - m_new), 0.0)
                s_vec = s_vec * scale + add
                m_vec = m_new
            m = tl.max(m_vec, 0)
            s = tl.sum(tl.where(m_vec > -float("inf"), s_vec * tl.exp(m_vec - m), 0.0), 0)
            s = tl.where(m == -float("inf"), float("nan"), s)  # all -inf line: NaN, as torch
            inv = 1.0 / s
            log_s = tl.log(s)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = (c < N) & row_ok
                x = tl.load(x_row + c * xsn, mask=mask, other=-float("inf")).to(ACC)
                if LOG:
                    y = x - m - log_s
                else:
                    y = tl.exp(x - m) * inv
                tl.store(y_row + c * ysn, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_kernel(
    dy_ptr, y_ptr, dx_ptr, n_rows, N,
    S1, S2, S3,
    gs0, gs1, gs2, gs3, gsn,
    ys0, ys1, ys2, ys3, ysn,
    ds0, ds1, ds2, ds3, dsn,
    LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, SINGLE: tl.constexpr,
    ROWS: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    for r in tl.static_range(ROWS):
        row = pid * ROWS + r
        row_ok = row < n_rows
        g_row = dy_ptr + line_offset(row, S1, S2, S3, gs0, gs1, gs2, gs3)
        y_row = y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3)
        d_row = dx_ptr + line_offset(row, S1, S2, S3, ds0, ds1, ds2, ds3)
        if SINGLE:
            mask = (cols < N) & row_ok
            g = tl.load(g_row + cols * gsn, mask=mask, other=0.0).to(ACC)
            y = tl.load(y_row + cols * ysn, mask=mask, other=0.0).to(ACC)
            if LOG:
                dx = g - tl.exp(y) * tl.sum(g, 0)
            else:
                dx = y * (g - tl.sum(y * g, 0))
            tl.store(d_row + cols * dsn, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        else:
            acc = tl.zeros([BLOCK], ACC)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = (c < N) & row_ok
                g = tl.load(g_row + c * gsn, mask=mask, other=0.0).to(ACC)
                if LOG:
                    acc += g
                else:
                    y = tl.load(y_row + c * ysn, mask=mask, other=0.0).to(ACC)
                    acc += y * g
            total = tl.sum(acc, 0)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = (c < N) & row_ok
                g = tl.load(g_row + c * gsn, mask=mask, other=0.0).to(ACC)
                y = tl.load(y_row + c * ysn, mask=mask, other=0.0).to(ACC)
                if LOG:
                    dx = g - tl.exp(y) * total
                else:
                    dx = y * (g - total)
                tl.store(d_row + c * dsn, dx.to(dx_ptr.dtype.element_ty), mask=mask)
