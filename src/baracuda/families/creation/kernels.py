"""Creation kernels: one store-only kernel per pattern (a constant, a range, a band matrix,
the triangle index pairs); dtypes and variants are constexprs. Every output element is
computed from its own index alone, so results are deterministic and need no workspace."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import round_to

ARANGE, LINSPACE, LOGSPACE = 0, 1, 2


@triton.jit
def _offset4(i, S1, S2, S3, st0, st1, st2, st3):
    """Element offset of flat (row-major) index i in a tensor of collapsed shape
    [S0, S1, S2, S3] (S0 implied) with strides st0..st3 (int64 math)."""
    i3 = i % S3
    r = i // S3
    i2 = r % S2
    r = r // S2
    return (r // S1) * st0 + (r % S1) * st1 + i2 * st2 + i3 * st3


@triton.jit
def fill_kernel(y_ptr, value_ptr, bits, n, S1, S2, S3, st0, st1, st2, st3,
                FROM_TENSOR: tl.constexpr, DENSE: tl.constexpr, BLOCK: tl.constexpr):
    """y = value. A scalar arrives as its bit pattern (`bits`, y is then the same-width integer
    view of the output, so every dtype is one store); a 0-d tensor value is loaded and
    converted to y's dtype. Dense outputs store whole blocks without a mask (16-byte vector
    stores) and mask only the last block."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    out_ty = y_ptr.dtype.element_ty
    if FROM_TENSOR:
        value = tl.load(value_ptr)
        if out_ty == tl.bfloat16 and not value.dtype.is_floating():
            value = value.to(tl.float32)  # (the interpreter casts ints to bf16 bitwise)
        v = tl.full([BLOCK], 0, out_ty) + round_to(value, out_ty)
    else:
        v = tl.full([BLOCK], bits, out_ty)
    if DENSE:
        if (pid + 1) * BLOCK <= n:
            tl.store(y_ptr + offs, v)
        else:
            tl.store(y_ptr + offs, v, mask=offs < n)
    else:
        where = _offset4(offs, S1, S2, S3, st0, st1, st2, st3)
        tl.store(y_ptr + where, v, mask=offs < n)


@triton.jit
def _f64_of(hi, lo):
    """The float64 whose bit pattern's high and low 32-bit halves are hi and lo."""
    h = tl.cast(hi, tl.int64) << 32
    low = tl.cast(lo, tl.int64) & 0xFFFFFFFF
    return (h | low).to(tl.float64, bitcast=True)


@triton.jit
def _power(base, x, log2_base):
    """base ** x: by squaring for integral |x| < 128 (exact where the power is representable,
    as C's pow), else exp2(x log2 base)."""
    ax = tl.abs(x)
    integral = (x == tl.floor(x)) & (ax < 128.0)
    k = tl.where(integral, ax, 0.0).to(tl.int32)
    r = tl.full(x.shape, 1.0, x.dtype)
    p = tl.full(x.shape, 1.0, x.dtype) * base
    for b in tl.static_range(7):
        r = tl.where(((k >> b) & 1) != 0, r * p, r)
        p = p * p
    r = tl.where(x < 0, 1.0 / r, r)
    return tl.where(integral, r, tl.exp2(x * log2_base))


@triton.jit
def range_kernel(y_ptr, stride, n, a_hi, a_lo, b_hi, b_lo, c_hi, c_lo, base_hi, base_lo,
                 lb_hi, lb_lo, half, KIND: tl.constexpr, ACC: tl.constexpr,
                 INT_ARANGE: tl.constexpr, BLOCK: tl.constexpr, STEPS: tl.constexpr,
                 HALF_OPS: tl.constexpr = False):
    """y[i * stride] for i < n, STEPS blocks per program. ARANGE: a + c * i (integers: in
    int64, a and c the start and step as ints in a_hi / c_hi); LINSPACE: a + c i below
    `half`, b - c (n - 1 - i) from it (a, b the ends, c the step); LOGSPACE: base ** (the
    LINSPACE value). Float parameters arrive as float64 bit halves, already rounded to ACC on
    the host. HALF_OPS (a half-precision LINSPACE): every operation rounded to the half
    type, index included, as torch's CUDA kernel computes in c10::Half / BFloat16."""
    pid = tl.program_id(0).to(tl.int64)
    out_ty = y_ptr.dtype.element_ty
    for step in tl.static_range(STEPS):
        i = (pid * STEPS + step) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
        if INT_ARANGE:
            v = (tl.cast(a_hi, tl.int64) + tl.cast(c_hi, tl.int64) * i).to(out_ty)
        else:
            a = _f64_of(a_hi, a_lo).to(ACC)
            c = _f64_of(c_hi, c_lo).to(ACC)
            if KIND == 0:
                v = a + c * i.to(ACC)
            else:
                b = _f64_of(b_hi, b_lo).to(ACC)
                if HALF_OPS:
                    up = c * i.to(ACC).to(out_ty).to(ACC)
                    down = c * (n - 1 - i).to(ACC).to(out_ty).to(ACC)
                    v = tl.where(i < half, a + up.to(out_ty).to(ACC),
                                 b - down.to(out_ty).to(ACC))
                else:
                    v = tl.where(i < half, a + c * i.to(ACC), b - c * (n - 1 - i).to(ACC))
                if KIND == 2:
                    v = _power(_f64_of(base_hi, base_lo).to(ACC), v,
                               _f64_of(lb_hi, lb_lo).to(ACC))
            v = round_to(v, out_ty)
        tl.store(y_ptr + i * stride, v, mask=i < n)


@triton.jit
def band_kernel(y_ptr, rows, cols, s0, s1, lower, upper, BLOCK_R: tl.constexpr,
                BLOCK_C: tl.constexpr):
    """y[r, c] = (lower <= c - r <= upper) for a [BLOCK_R, BLOCK_C] tile per program (the
    predicate in int32, the addresses in int64)."""
    pid = tl.program_id(0)
    col_tiles = tl.cdiv(cols, BLOCK_C)
    r = (pid // col_tiles) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = (pid % col_tiles) * BLOCK_C + tl.arange(0, BLOCK_C)
    d = c[None, :] - r[:, None]  # [BLOCK_R, BLOCK_C]
    v = tl.where((d >= lower) & (d <= upper), 1.0, 0.0).to(y_ptr.dtype.element_ty)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    where = r.to(tl.int64)[:, None] * s0 + c.to(tl.int64)[None, :] * s1
    tl.store(y_ptr + where, v, mask=mask)


@triton.jit
def tri_indices_kernel(y_ptr, s0, s1, count, cols, offset, first, trap, length, before,
                       TRIL: tl.constexpr, BLOCK: tl.constexpr):
    """The k-th (row, col) pair of a triangle in row-major order, in closed form: full rows
    (k // cols, k % cols) and a trapezoid of rows whose lengths change by one, whose row comes
    from a quadratic's root (float64 sqrt, then corrected by one step either way in exact
    integer arithmetic). Row 0 of y gets the rows, row 1 the columns."""
    pid = tl.program_id(0).to(tl.int64)
    k = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    L = tl.cast(length, tl.int64)
    if TRIL:
        # trapezoid first: rows first.. of lengths L, L+1, ...; then full rows
        area = trap * L + trap * (trap - 1) // 2
        q = tl.where(k < area, k, 0)
        b = (2 * L - 1).to(tl.float64)
        t = ((tl.sqrt(b * b + 8.0 * q.to(tl.float64)) - b) * 0.5).to(tl.int64)
        t = tl.where(t * L + t * (t - 1) // 2 > q, t - 1, t)
        t = tl.where((t + 1) * L + (t + 1) * t // 2 <= q, t + 1, t)
        r = tl.maximum(k - area, 0)
        row = tl.where(k < area, first + t, first + trap + r // cols)
        col = tl.where(k < area, q - (t * L + t * (t - 1) // 2), r % cols)
    else:
        # full rows first (`before` elements), then rows of lengths L, L-1, ...
        q = tl.maximum(k - before, 0)
        b = (2 * L + 1).to(tl.float64)
        t = ((b - tl.sqrt(tl.maximum(b * b - 8.0 * q.to(tl.float64), 0.0))) * 0.5).to(tl.int64)
        t = tl.where(t * L - t * (t - 1) // 2 > q, t - 1, t)
        t = tl.where((t + 1) * L - (t + 1) * t // 2 <= q, t + 1, t)
        trow = first + t
        row = tl.where(k < before, k // cols, trow)
        col = tl.where(k < before, k % cols, trow + offset + q - (t * L - t * (t - 1) // 2))
    out_ty = y_ptr.dtype.element_ty
    mask = k < count
    tl.store(y_ptr + k * s1, row.to(out_ty), mask=mask)
    tl.store(y_ptr + s0 + k * s1, col.to(out_ty), mask=mask)
