"""Dropout kernel: one source for the forward, the regenerated-mask gradient and the
stored-mask gradient (constexpr modes). Element i (row-major in x's logical shape) keeps when
its uniform (word i % 4 of Philox group i // 4; feature dropout: the draw of i // inner) is
below 1 - p, so the backward recomputes exactly the forward's mask from (seed, offset)."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.philox import load_state, philox_words, pick4, unit_float
from ...backends.triton_support import join_f64, line_offset, round_to


@triton.jit
def _keep(rng_ptr, g, k, inner, keep_p, FEATURE: tl.constexpr):
    """[G, 4] keep flags of elements 4 g + k."""
    seed, offset = load_state(rng_ptr)
    if FEATURE:
        j = (g[:, None] * 4 + k) // inner  # [G, 4]: the feature map's draw index
        w0, w1, w2, w3 = philox_words(seed, offset, j // 4)
        jk = j % 4
        w = tl.where(jk == 0, w0, tl.where(jk == 1, w1, tl.where(jk == 2, w2, w3)))
    else:
        r0, r1, r2, r3 = philox_words(seed, offset, g)
        w = pick4(k, r0, r1, r2, r3)
    return unit_float(w, 24) < keep_p


@triton.jit
def dropout_kernel(x_ptr, y_ptr, mask_ptr, rng_ptr, base, n, S1, S2, S3,
                   xs0, xs1, xs2, xs3, ys0, ys1, ys2, ys3, ms0, ms1, ms2, ms3,
                   inner, keep_p, s_hi, s_lo, ck_hi, ck_lo, cd_hi, cd_lo,
                   FEATURE: tl.constexpr, WRITE_MASK: tl.constexpr, READ_MASK: tl.constexpr,
                   DENSE: tl.constexpr, ACC: tl.constexpr, GROUPS: tl.constexpr):
    """y = x * (keep ? s : 0) + (keep ? c_keep : c_drop) over elements base .. base + n - 1
    (pointers at element `base`; collapsed layout [S0, S1, S2, S3] unless DENSE). READ_MASK:
    keep is loaded from mask_ptr instead of drawn; WRITE_MASK: keep is stored there."""
    pid = tl.program_id(0).to(tl.int64)
    g = base // 4 + pid * GROUPS + tl.arange(0, GROUPS).to(tl.int64)  # [G]
    k = tl.arange(0, 4)[None, :]
    local = g[:, None] * 4 + k - base  # [G, 4]
    inside = (local >= 0) & (local < n)
    local = tl.where(inside, local, 0)
    if DENSE:
        x_off = local
        y_off = local
        m_off = local
    else:
        x_off = line_offset(local, S1, S2, S3, xs0, xs1, xs2, xs3)
        y_off = line_offset(local, S1, S2, S3, ys0, ys1, ys2, ys3)
        m_off = line_offset(local, S1, S2, S3, ms0, ms1, ms2, ms3)
    if READ_MASK:
        keep = tl.load(mask_ptr + m_off, mask=inside, other=0) != 0
    else:
        keep = _keep(rng_ptr, g, k, inner, keep_p, FEATURE)
    x = tl.load(x_ptr + x_off, mask=inside, other=0).to(ACC)
    s = join_f64(s_hi, s_lo, ACC)
    zero = tl.zeros_like(x)
    y = x * tl.where(keep, zero + s, zero)
    c_keep = join_f64(ck_hi, ck_lo, ACC)
    c_drop = join_f64(cd_hi, cd_lo, ACC)
    y = y + tl.where(keep, zero + c_keep, zero + c_drop)
    tl.store(y_ptr + y_off, round_to(y, y_ptr.dtype.element_ty), mask=inside)
    if WRITE_MASK:
        tl.store(mask_ptr + m_off, keep, mask=inside)
