"""Special functions written with `tl` arithmetic only (the interpreter has no libdevice, and
Triton 3.6's `tl.math` lacks log1p, expm1, tanh, atan, lgamma, digamma, erfinv and i0).
A constexpr constant multiplies a tensor from the right (`r * PI`): Triton 3.8's interpreter
makes `PI * r` an object that `tl.sin` and the other `tl.math` functions reject.

Every function is generic over the compute type: f32 for f32/f16/bf16 inputs, f64 for f64
(series lengths are chosen so f64 results meet the 1e-10 relative tolerance of the tests).
"""

from __future__ import annotations

import triton
import triton.language as tl

PI = tl.constexpr(3.141592653589793)
PIO2 = tl.constexpr(1.5707963267948966)
LN2 = tl.constexpr(0.6931471805599453)
HALF_LOG_2PI = tl.constexpr(0.9189385332046727)


@triton.jit
def signbit(x):
    """The sign bit (negative numbers, -0.0 and negative NaNs), read through a bitcast."""
    if x.dtype == tl.float64:
        return x.to(tl.int64, bitcast=True) < 0
    else:
        return x.to(tl.float32).to(tl.int32, bitcast=True) < 0


@triton.jit
def isnan(x):
    return x != x


@triton.jit
def log1p(x):
    # A short series near 0 (where log(1+x) cancels), Goldberg's trick elsewhere.
    s = x * (1.0 - x * (0.5 - x * (0.3333333333333333 - x * (0.25 - x * (
        0.2 - x * (0.16666666666666666 - x * (0.14285714285714285 - x * 0.125)))))))
    u = 1.0 + x
    d = u - 1.0
    r = tl.log(u) * (x / tl.where(d == 0.0, 1.0, d))
    r = tl.where(u == float("inf"), u, r)
    return tl.where(tl.abs(x) < 0.01, s, r)


@triton.jit
def expm1(x):
    s = x * (1.0 + x * (0.5 + x * (0.16666666666666666 + x * (0.041666666666666664 + x * (
        0.008333333333333333 + x * (0.001388888888888889 + x * 0.0001984126984126984))))))
    u = tl.exp(x)
    d = u - 1.0
    lu = tl.log(u)
    r = d * (x / tl.where(lu == 0.0, 1.0, lu))
    r = tl.where(d == -1.0, -1.0, r)
    r = tl.where(u == float("inf"), u, r)
    return tl.where(tl.abs(x) < 0.01, s, r)


@triton.jit
def tanh(x):
    """Odd form through expm1: accurate near 0 and saturating cleanly to +-1."""
    e = expm1(-2.0 * tl.abs(x))
    t = -e / (2.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def softplus(x, beta, threshold):
    """torch's softplus: x where beta*x > threshold, else log1p(exp(beta*x)) / beta."""
    bx = x * beta
    return tl.where(bx > threshold, x, log1p(tl.exp(bx)) / beta)


@triton.jit
def trunc(x):
    return tl.where(x < 0, tl.math.ceil(x), tl.math.floor(x))


@triton.jit
def round_half_even(x):
    r = tl.math.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2.0 * tl.math.floor(r * 0.5)) != 0.0
    r = tl.where(tie & odd, r - 1.0, r)
    if x.dtype == tl.float64:
        big = 4503599627370496.0  # 2^52: every f64 at or above is an integer
    else:
        big = 8388608.0  # 2^23
    return tl.where(tl.abs(x) >= big, x, r)


@triton.jit
def atan(x):
    """Cephes atan: range reduction to |z| <= tan(pi/8) and a (4, 5) rational."""
    ax = tl.abs(x)
    big = ax > 2.414213562373095
    mid = ax > 0.66
    z = tl.where(big, -1.0 / ax, tl.where(mid, (ax - 1.0) / (ax + 1.0), ax))
    zero = tl.zeros_like(ax)  # constants take x's type (a bare where of floats is f32)
    y0 = tl.where(big, zero + PIO2, tl.where(mid, zero + 0.7853981633974483, zero))
    zz = z * z
    p = (((-8.750608600031904122785e-1 * zz - 1.615753718733365076637e1) * zz
          - 7.500855792314704667340e1) * zz - 1.228866684490136173410e2) * zz \
        - 6.485021904942025371773e1
    q = ((((zz + 2.485846490142306297962e1) * zz + 1.650270098316988542046e2) * zz
          + 4.328810604912902668951e2) * zz + 4.853903996359136964868e2) * zz \
        + 1.945506571482613964425e2
    r = z * zz * p / q + z
    corr = tl.where(big, zero + 6.123233995736765886130e-17,
                    tl.where(mid, zero + 3.061616997868382943065e-17, zero))
    r = y0 + (r + corr)
    return tl.where(x < 0, -r, r)


@triton.jit
def atan2(y, x):
    ay = tl.abs(y)
    ax = tl.abs(x)
    both_inf = (ay == float("inf")) & (ax == float("inf"))
    both_zero = (ay == 0) & (ax == 0)
    t = atan(ay / tl.where(both_zero, 1.0, ax))
    t = tl.where(both_inf, 0.7853981633974483, t)
    t = tl.where(signbit(x), -t + PI, t)
    return tl.where(signbit(y), -t, t)


@triton.jit
def sinpi_abs(x):
    """|sin(pi x)| with exact argument reduction (period 1 for the absolute value)."""
    r = x - tl.math.floor(x + 0.5)
    return tl.abs(tl.sin(r * PI))


@triton.jit
def _lgamma_pos(z):
    """lgamma for z > 0: shift below 8 up by the recurrence, then Stirling's series."""
    small = z < 8.0
    zs = tl.where(small, z + 8.0, z)
    prod = z * (z + 1.0) * (z + 2.0) * (z + 3.0) * (z + 4.0) * (z + 5.0) * (z + 6.0) * (z + 7.0)
    w = 1.0 / zs
    w2 = w * w
    ser = w * (0.08333333333333333 + w2 * (-0.002777777777777778 + w2 * (
        0.0007936507936507937 + w2 * (-0.0005952380952380952 + w2 * (
            0.0008417508417508417 + w2 * (-0.0019175269175269176 + w2 * 0.00641025641025641))))))
    st = (zs - 0.5) * tl.log(zs) - zs + HALF_LOG_2PI + ser
    return st - tl.where(small, tl.log(tl.where(small, prod, 1.0)), 0.0)


@triton.jit
def lgamma(x):
    neg = x < 0
    z = tl.where(neg, 1.0 - x, x)
    core = _lgamma_pos(z)
    refl = 1.1447298858494002 - tl.log(sinpi_abs(x)) - core  # log(pi / |sin(pi x)|)
    r = tl.where(neg, refl, core)
    return tl.where(tl.abs(x) == float("inf"), float("inf"), r)


@triton.jit
def _digamma_pos(z):
    small = z < 8.0
    zs = tl.where(small, z + 8.0, z)
    acc = 1.0 / z + 1.0 / (z + 1.0) + 1.0 / (z + 2.0) + 1.0 / (z + 3.0) + 1.0 / (z + 4.0) \
        + 1.0 / (z + 5.0) + 1.0 / (z + 6.0) + 1.0 / (z + 7.0)
    w = 1.0 / zs
    w2 = w * w
    ser = w2 * (0.08333333333333333 + w2 * (-0.008333333333333333 + w2 * (
        0.003968253968253968 + w2 * (-0.004166666666666667 + w2 * (
            0.007575757575757576 + w2 * -0.021092796092796094)))))
    asym = tl.log(zs) - 0.5 * w - ser
    return asym - tl.where(small, acc, 0.0)


@triton.jit
def digamma(x):
    """torch's conventions: digamma(0) = -inf, digamma(-0) = +inf, negative integers NaN."""
    neg = x < 0
    z = tl.where(neg, 1.0 - x, x)
    core = _digamma_pos(z)
    r = x - tl.math.floor(x + 0.5)  # in [-0.5, 0.5): tan(pi r) = tan(pi x), exact for tiny x
    refl = core - tl.cos(r * PI) * PI / tl.sin(r * PI)
    out = tl.where(neg, refl, core)
    out = tl.where(neg & (r == 0), float("nan"), out)
    out = tl.where(x == 0, tl.where(signbit(x), float("inf"), -float("inf")), out)
    return tl.where(x == float("inf"), x, out)


#: Below this |x| the pole term dominates digamma / trigamma to the last bit of f64:
#: digamma(x) = -1/x - euler + pi^2/6 x + ..., trigamma(x) = 1/x^2 + pi^2/6 + O(x).
POLE_TINY = tl.constexpr(1e-8)


@triton.jit
def scaled_digamma(g, x):
    """g * digamma(x) (the lgamma backward) without overflowing where the product is finite:
    near 0, g / x is formed directly (digamma(1e-40) overflows f32, g * digamma need not)."""
    tiny = tl.abs(x) < POLE_TINY
    return tl.where(tiny, -(g / x) - g * 0.5772156649015329, g * digamma(x))


@triton.jit
def scaled_trigamma(g, x):
    """g * trigamma(x) (the digamma backward), near 0 as (g / x) / x: see scaled_digamma."""
    tiny = tl.abs(x) < POLE_TINY
    return tl.where(tiny, (g / x) / x + g * 1.6449340668482264, g * trigamma(x))


@triton.jit
def _trigamma_pos(z):
    small = z < 8.0
    zs = tl.where(small, z + 8.0, z)
    acc = 1.0 / (z * z) + 1.0 / ((z + 1.0) * (z + 1.0)) + 1.0 / ((z + 2.0) * (z + 2.0)) \
        + 1.0 / ((z + 3.0) * (z + 3.0)) + 1.0 / ((z + 4.0) * (z + 4.0)) \
        + 1.0 / ((z + 5.0) * (z + 5.0)) + 1.0 / ((z + 6.0) * (z + 6.0)) \
        + 1.0 / ((z + 7.0) * (z + 7.0))
    w = 1.0 / zs
    w2 = w * w
    ser = w * (1.0 + w * (0.5 + w * (0.16666666666666666 + w2 * (-0.03333333333333333 + w2 * (
        0.023809523809523808 + w2 * (-0.03333333333333333 + w2 * 0.07575757575757576))))))
    return ser + tl.where(small, acc, 0.0)


@triton.jit
def trigamma(x):
    neg = x < 0
    z = tl.where(neg, 1.0 - x, x)
    core = _trigamma_pos(z)
    # sin(pi x) as torch's kernels form it (pi * x rounded first): at a negative integer the
    # pole then reads as torch's large finite value, not inf, and near one the same rounding
    s = tl.sin(x * PI)
    refl = -core + (PI * PI) / (s * s)
    return tl.where(neg, refl, core)


@triton.jit
def bessel_i(x, NU: tl.constexpr):
    """Modified Bessel I0 (NU=0) or I1 (NU=1): power series for |x| <= 30, the asymptotic
    expansion beyond."""
    ax = tl.abs(x)
    q = 0.25 * ax * ax
    term = tl.where(ax == ax, 1.0, ax)  # ones of x's type
    if NU == 1:
        term = term * 0.5 * ax
    total = term
    for k in tl.static_range(1, 64):
        term = term * q / (k * (k + NU))
        total = total + term
    inv = 1.0 / (8.0 * ax)
    t = tl.where(ax == ax, 1.0, ax)
    s = t
    for k in tl.static_range(1, 20):
        t = t * ((2 * k - 1) * (2 * k - 1) - 4 * NU * NU) * inv / k
        s = s + t
    asym = tl.exp(ax) * tl.math.rsqrt(ax * (2.0 * PI)) * s
    r = tl.where(ax > 30.0, asym, total)
    if NU == 1:
        r = tl.where(x < 0, -r, r)
    return r


@triton.jit
def erfinv(y):
    """Giles' single-precision approximation refined by two Newton steps in the compute type."""
    w = -tl.log((1.0 - y) * (1.0 + y))
    a = w - 2.5
    p1 = 2.81022636e-08
    p1 = 3.43273939e-07 + p1 * a
    p1 = -3.5233877e-06 + p1 * a
    p1 = -4.39150654e-06 + p1 * a
    p1 = 0.00021858087 + p1 * a
    p1 = -0.00125372503 + p1 * a
    p1 = -0.00417768164 + p1 * a
    p1 = 0.246640727 + p1 * a
    p1 = 1.50140941 + p1 * a
    b = tl.sqrt(tl.where(w < 5.0, 5.0, w)) - 3.0
    p2 = -0.000200214257 + 0.0 * b
    p2 = 0.000100950558 + p2 * b
    p2 = 0.00134934322 + p2 * b
    p2 = -0.00367342844 + p2 * b
    p2 = 0.00573950773 + p2 * b
    p2 = -0.0076224613 + p2 * b
    p2 = 0.00943887047 + p2 * b
    p2 = 1.00167406 + p2 * b
    p2 = 2.83297682 + p2 * b
    x = tl.where(w < 5.0, p1, p2) * y
    for _ in tl.static_range(2):
        err = tl.math.erf(x) - y
        x = x - err / (1.1283791670955126 * tl.exp(-x * x))
    x = tl.where(tl.abs(y) == 1.0, y * float("inf"), x)
    return tl.where(tl.abs(y) > 1.0, float("nan"), x)
