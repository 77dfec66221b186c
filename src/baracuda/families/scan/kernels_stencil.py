"""The three-point stencil of torch.gradient and its transpose: one pass, no carry.

A launch sees each tensor as [outer rows, inner lines, N] (the stencil axis last, whatever its
stride), as the scan kernels do: a program owns LINES neighbouring inner lines of one outer row
and one BLOCK-wide stretch of the axis, so long lines spread over many programs without any
exchange between them.

Position i reads the taps s_i, s_i + 1, s_i + 2 with s_i = clamp(i - 1, 0, max(N - 3, 0)):
centred inside, shifted onto the line at its ends (the one-sided differences of edge order 1
and 2 are three-tap rows whose unused weight is zero). The weights come from a per-position
table row (w0, w1, w2, h): the result is (w0 x0 + w1 x1 + w2 x2) / h, the same operations in
the same order as torch's uniform formulas ((x_{i+1} - x_{i-1}) / 2 / h inside: halving is
exact) and as its non-uniform ones (h = 1).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import line_offset, round_to
from .kernels import tile_lines


@triton.jit
def _coef(table, row, k, ok, tn, tk):
    """Table entries [BLOCK] at rows `row`, column k (zero where not `ok`)."""
    return tl.load(table + row * tn + k * tk, mask=ok, other=0)


@triton.jit
def _tap(w, x):
    """w x, or zero where the weight is zero (an unused tap: its NaN / inf does not leak)."""
    return tl.where(w[None, :] != 0, w[None, :] * x, 0.0)


@triton.jit
def _line(src, o, at, sn, mask, ACC: tl.constexpr):
    return tl.load(src + o + at[None, :] * sn, mask=mask, other=0).to(ACC)


@triton.jit
def _transposed_term(src, table, o, sn, tn, tk, row, k, valid, line_ok, ACC: tl.constexpr):
    """(w_row,k / h_row) dy_row where `valid` ([BLOCK]), else zero."""
    w = _coef(table, row, k, valid, tn, tk).to(ACC)
    h = tl.where(valid, _coef(table, row, 3, valid, tn, tk).to(ACC), 1.0)
    g = _line(src, o, row, sn, line_ok[:, None] & valid[None, :], ACC)
    return tl.where(w[None, :] != 0, (w[None, :] * g) / h[None, :], 0.0)


@triton.jit
def stencil_kernel(
    src, table, dst,
    n_lines, N, n_blocks, tn, tk,
    S1, S2, S3,
    a0, a1, a2, a3, ai, an,
    d0, d1, d2, d3, di, dn,
    ACC: tl.constexpr, BACKWARD: tl.constexpr, LINES: tl.constexpr, BLOCK: tl.constexpr,
):
    """src: x (or dy), dst: y (or dx), table: (N, 4) rows (w0, w1, w2, h) with strides tn, tk;
    a* / d*: src / dst strides (outer 0..3, inner line, stencil axis)."""
    pid = tl.program_id(0).to(tl.int64)
    blk = pid % n_blocks
    tile = pid // n_blocks
    row, lines, line_ok = tile_lines(tile, n_lines, LINES)
    o = (line_offset(row, S1, S2, S3, a0, a1, a2, a3) + lines * ai)[:, None]
    q = (line_offset(row, S1, S2, S3, d0, d1, d2, d3) + lines * di)[:, None]
    pos = blk * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    ok = pos < N
    mask = line_ok[:, None] & ok[None, :]
    last = tl.maximum(N - 3, 0)  # the first tap of the last row
    if BACKWARD:
        # rows whose stencil is centred (1 <= r <= N - 2) reach j from r = j + 1, j, j - 1 (as
        # taps 0, 1, 2); the first row reaches taps 0..2, the last row last..last + 2
        r = _transposed_term(src, table, o, an, tn, tk, pos + 1, 0,
                             ok & (pos + 1 <= N - 2), line_ok, ACC)
        r += _transposed_term(src, table, o, an, tn, tk, pos, 1,
                              ok & (pos >= 1) & (pos <= N - 2), line_ok, ACC)
        r += _transposed_term(src, table, o, an, tn, tk, pos - 1, 2,
                              ok & (pos >= 2) & (pos - 1 <= N - 2), line_ok, ACC)
        zero = tl.zeros_like(pos)
        r += _transposed_term(src, table, o, an, tn, tk, zero, tl.minimum(pos, 2),
                              ok & (pos <= 2), line_ok, ACC)
        end = zero + (N - 1)
        r += _transposed_term(src, table, o, an, tn, tk, end, tl.minimum(pos - last, 2),
                              ok & (N > 1) & (pos >= last), line_ok, ACC)
    else:
        s = tl.minimum(tl.maximum(pos - 1, 0), last)
        w0 = _coef(table, pos, 0, ok, tn, tk).to(ACC)
        w1 = _coef(table, pos, 1, ok, tn, tk).to(ACC)
        w2 = _coef(table, pos, 2, ok, tn, tk).to(ACC)
        h = tl.where(ok, _coef(table, pos, 3, ok, tn, tk).to(ACC), 1.0)
        x0 = _line(src, o, s, an, mask, ACC)
        x1 = _line(src, o, s + 1, an, mask & (s + 1 < N)[None, :], ACC)
        x2 = _line(src, o, s + 2, an, mask & (s + 2 < N)[None, :], ACC)
        r = (_tap(w0, x0) + _tap(w1, x1) + _tap(w2, x2)) / h[None, :]
    tl.store(dst + q + pos[None, :] * dn, round_to(r, dst.dtype.element_ty), mask=mask)
