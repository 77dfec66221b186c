"""Fused linear + cross-entropy kernels (the GEMMs are torch's; these are the row work between).

- `lce_totals_kernel`: the mean's two denominators, one program in a fixed order: ws[0] = sum
  of w[target] over kept tokens (cross-entropy), ws[1] = the kept-token count (z-loss).
- `lce_rows_kernel`: one program per token row of a chunk's logits buffer: soft-cap, an online
  max/sum pass over the classes, the row's cross-entropy and z-loss terms, then (GRAD != 0) a
  second pass writing d(loss)/d(logits) over the logits in place (the buffer the following
  GEMMs read).
- `lce_finalize_kernel`: per-token terms to the loss and z-loss outputs (one program, fixed
  order: deterministic).

Workspace head (ACC elements): [0] total weight, [1] kept count, [2..3] unused (alignment),
then the per-token cross-entropy terms [4, 4 + N) and z-loss terms [4 + N, 4 + 2N).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import kept_weight

WS_HEAD = 4  # first per-token slot in the workspace


@triton.jit
def lce_totals_kernel(t_ptr, w_ptr, ws_ptr, n_rows, C, ts, ignore_index,
                      HAS_W: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    wsum = tl.zeros([BLOCK], ACC)
    count = tl.zeros([BLOCK], ACC)
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        ok = rows < n_rows
        t = tl.load(t_ptr + rows * ts, mask=ok, other=ignore_index).to(tl.int64)
        valid, w = kept_weight(t, ok, w_ptr, C, ignore_index, HAS_W, ACC)
        wsum += tl.where(valid, w, 0.0)
        count += tl.where(valid, 1.0, 0.0)
    tl.store(ws_ptr, tl.sum(wsum, 0))
    tl.store(ws_ptr + 1, tl.sum(count, 0))


@triton.jit
def _capped(v, cap, SOFTCAP: tl.constexpr):
    """cap * tanh(v / cap), with tanh as 1 - 2 / (exp(2u) + 1): saturates to +-1 without
    overflow (exp's inf gives 1, its 0 gives -1)."""
    if SOFTCAP:
        v = cap * (1.0 - 2.0 / (tl.exp(2.0 * v / cap) + 1.0))
    return v


@triton.jit
def lce_rows_kernel(
    buf_ptr, t_ptr, w_ptr, g_ptr, ws_ptr,
    row_base, n_total, C, stride_b, ts, gs, ignore_index,
    eps_hi, eps_lo, cap_hi, cap_lo, zc_hi, zc_lo,
    HAS_W: tl.constexpr, SMOOTH: tl.constexpr, SOFTCAP: tl.constexpr, ZLOSS: tl.constexpr,
    GRAD: tl.constexpr, MEAN: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
    CHECK: tl.constexpr = False,
):
    """Token `row_base + pid` (of n_total) is row `pid` of the chunk buffer (row stride
    stride_b). GRAD: 0 loss terms only; 1 those and the gradient for a unit upstream gradient;
    2 the gradient for a per-token upstream g[row] (reduction none); 3 for a scalar upstream g.
    MEAN divides the gradient by the workspace's denominators. GRAD 0 / 1 write the token's
    terms to ws[4 + row] and ws[4 + n_total + row]. Each float option comes as an f32 pair
    (hi + lo) so that f64 problems see it unrounded."""
    eps = tl.zeros([], ACC) + eps_hi + eps_lo
    cap = tl.zeros([], ACC) + cap_hi + cap_lo
    zc = tl.zeros([], ACC) + zc_hi + zc_lo
    pid = tl.program_id(0).to(tl.int64)
    row = row_base + pid
    line = buf_ptr + pid * stride_b
    t = tl.load(t_ptr + row * ts).to(tl.int64)
    valid = t != ignore_index
    inb = (t >= 0) & (t < C)
    if CHECK:  # CUDA: torch's device-side assert (backends.rows.ASSERT_LAUNCH)
        tl.device_assert(inb | ~valid, "linear_cross_entropy: target out of bounds "
                                       "(t >= 0 && t < C)")
    if HAS_W:
        w_t = tl.load(w_ptr + t, mask=valid & inb, other=0.0).to(ACC)
    else:
        w_t = tl.full([], 1.0, ACC)
    # an out-of-range class (the interpreter, which has no asserts): NaN, no stray read
    w_t = tl.where(inb, w_t, float("nan"))
    cols0 = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), ACC)
    s = tl.zeros([BLOCK], ACC)
    wz = tl.zeros([BLOCK], ACC)  # sum_c w[c] z[c] (smoothing)
    wsum = tl.zeros([BLOCK], ACC)  # sum_c w[c] (smoothing with weights)
    for start in range(0, C, BLOCK):
        cols = start + cols0
        ok = cols < C
        v = tl.load(line + cols, mask=ok, other=0.0).to(ACC)
        z = tl.where(ok, _capped(v, cap, SOFTCAP), float("-inf"))
        m_new = tl.maximum(m, z)
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.exp(z - safe)
        m = m_new
        if SMOOTH:
            if HAS_W:
                wc = tl.load(w_ptr + cols, mask=ok, other=0.0).to(ACC)
                wsum += wc
            else:
                wc = tl.where(ok, 1.0, 0.0).to(ACC)
            wz += tl.where(ok, wc * z, 0.0)
    mx = tl.max(m, 0)
    mx_safe = tl.where(mx == float("-inf"), 0.0, mx)
    lse = mx_safe + tl.log(tl.sum(s * tl.exp(m - mx_safe), 0))
    z_t = _capped(tl.load(line + t, mask=valid & inb, other=0.0).to(ACC), cap, SOFTCAP)
    if HAS_W:
        w_all = tl.sum(wsum, 0)
    else:
        w_all = tl.full([], 0.0, ACC) + C
    ce = (1.0 - eps) * w_t * (lse - z_t)
    if SMOOTH:
        ce += eps / C * (w_all * lse - tl.sum(wz, 0))
    ce = tl.where(valid, ce, 0.0)
    zl = tl.where(valid, zc * lse * lse, 0.0)
    if GRAD <= 1:
        tl.store(ws_ptr + 4 + row, ce)
        if ZLOSS:
            tl.store(ws_ptr + 4 + n_total + row, zl)
    if GRAD != 0:
        if GRAD == 1:
            g = tl.full([], 1.0, ACC)
        elif GRAD == 2:
            g = tl.load(g_ptr + row * gs).to(ACC)
        else:
            g = tl.load(g_ptr).to(ACC)
        g_ce = g
        g_z = g
        if MEAN:
            total = tl.load(ws_ptr).to(ACC)
            g_ce = tl.where(total == 0, float("nan"), g / total)
            g_z = g / tl.load(ws_ptr + 1).to(ACC)
        g_ce = tl.where(valid, g_ce, 0.0)
        g_z = tl.where(valid, g_z, 0.0)
        hot = g_ce * (1.0 - eps) * w_t  # coefficient of the one-hot term
        # d/dz: g_ce (hot' p - a) + g_z 2 zc lse p, with hot' = (1-eps) w_t + eps/C w_all
        p_coef = hot
        if SMOOTH:
            p_coef += g_ce * eps / C * w_all
        if ZLOSS:
            p_coef += g_z * 2.0 * zc * lse
        for start in range(0, C, BLOCK):
            cols = start + cols0
            ok = cols < C
            v = tl.load(line + cols, mask=ok, other=0.0).to(ACC)
            z = _capped(v, cap, SOFTCAP)
            p = tl.exp(z - lse)
            d = p_coef * p - tl.where(cols == t, hot, 0.0)
            if SMOOTH:
                if HAS_W:
                    wc = tl.load(w_ptr + cols, mask=ok, other=0.0).to(ACC)
                else:
                    wc = 1.0
                d -= g_ce * eps / C * wc
            if SOFTCAP:
                r = z / cap
                d = d * (1.0 - r * r)
            d = tl.where(valid, d, 0.0)
            tl.store(line + cols, d.to(buf_ptr.dtype.element_ty), mask=ok)


@triton.jit
def lce_finalize_kernel(ws_ptr, loss_ptr, z_ptr, n_rows, REDUCE: tl.constexpr,
                        MEAN: tl.constexpr, ZLOSS: tl.constexpr, ACC: tl.constexpr,
                        BLOCK: tl.constexpr):
    """REDUCE: loss = sum of terms (/ the denominators for MEAN) + the z-loss's; else per-token
    loss[row] = ce + z and z[row] = z."""
    if REDUCE:
        ce = tl.zeros([BLOCK], ACC)
        zl = tl.zeros([BLOCK], ACC)
        for start in range(0, n_rows, BLOCK):
            rows = start + tl.arange(0, BLOCK).to(tl.int64)
            ok = rows < n_rows
            ce += tl.load(ws_ptr + 4 + rows, mask=ok, other=0.0).to(ACC)
            if ZLOSS:
                zl += tl.load(ws_ptr + 4 + n_rows + rows, mask=ok, other=0.0).to(ACC)
        ce_t = tl.sum(ce, 0)
        z_t = tl.sum(zl, 0)
        if MEAN:
            # zero total weight: NaN, as torch's mean (0 / 0)
            total = tl.load(ws_ptr).to(ACC)
            ce_t = tl.where(total == 0, float("nan"), ce_t / total)
            if ZLOSS:
                z_t = z_t / tl.load(ws_ptr + 1).to(ACC)
        tl.store(loss_ptr, (ce_t + z_t).to(loss_ptr.dtype.element_ty))
        tl.store(z_ptr, z_t.to(z_ptr.dtype.element_ty))
    else:
        for start in range(0, n_rows, BLOCK):
            rows = start + tl.arange(0, BLOCK).to(tl.int64)
            ok = rows < n_rows
            ce = tl.load(ws_ptr + 4 + rows, mask=ok, other=0.0).to(ACC)
            zl = tl.zeros([BLOCK], ACC)
            if ZLOSS:
                zl = tl.load(ws_ptr + 4 + n_rows + rows, mask=ok, other=0.0).to(ACC)
            tl.store(loss_ptr + rows, (ce + zl).to(loss_ptr.dtype.element_ty), mask=ok)
            tl.store(z_ptr + rows, zl.to(z_ptr.dtype.element_ty), mask=ok)
