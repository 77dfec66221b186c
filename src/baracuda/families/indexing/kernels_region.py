"""Kernels of the region copies, index_reduce's combine step and unravel_index.

- `strided_copy_kernel`: out[...] = src[...] over up to 8 strided dims (collapsed on the host),
  a tile of [outer lines, inner elements] so the div/mod of the outer coordinates is paid once
  per line, not per element. DYN_SRC / DYN_OUT add an element offset read on the device (a
  dynamic slice's clamped start: no host sync).
- `index_reduce_combine_kernel`: after the sorted grouped reduction wrote each destination
  row's reduction of its sources, folds in the destination's own value (include_self) and
  keeps it where no source arrived; one program per (row, column block): deterministic.
- `unravel_kernel`: flat indices to row-major coordinates, floor semantics per dim.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_rows import col_offset
from .kernels import _nanmax, _nanmin

R_PROD: tl.constexpr = tl.constexpr(2)
R_MEAN: tl.constexpr = tl.constexpr(3)
R_AMAX: tl.constexpr = tl.constexpr(4)
R_AMIN: tl.constexpr = tl.constexpr(5)


@triton.jit
def _line_off(r, D1, D2, D3, D4, D5, D6, s0, s1, s2, s3, s4, s5, s6):
    """Offset of outer line r of a [D0, D1, ..., D6] grid (extent-1 dims fold away: triton
    specializes integer arguments equal to 1)."""
    o = (r % D6) * s6
    r = r // D6
    o += (r % D5) * s5
    r = r // D5
    o += (r % D4) * s4
    r = r // D4
    o += (r % D3) * s3
    r = r // D3
    o += (r % D2) * s2
    r = r // D2
    o += (r % D1) * s1
    r = r // D1
    return o + r * s0


@triton.jit
def strided_copy_kernel(src_ptr, out_ptr, soff_ptr, ooff_ptr, n_lines, inner, col_blocks,
                        D1, D2, D3, D4, D5, D6,
                        a0, a1, a2, a3, a4, a5, a6, a7,
                        b0, b1, b2, b3, b4, b5, b6, b7,
                        DYN_SRC: tl.constexpr, DYN_OUT: tl.constexpr,
                        BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    lines = (pid // col_blocks) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = (pid % col_blocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    m = (lines < n_lines)[:, None] & (cols < inner)[None, :]
    s_off = _line_off(lines, D1, D2, D3, D4, D5, D6, a0, a1, a2, a3, a4, a5, a6)
    o_off = _line_off(lines, D1, D2, D3, D4, D5, D6, b0, b1, b2, b3, b4, b5, b6)
    if DYN_SRC:
        s_off += tl.load(soff_ptr)
    if DYN_OUT:
        o_off += tl.load(ooff_ptr)
    v = tl.load(src_ptr + s_off[:, None] + cols[None, :] * a7, mask=m)
    tl.store(out_ptr + o_off[:, None] + cols[None, :] * b7, v.to(out_ptr.dtype.element_ty),
             mask=m)


@triton.jit
def index_reduce_combine_kernel(off_ptr, self_ptr, out_ptr, D,
                                S1, S2, S3,
                                sr, ss0, ss1, ss2, ss3,
                                orr, os0, os1, os2, os3,
                                KIND: tl.constexpr, INCLUDE_SELF: tl.constexpr,
                                ACC: tl.constexpr, BLOCK_D: tl.constexpr, FLAT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    cm = cols < D
    cnt = tl.load(off_ptr + row + 1).to(tl.int64) - tl.load(off_ptr + row).to(tl.int64)
    s_ptrs = self_ptr + row * sr + col_offset(cols, S1, S2, S3, ss0, ss1, ss2, ss3, FLAT)
    o_ptrs = out_ptr + row * orr + col_offset(cols, S1, S2, S3, os0, os1, os2, os3, FLAT)
    base = tl.load(s_ptrs, mask=cm, other=0.0)
    if cnt > 0:
        red = tl.load(o_ptrs, mask=cm, other=0.0).to(ACC)  # MEAN: the sources' sum
        b = base.to(ACC)
        if KIND == R_MEAN:
            if INCLUDE_SELF:
                red = (red + b) / (cnt + 1).to(ACC)
            else:
                red = red / cnt.to(ACC)
        elif INCLUDE_SELF:
            if KIND == R_PROD:
                red = b * red
            elif KIND == R_AMAX:
                red = _nanmax(b, red)
            else:
                red = _nanmin(b, red)
        tl.store(o_ptrs, red.to(out_ptr.dtype.element_ty), mask=cm)
    else:  # no source: the destination keeps its value
        tl.store(o_ptrs, base, mask=cm)


@triton.jit
def _unravel_step(i, n):
    """(i mod n, floor(i / n)) for n > 0, floor semantics for negative i."""
    r = i % n
    r = tl.where(r < 0, r + n, r)
    return r, (i - r) // n


@triton.jit
def _store_coord(out_ptr, rows, m, c, R: tl.constexpr, POS: tl.constexpr):
    if POS >= 8 - R:  # a real dim (the leading ones pad the shape to 8)
        tl.store(out_ptr + rows * R + (POS - (8 - R)), c, mask=m)


@triton.jit
def unravel_kernel(idx_ptr, out_ptr, N, idx_stride, n0, n1, n2, n3, n4, n5, n6, n7,
                   R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = rows < N
    i = tl.load(idx_ptr + rows * idx_stride, mask=m, other=0).to(tl.int64)
    c, i = _unravel_step(i, n7)
    _store_coord(out_ptr, rows, m, c, R, 7)
    c, i = _unravel_step(i, n6)
    _store_coord(out_ptr, rows, m, c, R, 6)
    c, i = _unravel_step(i, n5)
    _store_coord(out_ptr, rows, m, c, R, 5)
    c, i = _unravel_step(i, n4)
    _store_coord(out_ptr, rows, m, c, R, 4)
    c, i = _unravel_step(i, n3)
    _store_coord(out_ptr, rows, m, c, R, 3)
    c, i = _unravel_step(i, n2)
    _store_coord(out_ptr, rows, m, c, R, 2)
    c, i = _unravel_step(i, n1)
    _store_coord(out_ptr, rows, m, c, R, 1)
    c, i = _unravel_step(i, n0)
    _store_coord(out_ptr, rows, m, c, R, 0)
