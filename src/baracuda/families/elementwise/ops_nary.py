"""The binary, gated, comparison and ternary op tables in `tl` (see `ops.py` for the unary
ones and the conventions): forward formula and gradient per op code, resolved at compile time.
"""
# ruff: noqa: F405 - the op-code constants come from codes.py's generated star export

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ...backends.triton_support import INTERP, round_to
from . import bits as BT
from . import special as S
from .codes import *  # noqa: F403
from .ops import (
    _gelu,
    _gelu_grad,
    _gelu_tanh,
    _gelu_tanh_grad,
    _pow_float,
    _silu,
    _silu_grad,
    pow_any,
)


@triton.jit
def _div(a, b):
    """IEEE a / b: f32 `/` compiles to sm_90's approximate division, off by an ulp where the
    rounding divisions need the correctly rounded quotient (torch's)."""
    if a.dtype == tl.float32:
        return tl.math.div_rn(a, b)
    else:
        return a / b


@triton.jit
def _floor_div_float(a, b):
    """torch's div_floor for floats (fmod-based, exact at integer quotients)."""
    mod = _fmod(a, b)
    div = _div(a - mod, b)
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    fl = tl.math.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
    fl = tl.where(div == 0, div * 0.0 + tl.where((a / b) < 0, -0.0, 0.0), fl)
    return tl.where(b == 0, a / b, fl)


@triton.jit
def _fmod(a, b):
    """C fmod, exact as torch's: `%` on floats compiles to a - b * trunc(a / b) on sm_90
    (wrong for large quotients, and no NaN for a zero divisor), so the GPU calls libdevice;
    the interpreter's `%` is numpy's exact fmod."""
    if a.dtype.is_floating():
        if INTERP:
            r = a % b
        else:
            r = libdevice.fmod(a, b)
        r = tl.where((b == 0) | (tl.abs(a) == float("inf")), float("nan"), r)
    else:
        r = a % b
    return r


@triton.jit
def _max_nan(a, b):
    r = tl.where(a > b, a, b)
    if a.dtype.is_floating():
        r = tl.where(a != a, a, tl.where(b != b, b, r))
    return r


@triton.jit
def _min_nan(a, b):
    r = tl.where(a < b, a, b)
    if a.dtype.is_floating():
        r = tl.where(a != a, a, tl.where(b != b, b, r))
    return r


@triton.jit
def _order_key(bits, MAG: tl.constexpr):
    """A float's bits as an integer ordered as the floats are (-0 and +0 both 0)."""
    mag = bits & MAG
    return tl.where(bits < 0, -mag, mag)


@triton.jit
def _nextafter(a, b):
    """C nextafter on the bits, in the operands' own type (f16, bf16, f32, f64): integer
    compares only, so subnormals count on hardware that flushes them in float compares."""
    if a.dtype == tl.float64:
        ai = a.to(tl.int64, bitcast=True)
        bi = b.to(tl.int64, bitcast=True)
        MAG: tl.constexpr = 0x7FFFFFFFFFFFFFFF
        INF: tl.constexpr = 0x7FF0000000000000
    elif a.dtype == tl.float32:
        ai = a.to(tl.int32, bitcast=True)
        bi = b.to(tl.int32, bitcast=True)
        MAG: tl.constexpr = 0x7FFFFFFF
        INF: tl.constexpr = 0x7F800000
    else:  # halves: their 16 bits, sign-extended to int32
        ai = a.to(tl.int16, bitcast=True).to(tl.int32)
        bi = b.to(tl.int16, bitcast=True).to(tl.int32)
        MAG: tl.constexpr = 0x7FFF
        INF: tl.constexpr = 0x7C00 if a.dtype == tl.float16 else 0x7F80
    ka = _order_key(ai, MAG)
    kb = _order_key(bi, MAG)
    up = (ka < kb) == (ka > 0)  # away from zero
    r = tl.where(up, ai + 1, ai - 1)
    r = tl.where(ka == 0, tl.where(kb > 0, 1, -MAG), r)  # the smallest subnormal toward b
    r = tl.where(ka == kb, bi, r)
    r = tl.where((bi & MAG) > INF, bi, r)  # NaN in, NaN out
    r = tl.where((ai & MAG) > INF, ai, r)
    if a.dtype == tl.float64 or a.dtype == tl.float32:
        return r.to(a.dtype, bitcast=True)
    else:
        return r.to(tl.int16).to(a.dtype, bitcast=True)


@triton.jit
def apply_binary(a, b, p0, p1, OP: tl.constexpr, OUT: tl.constexpr):
    """Forward formula of binary kind OP (B_* BinaryKind, G_* GatedKind, C_* CompareKind);
    OUT is the stored element type (trunc division rounds its quotient to it, as torch)."""
    if OP == B_ADD:  # add(alpha=p0)
        y = a + b * p0
    elif OP == B_SUB:  # sub(alpha=p0)
        y = a - b * p0
    elif OP == B_MUL:
        y = a * b
    elif OP == B_DIV:  # true division
        y = a / b
    elif OP == B_DIV_TRUNC:  # div rounding_mode="trunc"
        if a.dtype.is_floating():
            # torch's half types divide in their own type (the quotient rounded) before trunc
            y = S.trunc(round_to(_div(a, b), OUT).to(a.dtype))
        else:
            y = a // b
    elif OP == B_DIV_FLOOR:  # div rounding_mode="floor", floor_divide
        if a.dtype.is_floating():
            y = _floor_div_float(a, b)
        else:
            q = a // b
            y = tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
    elif OP == B_POW:
        y = pow_any(a, b)
    elif OP == B_ATAN2:
        y = S.atan2(a, b)
    elif OP == B_HYPOT:
        aa = tl.abs(a)
        ab = tl.abs(b)
        hi = tl.maximum(aa, ab)
        lo = tl.minimum(aa, ab)
        rr = lo / tl.where(hi == 0, 1.0, hi)
        y = hi * tl.sqrt(1.0 + rr * rr)
        y = tl.where((a != a) | (b != b), a + b, y)
        y = tl.where((aa == float("inf")) | (ab == float("inf")), float("inf"), y)
    elif OP == B_COPYSIGN:
        y = tl.where(S.signbit(b), -tl.abs(a), tl.abs(a))
    elif OP == B_MAXIMUM:
        y = _max_nan(a, b)
    elif OP == B_MINIMUM:
        y = _min_nan(a, b)
    elif OP == B_FMAX:
        y = tl.where(a != a, b, tl.where(b != b, a, tl.where(a > b, a, b)))
    elif OP == B_FMIN:
        y = tl.where(a != a, b, tl.where(b != b, a, tl.where(a < b, a, b)))
    elif OP == B_REMAINDER:  # remainder (sign of the divisor)
        r = _fmod(a, b)
        y = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    elif OP == B_FMOD:  # fmod (sign of the dividend)
        y = _fmod(a, b)
    elif OP == B_XLOGY:
        y = tl.where(b != b, b, tl.where(a == 0, 0.0, a * tl.log(b)))
    elif OP == B_LOGADDEXP:
        m = tl.maximum(a, b)
        y = m + S.log1p(tl.exp(-tl.abs(a - b)))
        y = tl.where((tl.abs(m) == float("inf")) & (a == b), a, y)
        y = tl.where((a != a) | (b != b), a + b, y)
    elif OP == B_LOGADDEXP2:
        m = tl.maximum(a, b)
        y = m + S.log1p(tl.exp2(-tl.abs(a - b))) * 1.4426950408889634
        y = tl.where((tl.abs(m) == float("inf")) & (a == b), a, y)
        y = tl.where((a != a) | (b != b), a + b, y)
    elif OP == B_NEXTAFTER:
        y = _nextafter(a, b)
    elif OP == B_BITWISE_AND:
        y = a & b
    elif OP == B_BITWISE_OR:
        y = a | b
    elif OP == B_BITWISE_XOR:
        y = a ^ b
    elif OP == B_BITWISE_LEFT_SHIFT:  # shifts outside [0, bits) give 0, as torch
        nb: tl.constexpr = a.dtype.primitive_bitwidth
        ok = (b >= 0) & (b < nb)
        y = tl.where(ok, a << tl.where(ok, b, 0), 0)
    elif OP == B_BITWISE_RIGHT_SHIFT:  # arithmetic; shifts past the width give the sign fill
        nb: tl.constexpr = a.dtype.primitive_bitwidth
        ok = (b >= 0) & (b < nb)
        fill = tl.where(a < 0, -1, 0)
        y = tl.where(ok, a >> tl.where(ok, b, 0), fill)
    elif OP == B_LOGICAL_AND:
        y = (a != 0) & (b != 0)
    elif OP == B_LOGICAL_OR:
        y = (a != 0) | (b != 0)
    elif OP == B_LOGICAL_XOR:
        y = (a != 0) != (b != 0)
    elif OP == B_LERP:  # lerp with the scalar weight p0 (torch's two-sided form)
        d = b - a
        y = tl.where(tl.abs(p0) < 0.5, a + p0 * d, b - d * (1.0 - p0))
    elif OP >= B_HEAVISIDE and OP <= B_BIT_AT:  # the rows from heaviside on (table order)
        y = BT.apply_binary_more(a, b, OP)
    elif OP == G_GLU:  # a * sigmoid(b)
        y = a * S.sigmoid(b)
    elif OP == G_SWIGLU:  # silu(a) * b
        y = _silu(a) * b
    elif OP == G_GEGLU:  # gelu(a) * b
        y = _gelu(a) * b
    elif OP == G_GEGLU_TANH:  # gelu_tanh(a) * b
        y = _gelu_tanh(a) * b
    elif OP == G_REGLU:
        y = tl.where(a <= 0, 0.0, a) * b
    elif OP == C_EQ:
        y = a == b
    elif OP == C_NE:
        y = a != b
    elif OP == C_LT:
        y = a < b
    elif OP == C_LE:
        y = a <= b
    elif OP == C_GT:
        y = a > b
    elif OP == C_GE:
        y = a >= b
    elif OP == C_ISCLOSE or OP == C_ISCLOSE_NAN:  # rtol=p0, atol=p1
        close = a == b
        if a.dtype.is_floating():
            finite = (tl.abs(a) != float("inf")) & (tl.abs(b) != float("inf"))
            close = close | (finite & (tl.abs(a - b) <= p1 + p0 * tl.abs(b)))
            if OP == C_ISCLOSE_NAN:
                close = close | ((a != a) & (b != b))
        else:
            d = tl.abs((a - b).to(tl.float64))
            close = close | (d <= p1 + p0 * tl.abs(b.to(tl.float64)))
        y = close
    else:
        tl.static_assert(False, "unknown binary op")
    return y


@triton.jit
def grad_binary(a, b, g, p0, p1, OP: tl.constexpr, TY: tl.constexpr = tl.float32):
    """(dL/da, dL/db) of binary kind OP; TY is the operands' storage type."""
    zero = tl.zeros_like(g)
    if OP == B_ADD:
        ga = g
        gb = g * p0
    elif OP == B_SUB:
        ga = g
        gb = -g * p0
    elif OP == B_MUL:
        ga = g * b
        gb = g * a
    elif OP == B_DIV:
        ga = g / b
        gb = -g * (a / b) / b
    elif OP == B_DIV_TRUNC or OP == B_DIV_FLOOR:
        ga = zero
        gb = zero
    elif OP == B_NEXTAFTER:  # one ulp from a toward b; torch 2.13's formula: g where a != b
        ga = tl.where(a == b, zero, g)
        gb = zero
    elif OP == B_POW:
        # torch: grad * (b * a.pow(b - 1)) and grad * (result * a.log()), each step rounded
        # to the storage type TY (its NaNs and overflows: exponent - 1 rounds to -1.0 in bf16
        # at b = -0.001), the products too (a broadcast operand's gradient sums them)
        t = _in_type(b * _in_type(_pow_float(a, _in_type(b - 1.0, TY)), TY), TY)
        ga = tl.where(b == 0, zero, _in_type(g * t, TY))
        t = _in_type(_in_type(_pow_float(a, b), TY) * _in_type(tl.log(a), TY), TY)
        gb = tl.where((a == 0) & (b >= 0), zero, _in_type(g * t, TY))
    elif OP == B_ATAN2:
        den = a * a + b * b
        safe = tl.where(den == 0, 1.0, den)
        ga = tl.where(den == 0, zero, g * b / safe)
        gb = tl.where(den == 0, zero, -g * a / safe)
    elif OP == B_HYPOT:
        y = apply_binary(a, b, p0, p1, B_HYPOT, a.dtype)
        ga = g * a / y
        gb = g * b / y
    elif OP == B_COPYSIGN:
        y = apply_binary(a, b, p0, p1, B_COPYSIGN, a.dtype)
        ga = tl.where(a == 0, zero, g * (y / tl.where(a == 0, 1.0, a)))
        gb = zero
    elif OP == B_MAXIMUM or OP == B_MINIMUM:
        h = tl.where(a == b, g * 0.5, g)
        if OP == B_MAXIMUM:
            ga = tl.where(a < b, zero, h)
            gb = tl.where(a > b, zero, h)
        else:
            ga = tl.where(a > b, zero, h)
            gb = tl.where(a < b, zero, h)
    elif OP == B_FMAX:
        take_a = (a >= b) | (b != b)
        ga = tl.where(take_a, g, zero)
        gb = tl.where(take_a, zero, g)
    elif OP == B_FMIN:
        take_a = (a <= b) | (b != b)
        ga = tl.where(take_a, g, zero)
        gb = tl.where(take_a, zero, g)
    elif OP == B_REMAINDER:
        ga = g
        gb = -g * _floor_div_float(a, b)
    elif OP == B_FMOD:
        ga = g
        gb = -g * S.trunc(_div(a, b))
    elif OP == B_XLOGY:
        ga = tl.where(g == 0, zero, g * tl.log(b))  # torch: xlogy(g, b), 0 where a = 0, b <= 0
        ga = tl.where((a == 0) & (b <= 0), zero, ga)
        gb = g * a / b
    elif OP == B_LOGADDEXP:
        ga = g * S.sigmoid(a - b)
        gb = g * S.sigmoid(b - a)
    elif OP == B_LOGADDEXP2:
        ga = g / (1.0 + tl.exp2(b - a))
        gb = g / (1.0 + tl.exp2(a - b))
    elif OP == B_LDEXP:  # torch: input * pow(2, other)
        p = tl.exp2(b)
        ga = g * p
        gb = g * a * p * 0.6931471805599453
    elif OP == B_LERP:
        ga = g * (1.0 - p0)
        gb = g * p0
    elif OP == G_GLU:
        s = S.sigmoid(b)
        ga = g * s
        gb = g * a * s * (1.0 - s)
    elif OP == G_SWIGLU:
        ga = g * b * _silu_grad(a)
        gb = g * _silu(a)
    elif OP == G_GEGLU:
        ga = g * b * _gelu_grad(a)
        gb = g * _gelu(a)
    elif OP == G_GEGLU_TANH:
        ga = g * b * _gelu_tanh_grad(a)
        gb = g * _gelu_tanh(a)
    elif OP == G_REGLU:
        ga = tl.where(a <= 0, zero, g * b)
        gb = g * tl.where(a <= 0, 0.0, a)
    else:
        tl.static_assert(False, "binary op has no gradient")
    return ga, gb


@triton.jit
def apply_ternary(a, b, c, p0, OP: tl.constexpr):
    """Forward formula of TernaryKind OP: lerp(a, b, weight=c), addcmul/addcdiv(a, b, c,
    value=p0), clamp(a, min=b, max=c), where(condition=a, b, c)."""
    if OP == T_LERP:
        d = b - a
        y = tl.where(tl.abs(c) < 0.5, a + c * d, b - d * (1.0 - c))
    elif OP == T_ADDCMUL:
        y = a + p0 * b * c
    elif OP == T_ADDCDIV:
        y = a + p0 * b / c
    elif OP == T_CLAMP:  # torch.clamp: min(max(x, lo), hi), NaN anywhere propagates
        y = _min_nan(_max_nan(a, b), c)
    elif OP == T_WHERE:
        y = tl.where(a != 0, b, c)
    else:
        tl.static_assert(False, "unknown ternary op")
    return y


@triton.jit
def _in_type(v, T: tl.constexpr):
    """v rounded to float type T where torch's formula computes that factor in T (no-op when
    T is not a float or not narrower than v's compute type)."""
    if T.is_floating():
        if T.primitive_bitwidth < v.dtype.primitive_bitwidth:
            v = round_to(v, T).to(v.dtype)
    return v


@triton.jit
def _in_types(v, T1: tl.constexpr, T2: tl.constexpr):
    """v rounded to torch's promoted type of two float-or-integer operand types."""
    if T1 == T2 or not T2.is_floating():
        v = _in_type(v, T1)
    elif not T1.is_floating():
        v = _in_type(v, T2)
    elif T1.primitive_bitwidth < 64 and T2.primitive_bitwidth < 64:
        v = _in_type(v, tl.float32)  # f32 with a half, or f16 with bf16
    return v


@triton.jit
def grad_ternary(a, b, c, g, p0, OP: tl.constexpr, TB: tl.constexpr, TC: tl.constexpr,
                 TG: tl.constexpr = tl.float32):
    """Gradients of ternary kind OP; TB, TC and TG are the stored types of b, c and the
    upstream gradient (torch forms addcmul's and addcdiv's factors such as tensor2 * value in
    those types)."""
    zero = tl.zeros_like(g)
    if OP == T_LERP:
        ga = g * (1.0 - c)
        gb = g * c
        gc = g * (b - a)
    elif OP == T_ADDCMUL:
        ga = g
        gb = g * _in_type(c * p0, TC)
        gc = g * _in_type(b * p0, TB)
        if TB == TG and TC == TG:  # one type: each product is rounded there before a
            gb = _in_type(gb, TG)  # broadcast operand's gradient sums them, as in torch
            gc = _in_type(gc, TG)
    elif OP == T_ADDCDIV:
        ga = g
        gb = g * _in_type(_in_type(p0, TC) / c, TC)  # torch: value / tensor2, value cast first
        gc = -g * _in_types(_in_type(b * p0, TB) / _in_type(c * c, TC), TB, TC)
    elif OP == T_CLAMP:  # torch's clamp_backward_min_max
        ga = tl.where((a >= b) & (a <= c), g, zero)
        # torch: min takes the gradient only below a non-empty range (min < max); max takes
        # it above, or always where the range is empty (max < min, where y == max).
        # p0 == 0: clamp_min, no max (c = +inf): min takes it wherever x < min (min = +inf too)
        gb = tl.where((a < b) & ((b < c) | ((zero + p0) == 0)), g, zero)
        gc = tl.where((a > c) | (c < b), g, zero)
    elif OP == T_WHERE:
        ga = zero
        gb = tl.where(a != 0, g, zero)
        gc = tl.where(a != 0, zero, g)
    else:
        tl.static_assert(False, "unknown ternary op")
    return ga, gb, gc
