"""The op-table branches of the predicate, bit-level and exponent kinds (`ops.py` and
`ops_nary.py` call in here): isnan-style predicates, frexp's parts, numpy's spacing,
jax.lax's population_count / clz / shift_right_logical / reduce_precision, gcd / lcm, mulhi,
heaviside and ldexp. Float bit work reads the bits of the compute type (f32 for halves, whose
values it holds exactly) except spacing, which steps in the operand's own type."""
# ruff: noqa: F405 - the op-code constants come from codes.py's generated star export

from __future__ import annotations

import triton
import triton.language as tl

from . import special as S
from .codes import *  # noqa: F403

DEG_TO_RAD = tl.constexpr(0.017453292519943295)
RAD_TO_DEG = tl.constexpr(57.29577951308232)


# compiled Triton materializes a Python float as float32: float64 operands take each factor
# as a float32 head and tail (head + tail is the float64 factor to ~1e-16)
DEG_TO_RAD_HEAD = tl.constexpr(0.01745329238474369)
DEG_TO_RAD_TAIL = tl.constexpr(1.3519960498364902e-10)
RAD_TO_DEG_HEAD = tl.constexpr(57.295780181884766)
RAD_TO_DEG_TAIL = tl.constexpr(-6.688024427603523e-07)


@triton.jit
def unary_scaled(x, OP: tl.constexpr):
    """x times the constant factor of the linear unary kinds (identity, deg2rad, rad2deg),
    the factor's float64 value for float64 x."""
    if OP == U_DEG2RAD:
        if x.dtype == tl.float64:
            return _head_tail(x, DEG_TO_RAD_HEAD, DEG_TO_RAD_TAIL)
        return x * DEG_TO_RAD
    elif OP == U_RAD2DEG:
        if x.dtype == tl.float64:
            return _head_tail(x, RAD_TO_DEG_HEAD, RAD_TO_DEG_TAIL)
        return x * RAD_TO_DEG
    else:
        return x


@triton.jit
def _head_tail(x, HEAD: tl.constexpr, TAIL: tl.constexpr):
    """x (HEAD + TAIL); an infinite (or NaN) x HEAD stands alone (inf + -inf would be NaN)."""
    hi = x * HEAD
    return tl.where(tl.abs(hi) < float("inf"), hi + x * TAIL, hi)


@triton.jit
def frexp_parts(x):
    """(mantissa in [0.5, 1) with x's sign, exponent) with x = mantissa * 2**exponent; +-0,
    +-inf and NaN give (x, 0), as torch. Read from the bits (a subnormal's mantissa is
    converted as an integer), so hardware that flushes subnormals in float math still splits
    them."""
    IT: tl.constexpr = tl.int64 if x.dtype == tl.float64 else tl.int32
    SM: tl.constexpr = 52 if x.dtype == tl.float64 else 23
    EM: tl.constexpr = 0x7FF if x.dtype == tl.float64 else 0xFF
    BIAS: tl.constexpr = 1022 if x.dtype == tl.float64 else 126
    SUB: tl.constexpr = -1074 if x.dtype == tl.float64 else -149
    SIGN: tl.constexpr = -(1 << 63) if x.dtype == tl.float64 else -(1 << 31)
    bits = x.to(IT, bitcast=True)
    e = (bits >> SM) & EM
    frac = bits & ((1 << SM) - 1)
    special = (e == EM) | ((e == 0) & (frac == 0))
    # a subnormal: its mantissa as an integer (exact in the float type), split as a normal
    sub = frac.to(x.dtype)
    sbits = sub.to(IT, bitcast=True)
    se = (sbits >> SM) & EM
    sfrac = sbits & ((1 << SM) - 1)
    is_sub = e == 0
    e = tl.where(is_sub, se, e)
    frac = tl.where(is_sub, sfrac, frac)
    exponent = tl.where(is_sub, e - BIAS + SUB, e - BIAS)
    mant = ((bits & SIGN) | frac | (BIAS << SM)).to(x.dtype, bitcast=True)
    return tl.where(special, x, mant), tl.where(special, 0, exponent).to(tl.int32)


@triton.jit
def spacing(x):
    """numpy.spacing in x's own type: the next float away from zero minus x (x < 0 steps
    toward -inf; +-0 gives the smallest subnormal); NaN for +-inf and NaN."""
    if x.dtype == tl.float64:
        IT: tl.constexpr = tl.int64
        WT: tl.constexpr = tl.float64
    elif x.dtype == tl.float32:
        IT: tl.constexpr = tl.int32
        WT: tl.constexpr = tl.float32
    else:
        IT: tl.constexpr = tl.int16
        WT: tl.constexpr = tl.float32
    base = tl.where(x == 0, tl.zeros_like(x), x)
    nxt = (base.to(IT, bitcast=True) + 1).to(x.dtype, bitcast=True)
    y = nxt.to(WT) - base.to(WT)  # adjacent floats: the difference is exact
    return tl.where(tl.abs(x.to(WT)) == float("inf"), float("nan"), y)


@triton.jit
def reduce_precision(x, eb, mb):
    """jax.lax.reduce_precision(x, exponent_bits=eb, mantissa_bits=mb) on f32 / f64 bits
    (XLA's algorithm): the mantissa rounded to nearest even, exponents above the narrow range
    to +-inf, at or below its smallest normal exponent to +-0; NaN kept. A width at least the
    compute type's leaves that part alone."""
    IT: tl.constexpr = tl.int64 if x.dtype == tl.float64 else tl.int32
    SM: tl.constexpr = 52 if x.dtype == tl.float64 else 23
    SE: tl.constexpr = 11 if x.dtype == tl.float64 else 8
    EXP_MASK: tl.constexpr = ((1 << SE) - 1) << SM
    BIAS: tl.constexpr = (1 << (SE - 1)) - 1
    bits = x.to(IT, bitcast=True)
    one = bits * 0 + 1
    m = mb.to(IT)
    e = eb.to(IT)
    do_m = m < SM
    sh = tl.where(do_m, SM - m, 1)
    last = one << sh
    bias = ((bits & last) >> sh) + ((last >> 1) - 1)
    bits = tl.where(do_m, (bits + bias) & ~(last - 1), bits)
    do_e = e < SE
    rbias = (one << (tl.where(do_e, e, 2) - 1)) - 1
    exponent = bits & EXP_MASK
    sign = bits & (-1 << (SM + SE))
    over = exponent > ((rbias + BIAS) << SM)
    under = exponent <= ((BIAS - rbias) << SM)
    reduced = tl.where(over, sign | EXP_MASK, tl.where(under, sign, bits))
    bits = tl.where(do_e, reduced, bits)
    return tl.where(x != x, x, bits.to(x.dtype, bitcast=True))


@triton.jit
def _popcount(x):
    nb: tl.constexpr = x.dtype.primitive_bitwidth
    c = x * 0
    for i in tl.static_range(nb):
        c += (x >> i) & 1
    return c


@triton.jit
def _clz(x):
    """Binary search for the highest set bit (a negative signed x has none leading: 0)."""
    nb: tl.constexpr = x.dtype.primitive_bitwidth
    LOG: tl.constexpr = 6 if nb == 64 else 5 if nb == 32 else 4 if nb == 16 else 3
    v = tl.where(x < 0, x * 0, x)
    n = v * 0 + nb
    for i in tl.static_range(LOG):
        s = nb >> (i + 1)
        hi = v >> s
        big = hi != 0
        n = tl.where(big, n - s, n)
        v = tl.where(big, hi, v)
    return tl.where(x < 0, x * 0, n - v)


@triton.jit
def apply_unary_more(x, OP: tl.constexpr):
    """Forward formula of the unary kinds from deg2rad on (table order)."""
    if OP == U_DEG2RAD or OP == U_RAD2DEG:
        y = unary_scaled(x, OP)
    elif OP == U_ISFINITE:
        if x.dtype.is_floating():
            y = tl.abs(x) < float("inf")
        else:
            y = x == x
    elif OP == U_ISINF:
        if x.dtype.is_floating():
            y = tl.abs(x) == float("inf")
        else:
            y = x != x
    elif OP == U_ISNAN:
        y = x != x
    elif OP == U_ISPOSINF:
        if x.dtype.is_floating():
            y = x == float("inf")
        else:
            y = x != x
    elif OP == U_ISNEGINF:
        if x.dtype.is_floating():
            y = x == -float("inf")
        else:
            y = x != x
    elif OP == U_ISREAL:  # real dtypes only: always true
        y = (x == x) | (x != x)
    elif OP == U_SIGNBIT:
        if x.dtype.is_floating():
            y = S.signbit(x)
        else:
            y = x < 0
    elif OP == U_LOGICAL_NOT:
        y = x == 0
    elif OP == U_BITWISE_NOT:  # x ^ all-ones (the interpreter's ~ can't form uint8's)
        y = x ^ (x * 0 - 1)
    elif OP == U_POPULATION_COUNT:
        y = _popcount(x)
    elif OP == U_CLZ:
        y = _clz(x)
    elif OP == U_FREXP_MANTISSA:
        y, _ = frexp_parts(x)
    elif OP == U_FREXP_EXPONENT:
        _, y = frexp_parts(x)
    elif OP == U_SPACING:
        y = spacing(x)
    else:
        tl.static_assert(False, "unknown unary op")
    return y


@triton.jit
def _gcd(a, b, ITERS: tl.constexpr):
    """Euclid on |a|, |b| (ITERS covers the longest chain of the width: Fibonacci pairs)."""
    a = tl.abs(a)
    b = tl.abs(b)
    for _ in range(ITERS):
        nz = b != 0
        r = a % tl.where(nz, b, 1)
        a = tl.where(nz, b, a)
        b = tl.where(nz, r, b * 0)
    return a


@triton.jit
def _mulhi64(a, b):
    """The high 64 bits of the signed 128-bit product (Hacker's Delight mulhs: 32-bit limbs,
    the partial sums kept inside int64)."""
    LO: tl.constexpr = 0xFFFFFFFF
    al = a & LO
    ah = a >> 32
    bl = b & LO
    bh = b >> 32
    t = al * bl
    mid1 = ah * bl + ((t >> 32) & LO)
    mid2 = al * bh + (mid1 & LO)
    return ah * bh + (mid1 >> 32) + (mid2 >> 32)


@triton.jit
def apply_binary_more(a, b, OP: tl.constexpr):
    """Forward formula of the binary kinds from heaviside on (table order): heaviside,
    ldexp, gcd, lcm, shift_right_logical, mulhi, bit_at."""
    nb: tl.constexpr = a.dtype.primitive_bitwidth
    ITERS: tl.constexpr = 12 if nb == 8 else 24 if nb == 16 else 47 if nb == 32 else 93
    if OP == B_HEAVISIDE:  # torch: values where input == 0, else (input > 0); NaN gives 0
        zero = tl.zeros_like(a)
        y = tl.where(a == 0, b, tl.where(a > 0, zero + 1, zero))
    elif OP == B_LDEXP:  # torch: input * 2 ** other
        y = a * tl.exp2(b)
    elif OP == B_GCD:
        y = _gcd(a, b, ITERS)
    elif OP == B_LCM:  # torch: |a / gcd * b|, 0 where the gcd is 0
        g = _gcd(a, b, ITERS)
        q = a // tl.where(g == 0, 1, g)
        if nb < 32:  # C's promotion: the product and its abs in int, then narrowed
            y = tl.abs(q.to(tl.int32) * b.to(tl.int32)).to(a.dtype)
        else:
            y = tl.abs(q * b)
        y = tl.where(g == 0, g, y)
    elif OP == B_SHIFT_RIGHT_LOGICAL:  # zero fill; shifts outside [0, width) give 0
        ok = (b >= 0) & (b < nb)
        s = tl.where(ok, b, 0)
        one = a * 0 + 1
        keep = tl.where(s == 0, -one, (one << (nb - tl.where(s == 0, 1, s))) - 1)
        y = tl.where(ok, (a >> s) & keep, a * 0)
    elif OP == B_MULHI:
        if nb == 64:
            y = _mulhi64(a, b)
        else:
            y = ((a.to(tl.int64) * b.to(tl.int64)) >> nb).to(a.dtype)
    elif OP == B_BIT_AT:  # bit b (0..width-1) of a
        y = (a >> b) & 1
    else:
        tl.static_assert(False, "unknown binary op")
    return y
