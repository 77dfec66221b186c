"""repeat_interleave kernels: the running total of the counts, the gather forward (each output
row finds its source row), and the segment-sum backward (each input row sums its contiguous
band of output rows, in order: deterministic, no atomics).

Rows are the repeated dim of an [outer, rows, inner] view; a program takes ROWS rows of one
outer index and walks the inner run in BLOCK_I columns. With a constant count R the source of
output row o is o // R; with a tensor of counts it is the first s whose inclusive running
total passes o (a binary search over the totals).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def running_total_kernel(rep_ptr, total_ptr, n, rs, BLOCK: tl.constexpr):
    """total[s] = rep[0] + ... + rep[s] (int64), one program walking the counts in order."""
    carry = tl.zeros([1], tl.int64)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(rep_ptr + offs.to(tl.int64) * rs, mask=offs < n, other=0).to(tl.int64)
        tl.store(total_ptr + offs, tl.cumsum(v, 0) + carry, mask=offs < n)
        carry += tl.sum(v, 0)


@triton.jit
def _source_rows(o, total_ptr, n, R, STEPS: tl.constexpr, COUNTS: tl.constexpr):
    """The input row each output row o reads (COUNTS: a binary search over the totals)."""
    if COUNTS:
        lo = tl.zeros_like(o)
        hi = tl.zeros_like(o) + n
        for _ in tl.static_range(STEPS):
            active = lo < hi
            mid = (lo + hi) // 2
            t = tl.load(total_ptr + mid, mask=active, other=0)
            lo = tl.where(active & (t <= o), mid + 1, lo)
            hi = tl.where(active & (t > o), mid, hi)
        return tl.minimum(lo, n - 1)
    else:
        return o // R


@triton.jit
def repeat_kernel(x_ptr, y_ptr, total_ptr, n, out_rows, inner, R, row_blocks,
                  xs_o, xs_r, xs_i, ys_o, ys_r, ys_i,
                  STEPS: tl.constexpr, COUNTS: tl.constexpr, INDEX: tl.constexpr,
                  ROWS: tl.constexpr, BLOCK_I: tl.constexpr):
    """y[b, o, :] = x[b, src(o), :] (INDEX: y[o] = src(o), the counts -> indices overload)."""
    pid = tl.program_id(0)
    b = pid // row_blocks
    o = (pid - b * row_blocks) * ROWS + tl.arange(0, ROWS)
    omask = o < out_rows
    s = _source_rows(o.to(tl.int64), total_ptr, n, R, STEPS, COUNTS)
    if INDEX:
        tl.store(y_ptr + o.to(tl.int64) * ys_r, s, mask=omask)
    else:
        xrow = b.to(tl.int64) * xs_o + s * xs_r
        yrow = b.to(tl.int64) * ys_o + o.to(tl.int64) * ys_r
        for c0 in range(0, inner, BLOCK_I):
            c = c0 + tl.arange(0, BLOCK_I)
            m = omask[:, None] & (c < inner)[None, :]
            # [ROWS, BLOCK_I]
            v = tl.load(x_ptr + xrow[:, None] + (c.to(tl.int64) * xs_i)[None, :], mask=m)
            tl.store(y_ptr + yrow[:, None] + (c.to(tl.int64) * ys_i)[None, :], v, mask=m)


@triton.jit
def repeat_backward_kernel(dy_ptr, dx_ptr, total_ptr, rep_ptr, n, inner, R, row_blocks, rs,
                           dys_o, dys_r, dys_i, dxs_o, dxs_r, dxs_i,
                           COUNTS: tl.constexpr, ACC: tl.constexpr, ROWS: tl.constexpr,
                           BLOCK_I: tl.constexpr):
    """dx[b, s, :] = the sum of dy[b, o, :] over its band o in [start_s, start_s + count_s),
    summed in row order."""
    pid = tl.program_id(0)
    b = pid // row_blocks
    s = ((pid - b * row_blocks) * ROWS + tl.arange(0, ROWS)).to(tl.int64)
    smask = s < n
    if COUNTS:
        end = tl.load(total_ptr + s, mask=smask, other=0)
        count = tl.load(rep_ptr + s * rs, mask=smask, other=0).to(tl.int64)
        start = end - count
    else:
        count = tl.zeros_like(s) + R
        start = s * R
    band = tl.max(tl.where(smask, count, 0), 0)
    dyrow = b.to(tl.int64) * dys_o
    dxrow = b.to(tl.int64) * dxs_o + s * dxs_r
    for c0 in range(0, inner, BLOCK_I):
        c = c0 + tl.arange(0, BLOCK_I)
        cmask = (c < inner)[None, :]
        acc = tl.zeros([ROWS, BLOCK_I], ACC)
        for k in range(0, band):
            live = smask & (k < count)
            src = dyrow + (start + k) * dys_r
            g = tl.load(dy_ptr + src[:, None] + (c.to(tl.int64) * dys_i)[None, :],
                        mask=live[:, None] & cmask, other=0)
            acc += g.to(ACC)
        tl.store(dx_ptr + dxrow[:, None] + (c.to(tl.int64) * dxs_i)[None, :],
                 acc.to(dx_ptr.dtype.element_ty), mask=smask[:, None] & cmask)
