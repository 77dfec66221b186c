"""RReLU kernel: one source for the forward and the regenerated-slope gradient (constexpr
modes). Element i (row-major in x's logical shape) takes word i % 4 of Philox group i // 4,
as dropout's mask, so the backward recomputes exactly the forward's slope from (seed, offset)."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.philox import load_state, philox_words, pick4, unit_float
from ...backends.triton_support import join_f64, line_offset, round_to


@triton.jit
def rrelu_kernel(x_ptr, dy_ptr, y_ptr, rng_ptr, base, n, S1, S2, S3,
                 xs0, xs1, xs2, xs3, gs0, gs1, gs2, gs3, ys0, ys1, ys2, ys3,
                 lo_hi, lo_lo, span_hi, span_lo,
                 TRAINING: tl.constexpr, GRAD: tl.constexpr, DENSE: tl.constexpr,
                 ACC: tl.constexpr, GROUPS: tl.constexpr):
    """Forward y = x * (x <= 0 ? r : 1); GRAD y = dy * (x <= 0 ? r : 1), over elements
    base .. base + n - 1 (pointers at element `base`; collapsed layout [S0, S1, S2, S3] unless
    DENSE). r = lower + span * u (TRAINING, u uniform on the f32 grid) or lower (span 0: the
    host passes the mean slope as lower)."""
    pid = tl.program_id(0).to(tl.int64)
    g = base // 4 + pid * GROUPS + tl.arange(0, GROUPS).to(tl.int64)  # [G]
    k = tl.arange(0, 4)[None, :]
    local = g[:, None] * 4 + k - base  # [G, 4]
    inside = (local >= 0) & (local < n)
    local = tl.where(inside, local, 0)
    if DENSE:
        x_off = local
        g_off = local
        y_off = local
    else:
        x_off = line_offset(local, S1, S2, S3, xs0, xs1, xs2, xs3)
        g_off = line_offset(local, S1, S2, S3, gs0, gs1, gs2, gs3)
        y_off = line_offset(local, S1, S2, S3, ys0, ys1, ys2, ys3)
    x = tl.load(x_ptr + x_off, mask=inside, other=0).to(ACC)
    r = tl.zeros_like(x) + join_f64(lo_hi, lo_lo, ACC)
    if TRAINING:
        seed, offset = load_state(rng_ptr)
        w0, w1, w2, w3 = philox_words(seed, offset, g)
        u = unit_float(pick4(k, w0, w1, w2, w3), 24).to(ACC)
        r = r + join_f64(span_hi, span_lo, ACC) * u
    slope = tl.where(x <= 0, r, tl.zeros_like(x) + 1.0)
    if GRAD:
        v = tl.load(dy_ptr + g_off, mask=inside, other=0).to(ACC)
    else:
        v = x
    tl.store(y_ptr + y_off, round_to(v * slope, y_ptr.dtype.element_ty), mask=inside)
