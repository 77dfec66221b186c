"""Softmax kernels: one forward and one backward source; kind, dtype and pass structure are
constexprs (MODE):

- MODE 0, TILE: each program owns ROWS whole lines as a [ROWS, BLOCK] register tile: read
  once, reduced in registers, written once (lines up to the single-block limit).
- MODE 1, LOOP: one program per line (or, forward, per SEG-long segment of it), longer than a
  block: an online max/sum pass (per-lane running max and sum, no cross-lane reduction inside
  the loop) and a second pass that re-reads the segment backwards, so that the blocks read
  last come from L2. A line's segments swap their (max, sum) as EXCHANGE's chunks do; short
  segments keep what every SM reads at once small enough for L2 to hold for the re-read.
- MODE 2, EXCHANGE: a line longer than a block is cut into BLOCK-wide chunks, one program
  each, that stay in registers: the programs of a line swap their partial (max, sum) —
  backward: partial dot — through the workspace inside the launch (backends/triton_exchange.py)
  and write their chunk, so the line is read from DRAM once.

KEEP / STREAM are L2 eviction hints for LOOP's two reads: the first read may ask to keep the
line (evict_last) for the second read, which, like the stores, need not stay (evict_first).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.line_reduce import chunk_exp, chunk_max_sum, loop_max_sum, merge_max_sum
from ...backends.triton_exchange import arrive_and_wait
from ...backends.triton_support import line_offset

TILE, LOOP, EXCHANGE = 0, 1, 2


@triton.jit
def _load_chunk(line_ptr, start, stride, N, cols, other, ACC: tl.constexpr):
    """Elements [start, start + BLOCK) of a line (scalar start: cols stay 32-bit, fewer
    registers held over the exchange's wait), `other` past its end, as ACC."""
    return tl.load(line_ptr + start * stride + cols * stride, mask=cols < N - start,
                   other=other).to(ACC)


@triton.jit
def _publish_pair(ws_ptr, cnt_ptr, pid, row, n_chunks, m, s, SPIN: tl.constexpr):
    """Store this program's partial (max, sum) and arrive at its line's counter: True when
    every program of the line arrived (their pairs are then visible, `_line_pairs`)."""
    tl.store(ws_ptr + 2 * pid, m)
    tl.store(ws_ptr + 2 * pid + 1, s)
    return arrive_and_wait(cnt_ptr + row, n_chunks, SPIN)


@triton.jit
def _line_pairs(ws_ptr, row, n_chunks, PARTS: tl.constexpr):
    """The (max, sum) pairs of a line's programs in order, padded to PARTS with (-inf, 0)."""
    j = tl.arange(0, PARTS)
    part = ws_ptr + 2 * (row * n_chunks + j)
    return (tl.load(part, mask=j < n_chunks, other=-float("inf"), volatile=True),
            tl.load(part + 1, mask=j < n_chunks, other=0.0, volatile=True))


@triton.jit
def _chunk_dot(g, y, LOG: tl.constexpr):
    """A chunk's backward partial: sum(dy) (log_softmax) or sum(y dy) (softmax)."""
    if LOG:
        return tl.sum(g, 0)
    else:
        return tl.sum(y * g, 0)


@triton.jit
def softmax_fwd_kernel(
    x_ptr, y_ptr, ws_ptr, cnt_ptr, n_rows, N, n_chunks, seg_len,
    S1, S2, S3,
    xs0, xs1, xs2, xs3, xsn,
    ys0, ys1, ys2, ys3, ysn,
    LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, MODE: tl.constexpr,
    ROWS: tl.constexpr, PARTS: tl.constexpr, WIDE: tl.constexpr,
    KEEP: tl.constexpr = "", STREAM: tl.constexpr = "", SPIN: tl.constexpr = 0,
):
    pid = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if WIDE:  # offsets past 2**31 elements along the line: 64-bit column indices
        cols = cols.to(tl.int64)
    NEG: tl.constexpr = -float("inf")
    if MODE == 0:
        rows = pid * ROWS + tl.arange(0, ROWS)
        x_off = line_offset(rows, S1, S2, S3, xs0, xs1, xs2, xs3)
        y_off = line_offset(rows, S1, S2, S3, ys0, ys1, ys2, ys3)
        mask = (rows < n_rows)[:, None] & (cols < N)[None, :]
        x = tl.load(x_ptr + x_off[:, None] + cols[None, :] * xsn, mask=mask, other=NEG).to(ACC)
        m = tl.max(x, 1)
        x_m = x - m[:, None]
        e = tl.exp(x_m)  # an all -inf line gives NaN here, as torch does
        s = tl.sum(e, 1)
        if LOG:
            # (x - m) - log(s), as torch: never x - (m + log(s)), which rounds to the ulp of
            # m (4e-6 at m = 64 in f32) and loses a confident line's small log-probabilities
            y = x_m - tl.log(s)[:, None]
        else:
            y = e * (1.0 / s)[:, None]
        tl.store(y_ptr + y_off[:, None] + cols[None, :] * ysn, y.to(y_ptr.dtype.element_ty),
                 mask=mask)
    elif MODE == 1:
        row = pid // n_chunks
        # the segment's first element, 32-bit like cols (64-bit offsets along the line held
        # 91 registers against 64 in the sm_90a compile), 64-bit for WIDE lines
        seg = (pid - row * n_chunks).to(tl.int32)
        if WIDE:
            seg = seg.to(tl.int64)
        lo = seg * seg_len
        hi = tl.minimum(lo + seg_len, N)
        x_row = x_ptr + line_offset(row, S1, S2, S3, xs0, xs1, xs2, xs3)
        m, s = loop_max_sum(x_row, lo, hi, N, xsn, cols, BLOCK, ACC, KEEP)
        if PARTS > 1:  # the line's segments swap their partials (as EXCHANGE's chunks do)
            if _publish_pair(ws_ptr, cnt_ptr, pid, row, n_chunks, m, s, SPIN):
                m_p, s_p = _line_pairs(ws_ptr, row, n_chunks, PARTS)
            else:  # not every segment ran: compute the line's partials here, the same bits
                j = tl.arange(0, PARTS)
                m_p = tl.full([PARTS], NEG, ACC)
                s_p = tl.zeros([PARTS], ACC)
                for k in range(0, n_chunks):
                    k_lo = k * seg_len
                    mk, sk = loop_max_sum(x_row, k_lo, tl.minimum(k_lo + seg_len, N), N, xsn,
                                           cols, BLOCK, ACC, KEEP)
                    m_p = tl.where(j == k, mk, m_p)
                    s_p = tl.where(j == k, sk, s_p)
            m, s = merge_max_sum(m_p, s_p, 0)
        inv = 1.0 / s
        log_s = tl.log(s)
        y_row = y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3)
        last = lo + ((hi - lo - 1) // BLOCK) * BLOCK
        for i in range(0, hi - lo, BLOCK):
            c = (last - i) + cols  # backwards: the blocks read last are likeliest in L2
            x = tl.load(x_row + c * xsn, mask=c < N, other=NEG, eviction_policy=STREAM).to(ACC)
            if LOG:
                y = (x - m) - log_s  # as MODE 0: no m + log(s) rounded first
            else:
                y = tl.exp(x - m) * inv
            tl.store(y_row + c * ysn, y.to(y_ptr.dtype.element_ty), mask=c < N,
                     eviction_policy=STREAM)
    else:  # EXCHANGE
        row = pid // n_chunks
        base = (pid - row * n_chunks) * BLOCK  # the chunk's first element
        x_row = x_ptr + line_offset(row, S1, S2, S3, xs0, xs1, xs2, xs3)
        x = _load_chunk(x_row, base, xsn, N, cols, NEG, ACC)
        m_c, e = chunk_exp(x)
        s_c = tl.sum(e, 0)
        if LOG:
            held = x
        else:  # softmax keeps exp(x - chunk max): one exp per chunk after the merge, not per x
            held = e
        if _publish_pair(ws_ptr, cnt_ptr, pid, row, n_chunks, m_c, s_c, SPIN):
            m_p, s_p = _line_pairs(ws_ptr, row, n_chunks, PARTS)
        else:  # not every chunk ran: compute the line's partials here, the same bits
            j = tl.arange(0, PARTS)
            m_p = tl.full([PARTS], NEG, ACC)
            s_p = tl.zeros([PARTS], ACC)
            for k in range(0, n_chunks):
                mk, sk = chunk_max_sum(_load_chunk(x_row, k * BLOCK, xsn, N, cols, NEG, ACC))
                m_p = tl.where(j == k, mk, m_p)
                s_p = tl.where(j == k, sk, s_p)
            x = _load_chunk(x_row, base, xsn, N, cols, NEG, ACC)
            if LOG:  # (not held above)
                held = x
            else:
                held = chunk_exp(x)[1]
        m, s = merge_max_sum(m_p, s_p, 0)
        if LOG:
            y = (held - m) - tl.log(s)  # as MODE 0: no m + log(s) rounded first
        else:
            y = held * (tl.exp(m_c - m) / s)
        y_row = y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3)
        tl.store(y_row + base * ysn + cols * ysn, y.to(y_ptr.dtype.element_ty),
                 mask=cols < N - base)


@triton.jit
def softmax_bwd_kernel(
    dy_ptr, y_ptr, dx_ptr, ws_ptr, cnt_ptr, n_rows, N, n_chunks, seg_len,
    S1, S2, S3,
    gs0, gs1, gs2, gs3, gsn,
    ys0, ys1, ys2, ys3, ysn,
    ds0, ds1, ds2, ds3, dsn,
    LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, MODE: tl.constexpr,
    ROWS: tl.constexpr, PARTS: tl.constexpr, WIDE: tl.constexpr,
    KEEP: tl.constexpr = "", STREAM: tl.constexpr = "", SPIN: tl.constexpr = 0,
):
    """softmax dx = y (dy - sum(y dy)); log_softmax dx = dy - exp(y) sum(dy)."""
    pid = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if WIDE:  # offsets past 2**31 elements along the line: 64-bit column indices
        cols = cols.to(tl.int64)
    if MODE == 0:
        rows = pid * ROWS + tl.arange(0, ROWS)
        g_off = line_offset(rows, S1, S2, S3, gs0, gs1, gs2, gs3)
        y_off = line_offset(rows, S1, S2, S3, ys0, ys1, ys2, ys3)
        d_off = line_offset(rows, S1, S2, S3, ds0, ds1, ds2, ds3)
        mask = (rows < n_rows)[:, None] & (cols < N)[None, :]
        g = tl.load(dy_ptr + g_off[:, None] + cols[None, :] * gsn, mask=mask, other=0.0).to(ACC)
        y = tl.load(y_ptr + y_off[:, None] + cols[None, :] * ysn, mask=mask, other=0.0).to(ACC)
        if LOG:
            dx = g - tl.exp(y) * tl.sum(g, 1)[:, None]
        else:
            dx = y * (g - tl.sum(y * g, 1)[:, None])
        tl.store(dx_ptr + d_off[:, None] + cols[None, :] * dsn, dx.to(dx_ptr.dtype.element_ty),
                 mask=mask)
    else:
        if MODE == 1:
            row = pid
        else:
            row = pid // n_chunks
        g_row = dy_ptr + line_offset(row, S1, S2, S3, gs0, gs1, gs2, gs3)
        y_row = y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3)
        d_row = dx_ptr + line_offset(row, S1, S2, S3, ds0, ds1, ds2, ds3)
        if MODE == 1:
            acc = tl.zeros([BLOCK], ACC)
            for start in range(0, N, BLOCK):
                c = start + cols
                g = tl.load(g_row + c * gsn, mask=c < N, other=0.0, eviction_policy=KEEP).to(ACC)
                if LOG:
                    acc += g
                else:
                    acc += tl.load(y_row + c * ysn, mask=c < N, other=0.0,
                                   eviction_policy=KEEP).to(ACC) * g
            total = tl.sum(acc, 0)
            last = ((N - 1) // BLOCK) * BLOCK
            for i in range(0, N, BLOCK):
                c = (last - i) + cols  # backwards: the blocks read last are likeliest in L2
                g = tl.load(g_row + c * gsn, mask=c < N, other=0.0, eviction_policy=STREAM).to(ACC)
                y = tl.load(y_row + c * ysn, mask=c < N, other=0.0, eviction_policy=STREAM).to(ACC)
                if LOG:
                    dx = g - tl.exp(y) * total
                else:
                    dx = y * (g - total)
                tl.store(d_row + c * dsn, dx.to(dx_ptr.dtype.element_ty), mask=c < N,
                         eviction_policy=STREAM)
        else:  # EXCHANGE
            base = (pid - row * n_chunks) * BLOCK  # the chunk's first element
            g = _load_chunk(g_row, base, gsn, N, cols, 0.0, ACC)
            y = _load_chunk(y_row, base, ysn, N, cols, 0.0, ACC)
            tl.store(ws_ptr + pid, _chunk_dot(g, y, LOG))
            j = tl.arange(0, PARTS)
            if arrive_and_wait(cnt_ptr + row, n_chunks, SPIN):
                parts = tl.load(ws_ptr + row * n_chunks + j, mask=j < n_chunks, other=0.0,
                                volatile=True)
            else:  # not every chunk ran: compute the line's partials here, the same bits
                parts = tl.zeros([PARTS], ACC)
                for k in range(0, n_chunks):
                    gk = _load_chunk(g_row, k * BLOCK, gsn, N, cols, 0.0, ACC)
                    yk = _load_chunk(y_row, k * BLOCK, ysn, N, cols, 0.0, ACC)
                    parts = tl.where(j == k, _chunk_dot(gk, yk, LOG), parts)
                g = _load_chunk(g_row, base, gsn, N, cols, 0.0, ACC)
                y = _load_chunk(y_row, base, ysn, N, cols, 0.0, ACC)
            total = tl.sum(parts, 0)
            if LOG:
                dx = g - tl.exp(y) * total
            else:
                dx = y * (g - total)
            tl.store(d_row + base * dsn + cols * dsn, dx.to(dx_ptr.dtype.element_ty),
                     mask=cols < N - base)
