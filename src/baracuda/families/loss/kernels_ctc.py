"""CTC kernels: the alpha and beta dynamic programs over time (one program per batch item, the
extended target's 2L + 1 states as one vector), and the gradient (one program per (t, b)).

The recursions read the previous time step's states shifted by one and two: each step stores
its states to global memory (log_alpha, or the workspace for beta) and the next step reloads
them after a block barrier. Everything is in log space, as torch's (natural logs).
"""

from __future__ import annotations

import triton
import triton.language as tl

NEG_INF = tl.constexpr(float("-inf"))


@triton.jit
def _lse3(a, b, c):
    m = tl.maximum(tl.maximum(a, b), c)
    ms = tl.where(m == NEG_INF, 0.0, m)
    return ms + tl.log(tl.exp(a - ms) + tl.exp(b - ms) + tl.exp(c - ms))


@triton.jit
def _targets(tg_ptr, tl_ptr, b, tgs0, tgs1, CONCAT: tl.constexpr, BLOCK_N: tl.constexpr):
    """(pointer to the first target of item b, element stride): padded (N, S) rows, or the
    concatenation of all items' targets (item b starts after the lengths of items < b)."""
    if CONCAT:
        k = tl.arange(0, BLOCK_N)
        off = tl.sum(tl.load(tl_ptr + k, mask=k < b, other=0).to(tl.int64), 0)
        return tg_ptr + off * tgs0, tgs0
    return tg_ptr + b * tgs0, tgs1


@triton.jit
def _labels(base, step, s, Lb, blank, C):
    """Label of each extended state s (blank for even s), whether s may skip from s - 2 (a
    label differing from the one two states back), and whether s exists (s < 2 Lb + 1)."""
    odd = (s % 2) == 1
    j = (s - 1) // 2
    exists = s < 2 * Lb + 1
    lab = tl.load(base + j * step, mask=odd & exists, other=blank).to(tl.int64)
    prev = tl.load(base + (j - 1) * step, mask=odd & exists & (s >= 3), other=blank).to(tl.int64)
    skip = odd & (s >= 3) & (lab != prev)
    # a label outside [0, C) reads inside the row (the torch function refuses it on the host)
    lab = tl.minimum(tl.maximum(lab, 0), C - 1)
    return lab, skip, exists


@triton.jit
def ctc_alpha_kernel(
    lp_ptr, tg_ptr, il_ptr, tl_ptr, nll_ptr, alpha_ptr, ws_ptr, loss_ptr,
    N, C, blank, lps0, lps1, lps2, tgs0, tgs1, als0, als1, ls, S_STATES,
    CONCAT: tl.constexpr, LOSS: tl.constexpr, ZERO_INF: tl.constexpr, MEAN: tl.constexpr,
    ACC: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """log_alpha[b, t, s] for t < input_length[b] and nll[b] = -log p(target | input).
    LOSS 1: the per-item loss into loss_ptr (zero_infinity applied); 2: into the workspace
    (divided by max(target_length, 1) for mean), reduced afterwards."""
    b = tl.program_id(0).to(tl.int64)
    Tb = tl.load(il_ptr + b).to(tl.int64)
    Lb = tl.load(tl_ptr + b).to(tl.int64)
    base, step = _targets(tg_ptr, tl_ptr, b, tgs0, tgs1, CONCAT, BLOCK_N)
    s = tl.arange(0, BLOCK_S).to(tl.int64)
    lab, skip, exists = _labels(base, step, s, Lb, blank, C)
    keep = s < S_STATES
    row = alpha_ptr + b * als0
    lp_b = lp_ptr + b * lps1
    first = exists & (s < 2) & (Tb > 0)
    a = tl.where(first, tl.load(lp_b + lab * lps2, mask=first, other=0.0).to(ACC), NEG_INF)
    tl.store(row + s, a.to(alpha_ptr.dtype.element_ty), mask=keep)
    for t in range(1, Tb):
        tl.debug_barrier()  # the previous step's stores, visible to every thread
        prev = row + (t - 1) * als1 + s
        a0 = tl.load(prev, mask=keep, other=NEG_INF).to(ACC)
        a1 = tl.load(prev - 1, mask=keep & (s >= 1), other=NEG_INF).to(ACC)
        a2 = tl.load(prev - 2, mask=keep & skip, other=NEG_INF).to(ACC)
        x = tl.load(lp_b + t * lps0 + lab * lps2, mask=exists, other=0.0).to(ACC)
        a = tl.where(exists, _lse3(a0, a1, a2) + x, NEG_INF)
        tl.store(row + t * als1 + s, a.to(alpha_ptr.dtype.element_ty), mask=keep)
    end = exists & (s >= 2 * Lb - 1)
    fin = tl.where(end, a, NEG_INF)
    m = tl.max(fin, 0)
    ms = tl.where(m == NEG_INF, 0.0, m)
    ll = ms + tl.log(tl.sum(tl.exp(fin - ms), 0))
    # no input steps: the empty target has likelihood 1, any other 0 (torch's rule)
    ll = tl.where(Tb == 0, tl.where(Lb == 0, 0.0, NEG_INF), ll)
    nll = -ll
    tl.store(nll_ptr + b, nll.to(nll_ptr.dtype.element_ty))
    value = nll
    if ZERO_INF:
        value = tl.where(value == float("inf"), 0.0, value)
    if LOSS == 1:
        tl.store(loss_ptr + b * ls, value.to(loss_ptr.dtype.element_ty))
    else:
        if MEAN:
            value = value / tl.maximum(Lb, 1).to(ACC)
        tl.store(ws_ptr + b, value)


@triton.jit
def ctc_beta_kernel(
    lp_ptr, tg_ptr, il_ptr, tl_ptr, beta_ptr,
    N, C, blank, lps0, lps1, lps2, tgs0, tgs1, bes0, bes1, S_STATES,
    CONCAT: tl.constexpr, ACC: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """log_beta[b, t, s] for t < input_length[b] (torch's convention: it includes the
    emission at t, so alpha + beta counts it twice)."""
    b = tl.program_id(0).to(tl.int64)
    Tb = tl.load(il_ptr + b).to(tl.int64)
    Lb = tl.load(tl_ptr + b).to(tl.int64)
    base, step = _targets(tg_ptr, tl_ptr, b, tgs0, tgs1, CONCAT, BLOCK_N)
    s = tl.arange(0, BLOCK_S).to(tl.int64)
    lab, _, exists = _labels(base, step, s, Lb, blank, C)
    # s may skip forward to s + 2 when s + 2 may skip back to s
    _, skip_next, _ = _labels(base, step, s + 2, Lb, blank, C)
    keep = s < S_STATES
    row = beta_ptr + b * bes0
    lp_b = lp_ptr + b * lps1
    if Tb > 0:
        last = exists & (s >= 2 * Lb - 1)
        t0 = Tb - 1
        x = tl.load(lp_b + t0 * lps0 + lab * lps2, mask=last, other=0.0).to(ACC)
        bt = tl.where(last, x, NEG_INF)
        tl.store(row + t0 * bes1 + s, bt, mask=keep)
        for k in range(1, Tb):
            t = Tb - 1 - k
            tl.debug_barrier()
            nxt = row + (t + 1) * bes1 + s
            b0 = tl.load(nxt, mask=keep, other=NEG_INF).to(ACC)
            b1 = tl.load(nxt + 1, mask=keep & (s + 1 < S_STATES), other=NEG_INF).to(ACC)
            b2 = tl.load(nxt + 2, mask=keep & skip_next & (s + 2 < S_STATES),
                         other=NEG_INF).to(ACC)
            x = tl.load(lp_b + t * lps0 + lab * lps2, mask=exists, other=0.0).to(ACC)
            bt = tl.where(exists, _lse3(b0, b1, b2) + x, NEG_INF)
            tl.store(row + t * bes1 + s, bt, mask=keep)


@triton.jit
def _label_q(base, step, k, ok, arow, brow, lp_row, lps2, nll, C, ACC: tl.constexpr):
    """Labels of target positions k and q = exp(alpha + beta + nll - lp[label]) of their
    states 2k + 1 (0 where not ok)."""
    lab = tl.load(base + k * step, mask=ok, other=-1).to(tl.int64)
    labc = tl.minimum(tl.maximum(lab, 0), C - 1)
    ab = tl.load(arow + 2 * k + 1, mask=ok, other=NEG_INF).to(ACC) + \
        tl.load(brow + 2 * k + 1, mask=ok, other=NEG_INF).to(ACC)
    lpl = tl.load(lp_row + labc * lps2, mask=ok, other=0.0).to(ACC)
    return lab, labc, lpl, tl.where(ok, tl.exp(ab + nll - lpl), 0.0)


@triton.jit
def ctc_grad_kernel(
    lp_ptr, tg_ptr, il_ptr, tl_ptr, nll_ptr, alpha_ptr, beta_ptr, g_ptr, dlp_ptr,
    N, C, blank, T, lps0, lps1, lps2, tgs0, tgs1, als0, als1, bes0, bes1, gs,
    ds0, ds1, ds2,
    CONCAT: tl.constexpr, GRAD: tl.constexpr, ZERO_INF: tl.constexpr, ACC: tl.constexpr,
    BLOCK_L: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_C: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """d loss / d log_probs[t, b, :] = (exp(lp[c]) - sum_{s: label(s) = c}
    exp(alpha[s] + beta[s] + nll - lp[c])) * g_b, 0 for t >= input_length[b] and, with
    zero_infinity, for items of infinite loss. GRAD: 1 per-item g, 2 scalar (sum), 3 scalar
    / (max(target_length, 1) N) (mean).

    No atomics: the row is written densely with the blank's sum subtracted, then (after a
    block barrier, so the second store wins) each label class once, by its first target
    position, with the sum over all positions holding that label (grouped by comparison,
    O(L^2) per row instead of O(C L))."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid % N
    t = pid // N
    Tb = tl.load(il_ptr + b).to(tl.int64)
    Lb = tl.load(tl_ptr + b).to(tl.int64)
    nll = tl.load(nll_ptr + b).to(ACC)
    if GRAD == 1:
        g = tl.load(g_ptr + b * gs).to(ACC)
    else:
        g = tl.load(g_ptr).to(ACC)
        if GRAD == 3:
            g = g / tl.maximum(Lb, 1).to(ACC) / N
    live = t < Tb
    if ZERO_INF:
        live = live & (nll != float("inf"))
    g = tl.where(live, g, 0.0)
    # an impossible alignment without zero_infinity: torch's exp(-inf + inf) is NaN for
    # every class of the live steps, those without a state too
    void = live & (nll == float("inf"))
    base, step = _targets(tg_ptr, tl_ptr, b, tgs0, tgs1, CONCAT, BLOCK_N)
    lp_row = lp_ptr + t * lps0 + b * lps1
    arow = alpha_ptr + b * als0 + t * als1
    brow = beta_ptr + b * bes0 + t * bes1
    lpb = tl.load(lp_row + blank * lps2).to(ACC)
    # blank states 2j, j <= Lb: one class
    acc = tl.zeros([BLOCK_L], ACC)
    for start in range(0, Lb + 1, BLOCK_L):
        je = start + tl.arange(0, BLOCK_L).to(tl.int64)
        ev = live & (je <= Lb)
        ab = tl.load(arow + 2 * je, mask=ev, other=NEG_INF).to(ACC) + \
            tl.load(brow + 2 * je, mask=ev, other=NEG_INF).to(ACC)
        acc += tl.where(ev, tl.exp(ab + nll - lpb), 0.0)
    blank_sum = tl.sum(acc, 0)
    out = dlp_ptr + t * ds0 + b * ds1
    for start in range(0, C, BLOCK_C):
        c = start + tl.arange(0, BLOCK_C).to(tl.int64)
        mc = c < C
        lp = tl.load(lp_row + c * lps2, mask=mc & live, other=0.0).to(ACC)
        grad = tl.where(live, (tl.exp(lp) - tl.where(c == blank, blank_sum, 0.0)) * g, 0.0)
        grad = tl.where(void, float("nan"), grad)
        tl.store(out + c * ds2, grad.to(dlp_ptr.dtype.element_ty), mask=mc)
    # label states 2j + 1, j < Lb, BLOCK_L positions at a time
    for jstart in range(0, Lb, BLOCK_L):
        j = jstart + tl.arange(0, BLOCK_L).to(tl.int64)
        od = live & (j < Lb)
        lab, labc, lpl, q_j = _label_q(base, step, j, od, arow, brow, lp_row, lps2, nll, C, ACC)
        hit = tl.zeros([BLOCK_L], ACC)
        earlier = tl.zeros([BLOCK_L], tl.int32)
        for kstart in range(0, Lb, BLOCK_K):
            k = kstart + tl.arange(0, BLOCK_K).to(tl.int64)
            ok = live & (k < Lb)
            lab_k, labc_k, lpl_k, q_k = _label_q(base, step, k, ok, arow, brow, lp_row, lps2,
                                                 nll, C, ACC)
            same = (lab[:, None] == lab_k[None, :]) & ok[None, :]
            hit += tl.sum(tl.where(same, q_k[None, :], 0.0), 1)
            earlier += tl.sum(tl.where(same & (k[None, :] < j[:, None]), 1, 0), 1)
        val = (tl.exp(lpl) - hit - tl.where(labc == blank, blank_sum, 0.0)) * g
        val = tl.where(void, float("nan"), val)
        tl.debug_barrier()  # the dense row's stores first: these replace them
        tl.store(out + labc * ds2, val.to(dlp_ptr.dtype.element_ty), mask=od & (earlier == 0))
