"""Shape family kernels: the strided copy (any strides to any strides, flips and rolls folded
into its addressing), the deterministic sum over broadcast dims (gradients of expand / repeat)
and the concatenation of up to eight inputs in one launch."""

from __future__ import annotations

import triton
import triton.language as tl

#: outer dims a copy addresses per program (besides the two tile dims): rank 8 in all
OUTER_DIMS = 6
#: inputs one concatenation launch takes
MAX_CAT_INPUTS = 8


@triton.jit
def _wrap(i, c, n, ROLL: tl.constexpr):
    """A rolled dim's source index: (i + c) mod n for 0 <= c < n (a select, no division)."""
    if ROLL:
        j = i + c
        return tl.where(j >= n, j - n, j)
    return i


@triton.jit
def _outer(o, D1, D2, D3, D4, D5, x0, x1, x2, x3, x4, x5, y0, y1, y2, y3, y4, y5,
           c0, c1, c2, c3, c4, c5, D0, ROLL: tl.constexpr):
    """(x offset, y offset) of outer index o (int64 scalar) over dims [D0..D5]."""
    i5 = o % D5
    o = o // D5
    i4 = o % D4
    o = o // D4
    i3 = o % D3
    o = o // D3
    i2 = o % D2
    o = o // D2
    i1 = o % D1
    i0 = o // D1
    xo = (_wrap(i0, c0, D0, ROLL) * x0 + _wrap(i1, c1, D1, ROLL) * x1
          + _wrap(i2, c2, D2, ROLL) * x2 + _wrap(i3, c3, D3, ROLL) * x3
          + _wrap(i4, c4, D4, ROLL) * x4 + _wrap(i5, c5, D5, ROLL) * x5)
    yo = i0 * y0 + i1 * y1 + i2 * y2 + i3 * y3 + i4 * y4 + i5 * y5
    return xo, yo


@triton.jit
def copy_kernel(x_ptr, y_ptr,
                D0, D1, D2, D3, D4, D5, NB, NA,
                xs0, xs1, xs2, xs3, xs4, xs5, xsb, xsa,
                ys0, ys1, ys2, ys3, ys4, ys5, ysb, ysa,
                c0, c1, c2, c3, c4, c5, cb, ca,
                tiles_b, tiles_a,
                TB: tl.constexpr, TA: tl.constexpr, ROLL: tl.constexpr, WIDE: tl.constexpr):
    """y[o, b, a] = x[wrap(o), wrap(b), wrap(a)] over a [TB, TA] tile of the two inner dims.

    A is y's unit-stride dim; B is x's when x's fast dim differs from y's (a transposed copy:
    the tile is loaded along B and stored along A, the compiler converts the layout through
    shared memory), else the next dim out. A flipped dim has a negative x stride (a flipped
    A is read as a descending run: coalesced, and as fast as the ascending copy). The outer
    dims' offsets are int64 scalars; tile offsets are int32 unless a tile can reach past
    2**31 elements (WIDE)."""
    pid = tl.program_id(0)
    ta = pid % tiles_a
    r = pid // tiles_a
    tb = r % tiles_b
    o = (r // tiles_b).to(tl.int64)
    xo, yo = _outer(o, D1, D2, D3, D4, D5, xs0, xs1, xs2, xs3, xs4, xs5,
                    ys0, ys1, ys2, ys3, ys4, ys5, c0, c1, c2, c3, c4, c5, D0, ROLL)
    if WIDE:
        ta = ta.to(tl.int64)
        tb = tb.to(tl.int64)
    a = ta * TA + tl.arange(0, TA)
    b = tb * TB + tl.arange(0, TB)
    mask = (b < NB)[:, None] & (a < NA)[None, :]
    ja = _wrap(a, ca, NA, ROLL)
    jb = _wrap(b, cb, NB, ROLL)
    y_off = b[:, None] * ysb + a[None, :] * ysa
    x_off = jb[:, None] * xsb + ja[None, :] * xsa
    v = tl.load(x_ptr + xo + x_off, mask=mask)
    tl.store(y_ptr + yo + y_off, v.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _unravel8(i, D1, D2, D3, D4, D5, D6, D7, s0, s1, s2, s3, s4, s5, s6, s7,
              t0, t1, t2, t3, t4, t5, t6, t7):
    """Offsets of flat index i (row-major over [D0..D7]) with strides s0..s7 and t0..t7."""
    i7 = i % D7
    i = i // D7
    i6 = i % D6
    i = i // D6
    i5 = i % D5
    i = i // D5
    i4 = i % D4
    i = i // D4
    i3 = i % D3
    i = i // D3
    i2 = i % D2
    i = i // D2
    i1 = i % D1
    i0 = i // D1
    s = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3 + i4 * s4 + i5 * s5 + i6 * s6 + i7 * s7
    t = i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3 + i4 * t4 + i5 * t5 + i6 * t6 + i7 * t7
    return s, t


@triton.jit
def sum_dims_kernel(x_ptr, y_ptr, M, K,
                    K1, K2, K3, K4, K5, K6, K7, ks0, ks1, ks2, ks3, ks4, ks5, ks6, ks7,
                    ys0, ys1, ys2, ys3, ys4, ys5, ys6, ys7,
                    R1, R2, R3, R4, R5, R6, R7, rs0, rs1, rs2, rs3, rs4, rs5, rs6, rs7,
                    k_chunk, part_stride,
                    BLOCK: tl.constexpr, ACC: tl.constexpr):
    """y[m] = sum over k of x[kept(m) + reduced(k)], k in order: each output element is summed
    by one program in a fixed order (deterministic, no atomics). m walks the kept dims
    [K0..K7] (x strides ks, y strides ys), k the reduced dims [R0..R7] (x strides rs).
    Program (i, c) sums k in [c * k_chunk, (c + 1) * k_chunk) into y + c * part_stride (a
    partial sum per chunk when few outputs take long sums; a second launch adds the
    partials in order)."""
    pid = tl.program_id(0)
    part = tl.program_id(1)
    m = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = m < M
    x_base, y_off = _unravel8(m, K1, K2, K3, K4, K5, K6, K7, ks0, ks1, ks2, ks3, ks4, ks5,
                              ks6, ks7, ys0, ys1, ys2, ys3, ys4, ys5, ys6, ys7)
    y_off += part.to(tl.int64) * part_stride
    acc = tl.zeros([BLOCK], dtype=ACC)
    lo = part * k_chunk
    hi = tl.minimum(lo + k_chunk, K)
    for k in range(lo, hi):
        off, _ = _unravel8(tl.cast(k, tl.int64), R1, R2, R3, R4, R5, R6, R7,
                           rs0, rs1, rs2, rs3, rs4, rs5, rs6, rs7, 0, 0, 0, 0, 0, 0, 0, 0)
        acc += tl.load(x_ptr + off + x_base, mask=mask, other=0).to(ACC)
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _cat_piece(y_ptr, x_ptr, local, row_stride, width, col, rows, ys_row,
               TR: tl.constexpr, TC: tl.constexpr, WIDE: tl.constexpr):
    """Tile `local` of one input [rows, width] (row stride row_stride, unit columns) into y's
    columns [col, col + width)."""
    tiles_c = tl.cdiv(width, TC)
    tc = local % tiles_c
    tr = (local // tiles_c).to(tl.int64)
    r0 = tr * TR
    cols = tc * TC + tl.arange(0, TC)
    rows_in = tl.arange(0, TR)
    if WIDE:
        cols = cols.to(tl.int64)
        rows_in = rows_in.to(tl.int64)
    mask = ((r0 + rows_in) < rows)[:, None] & (cols < width)[None, :]
    xp = x_ptr + r0 * row_stride
    yp = y_ptr + r0 * ys_row + col
    v = tl.load(xp + rows_in[:, None] * row_stride + cols[None, :], mask=mask)
    tl.store(yp + rows_in[:, None] * ys_row + cols[None, :], v.to(y_ptr.dtype.element_ty),
             mask=mask)


@triton.jit
def cat_kernel(y_ptr, x0, x1, x2, x3, x4, x5, x6, x7,
               r0, r1, r2, r3, r4, r5, r6, r7,
               w0, w1, w2, w3, w4, w5, w6, w7,
               c0, c1, c2, c3, c4, c5, c6, c7,
               p1, p2, p3, p4, p5, p6, p7,
               rows, ys_row,
               N: tl.constexpr, TR: tl.constexpr, TC: tl.constexpr, WIDE: tl.constexpr):
    """y[:, c_i : c_i + w_i] = x_i viewed as [rows, w_i] for the N inputs (N <= 8, each of its
    own dtype); programs [p_i, p_{i+1}) take input i's tiles (p_0 = 0, p_k = the grid for
    k >= N). One scalar branch per program picks its input."""
    pid = tl.program_id(0)
    if pid < p1:
        _cat_piece(y_ptr, x0, pid, r0, w0, c0, rows, ys_row, TR, TC, WIDE)
    if N > 1:
        if (pid >= p1) & (pid < p2):
            _cat_piece(y_ptr, x1, pid - p1, r1, w1, c1, rows, ys_row, TR, TC, WIDE)
    if N > 2:
        if (pid >= p2) & (pid < p3):
            _cat_piece(y_ptr, x2, pid - p2, r2, w2, c2, rows, ys_row, TR, TC, WIDE)
    if N > 3:
        if (pid >= p3) & (pid < p4):
            _cat_piece(y_ptr, x3, pid - p3, r3, w3, c3, rows, ys_row, TR, TC, WIDE)
    if N > 4:
        if (pid >= p4) & (pid < p5):
            _cat_piece(y_ptr, x4, pid - p4, r4, w4, c4, rows, ys_row, TR, TC, WIDE)
    if N > 5:
        if (pid >= p5) & (pid < p6):
            _cat_piece(y_ptr, x5, pid - p5, r5, w5, c5, rows, ys_row, TR, TC, WIDE)
    if N > 6:
        if (pid >= p6) & (pid < p7):
            _cat_piece(y_ptr, x6, pid - p6, r6, w6, c6, rows, ys_row, TR, TC, WIDE)
    if N > 7:
        if pid >= p7:
            _cat_piece(y_ptr, x7, pid - p7, r7, w7, c7, rows, ys_row, TR, TC, WIDE)
