"""Torch references of the kinds torch has no op for (jax.lax's bit-level ops, numpy's
spacing): the oracles `table.py` names in their rows. Integer ones are exact; the float ones
work on the float64 bits (reduce_precision is value-based, so rounding float64 to the narrow
format equals rounding the f32 or half input to it)."""

from __future__ import annotations

import math

import torch


def _bits(dtype: torch.dtype) -> int:
    return torch.iinfo(dtype).bits


def popcount(x: torch.Tensor) -> torch.Tensor:
    """jax.lax.population_count: set bits of x's two's complement, in x's dtype."""
    x64 = x.to(torch.int64)
    count = torch.zeros_like(x64)
    for i in range(_bits(x.dtype)):
        count += (x64 >> i) & 1
    return count.to(x.dtype)


def clz(x: torch.Tensor) -> torch.Tensor:
    """jax.lax.clz: leading zero bits of x at its width (the width for 0)."""
    nb = _bits(x.dtype)
    x64 = x.to(torch.int64)
    count = torch.full_like(x64, nb)
    for i in range(nb):
        count = torch.where(((x64 >> i) & 1) != 0, nb - 1 - i, count)
    return count.to(x.dtype)


def shift_right_logical(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """jax.lax.shift_right_logical: zero-filling shift at a's width; shifts outside [0, width)
    give 0."""
    dt = torch.promote_types(a.dtype, b.dtype)
    nb = _bits(dt)
    a64, b64 = torch.broadcast_tensors(a.to(torch.int64), b.to(torch.int64))
    unsigned = a64 & ((1 << nb) - 1) if nb < 64 else a64
    s = b64.clamp(0, nb - 1)
    shifted = unsigned >> s
    if nb == 64:  # the arithmetic shift filled ones above a negative a's bits: clear them
        keep = torch.where(s == 0, torch.full_like(s, -1), (1 << (64 - s).clamp(max=63)) - 1)
        shifted = shifted & keep
    out = torch.where((b64 >= 0) & (b64 < nb), shifted, torch.zeros_like(shifted))
    return out.to(dt)


def mulhi(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The high half of the double-width product a * b (signed for signed types)."""
    dt = torch.promote_types(a.dtype, b.dtype)
    nb = _bits(dt)
    a, b = torch.broadcast_tensors(a.to(dt), b.to(dt))
    if nb < 64:
        return ((a.to(torch.int64) * b.to(torch.int64)) >> nb).to(dt)
    flat = [int(x) * int(y) >> 64 for x, y in zip(a.flatten().tolist(), b.flatten().tolist())]
    return torch.tensor(flat, dtype=dt).reshape(a.shape)


def spacing(x: torch.Tensor) -> torch.Tensor:
    """numpy.spacing: the step to the next float of x's type away from zero (x < 0: toward
    -inf, +-0 toward +inf); NaN for +-inf and NaN."""
    inf = torch.full_like(x, math.inf)
    target = torch.where(x < 0, -inf, inf)
    base = torch.where(x == 0, torch.zeros_like(x), x)
    out = torch.nextafter(base, target) - base
    return torch.where(x.isinf(), torch.full_like(x, math.nan), out)


def _reduce_precision_f64(x: torch.Tensor, exponent_bits: int,
                          mantissa_bits: int) -> torch.Tensor:
    """XLA's ReducePrecision on float64 bits: mantissa rounded to nearest even, exponents out
    of the narrow range overflow to +-inf or flush to +-0, NaN kept."""
    src_mant, src_exp = 52, 11
    bits = x.view(torch.int64)
    if mantissa_bits < src_mant:
        shift = src_mant - mantissa_bits
        last = 1 << shift
        bias = bits.bitwise_and(last).bitwise_right_shift(shift) + ((last >> 1) - 1)
        bits = (bits + bias).bitwise_and(~(last - 1))
    if exponent_bits < src_exp:
        sign = bits.bitwise_and(-(1 << 63))
        exp_mask = ((1 << src_exp) - 1) << src_mant
        bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits.bitwise_and(exp_mask)
        over = exponent > ((bias + reduced_bias) << src_mant)
        under = exponent <= ((bias - reduced_bias) << src_mant)
        bits = torch.where(over, sign.bitwise_or(exp_mask), torch.where(under, sign, bits))
    return torch.where(x.isnan(), x, bits.view(torch.float64))


class _ReducePrecision(torch.autograd.Function):
    """jax's rule: reduce_precision is linear, its gradient the reduced incoming gradient."""

    @staticmethod
    def forward(ctx, x, exponent_bits, mantissa_bits):
        ctx.bits = (int(exponent_bits), int(mantissa_bits))
        return _reduce_precision_f64(x.double(), *ctx.bits).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return _reduce_precision_f64(g.double(), *ctx.bits).to(g.dtype), None, None


def reduce_precision(x: torch.Tensor, exponent_bits, mantissa_bits) -> torch.Tensor:
    return _ReducePrecision.apply(x, exponent_bits, mantissa_bits)
