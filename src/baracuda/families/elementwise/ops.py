"""The op tables in `tl`: one `@triton.jit` function per arity mapping an op code (a constexpr)
to its forward formula, and one to its gradient. Codes are the row numbers of the kind tables
in `table.py` (checked there at import); each `if OP == n` is resolved at compile time.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import gelu_erf as _gelu
from ...backends.triton_support import gelu_erf_grad as _gelu_grad
from ...backends.triton_support import gelu_tanh as _gelu_tanh
from ...backends.triton_support import gelu_tanh_grad as _gelu_tanh_grad
from ...backends.triton_support import silu as _silu
from ...backends.triton_support import silu_grad as _silu_grad
from . import special as S

SELU_ALPHA = tl.constexpr(1.6732632423543772848170429916717)
SELU_SCALE = tl.constexpr(1.0507009873554804934193349852946)


@triton.jit
def _clamp(x, lo, hi):
    """NaN-propagating clamp (comparisons with NaN are false, so NaN passes through)."""
    return tl.where(x < lo, lo, tl.where(x > hi, hi, x))


@triton.jit
def _pow_float(a, b):
    """a**b for floats: exp2(b log2|a|) with the sign of odd integer powers of negatives and
    C's special cases (x**0 = 1, 1**y = 1, (-1)**+-inf = 1)."""
    r = tl.exp2(b * tl.log2(tl.abs(a)))
    b_int = tl.math.floor(b) == b
    b_odd = b_int & (tl.abs(b) != float("inf")) & ((b - 2.0 * tl.math.floor(b * 0.5)) != 0.0)
    r = tl.where(S.signbit(a) & b_odd, -r, r)  # -0 and -inf keep the sign of odd powers
    r = tl.where((a < 0) & ~b_int & (a != -float("inf")), float("nan"), r)
    r = tl.where((tl.abs(a) == 1.0) & (tl.abs(b) == float("inf")), 1.0, r)
    return tl.where((b == 0) | (a == 1.0), 1.0, r)


@triton.jit
def _pow_int(a, b):
    """Exact integer power by squaring (wraps like torch); negative exponents give 0 except
    for bases 1 and -1."""
    r = a * 0 + 1
    base = a
    e = b
    for _ in tl.static_range(63):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    neg_e = b < 0
    minus_one = tl.where((b & 1) != 0, a * 0 - 1, a * 0 + 1)
    rneg = tl.where(a == 1, a * 0 + 1, tl.where(a == -1, minus_one, a * 0))
    return tl.where(neg_e, rneg, r)


@triton.jit
def pow_any(a, b):
    if a.dtype.is_floating():
        return _pow_float(a, b)
    else:
        return _pow_int(a, b)


@triton.jit
def _pow_scalar(x, e):
    """torch's pow with a scalar exponent: sqrt / rsqrt for +-0.5, the general power else."""
    if x.dtype.is_floating():
        y = tl.where(e == 0.5, tl.sqrt(x), tl.where(e == -0.5, 1.0 / tl.sqrt(x),
                                                    pow_any(x, tl.zeros_like(x) + e)))
    else:
        y = pow_any(x, tl.zeros_like(x) + e)
    return y


@triton.jit
def apply_unary(x, p0, p1, OP: tl.constexpr):
    """Forward formula of unary kind OP (UnaryKind rows 0..53, identity 54, UnaryParamKind
    rows 60..71); p0, p1 are the kind's scalar parameters."""
    if OP == 0:  # neg
        y = -x
    elif OP == 1:  # abs
        y = tl.abs(x)
    elif OP == 2:  # sign (NaN gives 0, as torch)
        y = tl.where(x > 0, 1, tl.where(x < 0, -1, 0)).to(x.dtype)
    elif OP == 3:  # reciprocal
        y = 1.0 / x
    elif OP == 4:  # square
        y = x * x
    elif OP == 5:  # sqrt
        y = tl.sqrt(x)
    elif OP == 6:  # rsqrt
        y = 1.0 / tl.sqrt(x)
    elif OP == 7:  # cbrt: exp/log guess + one Newton step
        ax = tl.abs(x)
        g = tl.exp(tl.log(ax) * 0.3333333333333333)
        gg = tl.where((g == 0) | (g == float("inf")), 1.0, g)
        g = tl.where((g == 0) | (g == float("inf")), g, gg - (gg * gg * gg - ax) / (3.0 * gg * gg))
        y = tl.where(x < 0, -g, g)
    elif OP == 8:  # exp
        y = tl.exp(x)
    elif OP == 9:  # exp2
        y = tl.exp2(x)
    elif OP == 10:  # expm1
        y = S.expm1(x)
    elif OP == 11:  # log
        y = tl.log(x)
    elif OP == 12:  # log2
        y = tl.log2(x)
    elif OP == 13:  # log10
        y = tl.log(x) * 0.4342944819032518
    elif OP == 14:  # log1p
        y = S.log1p(x)
    elif OP == 15:  # sin
        y = tl.sin(x)
    elif OP == 16:  # cos
        y = tl.cos(x)
    elif OP == 17:  # tan
        y = tl.sin(x) / tl.cos(x)
    elif OP == 18:  # asin
        y = S.atan(x / tl.sqrt((1.0 - x) * (1.0 + x)))
    elif OP == 19:  # acos
        y = 2.0 * S.atan(tl.sqrt((1.0 - x) / (1.0 + x)))
    elif OP == 20:  # atan
        y = S.atan(x)
    elif OP == 21:  # sinh
        y = 0.5 * (S.expm1(x) - S.expm1(-x))
    elif OP == 22:  # cosh
        y = 0.5 * (tl.exp(x) + tl.exp(-x))
    elif OP == 23:  # tanh
        y = S.tanh(x)
    elif OP == 24:  # asinh
        ax = tl.abs(x)
        r = S.log1p(ax + ax * ax / (1.0 + tl.sqrt(1.0 + ax * ax)))
        r = tl.where(ax > 1e15, tl.log(ax) + S.LN2, r)
        y = tl.where(x < 0, -r, r)
    elif OP == 25:  # acosh
        t = x - 1.0
        r = S.log1p(t + tl.sqrt(2.0 * t + t * t))
        y = tl.where(x > 1e15, tl.log(x) + S.LN2, r)
    elif OP == 26:  # atanh; the log1p(2x / (1 - x)) form amplifies rounding near +-1
        y = 0.5 * (S.log1p(x) - S.log1p(-x))
    elif OP == 27:  # floor
        if x.dtype.is_floating():
            y = tl.math.floor(x)
        else:
            y = x
    elif OP == 28:  # ceil
        if x.dtype.is_floating():
            y = tl.math.ceil(x)
        else:
            y = x
    elif OP == 29:  # round (half to even)
        if x.dtype.is_floating():
            y = S.round_half_even(x)
        else:
            y = x
    elif OP == 30:  # trunc
        if x.dtype.is_floating():
            y = S.trunc(x)
        else:
            y = x
    elif OP == 31:  # frac
        y = x - S.trunc(x)
    elif OP == 32:  # erf
        y = tl.math.erf(x)
    elif OP == 33:  # erfc
        if x.dtype == tl.float64:
            y = 1.0 - tl.math.erf(x)
        else:
            # f32: Numerical Recipes' erfcc (relative error < 1.2e-7 everywhere), which keeps
            # the tail that 1 - erf(x) rounds to 0
            z = tl.abs(x)
            t = 1.0 / (1.0 + 0.5 * z)
            r = t * tl.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
                0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
                    1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            y = tl.where(x < 0, 2.0 - r, r)
    elif OP == 34:  # erfinv
        y = S.erfinv(x)
    elif OP == 35:  # lgamma
        y = S.lgamma(x)
    elif OP == 36:  # digamma
        y = S.digamma(x)
    elif OP == 37:  # i0
        y = S.bessel_i(x, 0)
    elif OP == 38:  # sigmoid
        y = S.sigmoid(x)
    elif OP == 39:  # logit
        y = tl.log(x / (1.0 - x))
    elif OP == 40:  # sinc
        px = S.PI * x
        y = tl.where(x == 0, 1.0, tl.sin(px) / tl.where(x == 0, 1.0, px))
    elif OP == 41:  # relu
        y = tl.where(x <= 0, 0, x).to(x.dtype)
    elif OP == 42:  # relu6
        y = _clamp(x, 0.0, 6.0)
    elif OP == 43:  # gelu (erf)
        y = _gelu(x)
    elif OP == 44:  # gelu (tanh approximation)
        y = _gelu_tanh(x)
    elif OP == 45:  # silu
        y = _silu(x)
    elif OP == 46:  # mish
        y = x * S.tanh(S.softplus(x, 1.0, 20.0))
    elif OP == 47:  # softplus (beta 1, threshold 20)
        y = S.softplus(x, 1.0, 20.0)
    elif OP == 48:  # softsign
        y = x / (1.0 + tl.abs(x))
    elif OP == 49:  # hardswish
        y = x * _clamp(x + 3.0, 0.0, 6.0) / 6.0
    elif OP == 50:  # hardsigmoid
        y = _clamp(x + 3.0, 0.0, 6.0) / 6.0
    elif OP == 51:  # tanhshrink
        y = x - S.tanh(x)
    elif OP == 52:  # selu
        y = SELU_SCALE * tl.where(x > 0, x, SELU_ALPHA * S.expm1(x))
    elif OP == 53:  # logsigmoid
        y = tl.where(x < 0, x, 0.0) - S.log1p(tl.exp(-tl.abs(x)))
    elif OP == 54:  # identity (casts)
        y = x
    elif OP == 60:  # threshold(threshold=p0, value=p1)
        y = tl.where(x <= p0, p1, x)
    elif OP == 61:  # leaky_relu(negative_slope=p0)
        y = tl.where(x > 0, x, x * p0)
    elif OP == 62:  # elu(alpha=p0)
        y = tl.where(x > 0, x, p0 * S.expm1(x))
    elif OP == 63:  # celu(alpha=p0)
        y = tl.where(x > 0, x, p0 * S.expm1(x / p0))
    elif OP == 64:  # hardtanh(min=p0, max=p1)
        y = _clamp(x, p0, p1)
    elif OP == 65:  # softplus(beta=p0, threshold=p1)
        y = S.softplus(x, p0, p1)
    elif OP == 66:  # hardshrink(lambd=p0)
        y = tl.where((x >= -p0) & (x <= p0), 0.0, x)
    elif OP == 67:  # softshrink(lambd=p0)
        y = tl.where(x > p0, x - p0, tl.where(x < -p0, x + p0, 0.0))
        y = tl.where(x != x, x, y)
    elif OP == 68:  # pow(x, exponent=p0)
        y = _pow_scalar(x, p0)
    elif OP == 69:  # clamp(min=p0, max=p1); a missing bound is passed as -+inf
        y = _clamp(x, p0, p1)
    elif OP == 70:  # add a scalar
        y = x + p0
    elif OP == 71:  # multiply by a scalar
        y = x * p0
    else:
        tl.static_assert(False, "unknown unary op")
    return y


@triton.jit
def grad_unary(x, g, p0, p1, OP: tl.constexpr):
    """dL/dx from the forward input x and the upstream gradient g (torch's conventions at
    kinks and singularities)."""
    zero = tl.zeros_like(g)
    if OP == 0:
        dx = -g
    elif OP == 1:
        dx = g * tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))
    elif OP == 2 or OP == 27 or OP == 28 or OP == 29 or OP == 30:  # piecewise constant
        dx = zero
    elif OP == 3:
        dx = -g / (x * x)
    elif OP == 4:
        dx = 2.0 * g * x
    elif OP == 5:
        dx = g / (2.0 * tl.sqrt(x))
    elif OP == 6:
        r = 1.0 / tl.sqrt(x)
        dx = -0.5 * g * r * r * r
    elif OP == 7:
        y = apply_unary(x, p0, p1, 7)
        dx = g / (3.0 * y * y)
    elif OP == 8:
        dx = g * tl.exp(x)
    elif OP == 9:
        dx = g * tl.exp2(x) * S.LN2
    elif OP == 10:
        dx = g * tl.exp(x)
    elif OP == 11:
        dx = g / x
    elif OP == 12:
        dx = g / (x * S.LN2)
    elif OP == 13:
        dx = g / (x * 2.302585092994046)
    elif OP == 14:
        dx = g / (1.0 + x)
    elif OP == 15:
        dx = g * tl.cos(x)
    elif OP == 16:
        dx = -g * tl.sin(x)
    elif OP == 17:
        c = tl.cos(x)
        dx = g / (c * c)
    elif OP == 18:
        dx = g / tl.sqrt((1.0 - x) * (1.0 + x))
    elif OP == 19:
        dx = -g / tl.sqrt((1.0 - x) * (1.0 + x))
    elif OP == 20:
        dx = g / (1.0 + x * x)
    elif OP == 21:
        dx = g * 0.5 * (tl.exp(x) + tl.exp(-x))
    elif OP == 22:
        dx = g * 0.5 * (S.expm1(x) - S.expm1(-x))
    elif OP == 23:
        t = S.tanh(x)
        dx = g * (1.0 - t * t)
    elif OP == 24:
        dx = g / tl.sqrt(x * x + 1.0)
    elif OP == 25:
        dx = g / tl.sqrt((x - 1.0) * (x + 1.0) + 0.0)  # + 0.0: sqrt(-0) would give -inf
    elif OP == 26:
        dx = g / ((1.0 - x) * (1.0 + x))
    elif OP == 31:
        dx = g
    elif OP == 32:
        dx = g * 1.1283791670955126 * tl.exp(-x * x)
    elif OP == 33:
        dx = -g * 1.1283791670955126 * tl.exp(-x * x)
    elif OP == 34:
        y = S.erfinv(x)
        dx = g * 0.886226925452758 * tl.exp(y * y)
    elif OP == 35:
        dx = S.scaled_digamma(g, x)
    elif OP == 36:
        dx = S.scaled_trigamma(g, x)
    elif OP == 37:
        dx = g * S.bessel_i(x, 1)
    elif OP == 38:
        s = S.sigmoid(x)
        dx = g * s * (1.0 - s)
    elif OP == 39:
        dx = tl.where((x == 0) | (x == 1), g * float("inf"), g / (x * (1.0 - x)))
        dx = tl.where((x < 0) | (x > 1), float("nan"), dx)
    elif OP == 40:
        u = S.PI * x
        safe = tl.where(x == 0, 1.0, x)
        d = (tl.cos(u) - tl.sin(u) / tl.where(x == 0, 1.0, u)) / safe
        # near 0 the difference cancels: the series of pi * d/du (sin u / u)
        u2 = u * u
        ser = S.PI * u * (-0.3333333333333333 + u2 * (0.03333333333333333 + u2 * (
            -0.0011904761904761906 + u2 * (2.2045855379188714e-05 + u2 * (
                -2.505210838544172e-07 + u2 * 1.9270852604185938e-09)))))
        dx = g * tl.where(tl.abs(u) < 0.5, ser, d)
    elif OP == 41:
        dx = tl.where(x <= 0, zero, g)
    elif OP == 42:  # (torch's hardtanh rule below: a NaN x takes g)
        dx = tl.where((x <= 0.0) | (x >= 6.0), zero, g)
    elif OP == 43:
        dx = g * _gelu_grad(x)
    elif OP == 44:
        dx = g * _gelu_tanh_grad(x)
    elif OP == 45:
        dx = g * _silu_grad(x)
    elif OP == 46:
        sp = S.softplus(x, 1.0, 20.0)
        t = S.tanh(sp)
        dx = g * (t + x * S.sigmoid(x) * (1.0 - t * t))
    elif OP == 47:
        dx = tl.where(x > 20.0, g, g * S.sigmoid(x))
    elif OP == 48:
        d = 1.0 + tl.abs(x)
        dx = tl.where(tl.abs(x) == float("inf"), float("nan"), g / (d * d))
    elif OP == 49:
        # torch's kernel: 0 at x <= -3 and 1 at x >= 3 (the kinks take the outer pieces); a
        # NaN x fails both tests and takes g, as in torch's CUDA and CPU kernels (CPU fuzz case
        # 70073: NaN here before)
        dx = tl.where(x <= -3.0, zero, tl.where(x < 3.0, g * (x / 3.0 + 0.5), g))
    elif OP == 50:
        dx = tl.where((x > -3.0) & (x < 3.0), g / 6.0, zero)
    elif OP == 51:
        t = S.tanh(x)
        dx = g * t * t
    elif OP == 52:
        dx = g * SELU_SCALE * tl.where(x <= 0, SELU_ALPHA * tl.exp(x), 1.0)  # (as elu's)
    elif OP == 53:
        dx = g * S.sigmoid(-x)
    elif OP == 54:
        dx = g
    elif OP == 60:
        dx = tl.where(x <= p0, zero, g)
    elif OP == 61:
        dx = tl.where(x > 0, g, g * p0)
    elif OP == 62:
        # torch's elu / celu / selu backward tests x <= 0: a NaN x takes the positive
        # piece (g), not NaN (CPU fuzz, session 18)
        dx = tl.where(x <= 0, g * p0 * tl.exp(x), g)
    elif OP == 63:
        dx = tl.where(x <= 0, g * tl.exp(x / p0), g)
    elif OP == 64:
        # torch's hardtanh backward: 0 where x <= min or x >= max, else g (a NaN x takes g)
        dx = tl.where((x <= p0) | (x >= p1), zero, g)
    elif OP == 65:
        bx = x * p0
        dx = tl.where(bx > p1, g, g * S.sigmoid(bx))
    elif OP == 66 or OP == 67:
        dx = tl.where((x >= -p0) & (x <= p0), zero, g)
    elif OP == 68:
        d = p0 * _pow_scalar(x, p0 - 1.0)
        dx = tl.where(p0 == 0.0, zero, g * d)
    elif OP == 69:
        dx = tl.where((x >= p0) & (x <= p1), g, zero)
    elif OP == 70:
        dx = g
    elif OP == 71:
        dx = g * p0
    else:
        tl.static_assert(False, "unknown unary op")
    return dx
