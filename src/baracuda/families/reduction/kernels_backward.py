"""Reduction gradients: dx over the input's [kept K, reduced R] view, one source for every kind.

Most gradients are dy broadcast along the reduced axes through a per-element formula. Some
need a statistic of the whole line first (the mean for var/std, the count of ties for
amax/amin, the zeros and the product of the others for prod, the non-NaN count for
nanmean): a STATS launch writes each chunk's partial statistic to the workspace, and the
APPLY launch's programs each merge their line's partials in chunk order (every program of a
line gets the same bits) before writing their chunk of dx. No atomics.

With a mask (torch.masked) x is read as the forward read it (masked-out elements replaced by
the identity, or left out of the line's count) and dx is zero at masked-out elements.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import join_f64, round_to
from .kernels import load_elements, offsets, pow_abs, prod_lanes

# formulas (the norms': order 0, 1, 2, +-inf, p < 1, 1 < p < 2, p > 2)
(BK_SUM, BK_MEAN, BK_NANSUM, BK_NANMEAN, BK_PROD, BK_TIES, BK_EVEN, BK_INDEX, BK_VAR, BK_STD,
 BK_VAR_MEAN, BK_STD_MEAN, BK_LSE, BK_MINMAX, BK_ZERO, BK_SGN, BK_NORM2, BK_NORM_INF,
 BK_NORM_LT1, BK_NORM_LT2, BK_NORM_GE2, BK_LME, BK_PTP) = range(23)
# launches
MODE_APPLY, MODE_STATS = 0, 1


#: formulas that read a statistic of the whole line
NEEDS_STATS = frozenset({BK_NANMEAN, BK_PROD, BK_TIES, BK_EVEN, BK_VAR, BK_STD, BK_VAR_MEAN,
                         BK_STD_MEAN, BK_MINMAX, BK_NORM_INF, BK_PTP})


@triton.jit
def _sgn(x):
    """sign(x), 0 for NaN and +-0 (torch's sgn of a real: (0 < x) - (x < 0))."""
    return tl.where(x > 0, 1.0, 0.0) - tl.where(x < 0, 1.0, 0.0)


@triton.jit
def _inf_hit(x, y):
    """|x| is the line's inf-norm extreme, or NaN (torch's mask for the +-inf norms)."""
    ax = tl.abs(x)
    return (ax == y) | (ax != ax)


@triton.jit
def _ties(x, y, NAN_TOO: tl.constexpr):
    """x equals its line's extreme y (and, for max()/min(), NaN where y is NaN)."""
    if NAN_TOO:
        return (x == y) | ((x != x) & (y != y))
    else:
        return x == y


@triton.jit
def _line_stats(x, y, y2, valid, s, n1, n2, KIND: tl.constexpr, COUNT: tl.constexpr):
    """Per-lane partial statistics: s (a sum or product), n1 and n2 (counts); COUNT: n1
    counts the valid elements (a mask's, for mean / var)."""
    if KIND == 3:
        n1 += (valid & (x == x)).to(tl.int64)
    elif KIND == 4:
        zero = valid & (x == 0)
        n1 += zero.to(tl.int64)
        s *= tl.where(valid & ~zero, x, 1)
    elif KIND == 5 or KIND == 6:
        n1 += (valid & _ties(x, y, KIND == 6)).to(tl.int64)
    elif KIND == 13 or KIND == 22:
        n1 += (valid & (x == y)).to(tl.int64)
        n2 += (valid & (x == y2)).to(tl.int64)
    elif KIND == 17:
        n1 += (valid & _inf_hit(x, y)).to(tl.int64)
    else:
        s += tl.where(valid, x, 0)
        if COUNT:
            n1 += valid.to(tl.int64)
    return s, n1, n2


@triton.jit
def _grad(x, y, y2, g, g2, r, s, n1, n2, R, corr_hi, corr_lo, KIND: tl.constexpr,
          ACC: tl.constexpr, COUNT: tl.constexpr):
    """dx of one tile (torch's formulas: derivatives.yaml / FunctionsManual.cpp; the norms'
    are linalg_vector_norm_backward's, corr carrying the order p). COUNT: the line's count
    is n1 (a mask's), not R."""
    Rf = tl.full(g.shape, R, tl.int64).to(ACC)
    if COUNT:
        Rf = n1.to(ACC)
    if KIND == 0:
        dx = g
    elif KIND == 1:
        dx = g / Rf
    elif KIND == 2:  # times the not-NaN mask, as torch (a NaN dy stays NaN everywhere)
        dx = g * (x == x).to(ACC)
    elif KIND == 3:  # a line of NaNs only: dy / 0 * 0, NaN, as torch
        dx = (g / n1.to(ACC)) * (x == x).to(ACC)
    elif KIND == 4:  # no zero: dy prod / x; one zero: dy prod(others) there; more: 0
        one = (n1 == 1) & (x == 0)
        dx = tl.where(n1 == 0, g * s / x, tl.where(one, g * s, 0.0))
    elif KIND == 5 or KIND == 6:
        hit = _ties(x, y, KIND == 6)
        if KIND == 5:  # (dy / count) * mask: a NaN line (no ties) gets NaN, as torch
            dx = (g / n1.to(ACC)) * hit.to(ACC)
        else:
            dx = tl.where(hit, g / n1.to(ACC), 0.0)
    elif KIND == 7:
        dx = tl.where(r == y2, g, 0.0)
    elif KIND == 13:
        dx = (g / n1.to(ACC)) * (x == y).to(ACC) + (g2 / n2.to(ACC)) * (x == y2).to(ACC)
    elif KIND == 12:
        dx = g * tl.exp(x - y)
    elif KIND == 14:  # order 0: zero, whatever dy holds (torch returns no gradient)
        dx = tl.zeros(x.shape, ACC)
    elif KIND == 15:
        dx = _sgn(x) * g
    elif KIND == 16:
        dx = g * tl.where(y == 0, 0.0, x / y)
    elif KIND == 17:
        dx = _sgn(x) * ((g / n1.to(ACC)) * _inf_hit(x, y).to(ACC))
    elif KIND == 18 or KIND == 19 or KIND == 20:
        p = join_f64(corr_hi, corr_lo, ACC)
        if KIND == 18:
            scaled = _sgn(x) * tl.where(x == 0, 0.0, pow_abs(x, p - 1.0))
            dx = scaled * g * pow_abs(y, 1.0 - p)
        else:
            if KIND == 19:
                scaled = _sgn(x) * pow_abs(x, p - 1.0)
            else:
                scaled = x * pow_abs(x, p - 2.0)
            dx = scaled * tl.where(y == 0, 0.0, g / pow_abs(y, p - 1.0))
    elif KIND == 21:
        dx = g * tl.exp(x - y) / Rf
    elif KIND == 22:
        dx = (g / n2.to(ACC)) * (x == y2).to(ACC) - (g / n1.to(ACC)) * (x == y).to(ACC)
    else:
        dof = Rf - join_f64(corr_hi, corr_lo, ACC)
        centered = x - s / Rf
        if KIND == 9 or KIND == 11:  # d std = d var / (2 std), 0 where std is 0
            gv = tl.where(y == 0, 0.0, g / (2.0 * y))
            if COUNT:  # torch.masked.std is sqrt(masked var): no guard (NaN at std 0)
                gv = g / (2.0 * y)
        else:
            gv = g
        dx = (2.0 / dof) * gv * centered
        if KIND == 10 or KIND == 11:
            dx += g2 / Rf
    return dx


@triton.jit
def _mask_ptrs(m_rows, r, RS1, RS2, RS3, mr0, mr1, mr2, mr3, R_DIMS: tl.constexpr,
               MASK: tl.constexpr):
    """The mask's addresses of a tile (its rows' when there is no mask: never read)."""
    if MASK != 0:
        return m_rows[:, None] + offsets(r, RS1, RS2, RS3, mr0, mr1, mr2, mr3, R_DIMS)[None, :]
    else:
        return m_rows[:, None]


@triton.jit
def reduce_bwd_kernel(
    dy_ptr, dy2_ptr, y_ptr, y2_ptr, x_ptr, dx_ptr, m_ptr, wsf_ptr, wsi_ptr,
    K, R, chunk, n_split,
    KS1, KS2, KS3,
    gk0, gk1, gk2, gk3,
    hk0, hk1, hk2, hk3,
    yk0, yk1, yk2, yk3,
    zk0, zk1, zk2, zk3,
    xk0, xk1, xk2, xk3,
    dk0, dk1, dk2, dk3,
    mk0, mk1, mk2, mk3,
    RS1, RS2, RS3,
    xr0, xr1, xr2, xr3,
    dr0, dr1, dr2, dr3,
    mr0, mr1, mr2, mr3,
    corr_hi, corr_lo,
    KIND: tl.constexpr, MODE: tl.constexpr, ACC: tl.constexpr, BLOCK_K: tl.constexpr,
    BLOCK_R: tl.constexpr, SPLIT_P: tl.constexpr, K_DIMS: tl.constexpr, R_DIMS: tl.constexpr,
    HAS_X: tl.constexpr, HAS_Y: tl.constexpr, HAS_Y2: tl.constexpr, HAS_G2: tl.constexpr,
    STATS: tl.constexpr, MASK: tl.constexpr = 0, IDENT: tl.constexpr = 0,
):
    """Program (i, c): kept lines [i BLOCK_K, (i + 1) BLOCK_K), reduced chunk c. STATS writes
    the chunk's statistics (wsf [n_split, K], wsi [2, n_split, K]); APPLY writes dx."""
    pid_k = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)
    kmask = k < K
    g = tl.load(dy_ptr + offsets(k, KS1, KS2, KS3, gk0, gk1, gk2, gk3, K_DIMS), mask=kmask,
                other=0).to(ACC)[:, None]
    g2 = g
    if HAS_G2:
        g2 = tl.load(dy2_ptr + offsets(k, KS1, KS2, KS3, hk0, hk1, hk2, hk3, K_DIMS),
                     mask=kmask, other=0).to(ACC)[:, None]
    y = g
    if HAS_Y:
        y = tl.load(y_ptr + offsets(k, KS1, KS2, KS3, yk0, yk1, yk2, yk3, K_DIMS), mask=kmask,
                    other=0).to(ACC)[:, None]
    y2 = g
    if HAS_Y2:
        y2 = tl.load(y2_ptr + offsets(k, KS1, KS2, KS3, zk0, zk1, zk2, zk3, K_DIMS),
                     mask=kmask, other=0)
        if KIND == 7:
            y2 = y2.to(tl.int64)[:, None]
        else:
            y2 = y2.to(ACC)[:, None]
    x_rows = x_ptr + offsets(k, KS1, KS2, KS3, xk0, xk1, xk2, xk3, K_DIMS)
    m_rows = m_ptr + offsets(k, KS1, KS2, KS3, mk0, mk1, mk2, mk3, K_DIMS)
    COUNT: tl.constexpr = MASK == 2
    start = split * chunk
    end = tl.minimum(start + chunk, R)
    lanes = tl.arange(0, BLOCK_R).to(tl.int64)
    zero = tl.zeros([BLOCK_K, BLOCK_R], ACC)
    x = zero
    if MODE == 1:
        if KIND == 4:
            s = tl.full([BLOCK_K, BLOCK_R], 1, ACC)
        else:
            s = zero
        n1 = tl.zeros([BLOCK_K, BLOCK_R], tl.int64)
        n2 = n1
        for r0 in range(start, end, BLOCK_R):
            r = r0 + lanes
            valid = kmask[:, None] & (r < end)[None, :]
            r_off = offsets(r, RS1, RS2, RS3, xr0, xr1, xr2, xr3, R_DIMS)
            m_ptrs = _mask_ptrs(m_rows, r, RS1, RS2, RS3, mr0, mr1, mr2, mr3, R_DIMS, MASK)
            x, valid = load_elements(x_rows[:, None] + r_off[None, :], m_ptrs, valid, 0, ACC,
                                     MASK, IDENT)
            s, n1, n2 = _line_stats(x, y, y2, valid, s, n1, n2, KIND, COUNT)
        if KIND == 4:
            s_line = prod_lanes(s)
        else:
            s_line = tl.sum(s, 1)
        slot = split * K + k
        tl.store(wsf_ptr + slot, s_line, mask=kmask)
        tl.store(wsi_ptr + slot, tl.sum(n1, 1), mask=kmask)
        tl.store(wsi_ptr + n_split * K + slot, tl.sum(n2, 1), mask=kmask)
    else:
        s = zero
        n1 = tl.zeros([BLOCK_K, 1], tl.int64)
        n2 = n1
        if STATS:
            c = tl.arange(0, SPLIT_P).to(tl.int64)
            m = kmask[:, None] & (c < n_split)[None, :]
            slot = c[None, :] * K + k[:, None]
            if KIND == 4:
                s = prod_lanes(tl.load(wsf_ptr + slot, mask=m, other=1))[:, None]
            else:
                s = tl.sum(tl.load(wsf_ptr + slot, mask=m, other=0), 1)[:, None]
            n1 = tl.sum(tl.load(wsi_ptr + slot, mask=m, other=0), 1)[:, None]
            n2 = tl.sum(tl.load(wsi_ptr + n_split * K + slot, mask=m, other=0), 1)[:, None]
        dx_rows = dx_ptr + offsets(k, KS1, KS2, KS3, dk0, dk1, dk2, dk3, K_DIMS)
        for r0 in range(start, end, BLOCK_R):
            r = r0 + lanes
            valid = kmask[:, None] & (r < end)[None, :]
            if HAS_X:
                r_off = offsets(r, RS1, RS2, RS3, xr0, xr1, xr2, xr3, R_DIMS)
                x = tl.load(x_rows[:, None] + r_off[None, :], mask=valid, other=0).to(ACC)
            keep = valid
            if MASK != 0:  # x read where masked out as the forward read it: the identity
                m_ptrs = _mask_ptrs(m_rows, r, RS1, RS2, RS3, mr0, mr1, mr2, mr3, R_DIMS,
                                    MASK)
                keep = tl.load(m_ptrs, mask=valid, other=0) != 0
                if MASK == 1:
                    x = tl.where(keep, x, IDENT)
            dx = _grad(x, y, y2, g, g2, r[None, :], s, n1, n2, R, corr_hi, corr_lo, KIND, ACC,
                       COUNT)
            if MASK == 2 and KIND >= 8 and KIND <= 11:
                # torch.masked.var's chain rule multiplies the zero a masked-out element gets
                # by its x - mean: NaN on a fully masked line (mean 0 / 0), as torch
                dx = tl.where(keep, dx, 0.0 * (x - s / n1.to(ACC)))
            elif MASK != 0:
                dx = tl.where(keep, dx, 0.0)
            d_off = offsets(r, RS1, RS2, RS3, dr0, dr1, dr2, dr3, R_DIMS)
            tl.store(dx_rows[:, None] + d_off[None, :],
                     round_to(dx, dx_ptr.dtype.element_ty), mask=valid)
