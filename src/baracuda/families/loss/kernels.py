"""Loss kernels. Patterns, each one source with constexpr variants:

- `ce_kernel`: one program per sample line along the class axis (ROWS lines per program).
  Forward loss, backward gradient, or both (the fused plan) in one pass over the logits.
  Lines up to the single-block limit are held in registers; longer vocabularies take an
  online max/sum pass and a second pass (gradient only) that re-reads the line from L2.
- `nll_fwd_kernel`: a gather of one log-probability per sample, BLOCK_R samples per program.
- `nll_bwd_kernel`: writes each sample line of the dense gradient (one non-zero).
- `weight_total_kernel` / `finalize_kernel`: the deterministic second stage of mean / sum
  reductions: one program, fixed order, reading per-sample values from the workspace.

Workspace layout (ACC elements): [0] total weight (mean), [1..3] unused (alignment),
[4 + row] per-sample loss (mean / sum).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import line_offset

WS_ROWS = 4  # first per-sample slot in the workspace


@triton.jit
def _row_scale(g_ptr, ws_ptr, rowc, S1, S2, S3, gs0, gs1, gs2, gs3,
               GRAD: tl.constexpr, MEAN: tl.constexpr, ACC: tl.constexpr):
    """Upstream gradient of one sample: 1, g[row] (reduction none) or g (scalar); / total
    weight for mean."""
    if GRAD == 2:
        g = tl.load(g_ptr + line_offset(rowc, S1, S2, S3, gs0, gs1, gs2, gs3)).to(ACC)
    elif GRAD == 3:
        g = tl.load(g_ptr).to(ACC)
    else:
        g = tl.full([], 1.0, ACC)
    if MEAN:
        # a zero total weight (every kept sample's class weighted 0) makes torch's mean 0 / 0:
        # NaN, also where label smoothing's term alone would give +-inf
        total = tl.load(ws_ptr).to(ACC)
        g = tl.where(total == 0, float("nan"), g / total)
    return g


@triton.jit
def ce_kernel(
    x_ptr, t_ptr, w_ptr, g_ptr, loss_ptr, dx_ptr, dt_ptr, ws_ptr,
    n_rows, row_base, C, ignore_index, eps_hi, eps_lo,
    S1, S2, S3,
    xs0, xs1, xs2, xs3, xsc,
    ts0, ts1, ts2, ts3, tsc,
    ls0, ls1, ls2, ls3,
    gs0, gs1, gs2, gs3,
    ds0, ds1, ds2, ds3, dsc,
    es0, es1, es2, es3, esc,
    PROB: tl.constexpr, HAS_W: tl.constexpr, SMOOTH: tl.constexpr,
    LOSS: tl.constexpr, GRAD: tl.constexpr, MEAN: tl.constexpr,
    ACC: tl.constexpr, BLOCK: tl.constexpr, SINGLE: tl.constexpr, ROWS: tl.constexpr,
    WIDE: tl.constexpr, KEEP: tl.constexpr = "", STREAM: tl.constexpr = "",
    DT: tl.constexpr = False, CHECK: tl.constexpr = False,
):
    """LOSS: 0 none, 1 per-sample into loss_ptr, 2 per-sample into the workspace.
    GRAD: 0 none, 1 unit upstream gradient (fused), 2 per-sample g, 3 scalar g.
    DT (probability targets, GRAD != 0): also the target's gradient into dt_ptr (strides
    es*), -log p * w * (1 - eps) * scale. CHECK: a device-side assert on class indices out of
    range (CUDA, backends.rows.ASSERT_LAUNCH)."""
    pid = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if WIDE:  # offsets past 2**31 elements along the line: 64-bit column indices
        cols = cols.to(tl.int64)
    # label smoothing arrives as two f32 halves so f64 problems keep f64 accuracy
    eps = tl.zeros([], ACC) + eps_hi + eps_lo
    keep = 1.0 - eps
    eps_c = eps / C
    NEG: tl.constexpr = -float("inf")
    for r in tl.static_range(ROWS):
        row = pid * ROWS + r
        row_ok = row < n_rows
        rowc = tl.minimum(row, n_rows - 1)
        x_row = x_ptr + line_offset(rowc, S1, S2, S3, xs0, xs1, xs2, xs3)
        d_row = dx_ptr + line_offset(rowc, S1, S2, S3, ds0, ds1, ds2, ds3)
        e_row = dt_ptr + line_offset(rowc, S1, S2, S3, es0, es1, es2, es3)
        t_row = t_ptr + line_offset(rowc, S1, S2, S3, ts0, ts1, ts2, ts3)
        if PROB:
            t = tl.full([], -1, tl.int64)
            valid = row_ok
            bad = row < 0  # never: probability targets have no class index to check
            tw = tl.full([], 1.0, ACC)
        else:
            t = tl.load(t_row).to(tl.int64)
            valid = (t != ignore_index) & row_ok
            inb = (t >= 0) & (t < C)
            bad = valid & (~inb)  # out-of-range class: NaN loss and gradient, no stray read
            if CHECK:
                tl.device_assert(~bad, "cross_entropy: target out of bounds (t >= 0 && t < C)")
            if HAS_W:
                tw = tl.load(w_ptr + t, mask=valid & inb, other=0.0).to(ACC)
            else:
                tw = tl.full([], 1.0, ACC)
            tw = tl.where(valid, tw, 0.0)
            x_t = tl.load(x_row + t * xsc, mask=valid & inb, other=0.0).to(ACC)
        # ---- pass 1: max, sum of exp, and the target-side sums ---------------------------
        if SINGLE:
            mask = (cols < C) & row_ok
            x = tl.load(x_row + cols * xsc, mask=mask, other=NEG).to(ACC)
            m = tl.max(x, 0)
            e = tl.exp(x - m)
            s = tl.sum(e, 0)
            # sum a (lse - x) as A log(s) + sum a (m - x), never lse = m + log(s) first: m - x is
            # exact for x near the max, so a confident sample's small loss keeps its precision
            # at large logits (lse would round to the ulp of m: 4e-6 at m = 40 in f32)
            log_s = tl.log(s)
            if PROB or SMOOTH:
                if HAS_W:
                    wc = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
                else:
                    wc = tl.where(mask, 1.0, 0.0).to(ACC)
            if PROB:
                tt = tl.load(t_row + cols * tsc, mask=mask, other=0.0).to(ACC)
                if SMOOTH:
                    tt = tt * keep + eps_c
                a = tl.where(mask, wc * tt, 0.0)
                a_tot = tl.sum(a, 0)
                loss = a_tot * log_s + tl.sum(tl.where(mask, a * (m - x), 0.0), 0)
            else:
                loss = tw * ((m - x_t) + log_s)
                if SMOOTH:
                    w_tot = tl.sum(wc, 0)
                    smooth = w_tot * log_s + tl.sum(tl.where(mask, wc * (m - x), 0.0), 0)
                    loss = keep * loss + eps_c * smooth
        else:
            m_vec = tl.full([BLOCK], NEG, ACC)
            s_vec = tl.zeros([BLOCK], ACC)
            a_vec = tl.zeros([BLOCK], ACC)
            # probability targets: d_vec, each lane's sum of a * (m_vec - x) relative to the
            # lane's running max (a_tot * lse - sum(a * x) cancels for a target near one-hot
            # on confident logits); every term is >= 0 for non-negative a. Label smoothing's
            # sum over all classes (ax_vec, sum of w x) is not small next to w_tot * lse: no
            # cancellation there, so it skips d_vec's cost
            d_vec = tl.zeros([BLOCK], ACC)
            ax_vec = tl.zeros([BLOCK], ACC)
            for start in range(0, C, BLOCK):
                c = start + cols
                mask = (c < C) & row_ok
                x = tl.load(x_row + c * xsc, mask=mask, other=NEG, eviction_policy=KEEP).to(ACC)
                m_new = tl.maximum(m_vec, x)
                alive = m_new > NEG  # lanes still at -inf keep s = 0 (no -inf - -inf)
                s_vec = s_vec * tl.where(alive, tl.exp(m_vec - m_new), 1.0) + tl.where(
                    alive, tl.exp(x - m_new), 0.0)
                if PROB:
                    # a lane's max moved up: its earlier terms grow by a_vec * (new - old)
                    d_vec += tl.where((a_vec != 0) & (m_new != m_vec), a_vec * (m_new - m_vec),
                                      0.0)
                m_vec = m_new
                if PROB or SMOOTH:
                    if HAS_W:
                        wc = tl.load(w_ptr + c, mask=mask, other=0.0).to(ACC)
                    else:
                        wc = tl.where(mask, 1.0, 0.0).to(ACC)
                    if PROB:
                        tt = tl.load(t_row + c * tsc, mask=mask, other=0.0).to(ACC)
                        if SMOOTH:
                            tt = tt * keep + eps_c
                        a = tl.where(mask, wc * tt, 0.0)
                        # x = -inf: a * inf (inf, or NaN for a = 0: torch's q log p, 0 * -inf)
                        gap = tl.where(x == NEG, float("inf"), m_vec - x)
                        d_vec += tl.where(mask, a * gap, 0.0)
                    else:
                        a = wc
                        ax_vec += tl.where(mask, a * x, 0.0)
                    a_vec += a
            m = tl.max(m_vec, 0)
            s = tl.sum(tl.where(m_vec > NEG, s_vec * tl.exp(m_vec - m), 0.0), 0)
            s = tl.where(m == NEG, float("nan"), s)  # an all -inf line is NaN, as in torch
            log_s = tl.log(s)
            lse = m + log_s
            if PROB:
                # sum of a * (m - x): the lanes' sums moved to the line's max
                d = tl.sum(d_vec + tl.where((a_vec != 0) & (m_vec != m), a_vec * (m - m_vec),
                                            0.0), 0)
                a_tot = tl.sum(a_vec, 0)
                loss = a_tot * log_s + d
            else:
                loss = tw * ((m - x_t) + log_s)  # as in the single pass: no rounding to m
                if SMOOTH:
                    w_tot = tl.sum(a_vec, 0)
                    loss = keep * loss + eps_c * (w_tot * lse - tl.sum(ax_vec, 0))
        loss = tl.where(valid, loss, 0.0)
        loss = tl.where(bad, float("nan"), loss)
        if LOSS == 1:
            l_off = line_offset(rowc, S1, S2, S3, ls0, ls1, ls2, ls3)
            tl.store(loss_ptr + l_off, loss.to(loss_ptr.dtype.element_ty), mask=row_ok)
        elif LOSS == 2:
            tl.store(ws_ptr + 4 + row_base + row, loss.to(ws_ptr.dtype.element_ty), mask=row_ok)
        # ---- pass 2 (gradient): p * A - a, scaled by the upstream gradient ---------------
        if GRAD != 0:
            scale = _row_scale(g_ptr, ws_ptr, rowc, S1, S2, S3, gs0, gs1, gs2, gs3,
                               GRAD, MEAN, ACC)
            if PROB:
                big = a_tot
            elif SMOOTH:
                big = keep * tw + eps_c * w_tot
            else:
                big = tw
            if SINGLE:
                # scalars folded first: fewer live [BLOCK] temporaries (no spills at 32K)
                k = big * scale / s
                if PROB:
                    g = e * k - a * scale
                elif SMOOTH:
                    g = e * k - (tl.where(cols == t, keep * tw, 0.0) + eps_c * wc) * scale
                else:
                    g = e * k - tl.where(cols == t, tw * scale, 0.0)
                g = tl.where(valid, g, 0.0)
                g = tl.where(bad, float("nan"), g)
                tl.store(d_row + cols * dsc, g.to(dx_ptr.dtype.element_ty), mask=mask)
                if DT:
                    # d loss / d q = -log p * w (1 - eps) * scale; log p as in pass 2 below
                    gt = ((m - x) + log_s) * (wc * keep * scale)
                    tl.store(e_row + cols * esc, gt.to(dt_ptr.dtype.element_ty), mask=mask)
            else:
                last = ((C - 1) // BLOCK) * BLOCK
                for i in range(0, C, BLOCK):
                    c = (last - i) + cols  # backwards: the blocks read last are still in L2
                    mask = (c < C) & row_ok
                    x = tl.load(x_row + c * xsc, mask=mask, other=NEG,
                                eviction_policy=STREAM).to(ACC)
                    # (x - m) - log(s), not x - lse: m - x is exact near the max, so a
                    # confident sample's p_t - 1 keeps its precision at large logits (lse
                    # rounds to the ulp of m: f32 [143, 131072] at logits ~120 gave 46x
                    # torch's error, GPU fuzz case 20363)
                    p = tl.exp((x - m) - log_s)
                    if PROB or SMOOTH:
                        if HAS_W:
                            wc = tl.load(w_ptr + c, mask=mask, other=0.0).to(ACC)
                        else:
                            wc = tl.where(mask, 1.0, 0.0).to(ACC)
                    if PROB:
                        tt = tl.load(t_row + c * tsc, mask=mask, other=0.0).to(ACC)
                        if SMOOTH:
                            tt = tt * keep + eps_c
                        sub = tl.where(mask, wc * tt, 0.0)
                    elif SMOOTH:
                        sub = tl.where(c == t, keep * tw, 0.0) + eps_c * wc
                    else:
                        sub = tl.where(c == t, tw, 0.0)
                    g = (p * big - sub) * scale
                    g = tl.where(valid, g, 0.0)
                    g = tl.where(bad, float("nan"), g)
                    tl.store(d_row + c * dsc, g.to(dx_ptr.dtype.element_ty), mask=mask,
                             eviction_policy=STREAM)
                    if DT:
                        gt = ((m - x) + log_s) * (wc * keep * scale)
                        tl.store(e_row + c * esc, gt.to(dt_ptr.dtype.element_ty), mask=mask,
                                 eviction_policy=STREAM)


@triton.jit
def nll_fwd_kernel(
    x_ptr, t_ptr, w_ptr, loss_ptr, ws_ptr, n_rows, row_base, C, ignore_index,
    S1, S2, S3, xs0, xs1, xs2, xs3, xsc, ts0, ts1, ts2, ts3, ls0, ls1, ls2, ls3,
    HAS_W: tl.constexpr, LOSS: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr,
    CHECK: tl.constexpr = False,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    ok = rows < n_rows
    t = tl.load(t_ptr + line_offset(rows, S1, S2, S3, ts0, ts1, ts2, ts3), mask=ok,
                other=ignore_index).to(tl.int64)
    valid = ok & (t != ignore_index)
    inb = (t >= 0) & (t < C)
    if CHECK:  # CUDA: torch's device-side assert (backends.rows.ASSERT_LAUNCH)
        tl.device_assert(inb | ~valid, "nll_loss: target out of bounds (t >= 0 && t < C)")
    x_t = tl.load(x_ptr + line_offset(rows, S1, S2, S3, xs0, xs1, xs2, xs3) + t * xsc,
                  mask=valid & inb, other=0.0).to(ACC)
    if HAS_W:
        w_t = tl.load(w_ptr + t, mask=valid & inb, other=0.0).to(ACC)
    else:
        w_t = tl.full([BLOCK_R], 1.0, ACC)
    loss = tl.where(valid, -w_t * x_t, 0.0)
    loss = tl.where(valid & (~inb), float("nan"), loss)
    if LOSS == 1:
        l_off = line_offset(rows, S1, S2, S3, ls0, ls1, ls2, ls3)
        tl.store(loss_ptr + l_off, loss.to(loss_ptr.dtype.element_ty), mask=ok)
    else:
        tl.store(ws_ptr + 4 + row_base + rows, loss.to(ws_ptr.dtype.element_ty), mask=ok)


@triton.jit
def nll_bwd_kernel(
    t_ptr, w_ptr, g_ptr, dx_ptr, ws_ptr, n_rows, C, ignore_index,
    S1, S2, S3, ts0, ts1, ts2, ts3, gs0, gs1, gs2, gs3, ds0, ds1, ds2, ds3, dsc,
    HAS_W: tl.constexpr, GRAD: tl.constexpr, MEAN: tl.constexpr, ACC: tl.constexpr,
    BLOCK: tl.constexpr, WIDE: tl.constexpr, CHECK: tl.constexpr = False,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if WIDE:  # offsets past 2**31 elements along the line: 64-bit column indices
        cols = cols.to(tl.int64)
    t = tl.load(t_ptr + line_offset(row, S1, S2, S3, ts0, ts1, ts2, ts3)).to(tl.int64)
    valid = t != ignore_index
    inb = (t >= 0) & (t < C)
    if CHECK:  # CUDA: torch's device-side assert (backends.rows.ASSERT_LAUNCH)
        tl.device_assert(inb | ~valid, "nll_loss: target out of bounds (t >= 0 && t < C)")
    if HAS_W:
        w_t = tl.load(w_ptr + t, mask=valid & inb, other=0.0).to(ACC)
    else:
        w_t = tl.full([], 1.0, ACC)
    scale = _row_scale(g_ptr, ws_ptr, row, S1, S2, S3, gs0, gs1, gs2, gs3, GRAD, MEAN, ACC)
    hit = tl.where(valid, -w_t * scale, 0.0)
    fill = tl.where(valid & (~inb), float("nan"), 0.0)
    d_row = dx_ptr + line_offset(row, S1, S2, S3, ds0, ds1, ds2, ds3)
    for start in range(0, C, BLOCK):
        c = start + cols
        g = tl.where(c == t, hit, fill).to(ACC)
        tl.store(d_row + c * dsc, g.to(dx_ptr.dtype.element_ty), mask=c < C)


@triton.jit
def kept_weight(t, ok, w_ptr, C, ignore_index, HAS_W: tl.constexpr, ACC: tl.constexpr):
    """(kept, weight) of class-index targets t: kept where in the batch and not ignored; the
    class weight (1 without weights; an out-of-range class reads none)."""
    valid = ok & (t != ignore_index)
    if HAS_W:
        inb = (t >= 0) & (t < C)
        w = tl.load(w_ptr + t, mask=valid & inb, other=0.0).to(ACC)
    else:
        w = tl.full(t.shape, 1.0, ACC)
    return valid, w


@triton.jit
def weight_total_kernel(
    t_ptr, w_ptr, ws_ptr, n_rows, C, ignore_index, S1, S2, S3, ts0, ts1, ts2, ts3,
    HAS_W: tl.constexpr, PROB: tl.constexpr, ACCUMULATE: tl.constexpr, ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """ws[0] (+)= the mean's denominator: sum of w[target] over kept samples (class indices)
    or the sample count (probabilities). One program: a fixed summation order."""
    if PROB:
        total = tl.full([], 0.0, ACC) + n_rows
    else:
        acc = tl.zeros([BLOCK], ACC)
        for start in range(0, n_rows, BLOCK):
            rows = start + tl.arange(0, BLOCK).to(tl.int64)
            ok = rows < n_rows
            t = tl.load(t_ptr + line_offset(rows, S1, S2, S3, ts0, ts1, ts2, ts3), mask=ok,
                        other=ignore_index).to(tl.int64)
            valid, w = kept_weight(t, ok, w_ptr, C, ignore_index, HAS_W, ACC)
            acc += tl.where(valid, w, 0.0)
        total = tl.sum(acc, 0)
    if ACCUMULATE:
        total += tl.load(ws_ptr)
    tl.store(ws_ptr, total)


@triton.jit
def finalize_kernel(ws_ptr, loss_ptr, n_rows, MEAN: tl.constexpr, ACC: tl.constexpr,
                    BLOCK: tl.constexpr):
    """loss = sum of per-sample losses (/ total weight for mean), in a fixed order."""
    acc = tl.zeros([BLOCK], ACC)
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        acc += tl.load(ws_ptr + 4 + rows, mask=rows < n_rows, other=0.0).to(ACC)
    total = tl.sum(acc, 0)
    if MEAN:
        # zero total weight: NaN, as torch's mean (its weighted-NLL part is 0 / 0 there, also
        # where label smoothing's part alone would be +-inf)
        w = tl.load(ws_ptr).to(ACC)
        total = tl.where(w == 0, float("nan"), total / w)
    tl.store(loss_ptr, total.to(loss_ptr.dtype.element_ty))


@triton.jit
def scale_unless_one_kernel(dx_ptr, g_ptr, n, BLOCK: tl.constexpr):
    """dx *= g in place for a scalar upstream gradient g; a no-op (no traffic) when g == 1,
    the common case of loss.backward(), so the fused forward's gradient is used as is. A
    persistent grid strides over the blocks: with g == 1 each program reads g once and exits
    (one program per block would cost a launch's worth of empty programs per call)."""
    g = tl.load(g_ptr).to(tl.float32)
    if g != 1.0:
        step = tl.num_programs(0).to(tl.int64) * BLOCK
        for start in range(tl.program_id(0).to(tl.int64) * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            m = offs < n
            v = tl.load(dx_ptr + offs, mask=m, other=0.0)
            if dx_ptr.dtype.element_ty == tl.float64:
                r = v * tl.load(g_ptr)
            else:
                r = v.to(tl.float32) * g
            tl.store(dx_ptr + offs, r.to(dx_ptr.dtype.element_ty), mask=m)
