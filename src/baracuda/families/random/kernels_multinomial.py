"""Multinomial kernel: one program per row. With replacement, sample s of row r takes the
uniform of element r * samples + s of the stream and inverts the row's cumulative sum; without
replacement, category c of row r draws an exponential E / p_c (the uniform of element
r * categories + c) and the samples are the categories of the smallest ones, in order (the
exponential race: the order in which independent clocks of rates p ring is the sequence of
draws without replacement)."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.philox import load_state, philox_words, unit_float


@triton.jit
def _uniform_at(seed, offset, i):
    """The f32 uniform of elements i (int64 block): word i % 4 of group i // 4."""
    w0, w1, w2, w3 = philox_words(seed, offset, i // 4)
    k = i % 4
    w = tl.where(k == 0, w0, tl.where(k == 1, w1, tl.where(k == 2, w2, w3)))
    return unit_float(w, 24)


@triton.jit
def multinomial_kernel(p_ptr, out_ptr, rng_ptr, C, S, sp0, sp1, so0, so1,
                       REPLACEMENT: tl.constexpr, BLOCK_C: tl.constexpr,
                       BLOCK_S: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_C)
    inside = c < C
    p = tl.load(p_ptr + row * sp0 + c.to(tl.int64) * sp1, mask=inside, other=0).to(tl.float32)
    seed, offset = load_state(rng_ptr)
    if REPLACEMENT:
        cdf = tl.cumsum(p, 0)  # [BLOCK_C]
        total = tl.sum(p, 0)
        # rounding can leave u * total at or past the last sum: the last category that can
        # be drawn takes it (never a zero-probability one)
        last = tl.max(tl.where(p > 0, c, 0), 0)
        for s0 in range(0, S, BLOCK_S):
            s = s0 + tl.arange(0, BLOCK_S)
            u = _uniform_at(seed, offset, row * S + s.to(tl.int64)) * total
            below = (cdf[None, :] <= u[:, None]) & inside[None, :]  # [BLOCK_S, BLOCK_C]
            idx = tl.minimum(tl.sum(below.to(tl.int32), 1), last)
            tl.store(out_ptr + row * so0 + s.to(tl.int64) * so1, idx.to(tl.int64), mask=s < S)
    else:
        u = _uniform_at(seed, offset, row * C + c.to(tl.int64))
        clock = -tl.log(1.0 - u) / p  # p = 0 (and padding): +inf, never before a drawn one
        clock = tl.where(inside, clock, float("inf"))
        # a non-negative float's bits order as the float: (clock bits, index) sorts by clock
        packed = (clock.to(tl.int32, bitcast=True).to(tl.int64) << 32) | c.to(tl.int64)
        order = tl.sort(packed, 0)
        idx = order & 0xFFFFFFFF
        tl.store(out_ptr + row * so0 + c.to(tl.int64) * so1, idx, mask=c < S)
