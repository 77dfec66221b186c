"""Random kernels: one fill kernel, the distribution a constexpr. Element i (the row-major
index in y's logical shape) takes word i % 4 of Philox group i // 4 (i % 2 / i // 2 when an
element needs two words), so a value depends on (seed, offset, i) alone; a program draws
GROUPS groups and lays their words out as a [GROUPS, K] tile of elements."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.philox import box_muller, load_state, philox_words, pick4, unit_f64, unit_float
from ...backends.triton_support import join_f64, line_offset, round_to

UNIFORM, NORMAL, LOG_NORMAL, EXPONENTIAL, CAUCHY, GEOMETRIC, BERNOULLI, RANDINT, BITS = range(9)


@triton.jit
def _pick2(k, v0, v1):
    return tl.where(k == 0, v0[:, None], v1[:, None])


@triton.jit
def _uniforms(k, r0, r1, r2, r3, DIGITS: tl.constexpr, WIDE: tl.constexpr):
    """[G, K] uniforms in [0, 1): f32 on the dtype's grid, or f64 from word pairs."""
    if WIDE:
        u = _pick2(k, unit_f64(r0, r1), unit_f64(r2, r3))
    else:
        u = unit_float(pick4(k, r0, r1, r2, r3), DIGITS)
    return u


@triton.jit
def _normals(k, r0, r1, r2, r3, WIDE: tl.constexpr):
    """[G, K] standard normals by Box-Muller: words (0, 1) and (2, 3) make a pair each (one
    pair of f64 uniforms when WIDE)."""
    if WIDE:
        z0, z1 = box_muller(unit_f64(r0, r1), unit_f64(r2, r3))
        z = _pick2(k, z0, z1)
    else:
        z0, z1 = box_muller(unit_float(r0, 24), unit_float(r1, 24))
        z2, z3 = box_muller(unit_float(r2, 24), unit_float(r3, 24))
        z = pick4(k, z0, z1, z2, z3)
    return z


@triton.jit
def _integers(k, r0, r1, r2, r3, low, span, DIST: tl.constexpr, WIDE: tl.constexpr,
              FULL: tl.constexpr):
    """[G, K] int64: the raw bits (BITS) or low + w mod span (RANDINT)."""
    if WIDE:
        lo = _pick2(k, r0, r2).to(tl.uint64)
        hi = _pick2(k, r1, r3).to(tl.uint64)
        w = lo | (hi << 32)
    else:
        w = pick4(k, r0, r1, r2, r3).to(tl.uint64)
    if DIST == 8:
        if WIDE:
            v = w.to(tl.int64, bitcast=True)
        else:
            v = w.to(tl.uint32).to(tl.int32, bitcast=True).to(tl.int64)
    else:
        if not FULL:
            w = w % tl.cast(span, tl.int64).to(tl.uint64)  # (same width: the bits)
        v = w.to(tl.int64, bitcast=True) + tl.cast(low, tl.int64)
    return v


@triton.jit
def random_kernel(y_ptr, rng_ptr, a_ptr, b_ptr, base, n, S1, S2, S3,
                  ys0, ys1, ys2, ys3, as0, as1, as2, as3, bs0, bs1, bs2, bs3,
                  a_hi, a_lo, b_hi, b_lo, low, span,
                  DIST: tl.constexpr, DIGITS: tl.constexpr, WIDE: tl.constexpr,
                  ACC: tl.constexpr, HAS_A: tl.constexpr, HAS_B: tl.constexpr,
                  DENSE: tl.constexpr, FULL: tl.constexpr, GROUPS: tl.constexpr):
    """y's elements base .. base + n - 1 (y_ptr points at element `base`; a collapsed layout
    [S0, S1, S2, S3] with strides ys*, as*, bs* unless DENSE). a / b: the distribution's
    parameters, scalars split as (hi, lo) (`join_f64`) or tensors (HAS_A / HAS_B);
    low / span: RANDINT's integers (span as int64 bits; FULL: span 2^64)."""
    K: tl.constexpr = 2 if WIDE else 4
    pid = tl.program_id(0).to(tl.int64)
    seed, offset = load_state(rng_ptr)
    g = base // K + pid * GROUPS + tl.arange(0, GROUPS).to(tl.int64)  # [G]
    r0, r1, r2, r3 = philox_words(seed, offset, g)
    k = tl.arange(0, K)[None, :]
    local = g[:, None] * K + k - base  # [G, K]
    mask = (local >= 0) & (local < n)
    local = tl.where(mask, local, 0)
    out_ty = y_ptr.dtype.element_ty
    if DENSE:
        y_off = local
    else:
        y_off = line_offset(local, S1, S2, S3, ys0, ys1, ys2, ys3)
    if HAS_A:
        a = tl.load(a_ptr + line_offset(local, S1, S2, S3, as0, as1, as2, as3),
                    mask=mask, other=0).to(ACC)
    else:
        a = join_f64(a_hi, a_lo, ACC)
    if HAS_B:
        b = tl.load(b_ptr + line_offset(local, S1, S2, S3, bs0, bs1, bs2, bs3),
                    mask=mask, other=0).to(ACC)
    else:
        b = join_f64(b_hi, b_lo, ACC)
    if DIST == 7 or DIST == 8:
        v = _integers(k, r0, r1, r2, r3, low, span, DIST, WIDE, FULL)
        if out_ty == tl.int1:
            y = v != 0
        elif out_ty.is_floating():
            y = round_to(v.to(tl.float64), out_ty)
        else:
            y = v.to(out_ty)
    elif DIST == 1 or DIST == 2:
        x = a + b * _normals(k, r0, r1, r2, r3, WIDE).to(ACC)
        if DIST == 2:
            x = tl.exp(x)
        y = round_to(x, out_ty)
    else:
        u = _uniforms(k, r0, r1, r2, r3, DIGITS, WIDE).to(ACC)
        if DIST == 0:
            y = round_to(a + (b - a) * u, out_ty)
            y = tl.where(y.to(ACC) >= b, round_to(a + 0 * u, out_ty), y)
        elif DIST == 6:
            y = tl.where(u < a, 1, 0).to(out_ty)
        else:
            one_minus = 1.0 - u  # (0, 1]: logarithms stay finite
            if DIST == 3:
                x = -tl.log(one_minus) / a
            elif DIST == 4:
                t = 3.141592653589793 * (u - 0.5)
                x = a + b * (tl.sin(t) / tl.cos(t))
            else:
                x = tl.maximum(tl.ceil(tl.log(one_minus) / b), 1.0)  # b = log1p(-p)
            if out_ty.is_floating():
                y = round_to(x, out_ty)
            else:
                y = x.to(out_ty)
    tl.store(y_ptr + y_off, y, mask=mask)
