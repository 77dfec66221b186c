"""Flash-attention kernels: one forward, a delta preprocess, a dK/dV and a dQ kernel.

Scores live in the log2 domain (s2 = (scale·q·k + mask)·log2 e) so every exponential is an
exp2; the forward saves the natural row logsumexp, the backward recomputes P = exp(s - lse)
tile by tile. dK/dV and dQ are separate kernels so nothing is summed with atomics: the dK/dV
program of a kv head loops over the query heads that share it (GQA), in a fixed order.

Dots: PREC 0 = native (f16/bf16 on tensor cores, f32 accumulate), 1 = f32 "ieee" (exact
f32), 2 = tf32, 3 = f64. Fully masked rows get lse = +inf, so their P is 0 everywhere
(torch's convention: they attend to nothing and output zeros).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import dot_acc, round_to

LOG2E_F = 1.4426950408889634
LOG2E = tl.constexpr(LOG2E_F)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def _dot(a, b, acc, PREC: tl.constexpr, INTERP: tl.constexpr):
    if PREC == 0:
        return dot_acc(a, b, acc, INTERPRETING=INTERP)
    elif PREC == 1:
        return tl.dot(a, b, acc, input_precision="ieee")
    elif PREC == 2:
        return tl.dot(a, b, acc, input_precision="tf32")
    else:
        # f64: exact FMA products (sm_90's f64 MMA lowering fails for some tile shapes)
        return acc + tl.sum(a[:, :, None].to(tl.float64) * b[None, :, :].to(tl.float64), 1)


@triton.jit
def _f(hi, lo, ACC: tl.constexpr):
    """hi + lo (two f32 kernel arguments) as one ACC scalar: the f64 path's exact scale."""
    zero = tl.zeros([1], ACC)
    return tl.sum(zero + hi, 0) + tl.sum(zero + lo, 0)


@triton.jit
def _masked_scores(s, qi, kj, Sq, Sk, causal_off, mask_base, smm, smn,
                   CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, IDX: tl.constexpr,
                   EVEN: tl.constexpr = False):
    """s2 with the key bound, causal diagonal and user mask applied; qi / kj are broadcastable
    query / key indices (rows x cols in either orientation). EVEN: every tile is in bounds,
    so without a causal diagonal or a mask there is nothing to apply (the bulk of the tiles)."""
    if EVEN and not CAUSAL and MASK_KIND == 0:
        return s
    valid = kj < Sk
    if CAUSAL:
        valid = valid & (kj <= qi + causal_off)
    if MASK_KIND != 0:
        inb = (qi < Sq) & (kj < Sk)
        mv = tl.load(mask_base + qi.to(IDX) * smm + kj.to(IDX) * smn, mask=inb,
                     other=0)
        if MASK_KIND == 1:
            s = s + mv.to(s.dtype) * LOG2E
        else:
            valid = valid & (mv != 0)
    return tl.where(valid, s, -float("inf"))


@triton.jit
def _keep(seed, rng_off, bh, qi, kj, p_drop):
    """Dropout keep-mask: one philox draw per (batch·head, query, key), counter-based, so the
    backward regenerates it exactly from the same seed and offset."""
    zero = (qi * 0 + kj * 0).to(tl.uint32)
    c0 = kj.to(tl.uint32) + zero
    c1 = qi.to(tl.uint32) + zero
    c2 = zero + bh.to(tl.uint32)
    c3 = zero + rng_off.to(tl.uint32)
    r, _, _, _ = tl.philox(seed, c0, c1, c2, c3)
    return tl.uint_to_uniform_float(r) >= p_drop


@triton.jit
def sdpa_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, mask_ptr, rng_ptr,
    H, Sq, Sk, group, qk_scale, qk_lo, causal_off, p_drop,
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sob, soh, som, slb, slh, slm,
    smb, smh, smm, smn,
    DK: tl.constexpr, DV: tl.constexpr, BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, PREC: tl.constexpr, ACC: tl.constexpr,
    INTERP: tl.constexpr, IDX: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    hk = h // group
    qs = _f(qk_scale, qk_lo, ACC)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_dk = tl.arange(0, BLOCK_DK)
    offs_dv = tl.arange(0, BLOCK_DV)
    m_ok = offs_m < Sq
    q = tl.load(q_ptr + b * sqb + h * sqh + offs_m[:, None].to(IDX) * sqm + offs_dk[None, :],
                mask=m_ok[:, None] & (offs_dk < DK)[None, :], other=0.0)
    k_base = k_ptr + b * skb + hk * skh
    v_base = v_ptr + b * svb + hk * svh
    mask_base = mask_ptr + b * smb + h * smh
    if DROPOUT:
        seed = tl.load(rng_ptr)
        rng_off = tl.load(rng_ptr + 1)
    m_i = tl.full([BLOCK_M], -float("inf"), ACC)
    l_i = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], ACC)
    hi = Sk
    if CAUSAL:
        hi = tl.minimum(Sk, tl.maximum((pid_m + 1) * BLOCK_M + causal_off, 0))
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        n_ok = offs_n < Sk
        kt = tl.load(k_base + offs_n[None, :].to(IDX) * skn + offs_dk[:, None],
                     mask=n_ok[None, :] & (offs_dk < DK)[:, None], other=0.0)  # [DK, N]
        s = _dot(q, kt, tl.zeros([BLOCK_M, BLOCK_N], ACC), PREC, INTERP) * qs
        s = _masked_scores(s, offs_m[:, None], offs_n[None, :], Sq, Sk, causal_off, mask_base,
                           smm, smn, CAUSAL, MASK_KIND, IDX)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            keep = _keep(seed, rng_off, bh, offs_m[:, None], offs_n[None, :], p_drop)
            p = tl.where(keep, p, 0.0)
        v = tl.load(v_base + offs_n[:, None].to(IDX) * svn + offs_dv[None, :],
                    mask=n_ok[:, None] & (offs_dv < DV)[None, :], other=0.0)  # [N, DV]
        acc = _dot(round_to(p, v.dtype), v, acc * alpha[:, None], PREC, INTERP)
        m_i = m_new
    dead = l_i == 0.0
    inv = tl.where(dead, 0.0, 1.0 / tl.where(dead, 1.0, l_i))
    if DROPOUT:
        inv = inv / (1.0 - p_drop)
    out = acc * inv[:, None]
    lse = tl.where(dead, float("inf"), (m_i + tl.log2(tl.where(dead, 1.0, l_i))) * LN2)
    tl.store(o_ptr + b * sob + h * soh + offs_m[:, None].to(IDX) * som + offs_dv[None, :],
             round_to(out, o_ptr.dtype.element_ty), mask=m_ok[:, None] & (offs_dv < DV)[None, :])
    tl.store(lse_ptr + b * slb + h * slh + offs_m.to(IDX) * slm,
             round_to(lse, lse_ptr.dtype.element_ty), mask=m_ok)


@triton.jit
def sdpa_bwd_delta_kernel(
    o_ptr, do_ptr, delta_ptr, H, Sq,
    sob, soh, som, sdb, sdh, sdm,
    DV: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_M: tl.constexpr, ACC: tl.constexpr,
    IDX: tl.constexpr,
):
    """delta[b, h, i] = sum_d dO · O (= rowsum(P ∘ dP), also with dropout)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_DV)
    msk = (offs_m < Sq)[:, None] & (offs_d < DV)[None, :]
    rows = offs_m[:, None].to(IDX)
    o = tl.load(o_ptr + b * sob + h * soh + rows * som + offs_d[None, :], mask=msk, other=0.0)
    do = tl.load(do_ptr + b * sdb + h * sdh + rows * sdm + offs_d[None, :], mask=msk, other=0.0)
    delta = tl.sum(o.to(ACC) * do.to(ACC), 1)
    tl.store(delta_ptr + bh * Sq + offs_m, delta, mask=offs_m < Sq)


@triton.jit
def _load_rows(base, rows, cols, row_ok, col_ok, EVEN: tl.constexpr):
    """A [rows, cols] tile (either may be the head dim); EVEN skips the bound masks."""
    if EVEN:
        return tl.load(base + rows + cols)
    return tl.load(base + rows + cols, mask=row_ok & col_ok, other=0.0)


@triton.jit
def _dkdv_step(dk, dv, k, v, qs, start_m, offs_m0, offs_n, offs_dk, offs_dv, q_base, do_base,
               lse_base, delta_base, mask_base, Sq, Sk, causal_off, sqm, sdm, slm, smm, smn,
               seed, rng_off, bhq, p_drop,
               DK: tl.constexpr, DV: tl.constexpr, CAUSAL: tl.constexpr,
               MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, PREC: tl.constexpr,
               ACC: tl.constexpr, INTERP: tl.constexpr, IDX: tl.constexpr, EVEN: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """One query tile's contribution to a key tile's dK, dV (CAUSAL: this tile crosses the
    diagonal; tiles wholly below it skip the causal compare)."""
    offs_m = start_m + offs_m0
    m_ok = offs_m < Sq
    qt = _load_rows(q_base, offs_m[None, :].to(IDX) * sqm, offs_dk[:, None], m_ok[None, :],
                    (offs_dk < DK)[:, None], EVEN)  # [DK, M]
    do = _load_rows(do_base, offs_m[:, None].to(IDX) * sdm, offs_dv[None, :], m_ok[:, None],
                    (offs_dv < DV)[None, :], EVEN)  # [M, DV]
    if EVEN:
        lse = tl.load(lse_base + offs_m.to(IDX) * slm).to(ACC)
        delta = tl.load(delta_base + offs_m)
    else:
        lse = tl.load(lse_base + offs_m.to(IDX) * slm, mask=m_ok, other=float("inf")).to(ACC)
        delta = tl.load(delta_base + offs_m, mask=m_ok, other=0.0)
    st = _dot(k, qt, tl.zeros([BLOCK_N, BLOCK_M], ACC), PREC, INTERP) * qs
    st = _masked_scores(st, offs_m[None, :], offs_n[:, None], Sq, Sk, causal_off, mask_base,
                        smm, smn, CAUSAL, MASK_KIND, IDX, EVEN)
    pt = tl.exp2(st - lse[None, :] * LOG2E)  # [N, M]
    dpt = _dot(v, tl.trans(do), tl.zeros([BLOCK_N, BLOCK_M], ACC), PREC,
               INTERP)
    if DROPOUT:
        keep = _keep(seed, rng_off, bhq, offs_m[None, :], offs_n[:, None], p_drop)
        inv_keep = 1.0 / (1.0 - p_drop)
        pdt = tl.where(keep, pt * inv_keep, 0.0)
        dpt = tl.where(keep, dpt * inv_keep, 0.0)
    else:
        pdt = pt
    dv = _dot(round_to(pdt, do.dtype), do, dv, PREC, INTERP)
    dst = pt * (dpt - delta[None, :])
    dk = _dot(round_to(dst, qt.dtype), tl.trans(qt), dk, PREC, INTERP)
    return dk, dv


@triton.jit
def sdpa_bwd_dkdv_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, mask_ptr, rng_ptr,
    H, Sq, Sk, group, qk_scale, qk_lo, scale, scale_lo, causal_off, p_drop,
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sdb, sdh, sdm, slb, slh, slm,
    sdkb, sdkh, sdkn, sdvb, sdvh, sdvn, smb, smh, smm, smn,
    DK: tl.constexpr, DV: tl.constexpr, BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, PREC: tl.constexpr, ACC: tl.constexpr,
    INTERP: tl.constexpr, IDX: tl.constexpr, EVEN: tl.constexpr = False,
):
    """One program per (key tile, batch, kv head): dK, dV summed over the query heads of the
    group and all query tiles, in a fixed order (deterministic, no atomics). EVEN: Sq, Sk are
    multiples of the tiles and the head dims are the block dims (no bound masks)."""
    pid_n = tl.program_id(0)
    bhk = tl.program_id(1).to(tl.int64)
    Hkv = H // group
    b = bhk // Hkv
    hk = bhk % Hkv
    qs = _f(qk_scale, qk_lo, ACC)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_dk = tl.arange(0, BLOCK_DK)
    offs_dv = tl.arange(0, BLOCK_DV)
    n_ok = offs_n < Sk
    rows_n = offs_n[:, None].to(IDX)
    k = _load_rows(k_ptr + b * skb + hk * skh, rows_n * skn, offs_dk[None, :], n_ok[:, None],
                   (offs_dk < DK)[None, :], EVEN)  # [N, DK]
    v = _load_rows(v_ptr + b * svb + hk * svh, rows_n * svn, offs_dv[None, :], n_ok[:, None],
                   (offs_dv < DV)[None, :], EVEN)  # [N, DV]
    dk = tl.zeros([BLOCK_N, BLOCK_DK], ACC)
    dv = tl.zeros([BLOCK_N, BLOCK_DV], ACC)
    seed = 0
    rng_off = 0
    if DROPOUT:
        seed = tl.load(rng_ptr)
        rng_off = tl.load(rng_ptr + 1)
    lo = 0
    mid = 0
    if CAUSAL:
        # first query that sees key pid_n*BLOCK_N: i >= j - causal_off
        lo = tl.maximum(pid_n * BLOCK_N - causal_off, 0)
        lo = (lo // BLOCK_M) * BLOCK_M
        # first query tile that sees every key of this tile: the tiles in [lo, mid) cross
        # the diagonal and are masked, the ones from mid on are not
        mid = tl.maximum((pid_n + 1) * BLOCK_N - 1 - causal_off, 0)
        mid = tl.minimum(tl.maximum((mid + BLOCK_M - 1) // BLOCK_M * BLOCK_M, lo), Sq)
    for g in range(0, group):
        h = hk * group + g
        bhq = b * H + h
        q_base = q_ptr + b * sqb + h * sqh
        do_base = do_ptr + b * sdb + h * sdh
        lse_base = lse_ptr + b * slb + h * slh
        delta_base = delta_ptr + bhq * Sq
        mask_base = mask_ptr + b * smb + h * smh
        if CAUSAL:
            for start_m in range(lo, mid, BLOCK_M):
                dk, dv = _dkdv_step(
                    dk, dv, k, v, qs, start_m, offs_m0, offs_n, offs_dk, offs_dv, q_base,
                    do_base, lse_base, delta_base, mask_base, Sq, Sk, causal_off, sqm, sdm, slm,
                    smm, smn, seed, rng_off, bhq, p_drop, DK, DV, True, MASK_KIND, DROPOUT, PREC,
                    ACC, INTERP, IDX, EVEN, BLOCK_M, BLOCK_N)
        for start_m in range(mid, Sq, BLOCK_M):
            dk, dv = _dkdv_step(
                dk, dv, k, v, qs, start_m, offs_m0, offs_n, offs_dk, offs_dv, q_base, do_base,
                lse_base, delta_base, mask_base, Sq, Sk, causal_off, sqm, sdm, slm, smm, smn,
                seed, rng_off, bhq, p_drop, DK, DV, False, MASK_KIND, DROPOUT, PREC, ACC, INTERP,
                IDX, EVEN, BLOCK_M, BLOCK_N)
    dk = dk * _f(scale, scale_lo, ACC)
    if EVEN:
        tl.store(dk_ptr + b * sdkb + hk * sdkh + rows_n * sdkn + offs_dk[None, :],
                 round_to(dk, dk_ptr.dtype.element_ty))
        tl.store(dv_ptr + b * sdvb + hk * sdvh + rows_n * sdvn + offs_dv[None, :],
                 round_to(dv, dv_ptr.dtype.element_ty))
    else:
        tl.store(dk_ptr + b * sdkb + hk * sdkh + rows_n * sdkn + offs_dk[None, :],
                 round_to(dk, dk_ptr.dtype.element_ty),
                 mask=n_ok[:, None] & (offs_dk < DK)[None, :])
        tl.store(dv_ptr + b * sdvb + hk * sdvh + rows_n * sdvn + offs_dv[None, :],
                 round_to(dv, dv_ptr.dtype.element_ty),
                 mask=n_ok[:, None] & (offs_dv < DV)[None, :])


@triton.jit
def _dq_step(dq, q, do, lse, delta, qs, start_n, offs_n0, offs_m, offs_dk, offs_dv, k_base,
             v_base, mask_base, Sq, Sk, causal_off, skn, svn, smm, smn, seed, rng_off, bh,
             p_drop, DK: tl.constexpr, DV: tl.constexpr, CAUSAL: tl.constexpr,
             MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, PREC: tl.constexpr,
             ACC: tl.constexpr, INTERP: tl.constexpr, IDX: tl.constexpr, EVEN: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """One key tile's contribution to a query tile's dQ (CAUSAL: the tile crosses the
    diagonal)."""
    offs_n = start_n + offs_n0
    n_ok = offs_n < Sk
    cols = offs_n[None, :].to(IDX)
    kt = _load_rows(k_base, cols * skn, offs_dk[:, None], n_ok[None, :], (offs_dk < DK)[:, None],
                    EVEN)  # [DK, N]
    vt = _load_rows(v_base, cols * svn, offs_dv[:, None], n_ok[None, :], (offs_dv < DV)[:, None],
                    EVEN)  # [DV, N]
    s = _dot(q, kt, tl.zeros([BLOCK_M, BLOCK_N], ACC), PREC, INTERP) * qs
    s = _masked_scores(s, offs_m[:, None], offs_n[None, :], Sq, Sk, causal_off, mask_base,
                       smm, smn, CAUSAL, MASK_KIND, IDX, EVEN)
    p = tl.exp2(s - lse[:, None] * LOG2E)
    dp = _dot(do, vt, tl.zeros([BLOCK_M, BLOCK_N], ACC), PREC, INTERP)
    if DROPOUT:
        keep = _keep(seed, rng_off, bh, offs_m[:, None], offs_n[None, :], p_drop)
        dp = tl.where(keep, dp / (1.0 - p_drop), 0.0)
    ds = p * (dp - delta[:, None])
    return _dot(round_to(ds, kt.dtype), tl.trans(kt), dq, PREC, INTERP)


@triton.jit
def sdpa_bwd_dq_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, mask_ptr, rng_ptr,
    H, Sq, Sk, group, qk_scale, qk_lo, scale, scale_lo, causal_off, p_drop,
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sdb, sdh, sdm, slb, slh, slm,
    sdqb, sdqh, sdqm, smb, smh, smm, smn,
    DK: tl.constexpr, DV: tl.constexpr, BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, PREC: tl.constexpr, ACC: tl.constexpr,
    INTERP: tl.constexpr, IDX: tl.constexpr, EVEN: tl.constexpr = False,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    hk = h // group
    qs = _f(qk_scale, qk_lo, ACC)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_dk = tl.arange(0, BLOCK_DK)
    offs_dv = tl.arange(0, BLOCK_DV)
    m_ok = offs_m < Sq
    rows_m = offs_m[:, None].to(IDX)
    q = _load_rows(q_ptr + b * sqb + h * sqh, rows_m * sqm, offs_dk[None, :], m_ok[:, None],
                   (offs_dk < DK)[None, :], EVEN)
    do = _load_rows(do_ptr + b * sdb + h * sdh, rows_m * sdm, offs_dv[None, :], m_ok[:, None],
                    (offs_dv < DV)[None, :], EVEN)
    if EVEN:
        lse = tl.load(lse_ptr + b * slb + h * slh + offs_m.to(IDX) * slm).to(ACC)
        delta = tl.load(delta_ptr + bh * Sq + offs_m)
    else:
        lse = tl.load(lse_ptr + b * slb + h * slh + offs_m.to(IDX) * slm, mask=m_ok,
                      other=float("inf")).to(ACC)
        delta = tl.load(delta_ptr + bh * Sq + offs_m, mask=m_ok, other=0.0)
    k_base = k_ptr + b * skb + hk * skh
    v_base = v_ptr + b * svb + hk * svh
    mask_base = mask_ptr + b * smb + h * smh
    seed = 0
    rng_off = 0
    if DROPOUT:
        seed = tl.load(rng_ptr)
        rng_off = tl.load(rng_ptr + 1)
    dq = tl.zeros([BLOCK_M, BLOCK_DK], ACC)
    hi = Sk
    mid = Sk
    if CAUSAL:
        hi = tl.minimum(Sk, tl.maximum((pid_m + 1) * BLOCK_M + causal_off, 0))
        # key tiles in [0, mid) are wholly visible to every query of this tile (no causal
        # compare); the ones in [mid, hi) cross the diagonal
        mid = tl.minimum(tl.maximum(pid_m * BLOCK_M + causal_off + 1, 0) // BLOCK_N * BLOCK_N,
                         hi)
    for start_n in range(0, mid, BLOCK_N):
        dq = _dq_step(dq, q, do, lse, delta, qs, start_n, offs_n0, offs_m, offs_dk, offs_dv,
                      k_base, v_base, mask_base, Sq, Sk, causal_off, skn, svn, smm, smn, seed,
                      rng_off, bh, p_drop, DK, DV, False, MASK_KIND, DROPOUT, PREC, ACC, INTERP,
                      IDX, EVEN, BLOCK_M, BLOCK_N)
    if CAUSAL:
        for start_n in range(mid, hi, BLOCK_N):
            dq = _dq_step(dq, q, do, lse, delta, qs, start_n, offs_n0, offs_m, offs_dk,
                          offs_dv, k_base, v_base, mask_base, Sq, Sk, causal_off, skn, svn, smm,
                          smn, seed, rng_off, bh, p_drop, DK, DV, True, MASK_KIND, DROPOUT,
                          PREC, ACC, INTERP, IDX, EVEN, BLOCK_M, BLOCK_N)
    dq = dq * _f(scale, scale_lo, ACC)
    dq_ptrs = dq_ptr + b * sdqb + h * sdqh + offs_m[:, None].to(IDX) * sdqm + offs_dk[None, :]
    if EVEN:
        tl.store(dq_ptrs, round_to(dq, dq_ptr.dtype.element_ty))
    else:
        tl.store(dq_ptrs, round_to(dq, dq_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & (offs_dk < DK)[None, :])
