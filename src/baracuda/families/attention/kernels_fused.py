"""Fused flash-attention backward with dQ summed in a fixed order (deterministic, one pass).

The two-kernel backward (kernels.py) recomputes P and dP a second time for dQ: 8 tile
matmuls per (query tile, key tile) pair against 5 here. This kernel is the dK/dV program of
kernels.py that also forms the pair's dQ term dS·K and adds it to an f32 accumulator in the
workspace, one [BLOCK_M, BLOCK_DK] tile per query tile and head. Float additions in a varying
order would change the bits from run to run (what FlashAttention's and cuDNN's default
backwards do), so every query tile's accumulator has an arrival counter and its contributions
are ordered: the key tile of rank r waits until r contributions have landed, adds its own,
and counts itself in (acquire / release, as backends/triton_exchange.py's exchange).

The order that costs no waiting: all key tiles of a head run at once (adjacent program ids),
each walking its query tiles from a different start, so at any step every key tile holds a
different query tile. Key tile j starts at query tile ceil(j·nq/nk) and wraps around; query
tile i then receives its contributions from key tile floor(i·nk/nq) downwards (wrapping).
Causal: key tile j starts at the first query tile that sees it, so query tile i receives from
its last visible key tile down to 0. Every wait is on a contribution issued at an earlier
step of the same lockstep schedule (or the same step by a higher key tile), so there is no
cycle; the programs a wait depends on have lower ids in the same head or are already running
(a head's key tiles are fewer than the programs the GPU holds: plans_fused checks it).
STAGGER = False (the interpreter, which runs programs one after another in id order) uses the
ascending order instead: key tile j has rank j, so no program ever waits there.

A program that polls SPIN times without seeing its turn adds anyway (correct values, order no
longer fixed): the hang guard of an unusual scheduler, never reached on an idle H100.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import _dkdv_step, _dot, _f, _load_rows


@triton.jit
def _ordered_add(acc_ptrs, val, count_ptr, rank, SPIN: tl.constexpr):
    """acc += val once `rank` earlier contributions have landed, then count this one in."""
    seen = tl.atomic_add(count_ptr, 0, sem="acquire")
    polls = 0
    while (seen < rank) & (polls < SPIN):
        seen = tl.atomic_add(count_ptr, 0, sem="acquire")
        polls += 1
    tl.atomic_add(acc_ptrs, val, sem="relaxed")
    tl.debug_barrier()  # every thread's add is issued before the count (release)
    tl.atomic_add(count_ptr, 1, sem="release")


@triton.jit
def _rank(i, pid_n, n_q, n_k, causal_off, CAUSAL: tl.constexpr, STAGGER: tl.constexpr,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Position of key tile pid_n among query tile i's contributions (module docstring)."""
    if not STAGGER:
        return pid_n
    if CAUSAL:
        last = tl.minimum(n_k - 1, (i * BLOCK_M + BLOCK_M - 1 + causal_off) // BLOCK_N)
        return last - pid_n
    first = i * n_k // n_q
    r = first - pid_n
    return tl.where(r < 0, r + n_k, r)


@triton.jit
def _dq_term(ds, k, kt, BLOCK_M: tl.constexpr, BLOCK_DK: tl.constexpr, ACC: tl.constexpr,
             PREC: tl.constexpr, INTERP: tl.constexpr, DQ_T: tl.constexpr):
    """The pair's unscaled dQ term dS·K from dSᵀ [N, M]: as [M, DK], or (DQ_T) as its
    transpose Kᵀ·dSᵀ [DK, M], which needs no transpose of the register tile dSᵀ."""
    if DQ_T:
        term = _dot(kt, ds, tl.zeros([BLOCK_DK, BLOCK_M], ACC), PREC, INTERP)
    else:
        term = _dot(tl.trans(ds), k, tl.zeros([BLOCK_M, BLOCK_DK], ACC), PREC, INTERP)
    return term


@triton.jit
def sdpa_bwd_fused_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, mask_ptr, rng_ptr,
    dq_acc_ptr, count_ptr,
    H, Sq, Sk, group, qk_scale, qk_lo, scale, scale_lo, causal_off, p_drop,
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sdb, sdh, sdm, slb, slh, slm,
    sdkb, sdkh, sdkn, sdvb, sdvh, sdvn, smb, smh, smm, smn,
    DK: tl.constexpr, DV: tl.constexpr, BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, PREC: tl.constexpr, ACC: tl.constexpr,
    INTERP: tl.constexpr, IDX: tl.constexpr, EVEN: tl.constexpr, STAGGER: tl.constexpr,
    SPIN: tl.constexpr, DQ_T: tl.constexpr = False,
):
    """One program per (key tile, batch, kv head): dK, dV as sdpa_bwd_dkdv_kernel, and each
    pair's dS·K added to dq_acc [B·H, n_q·BLOCK_M, BLOCK_DK] (unscaled f32; rows past Sq get
    zeros) in the fixed order of the module docstring; count_ptr [B·H, n_q] int32, zero."""
    pid_n = tl.program_id(0)
    bhk = tl.program_id(1).to(tl.int64)
    Hkv = H // group
    b = bhk // Hkv
    hk = bhk % Hkv
    n_q = tl.cdiv(Sq, BLOCK_M)
    n_k = tl.cdiv(Sk, BLOCK_N)
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
    if DQ_T:  # the dQ term as [DK, M] (k transposed as the A operand), added transposed
        acc_tile = offs_m0[None, :] * BLOCK_DK + offs_dk[:, None]
        kt = tl.trans(k)
    else:
        acc_tile = offs_m0[:, None] * BLOCK_DK + offs_dk[None, :]
        kt = k
    seed = 0
    rng_off = 0
    if DROPOUT:
        seed = tl.load(rng_ptr)
        rng_off = tl.load(rng_ptr + 1)
    lo = 0
    mid = 0
    start = 0
    if CAUSAL:
        lo = tl.maximum(pid_n * BLOCK_N - causal_off, 0)
        lo = (lo // BLOCK_M) * BLOCK_M
        mid = tl.maximum((pid_n + 1) * BLOCK_N - 1 - causal_off, 0)
        mid = tl.minimum(tl.maximum((mid + BLOCK_M - 1) // BLOCK_M * BLOCK_M, lo), Sq)
    elif STAGGER:
        start = (pid_n * n_q + n_k - 1) // n_k
    for g in range(0, group):
        h = hk * group + g
        bhq = b * H + h
        q_base = q_ptr + b * sqb + h * sqh
        do_base = do_ptr + b * sdb + h * sdh
        lse_base = lse_ptr + b * slb + h * slh
        delta_base = delta_ptr + bhq * Sq
        mask_base = mask_ptr + b * smb + h * smh
        acc_base = dq_acc_ptr + bhq * n_q * (BLOCK_M * BLOCK_DK)
        counts = count_ptr + bhq * n_q
        if CAUSAL:
            for start_m in range(lo, mid, BLOCK_M):
                dk, dv, ds = _dkdv_step(
                    dk, dv, k, v, qs, start_m, offs_m0, offs_n, offs_dk, offs_dv, q_base,
                    do_base, lse_base, delta_base, mask_base, Sq, Sk, causal_off, sqm, sdm, slm,
                    smm, smn, seed, rng_off, bhq, p_drop, DK, DV, True, MASK_KIND, DROPOUT, PREC,
                    ACC, INTERP, IDX, EVEN, BLOCK_M, BLOCK_N)
                i = start_m // BLOCK_M
                dq = _dq_term(ds, k, kt, BLOCK_M, BLOCK_DK, ACC, PREC, INTERP, DQ_T)
                _ordered_add(acc_base + i * (BLOCK_M * BLOCK_DK) + acc_tile, dq, counts + i,
                             _rank(i, pid_n, n_q, n_k, causal_off, True, STAGGER, BLOCK_M,
                                   BLOCK_N), SPIN)
        for t in range(0, tl.cdiv(Sq - mid, BLOCK_M)):
            i = mid // BLOCK_M + start + t
            i = tl.where(i >= n_q, i - (n_q - mid // BLOCK_M), i)  # wraps (non-causal only)
            dk, dv, ds = _dkdv_step(
                dk, dv, k, v, qs, i * BLOCK_M, offs_m0, offs_n, offs_dk, offs_dv, q_base,
                do_base, lse_base, delta_base, mask_base, Sq, Sk, causal_off, sqm, sdm, slm,
                smm, smn, seed, rng_off, bhq, p_drop, DK, DV, False, MASK_KIND, DROPOUT, PREC,
                ACC, INTERP, IDX, EVEN, BLOCK_M, BLOCK_N)
            dq = _dq_term(ds, k, kt, BLOCK_M, BLOCK_DK, ACC, PREC, INTERP, DQ_T)
            _ordered_add(acc_base + i * (BLOCK_M * BLOCK_DK) + acc_tile, dq, counts + i,
                         _rank(i, pid_n, n_q, n_k, causal_off, CAUSAL, STAGGER, BLOCK_M,
                               BLOCK_N), SPIN)
    dk = dk * _f(scale, scale_lo, ACC)
    if EVEN:
        tl.store(dk_ptr + b * sdkb + hk * sdkh + rows_n * sdkn + offs_dk[None, :],
                 dk.to(dk_ptr.dtype.element_ty))
        tl.store(dv_ptr + b * sdvb + hk * sdvh + rows_n * sdvn + offs_dv[None, :],
                 dv.to(dv_ptr.dtype.element_ty))
    else:
        tl.store(dk_ptr + b * sdkb + hk * sdkh + rows_n * sdkn + offs_dk[None, :],
                 dk.to(dk_ptr.dtype.element_ty), mask=n_ok[:, None] & (offs_dk < DK)[None, :])
        tl.store(dv_ptr + b * sdvb + hk * sdvh + rows_n * sdvn + offs_dv[None, :],
                 dv.to(dv_ptr.dtype.element_ty), mask=n_ok[:, None] & (offs_dv < DV)[None, :])


@triton.jit
def sdpa_bwd_dq_store_kernel(
    dq_acc_ptr, dq_ptr, H, Sq, acc_rows, scale, scale_lo, sdqb, sdqh, sdqm,
    DK: tl.constexpr, BLOCK_DK: tl.constexpr, BLOCK_M: tl.constexpr, ACC: tl.constexpr,
    IDX: tl.constexpr,
):
    """dq = scale · dq_acc in the element type (dq_acc: acc_rows rows per head)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_DK)
    acc = tl.load(dq_acc_ptr + bh * acc_rows * BLOCK_DK + offs_m[:, None] * BLOCK_DK
                  + offs_d[None, :], mask=(offs_m < Sq)[:, None], other=0.0)
    dq = acc.to(ACC) * _f(scale, scale_lo, ACC)
    tl.store(dq_ptr + b * sdqb + h * sdqh + offs_m[:, None].to(IDX) * sdqm + offs_d[None, :],
             dq.to(dq_ptr.dtype.element_ty), mask=(offs_m < Sq)[:, None] & (offs_d < DK)[None, :])
