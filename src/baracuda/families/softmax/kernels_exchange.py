"""Softmax for lines longer than a block, read from DRAM once (backends/triton_exchange.py).

A line is cut into BLOCK-wide chunks; task t = line * n_chunks + chunk. A persistent grid of
`step` programs (a multiple of n_chunks, so the chunks of one line are adjacent programs in the
same iteration) walks the tasks t = pid, pid + step, ... as a two-stage pipeline: the next
task's chunk is requested before the program waits for the current line's partials, so the
exchange's round trips overlap a load instead of idling the SM (one chunk per program waited
with nothing in flight: 1.45 TB/s forward at 16K-element chunks on the H100).

Stage 1 (start): load the chunk, reduce it to its partial — forward (max, sum of exp), held as
exp(x - chunk max) (softmax) or x (log_softmax); backward the dot sum(y dy) (sum(dy) for
log_softmax), holding dy and y — store the partial, arrive at the line's counter.
Stage 2 (finish): wait for the line, merge its partials in chunk order, write the chunk.
If the wait runs out (programs not co-resident, or the interpreter), the partials are
recomputed from global memory with the same code: the same bits.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_exchange import arrive, wait_line
from ...backends.triton_support import line_offset
from .kernels import _chunk_dot, _chunk_exp, _chunk_max_sum, _merge_max_sum

NEG = tl.constexpr(-float("inf"))


@triton.jit
def _task(t, n_chunks, BLOCK: tl.constexpr):
    row = t // n_chunks
    return row, (t - row * n_chunks) * BLOCK


@triton.jit
def _fwd_partials(x_row, xsn, N, n_chunks, cols, j, ACC: tl.constexpr, BLOCK: tl.constexpr,
                  PARTS: tl.constexpr):
    """Every chunk's (max, sum) of one line, recomputed in chunk order (the no-wait path)."""
    m_p = tl.full([PARTS], NEG, ACC)
    s_p = tl.zeros([PARTS], ACC)
    for k in range(0, n_chunks):
        kb = k * BLOCK
        mk, sk = _chunk_max_sum(
            tl.load(x_row + kb * xsn + cols * xsn, mask=cols < N - kb, other=NEG).to(ACC))
        m_p = tl.where(j == k, mk, m_p)
        s_p = tl.where(j == k, sk, s_p)
    return m_p, s_p


@triton.jit
def softmax_fwd_exchange_kernel(
    x_ptr, y_ptr, ws_ptr, cnt_ptr, n_rows, N, n_chunks,
    S1, S2, S3,
    xs0, xs1, xs2, xs3, xsn,
    ys0, ys1, ys2, ys3, ysn,
    LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, MODE: tl.constexpr,
    ROWS: tl.constexpr, PARTS: tl.constexpr, WIDE: tl.constexpr,
    KEEP: tl.constexpr = "", STREAM: tl.constexpr = "", SPIN: tl.constexpr = 0,
):
    pid = tl.program_id(0).to(tl.int64)
    step = tl.num_programs(0).to(tl.int64)
    n_tasks = n_rows * n_chunks
    cols = tl.arange(0, BLOCK)
    if WIDE:  # offsets past 2**31 elements along the line: 64-bit column indices
        cols = cols.to(tl.int64)
    j = tl.arange(0, PARTS)
    # stage 1 of the first task (the grid never exceeds the tasks)
    row, base = _task(pid, n_chunks, BLOCK)
    x = tl.load(x_ptr + line_offset(row, S1, S2, S3, xs0, xs1, xs2, xs3) + base * xsn
                + cols * xsn, mask=cols < N - base, other=NEG).to(ACC)
    m_c, e = _chunk_exp(x)
    if LOG:
        held = x
    else:  # softmax holds exp(x - chunk max): one exp per chunk after the merge, not per x
        held = e
    tl.store(ws_ptr + 2 * pid, m_c)
    tl.store(ws_ptr + 2 * pid + 1, tl.sum(e, 0))
    arrive(cnt_ptr + row)
    for t in range(pid + step, n_tasks + step, step):
        # request the next chunk first: its load is in flight while this line is awaited
        nxt = t < n_tasks
        row_n, base_n = _task(tl.minimum(t, n_tasks - 1), n_chunks, BLOCK)
        x_n = tl.load(x_ptr + line_offset(row_n, S1, S2, S3, xs0, xs1, xs2, xs3)
                      + base_n * xsn + cols * xsn, mask=(cols < N - base_n) & nxt, other=NEG)
        # stage 2 of the current task
        x_row = x_ptr + line_offset(row, S1, S2, S3, xs0, xs1, xs2, xs3)
        if wait_line(cnt_ptr + row, n_chunks, SPIN):
            part = ws_ptr + 2 * (row * n_chunks + j)
            m_p = tl.load(part, mask=j < n_chunks, other=NEG, volatile=True)
            s_p = tl.load(part + 1, mask=j < n_chunks, other=0.0, volatile=True)
        else:
            m_p, s_p = _fwd_partials(x_row, xsn, N, n_chunks, cols, j, ACC, BLOCK, PARTS)
        m, s = _merge_max_sum(m_p, s_p, 0)
        if LOG:
            y = held - (m + tl.log(s))
        else:
            y = held * (tl.exp(m_c - m) / s)
        y_row = y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3)
        tl.store(y_row + base * ysn + cols * ysn, y.to(y_ptr.dtype.element_ty),
                 mask=cols < N - base)
        # stage 1 of the next task
        x = x_n.to(ACC)
        m_c, e = _chunk_exp(x)
        if LOG:
            held = x
        else:
            held = e
        if nxt:
            tl.store(ws_ptr + 2 * t, m_c)
            tl.store(ws_ptr + 2 * t + 1, tl.sum(e, 0))
            arrive(cnt_ptr + row_n)
        row = row_n
        base = base_n


@triton.jit
def _bwd_partials(g_row, y_row, gsn, ysn, N, n_chunks, cols, j, LOG: tl.constexpr,
                  ACC: tl.constexpr, BLOCK: tl.constexpr, PARTS: tl.constexpr):
    """Every chunk's dot of one line, recomputed in chunk order (the no-wait path)."""
    parts = tl.zeros([PARTS], ACC)
    for k in range(0, n_chunks):
        kb = k * BLOCK
        gk = tl.load(g_row + kb * gsn + cols * gsn, mask=cols < N - kb, other=0.0).to(ACC)
        yk = tl.load(y_row + kb * ysn + cols * ysn, mask=cols < N - kb, other=0.0).to(ACC)
        parts = tl.where(j == k, _chunk_dot(gk, yk, LOG), parts)
    return parts


@triton.jit
def softmax_bwd_exchange_kernel(
    dy_ptr, y_ptr, dx_ptr, ws_ptr, cnt_ptr, n_rows, N, n_chunks,
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
    step = tl.num_programs(0).to(tl.int64)
    n_tasks = n_rows * n_chunks
    cols = tl.arange(0, BLOCK)
    if WIDE:  # offsets past 2**31 elements along the line: 64-bit column indices
        cols = cols.to(tl.int64)
    j = tl.arange(0, PARTS)
    row, base = _task(pid, n_chunks, BLOCK)
    g = tl.load(dy_ptr + line_offset(row, S1, S2, S3, gs0, gs1, gs2, gs3) + base * gsn
                + cols * gsn, mask=cols < N - base, other=0.0).to(ACC)
    y = tl.load(y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3) + base * ysn
                + cols * ysn, mask=cols < N - base, other=0.0).to(ACC)
    tl.store(ws_ptr + pid, _chunk_dot(g, y, LOG))
    arrive(cnt_ptr + row)
    for t in range(pid + step, n_tasks + step, step):
        nxt = t < n_tasks
        row_n, base_n = _task(tl.minimum(t, n_tasks - 1), n_chunks, BLOCK)
        m_n = (cols < N - base_n) & nxt
        g_n = tl.load(dy_ptr + line_offset(row_n, S1, S2, S3, gs0, gs1, gs2, gs3)
                      + base_n * gsn + cols * gsn, mask=m_n, other=0.0)
        y_n = tl.load(y_ptr + line_offset(row_n, S1, S2, S3, ys0, ys1, ys2, ys3)
                      + base_n * ysn + cols * ysn, mask=m_n, other=0.0)
        if wait_line(cnt_ptr + row, n_chunks, SPIN):
            parts = tl.load(ws_ptr + row * n_chunks + j, mask=j < n_chunks, other=0.0,
                            volatile=True)
        else:
            parts = _bwd_partials(dy_ptr + line_offset(row, S1, S2, S3, gs0, gs1, gs2, gs3),
                                  y_ptr + line_offset(row, S1, S2, S3, ys0, ys1, ys2, ys3),
                                  gsn, ysn, N, n_chunks, cols, j, LOG, ACC, BLOCK, PARTS)
        total = tl.sum(parts, 0)
        if LOG:
            dx = g - tl.exp(y) * total
        else:
            dx = y * (g - total)
        d_row = dx_ptr + line_offset(row, S1, S2, S3, ds0, ds1, ds2, ds3)
        tl.store(d_row + base * dsn + cols * dsn, dx.to(dx_ptr.dtype.element_ty),
                 mask=cols < N - base)
        g = g_n.to(ACC)
        y = y_n.to(ACC)
        if nxt:
            tl.store(ws_ptr + t, _chunk_dot(g, y, LOG))
            arrive(cnt_ptr + row_n)
        row = row_n
        base = base_n


def exchange_grid(n_tasks: int, n_chunks: int, programs: int) -> int:
    """Persistent grid: at most `programs`, a multiple of n_chunks (a line's chunks are adjacent
    programs of one iteration), never more than the tasks."""
    step = max(n_chunks, programs // n_chunks * n_chunks)
    return min(n_tasks, step)

