"""The associative scan with a caller's combine function (a `@triton.jit` function passed as a
constexpr), in the layout and passes of the family's scan kernel (kernels.py):

A launch sees each tensor as [outer rows, inner lines, N]; a program owns LINES neighbouring
lines of one row and walks its chunk of the axis in BLOCK-wide steps, scanning each tile with
`tl.associative_scan(tile, 1, COMBINE)` and combining the running carry of the steps before
into it. Lines too few to fill the GPU are cut into chunks: PHASE 1 stores each chunk's total,
PHASE 0 folds the totals of the chunks before its own, in order, into its carry, then rescans
and stores (no atomics, a fixed order of combination).

A caller's combine has no known identity, so nothing is padded with one: padding lies only
past the last valid position of a tile (a prefix never reads it), a carry is taken at the last
valid position, and the first tile of a line (and of chunk 0) has no carry to combine.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import INTERP, line_offset, round_to, scan_with
from .kernels import tile_lines


@triton.jit
def _prefix(u, COMBINE: tl.constexpr, LINES: tl.constexpr, BLOCK: tl.constexpr):
    """Inclusive scan of a [LINES, BLOCK] tile along axis 1. The interpreter's own
    associative_scan calls the combine once per element: there it is log2(BLOCK) doubling
    steps of whole tiles instead."""
    if INTERP:
        k = tl.arange(0, BLOCK)[None, :]
        for i in tl.static_range(0, 24):
            if (1 << i) < BLOCK:
                src = tl.broadcast_to(tl.maximum(k - (1 << i), 0), [LINES, BLOCK])
                c = COMBINE(tl.gather(u, src, 1), u).to(u.dtype)
                u = tl.where(k >= (1 << i), c, u)
        return u
    else:
        return scan_with(u, 1, COMBINE)


@triton.jit
def _column(u, at, LINES: tl.constexpr):
    """u[:, at] as a [LINES, 1] tile (a gather: exact for every dtype)."""
    return tl.gather(u, tl.full([LINES, 1], 0, tl.int32) + at, 1)


@triton.jit
def associative_scan_kernel(
    x, y, tot,
    n_lines, N, n_chunks, chunk_len,
    S1, S2, S3,
    a0, a1, a2, a3, ai, an,
    d0, d1, d2, d3, di, dn,
    COMBINE: tl.constexpr, ACC: tl.constexpr, REVERSE: tl.constexpr,
    LINES: tl.constexpr, BLOCK: tl.constexpr, PHASE: tl.constexpr, TOTALS: tl.constexpr,
):
    """x -> y (strides a* / d*: outer 0..3, inner line, scan axis); tot: the chunk totals
    (n_rows * n_lines * n_chunks values of ACC)."""
    pid = tl.program_id(0).to(tl.int64)
    chunk = pid % n_chunks
    tile = pid // n_chunks
    row, lines, line_ok = tile_lines(tile, n_lines, LINES)
    o = (line_offset(row, S1, S2, S3, a0, a1, a2, a3) + lines * ai)[:, None]
    q = (line_offset(row, S1, S2, S3, d0, d1, d2, d3) + lines * di)[:, None]
    total_at = (row * n_lines + lines) * n_chunks

    carry = tl.zeros([LINES, 1], ACC)
    has = chunk < 0  # no carry yet (a runtime flag: the loops below set it)
    if PHASE == 0:
        j = tl.arange(0, TOTALS)
        for t0 in range(0, chunk, TOTALS):
            jt = t0 + j
            ok = line_ok[:, None] & (jt < chunk)[None, :]
            tu = tl.load(tot + total_at[:, None] + jt[None, :], mask=ok, other=0).to(ACC)
            su = _prefix(tu, COMBINE, LINES, TOTALS)
            bu = _column(su, tl.minimum(chunk - t0, TOTALS) - 1, LINES)
            carry = tl.where(has, COMBINE(carry, bu).to(ACC), bu)
            has = t0 >= 0

    k = tl.arange(0, BLOCK)
    start = chunk * chunk_len
    end = tl.minimum(start + chunk_len, N)
    if PHASE == 1:
        end = tl.where(chunk == n_chunks - 1, start, end)  # the last total starts no chunk
    for b in range(start, end, BLOCK):
        p = (b + k).to(tl.int64)[None, :]
        mask = line_ok[:, None] & (p < end)
        if REVERSE:
            pos = (N - 1) - p
        else:
            pos = p
        u = tl.load(x + o + pos * an, mask=mask, other=0).to(ACC)
        su = _prefix(u, COMBINE, LINES, BLOCK)
        su = tl.where(has, COMBINE(carry, su).to(ACC), su)
        carry = _column(su, tl.minimum(end - b, BLOCK) - 1, LINES)
        has = b >= 0
        if PHASE == 0:
            tl.store(y + q + pos * dn, round_to(su, y.dtype.element_ty), mask=mask)
    if PHASE == 1:
        keep = line_ok[:, None] & (chunk < n_chunks - 1)
        tl.store(tot + (total_at + chunk)[:, None], carry, mask=keep)
