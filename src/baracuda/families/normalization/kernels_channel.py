"""Channel-norm kernels: GroupNorm, InstanceNorm and BatchNorm on x seen as [N, C, S]
(channels on axis 1, spatial dims collapsed on the host).

One program per statistics group: MODE 0 (group / instance norm) owns (n, g) and reduces over
the CG channels of group g and S; MODE 1 (batch norm) owns channel c and reduces over N and S.
Statistics come from shifted per-lane sums (shift = the group's first element) in a first pass,
the output is written in a second. USE_RUNNING normalizes with running statistics instead
(batch norm eval, instance norm with use_input_stats=False); UPDATE_RUNNING (batch norm
training) folds the batch statistics into the running ones, unbiased variance, as torch.

Backward: the same ownership; per-channel dgamma / dbeta sums of each program go to the
workspace [R, C] (R = N in MODE 0, 1 in MODE 1) and `partial_sum_kernel` adds the R rows in a
fixed order: deterministic, no atomics.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.line_reduce import clamped_variance


@triton.jit
def _domain(p, N, G, CG, MODE: tl.constexpr):
    if MODE == 0:
        n_lo = p // G
        c_lo = (p % G) * CG
        return n_lo, n_lo + 1, c_lo, c_lo + CG
    return p * 0, p * 0 + N, p, p + 1


@triton.jit
def _stat_off(p, G, sa, sb, MODE: tl.constexpr):
    if MODE == 0:
        return (p // G) * sa + (p % G) * sb
    return p * sa


@triton.jit
def chan_norm_fwd_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, rm_ptr, rv_ptr,
    N, C, S, G, CG, eps_hi, eps_lo, mom_hi, mom_lo,
    xn, xc, xs, yn, yc, ys, wst, bst, msa, msb, tsa, tsb, rms, rvs,
    MODE: tl.constexpr, USE_RUNNING: tl.constexpr, UPDATE_RUNNING: tl.constexpr,
    HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    p = tl.program_id(0).to(tl.int64)
    n_lo, n_hi, c_lo, c_hi = _domain(p, N, G, CG, MODE)
    offs = tl.arange(0, BLOCK).to(tl.int64)
    # fp32 scalar args, split so f64 kernels see eps and momentum unrounded
    one = tl.full([], 1.0, ACC)
    eps = eps_hi * one + eps_lo * one
    momentum = mom_hi * one + mom_lo * one
    if USE_RUNNING:
        # instance norm (MODE 0, one channel per program) or batch norm eval (MODE 1)
        mean = tl.load(rm_ptr + c_lo * rms).to(ACC)
        rstd = 1.0 / tl.sqrt(tl.load(rv_ptr + c_lo * rvs).to(ACC) + eps)
    else:
        k = tl.load(x_ptr + n_lo * xn + c_lo * xc).to(ACC)
        s1 = tl.zeros([BLOCK], ACC)
        s2 = tl.zeros([BLOCK], ACC)
        for n in range(n_lo, n_hi):
            for c in range(c_lo, c_hi):
                base = x_ptr + n * xn + c * xc
                for s0 in range(0, S, BLOCK):
                    sm = s0 + offs < S
                    x = tl.load(base + (s0 + offs) * xs, mask=sm, other=0.0).to(ACC)
                    d = tl.where(sm, x - k, 0.0)
                    s1 += d
                    s2 += d * d
        count = ((n_hi - n_lo) * (c_hi - c_lo) * S).to(ACC)
        t1 = tl.sum(s1, 0) / count
        var = clamped_variance(tl.sum(s2, 0) / count - t1 * t1)
        mean = k + t1
        rstd = 1.0 / tl.sqrt(var + eps)
        if UPDATE_RUNNING:
            unbiased = var * count / tl.maximum(count - 1.0, 1.0)
            rm = tl.load(rm_ptr + c_lo * rms).to(ACC)
            rv = tl.load(rv_ptr + c_lo * rvs).to(ACC)
            tl.store(rm_ptr + c_lo * rms, (rm * (1.0 - momentum) + mean * momentum)
                     .to(rm_ptr.dtype.element_ty))
            tl.store(rv_ptr + c_lo * rvs, (rv * (1.0 - momentum) + unbiased * momentum)
                     .to(rv_ptr.dtype.element_ty))
    tl.store(mean_ptr + _stat_off(p, G, msa, msb, MODE), mean.to(mean_ptr.dtype.element_ty))
    tl.store(rstd_ptr + _stat_off(p, G, tsa, tsb, MODE), rstd.to(rstd_ptr.dtype.element_ty))
    for c in range(c_lo, c_hi):
        scale = rstd
        shift = -mean * rstd
        if HAS_W:
            w = tl.load(w_ptr + c * wst).to(ACC)
            scale = scale * w
            shift = shift * w
        if HAS_B:
            shift = shift + tl.load(b_ptr + c * bst).to(ACC)
        for n in range(n_lo, n_hi):
            xb = x_ptr + n * xn + c * xc
            yb = y_ptr + n * yn + c * yc
            for s0 in range(0, S, BLOCK):
                sm = s0 + offs < S
                x = tl.load(xb + (s0 + offs) * xs, mask=sm, other=0.0).to(ACC)
                tl.store(yb + (s0 + offs) * ys, (x * scale + shift).to(y_ptr.dtype.element_ty),
                         mask=sm)


@triton.jit
def chan_norm_bwd_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, part_ptr,
    N, C, S, G, CG, R,
    gn, gc, gs, xn, xc, xs, dn, dc, ds, wst, msa, msb, tsa, tsb,
    MODE: tl.constexpr, STATS_CONST: tl.constexpr, HAS_W: tl.constexpr, HAS_DB: tl.constexpr,
    WANT_DG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    """part_ptr: [R, C] dgamma partials (WANT_DG), then [R, C] dbeta partials (HAS_DB)."""
    p = tl.program_id(0).to(tl.int64)
    n_lo, n_hi, c_lo, c_hi = _domain(p, N, G, CG, MODE)
    offs = tl.arange(0, BLOCK).to(tl.int64)
    mean = tl.load(mean_ptr + _stat_off(p, G, msa, msb, MODE)).to(ACC)
    rstd = tl.load(rstd_ptr + _stat_off(p, G, tsa, tsb, MODE)).to(ACC)
    c1 = 0.0
    c2 = 0.0
    if not STATS_CONST:
        a1 = tl.zeros([BLOCK], ACC)
        a2 = tl.zeros([BLOCK], ACC)
        for c in range(c_lo, c_hi):
            if HAS_W:
                w = tl.load(w_ptr + c * wst).to(ACC)
            else:
                w = 1.0
            for n in range(n_lo, n_hi):
                for s0 in range(0, S, BLOCK):
                    sm = s0 + offs < S
                    dy = tl.load(dy_ptr + n * gn + c * gc + (s0 + offs) * gs, mask=sm,
                                 other=0.0).to(ACC)
                    x = tl.load(x_ptr + n * xn + c * xc + (s0 + offs) * xs, mask=sm,
                                other=0.0).to(ACC)
                    g = dy * w
                    a1 += tl.where(sm, g * (x - mean) * rstd, 0.0)
                    a2 += g
        count = ((n_hi - n_lo) * (c_hi - c_lo) * S).to(ACC)
        c1 = tl.sum(a1, 0) / count
        c2 = tl.sum(a2, 0) / count
    if MODE == 0:
        row = p // G
    else:
        row = p * 0
    for c in range(c_lo, c_hi):
        if HAS_W:
            w = tl.load(w_ptr + c * wst).to(ACC)
        else:
            w = 1.0
        pdg = tl.zeros([BLOCK], ACC)
        pdb = tl.zeros([BLOCK], ACC)
        for n in range(n_lo, n_hi):
            for s0 in range(0, S, BLOCK):
                sm = s0 + offs < S
                dy = tl.load(dy_ptr + n * gn + c * gc + (s0 + offs) * gs, mask=sm,
                             other=0.0).to(ACC)
                x = tl.load(x_ptr + n * xn + c * xc + (s0 + offs) * xs, mask=sm,
                            other=0.0).to(ACC)
                xhat = tl.where(sm, (x - mean) * rstd, 0.0)
                if STATS_CONST:
                    dx = dy * w * rstd
                else:
                    dx = (dy * w - xhat * c1 - c2) * rstd
                tl.store(dx_ptr + n * dn + c * dc + (s0 + offs) * ds,
                         dx.to(dx_ptr.dtype.element_ty), mask=sm)
                pdg += dy * xhat
                pdb += dy
        if WANT_DG:
            tl.store(part_ptr + row * C + c, tl.sum(pdg, 0))
        if HAS_DB:
            if WANT_DG:
                tl.store(part_ptr + (R + row) * C + c, tl.sum(pdb, 0))
            else:
                tl.store(part_ptr + row * C + c, tl.sum(pdb, 0))


@triton.jit
def running_from_instances_kernel(
    mean_ptr, rstd_ptr, rm_ptr, rv_ptr, N, C, S, eps_hi, eps_lo, mom_hi, mom_lo,
    msa, msb, tsa, tsb, rms, rvs,
    ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    """Instance norm's running update: per channel, the batch average of the instances' means
    and unbiased variances (var recovered from the saved rstd), folded in with momentum."""
    c = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK).to(tl.int64)
    one = tl.full([], 1.0, ACC)
    eps = eps_hi * one + eps_lo * one
    momentum = mom_hi * one + mom_lo * one
    sm_ = tl.zeros([BLOCK], ACC)
    sv_ = tl.zeros([BLOCK], ACC)
    for n0 in range(0, N, BLOCK):
        nm = n0 + offs < N
        mu = tl.load(mean_ptr + (n0 + offs) * msa + c * msb, mask=nm, other=0.0).to(ACC)
        rs = tl.load(rstd_ptr + (n0 + offs) * tsa + c * tsb, mask=nm, other=1.0).to(ACC)
        var = clamped_variance(1.0 / (rs * rs) - eps)
        sm_ += mu
        sv_ += tl.where(nm, var, 0.0)
    cnt = S * 1.0
    unbiased = (tl.sum(sv_, 0) / N) * cnt / tl.maximum(cnt - 1.0, 1.0)
    rm = tl.load(rm_ptr + c * rms).to(ACC)
    rv = tl.load(rv_ptr + c * rvs).to(ACC)
    tl.store(rm_ptr + c * rms, (rm * (1.0 - momentum) + tl.sum(sm_, 0) / N * momentum)
             .to(rm_ptr.dtype.element_ty))
    tl.store(rv_ptr + c * rvs, (rv * (1.0 - momentum) + unbiased * momentum)
             .to(rv_ptr.dtype.element_ty))
