"""The op tables in `tl`: one `@triton.jit` function per arity mapping an op code (a constexpr)
to its forward formula, and one to its gradient. The codes are the named constants `codes.py`
generates from the kind tables (`OP == U_SILU`); each branch resolves at compile time.
"""
# ruff: noqa: F405 - the op-code constants come from codes.py's generated star export

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import gelu_erf as _gelu
from ...backends.triton_support import gelu_erf_grad as _gelu_grad
from ...backends.triton_support import gelu_tanh as _gelu_tanh
from ...backends.triton_support import gelu_tanh_grad as _gelu_tanh_grad
from ...backends.triton_support import silu as _silu
from ...backends.triton_support import silu_grad as _silu_grad
from . import bits as B
from . import special as S
from .codes import *  # noqa: F403

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
def apply_unary(x, p0, p1, p2, OP: tl.constexpr):
    """Forward formula of unary kind OP (U_* UnaryKind, U_IDENTITY, P_* UnaryParamKind); p0, p1,
    p2 are the kind's scalar parameters."""
    if OP == U_NEG:
        y = -x
    elif OP == U_ABS:
        y = tl.abs(x)
    elif OP == U_SIGN:  # NaN gives 0, as torch
        if x.dtype.is_floating():  # float constants: no int -> float conversion of the result
            zero = tl.zeros_like(x)
            y = tl.where(x > 0, zero + 1.0, tl.where(x < 0, zero - 1.0, zero))
        else:
            y = tl.where(x > 0, 1, tl.where(x < 0, -1, 0)).to(x.dtype)
    elif OP == U_RECIPROCAL:
        y = 1.0 / x
    elif OP == U_SQUARE:
        y = x * x
    elif OP == U_SQRT:
        y = tl.sqrt(x)
    elif OP == U_RSQRT:
        y = 1.0 / tl.sqrt(x)
    elif OP == U_CBRT:  # exp/log guess + one Newton step
        ax = tl.abs(x)
        g = tl.exp(tl.log(ax) * 0.3333333333333333)
        gg = tl.where((g == 0) | (g == float("inf")), 1.0, g)
        g = tl.where((g == 0) | (g == float("inf")), g, gg - (gg * gg * gg - ax) / (3.0 * gg * gg))
        y = tl.where(x < 0, -g, g)
    elif OP == U_EXP:
        y = tl.exp(x)
    elif OP == U_EXP2:
        y = tl.exp2(x)
    elif OP == U_EXPM1:
        y = S.expm1(x)
    elif OP == U_LOG:
        y = tl.log(x)
    elif OP == U_LOG2:
        y = tl.log2(x)
    elif OP == U_LOG10:
        y = tl.log(x) * 0.4342944819032518
    elif OP == U_LOG1P:
        y = S.log1p(x)
    elif OP == U_SIN:
        y = tl.sin(x)
    elif OP == U_COS:
        y = tl.cos(x)
    elif OP == U_TAN:
        y = tl.sin(x) / tl.cos(x)
    elif OP == U_ASIN:
        y = S.atan(x / tl.sqrt((1.0 - x) * (1.0 + x)))
    elif OP == U_ACOS:
        y = 2.0 * S.atan(tl.sqrt((1.0 - x) / (1.0 + x)))
    elif OP == U_ATAN:
        y = S.atan(x)
    elif OP == U_SINH:
        y = 0.5 * (S.expm1(x) - S.expm1(-x))
    elif OP == U_COSH:
        y = 0.5 * (tl.exp(x) + tl.exp(-x))
    elif OP == U_TANH:
        y = S.tanh(x)
    elif OP == U_ASINH:
        ax = tl.abs(x)
        r = S.log1p(ax + ax * ax / (1.0 + tl.sqrt(1.0 + ax * ax)))
        r = tl.where(ax > 1e15, tl.log(ax) + S.LN2, r)
        y = tl.where(x < 0, -r, r)
    elif OP == U_ACOSH:
        t = x - 1.0
        r = S.log1p(t + tl.sqrt(2.0 * t + t * t))
        y = tl.where(x > 1e15, tl.log(x) + S.LN2, r)
    elif OP == U_ATANH:  # the log1p(2x / (1 - x)) form amplifies rounding near +-1
        y = 0.5 * (S.log1p(x) - S.log1p(-x))
    elif OP == U_FLOOR:
        if x.dtype.is_floating():
            y = tl.math.floor(x)
        else:
            y = x
    elif OP == U_CEIL:
        if x.dtype.is_floating():
            y = tl.math.ceil(x)
        else:
            y = x
    elif OP == U_ROUND:  # half to even
        if x.dtype.is_floating():
            y = S.round_half_even(x)
        else:
            y = x
    elif OP == U_TRUNC:
        if x.dtype.is_floating():
            y = S.trunc(x)
        else:
            y = x
    elif OP == U_FRAC:
        y = x - S.trunc(x)
    elif OP == U_ERF:
        y = tl.math.erf(x)
    elif OP == U_ERFC:
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
    elif OP == U_ERFINV:
        y = S.erfinv(x)
    elif OP == U_LGAMMA:
        y = S.lgamma(x)
    elif OP == U_DIGAMMA:
        y = S.digamma(x)
    elif OP == U_I0:
        y = S.bessel_i(x, 0)
    elif OP == U_SIGMOID:
        y = S.sigmoid(x)
    elif OP == U_LOGIT:
        y = tl.log(x / (1.0 - x))
    elif OP == U_SINC:
        px = S.PI * x
        y = tl.where(x == 0, 1.0, tl.sin(px) / tl.where(x == 0, 1.0, px))
    elif OP == U_RELU:
        y = tl.where(x <= 0, 0, x).to(x.dtype)
    elif OP == U_RELU6:
        y = _clamp(x, 0.0, 6.0)
    elif OP == U_GELU:  # the erf form
        y = _gelu(x)
    elif OP == U_GELU_TANH:
        y = _gelu_tanh(x)
    elif OP == U_SILU:
        y = _silu(x)
    elif OP == U_MISH:
        y = x * S.tanh(S.softplus(x, 1.0, 20.0))
    elif OP == U_SOFTPLUS:  # beta 1, threshold 20
        y = S.softplus(x, 1.0, 20.0)
    elif OP == U_SOFTSIGN:
        y = x / (1.0 + tl.abs(x))
    elif OP == U_HARDSWISH:
        y = x * _clamp(x + 3.0, 0.0, 6.0) / 6.0
    elif OP == U_HARDSIGMOID:
        y = _clamp(x + 3.0, 0.0, 6.0) / 6.0
    elif OP == U_TANHSHRINK:
        y = x - S.tanh(x)
    elif OP == U_SELU:
        y = SELU_SCALE * tl.where(x > 0, x, S.expm1(x) * SELU_ALPHA)
    elif OP == U_LOGSIGMOID:
        y = tl.where(x < 0, x, 0.0) - S.log1p(tl.exp(-tl.abs(x)))
    elif OP == U_IDENTITY:  # casts
        y = x
    elif OP >= U_DEG2RAD and OP <= U_SPACING:  # the rows from deg2rad on (table order)
        y = B.apply_unary_more(x, OP)
    elif OP == P_THRESHOLD:  # threshold(threshold=p0, value=p1)
        y = tl.where(x <= p0, p1, x)
    elif OP == P_LEAKY_RELU:  # leaky_relu(negative_slope=p0)
        y = tl.where(x > 0, x, x * p0)
    elif OP == P_ELU:  # elu(alpha=p0)
        y = tl.where(x > 0, x, p0 * S.expm1(x))
    elif OP == P_CELU:  # celu(alpha=p0)
        y = tl.where(x > 0, x, p0 * S.expm1(x / p0))
    elif OP == P_HARDTANH:  # hardtanh(min=p0, max=p1)
        y = _clamp(x, p0, p1)
    elif OP == P_SOFTPLUS:  # softplus(beta=p0, threshold=p1)
        y = S.softplus(x, p0, p1)
    elif OP == P_HARDSHRINK:  # hardshrink(lambd=p0)
        y = tl.where((x >= -p0) & (x <= p0), 0.0, x)
    elif OP == P_SOFTSHRINK:  # softshrink(lambd=p0)
        y = tl.where(x > p0, x - p0, tl.where(x < -p0, x + p0, 0.0))
        y = tl.where(x != x, x, y)
    elif OP == P_POW:  # pow(x, exponent=p0)
        y = _pow_scalar(x, p0)
    elif OP == P_CLAMP:  # clamp(min=p0, max=p1); a missing bound is passed as -+inf
        y = _clamp(x, p0, p1)
    elif OP == P_ADD:  # x + p0
        y = x + p0
    elif OP == P_MUL:  # x * p0
        y = x * p0
    elif OP == P_NAN_TO_NUM:  # nan_to_num(nan=p0, posinf=p1, neginf=p2); integers unchanged
        if x.dtype.is_floating():
            y = tl.where(x != x, p0, tl.where(x == float("inf"), p1,
                                              tl.where(x == -float("inf"), p2, x)))
        else:
            y = x
    elif OP == P_REDUCE_PRECISION:  # reduce_precision(exponent_bits=p0, mantissa_bits=p1)
        y = B.reduce_precision(x, p0, p1)
    else:
        tl.static_assert(False, "unknown unary op")
    return y


@triton.jit
def grad_unary(x, g, p0, p1, p2, OP: tl.constexpr):
    """dL/dx from the forward input x and the upstream gradient g (torch's conventions at
    kinks and singularities)."""
    zero = tl.zeros_like(g)
    if OP == U_NEG:
        dx = -g
    elif OP == U_ABS:
        dx = g * tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))
    elif (OP == U_SIGN or OP == U_FLOOR or OP == U_CEIL or OP == U_ROUND
          or OP == U_TRUNC):  # piecewise constant
        dx = zero
    elif OP == U_RECIPROCAL:
        dx = -g / (x * x)
    elif OP == U_SQUARE:
        dx = 2.0 * g * x
    elif OP == U_SQRT:
        dx = g / (2.0 * tl.sqrt(x))
    elif OP == U_RSQRT:
        r = 1.0 / tl.sqrt(x)
        dx = -0.5 * g * r * r * r
    elif OP == U_CBRT:
        y = apply_unary(x, p0, p1, p2, U_CBRT)
        dx = g / (3.0 * y * y)
    elif OP == U_EXP:
        dx = g * tl.exp(x)
    elif OP == U_EXP2:
        dx = g * tl.exp2(x) * S.LN2
    elif OP == U_EXPM1:
        dx = g * tl.exp(x)
    elif OP == U_LOG:
        dx = g / x
    elif OP == U_LOG2:
        dx = g / (x * S.LN2)
    elif OP == U_LOG10:
        dx = g / (x * 2.302585092994046)
    elif OP == U_LOG1P:
        dx = g / (1.0 + x)
    elif OP == U_SIN:
        dx = g * tl.cos(x)
    elif OP == U_COS:
        dx = -g * tl.sin(x)
    elif OP == U_TAN:
        c = tl.cos(x)
        dx = g / (c * c)
    elif OP == U_ASIN:
        dx = g / tl.sqrt((1.0 - x) * (1.0 + x))
    elif OP == U_ACOS:
        dx = -g / tl.sqrt((1.0 - x) * (1.0 + x))
    elif OP == U_ATAN:
        dx = g / (1.0 + x * x)
    elif OP == U_SINH:
        dx = g * 0.5 * (tl.exp(x) + tl.exp(-x))
    elif OP == U_COSH:
        dx = g * 0.5 * (S.expm1(x) - S.expm1(-x))
    elif OP == U_TANH:
        t = S.tanh(x)
        dx = g * (1.0 - t * t)
    elif OP == U_ASINH:
        dx = g / tl.sqrt(x * x + 1.0)
    elif OP == U_ACOSH:
        dx = g / tl.sqrt((x - 1.0) * (x + 1.0) + 0.0)  # + 0.0: sqrt(-0) would give -inf
    elif OP == U_ATANH:
        dx = g / ((1.0 - x) * (1.0 + x))
    elif OP == U_FRAC:
        dx = g
    elif OP == U_ERF:
        dx = g * 1.1283791670955126 * tl.exp(-x * x)
    elif OP == U_ERFC:
        dx = -g * 1.1283791670955126 * tl.exp(-x * x)
    elif OP == U_ERFINV:
        y = S.erfinv(x)
        dx = g * 0.886226925452758 * tl.exp(y * y)
    elif OP == U_LGAMMA:
        dx = S.scaled_digamma(g, x)
    elif OP == U_DIGAMMA:
        dx = S.scaled_trigamma(g, x)
    elif OP == U_I0:
        dx = g * S.bessel_i(x, 1)
    elif OP == U_SIGMOID:
        s = S.sigmoid(x)
        dx = g * s * (1.0 - s)
    elif OP == U_LOGIT:
        dx = tl.where((x == 0) | (x == 1), g * float("inf"), g / (x * (1.0 - x)))
        dx = tl.where((x < 0) | (x > 1), float("nan"), dx)
    elif OP == U_SINC:
        u = S.PI * x
        safe = tl.where(x == 0, 1.0, x)
        d = (tl.cos(u) - tl.sin(u) / tl.where(x == 0, 1.0, u)) / safe
        # near 0 the difference cancels: the series of pi * d/du (sin u / u)
        u2 = u * u
        ser = S.PI * u * (-0.3333333333333333 + u2 * (0.03333333333333333 + u2 * (
            -0.0011904761904761906 + u2 * (2.2045855379188714e-05 + u2 * (
                -2.505210838544172e-07 + u2 * 1.9270852604185938e-09)))))
        dx = g * tl.where(tl.abs(u) < 0.5, ser, d)
    elif OP == U_RELU:
        dx = tl.where(x <= 0, zero, g)
    elif OP == U_RELU6:  # (torch's hardtanh rule below: a NaN x takes g)
        dx = tl.where((x <= 0.0) | (x >= 6.0), zero, g)
    elif OP == U_GELU:
        dx = g * _gelu_grad(x)
    elif OP == U_GELU_TANH:
        dx = g * _gelu_tanh_grad(x)
    elif OP == U_SILU:
        dx = g * _silu_grad(x)
    elif OP == U_MISH:
        sp = S.softplus(x, 1.0, 20.0)
        t = S.tanh(sp)
        dx = g * (t + x * S.sigmoid(x) * (1.0 - t * t))
    elif OP == U_SOFTPLUS:
        dx = tl.where(x > 20.0, g, g * S.sigmoid(x))
    elif OP == U_SOFTSIGN:
        d = 1.0 + tl.abs(x)
        dx = tl.where(tl.abs(x) == float("inf"), float("nan"), g / (d * d))
    elif OP == U_HARDSWISH:
        # torch's kernel: 0 at x <= -3 and 1 at x >= 3 (the kinks take the outer pieces); a
        # NaN x fails both tests and takes g, as in torch's CUDA and CPU kernels
        dx = tl.where(x <= -3.0, zero, tl.where(x < 3.0, g * (x / 3.0 + 0.5), g))
    elif OP == U_HARDSIGMOID:
        dx = tl.where((x > -3.0) & (x < 3.0), g / 6.0, zero)
    elif OP == U_TANHSHRINK:
        t = S.tanh(x)
        dx = g * t * t
    elif OP == U_SELU:
        dx = g * SELU_SCALE * tl.where(x <= 0, tl.exp(x) * SELU_ALPHA, 1.0)  # (as elu's)
    elif OP == U_LOGSIGMOID:
        dx = g * S.sigmoid(-x)
    elif OP == U_IDENTITY or OP == U_DEG2RAD or OP == U_RAD2DEG:
        dx = B.unary_scaled(g, OP)
    elif OP == P_THRESHOLD:
        dx = tl.where(x <= p0, zero, g)
    elif OP == P_LEAKY_RELU:
        dx = tl.where(x > 0, g, g * p0)
    elif OP == P_ELU:
        # torch's elu / celu / selu backward tests x <= 0: a NaN x takes the positive
        # piece (g), not NaN
        dx = tl.where(x <= 0, g * p0 * tl.exp(x), g)
    elif OP == P_CELU:
        dx = tl.where(x <= 0, g * tl.exp(x / p0), g)
    elif OP == P_HARDTANH:
        # torch's hardtanh backward: 0 where x <= min or x >= max, else g (a NaN x takes g)
        dx = tl.where((x <= p0) | (x >= p1), zero, g)
    elif OP == P_SOFTPLUS:
        bx = x * p0
        dx = tl.where(bx > p1, g, g * S.sigmoid(bx))
    elif OP == P_HARDSHRINK or OP == P_SOFTSHRINK:
        dx = tl.where((x >= -p0) & (x <= p0), zero, g)
    elif OP == P_POW:
        d = p0 * _pow_scalar(x, p0 - 1.0)
        dx = tl.where(p0 == 0.0, zero, g * d)
    elif OP == P_CLAMP:
        dx = tl.where((x >= p0) & (x <= p1), g, zero)
    elif OP == P_ADD:
        dx = g
    elif OP == P_MUL:
        dx = g * p0
    elif OP == U_FREXP_MANTISSA:  # torch: grad / 2**exponent (grad at +-0, +-inf, NaN)
        _, e = B.frexp_parts(x)
        dx = g / tl.exp2(e.to(g.dtype))
    elif OP == P_NAN_TO_NUM:  # torch: grad where the input is finite, 0 elsewhere
        dx = tl.where(tl.abs(x) < float("inf"), g, zero)
    elif OP == P_REDUCE_PRECISION:  # linear (jax): the incoming gradient, reduced alike
        dx = B.reduce_precision(g, p0, p1)
    else:
        tl.static_assert(False, "unknown unary op")
    return dx
