"""Structured-loss kernels: one program per row (multi_margin, multilabel_margin, cosine,
triplet), one program per BLOCK rows for the distance hinge, and the fixed-order reduction.

Shared modes (constexpr):
- LOSS: 0 no loss (backward), 1 per-row loss into loss_ptr (reduction none), 2 per-row loss
  into the workspace (ACC), reduced afterwards by `reduce_rows_kernel` (mean / sum).
- GRAD: 0 forward, 1 per-row upstream gradient g[row], 2 scalar g (sum), 3 scalar g / N (mean).
Row offsets are int64 (a (N, D) batch can pass 2**31 elements).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import join_f64


@triton.jit
def _upstream(g_ptr, row, gs, n_rows, GRAD: tl.constexpr, ACC: tl.constexpr):
    if GRAD == 1:
        g = tl.load(g_ptr + row * gs).to(ACC)
    else:
        g = tl.load(g_ptr).to(ACC)
        if GRAD == 3:
            g = g / n_rows
    return g


@triton.jit
def _put_loss(loss_ptr, ws_ptr, row, ls, value, LOSS: tl.constexpr):
    if LOSS == 1:
        tl.store(loss_ptr + row * ls, value.to(loss_ptr.dtype.element_ty))
    elif LOSS == 2:
        tl.store(ws_ptr + row, value)


@triton.jit
def reduce_rows_kernel(ws_ptr, loss_ptr, n_rows, MEAN: tl.constexpr, ACC: tl.constexpr,
                       BLOCK: tl.constexpr):
    """loss = sum (or mean) of the per-row losses, one program in a fixed order (bit-stable);
    the mean of no rows is 0 / 0 = NaN, as torch's."""
    acc = tl.zeros([BLOCK], ACC)
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        acc += tl.load(ws_ptr + rows, mask=rows < n_rows, other=0.0).to(ACC)
    total = tl.sum(acc, 0)
    if MEAN:
        total = total / n_rows
    tl.store(loss_ptr, total.to(loss_ptr.dtype.element_ty))


# -- multi_margin ----------------------------------------------------------------------------
@triton.jit
def multi_margin_kernel(
    x_ptr, t_ptr, w_ptr, g_ptr, loss_ptr, dx_ptr, ws_ptr,
    n_rows, C, xs0, xs1, ts, ls, gs, ds0, ds1, margin, margin_lo,
    HAS_W: tl.constexpr, P: tl.constexpr, LOSS: tl.constexpr, GRAD: tl.constexpr,
    ACC: tl.constexpr, BLOCK: tl.constexpr, CHECK: tl.constexpr = False,
):
    """Row loss sum_{c != y} max(0, margin - x[y] + x[c])^P * w[y] / C; backward writes
    d/dx[c] for c != y in the loop and d/dx[y] = -(their sum) after it (no two stores to one
    element). A target outside [0, C) gives NaN (CUDA: a device-side assert with CHECK)."""
    # float parameters arrive as float32 halves (Triton passes Python floats as fp32)
    margin = join_f64(margin, margin_lo, ACC)
    row = tl.program_id(0).to(tl.int64)
    y = tl.load(t_ptr + row * ts).to(tl.int64)
    ok = (y >= 0) & (y < C)
    if CHECK:
        tl.device_assert(ok, "target out of range")
    yc = tl.where(ok, y, 0)
    x_row = x_ptr + row * xs0
    xy = tl.load(x_row + yc * xs1).to(ACC)
    scale = tl.full([], 1.0, ACC) / C
    if HAS_W:
        scale = scale * tl.load(w_ptr + yc).to(ACC)
    scale = tl.where(ok, scale, float("nan"))
    if GRAD != 0:
        scale = scale * _upstream(g_ptr, row, gs, n_rows, GRAD, ACC)
    acc = tl.zeros([BLOCK], ACC)
    for start in range(0, C, BLOCK):
        cols = start + tl.arange(0, BLOCK).to(tl.int64)
        m = cols < C
        x = tl.load(x_row + cols * xs1, mask=m, other=0.0).to(ACC)
        z = margin - xy + x
        live = m & (cols != yc) & (z > 0)
        if GRAD == 0:
            acc += tl.where(live, z * z if P == 2 else z, 0.0)
        else:
            d = tl.where(live, 2 * z if P == 2 else 1.0, 0.0) * scale
            acc += d
            tl.store(dx_ptr + row * ds0 + cols * ds1, d.to(dx_ptr.dtype.element_ty),
                     mask=m & (cols != yc))
    total = tl.sum(acc, 0)
    if GRAD == 0:
        _put_loss(loss_ptr, ws_ptr, row, ls, total * scale, LOSS)
    else:
        tl.store(dx_ptr + row * ds0 + yc * ds1, (-total).to(dx_ptr.dtype.element_ty))


# -- multilabel_margin -----------------------------------------------------------------------
@triton.jit
def multilabel_margin_kernel(
    x_ptr, t_ptr, g_ptr, loss_ptr, dx_ptr, ws_ptr,
    n_rows, C, xs0, xs1, ts0, ts1, ls, gs, ds0, ds1,
    LOSS: tl.constexpr, GRAD: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
    CHECK: tl.constexpr = False,
):
    """Targets are the row's leading entries up to the first negative one; row loss
    sum_{j target} sum_{k not a target} max(0, 1 - x[t_j] + x[k]) / C (a repeated target
    counts once per entry, as in torch). The row is held in one BLOCK (BLOCK >= C)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    m = cols < C
    t = tl.load(t_ptr + row * ts0 + cols * ts1, mask=m, other=-1).to(tl.int64)
    if CHECK:
        tl.device_assert((t >= -1) & (t < C), "argument #2 'target' is out of range")
    bad = tl.sum(tl.where(m & ((t < -1) | (t >= C)), 1, 0), 0) > 0
    n_t = tl.min(tl.where(t < 0, cols, C), 0)
    x = tl.load(x_ptr + row * xs0 + cols * xs1, mask=m, other=0.0).to(ACC)
    is_t = cols < 0
    for j in range(0, n_t):
        yj = tl.load(t_ptr + row * ts0 + j * ts1).to(tl.int64)
        is_t = is_t | (cols == yj)
    others = m & (~is_t)
    scale = tl.full([], 1.0, ACC) / C
    scale = tl.where(bad, float("nan"), scale)
    acc = tl.zeros([BLOCK], ACC)
    for j in range(0, n_t):
        # an out-of-range target (the row is NaN then) still reads inside the row
        yj = tl.minimum(tl.load(t_ptr + row * ts0 + j * ts1).to(tl.int64), C - 1)
        xy = tl.load(x_ptr + row * xs0 + yj * xs1).to(ACC)
        z = 1.0 - xy + x
        live = others & (z > 0)
        if GRAD == 0:
            acc += tl.where(live, z, 0.0)
        else:
            hits = tl.where(live, 1.0, 0.0)
            acc += hits - tl.where(cols == yj, tl.sum(hits, 0), 0.0)
    if GRAD == 0:
        _put_loss(loss_ptr, ws_ptr, row, ls, tl.sum(acc, 0) * scale, LOSS)
    else:
        g = scale * _upstream(g_ptr, row, gs, n_rows, GRAD, ACC)
        tl.store(dx_ptr + row * ds0 + cols * ds1, (acc * g).to(dx_ptr.dtype.element_ty),
                 mask=m)


# -- cosine_embedding ------------------------------------------------------------------------
@triton.jit
def cosine_embedding_kernel(
    a_ptr, b_ptr, t_ptr, g_ptr, loss_ptr, da_ptr, db_ptr, ws_ptr,
    n_rows, D, as0, as1, bs0, bs1, ts, ls, gs, das0, das1, dbs0, dbs1, margin, margin_lo,
    LOSS: tl.constexpr, GRAD: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    """cos = <a, b> / sqrt((|a|^2 + 1e-12)(|b|^2 + 1e-12)) (torch's EPSILON); row loss
    1 - cos for target 1, max(cos - margin, 0) for target -1, 0 otherwise. The hinge's
    gradient passes where cos - margin >= 0 (torch's clamp_min)."""
    # float parameters arrive as float32 halves (Triton passes Python floats as fp32)
    margin = join_f64(margin, margin_lo, ACC)
    row = tl.program_id(0).to(tl.int64)
    a_row = a_ptr + row * as0
    b_row = b_ptr + row * bs0
    dot = tl.zeros([BLOCK], ACC)
    sa = tl.zeros([BLOCK], ACC)
    sb = tl.zeros([BLOCK], ACC)
    for start in range(0, D, BLOCK):
        cols = start + tl.arange(0, BLOCK).to(tl.int64)
        m = cols < D
        a = tl.load(a_row + cols * as1, mask=m, other=0.0).to(ACC)
        b = tl.load(b_row + cols * bs1, mask=m, other=0.0).to(ACC)
        dot += a * b
        sa += a * a
        sb += b * b
    ma = tl.sum(sa, 0) + 1e-12
    mb = tl.sum(sb, 0) + 1e-12
    denom = tl.sqrt(ma * mb)
    cos = tl.sum(dot, 0) / denom
    y = tl.load(t_ptr + row * ts)
    pos = y == 1
    neg = y == -1
    if GRAD == 0:
        value = tl.where(pos, 1.0 - cos, tl.where(neg, tl.maximum(cos - margin, 0.0), 0.0))
        _put_loss(loss_ptr, ws_ptr, row, ls, value.to(ACC), LOSS)
    else:
        g = _upstream(g_ptr, row, gs, n_rows, GRAD, ACC)
        dcos = tl.where(pos, -g, tl.where(neg & (cos - margin >= 0), g, 0.0))
        for start in range(0, D, BLOCK):
            cols = start + tl.arange(0, BLOCK).to(tl.int64)
            m = cols < D
            a = tl.load(a_row + cols * as1, mask=m, other=0.0).to(ACC)
            b = tl.load(b_row + cols * bs1, mask=m, other=0.0).to(ACC)
            da = dcos * (b / denom - cos * a / ma)
            db = dcos * (a / denom - cos * b / mb)
            tl.store(da_ptr + row * das0 + cols * das1, da.to(da_ptr.dtype.element_ty), mask=m)
            tl.store(db_ptr + row * dbs0 + cols * dbs1, db.to(db_ptr.dtype.element_ty), mask=m)


# -- triplet_margin --------------------------------------------------------------------------
@triton.jit
def _pow_sum(v, p, NORM: tl.constexpr):
    """|v|^p per element (NORM 2 / 1 exact, 0 any p > 0)."""
    if NORM == 2:
        return v * v
    elif NORM == 1:
        return tl.abs(v)
    else:
        a = tl.abs(v)
        return tl.where(a > 0, tl.exp(p * tl.log(tl.where(a > 0, a, 1.0))), 0.0)


@triton.jit
def _root(s, p, NORM: tl.constexpr):
    if NORM == 2:
        return tl.sqrt(s)
    elif NORM == 1:
        return s
    else:
        return tl.where(s > 0, tl.exp(tl.log(tl.where(s > 0, s, 1.0)) / p), 0.0)


@triton.jit
def _dnorm(v, d, p, NORM: tl.constexpr):
    """d ||v||_p / dv; 0 where the norm is 0 (torch's norm backward), sign(v) for p = 1."""
    if NORM == 1:
        return tl.where(v > 0, 1.0, tl.where(v < 0, -1.0, 0.0))
    elif NORM == 2:
        return tl.where(d > 0, v / tl.where(d > 0, d, 1.0), 0.0)
    else:
        a = tl.abs(v)
        sgn = tl.where(v > 0, 1.0, tl.where(v < 0, -1.0, 0.0))
        pa = tl.where(a > 0, tl.exp((p - 1) * tl.log(tl.where(a > 0, a, 1.0))), 0.0)
        pd = tl.exp((p - 1) * tl.log(tl.where(d > 0, d, 1.0)))
        return tl.where(d > 0, sgn * pa / pd, 0.0)


@triton.jit
def triplet_margin_kernel(
    a_ptr, p_ptr, n_ptr, g_ptr, loss_ptr, da_ptr, dp_ptr, dn_ptr, ws_ptr,
    n_rows, D, as0, as1, ps0, ps1, ns0, ns1, ls, gs,
    das0, das1, dps0, dps1, dns0, dns1, margin, margin_lo, p, p_lo, eps, eps_lo,
    NORM: tl.constexpr, SWAP: tl.constexpr, LOSS: tl.constexpr, GRAD: tl.constexpr,
    ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    """Row loss max(margin + d(a, p) - d(a, n), 0), d(x, y) = ||x - y + eps||_p; SWAP takes
    min(d(a, n), d(p, n)) (a tie splits the gradient in halves, as torch.minimum)."""
    # float parameters arrive as float32 halves (Triton passes Python floats as fp32)
    margin = join_f64(margin, margin_lo, ACC)
    p = join_f64(p, p_lo, ACC)
    eps = join_f64(eps, eps_lo, ACC)
    row = tl.program_id(0).to(tl.int64)
    s1 = tl.zeros([BLOCK], ACC)
    s2 = tl.zeros([BLOCK], ACC)
    s3 = tl.zeros([BLOCK], ACC)
    for start in range(0, D, BLOCK):
        cols = start + tl.arange(0, BLOCK).to(tl.int64)
        m = cols < D
        a = tl.load(a_ptr + row * as0 + cols * as1, mask=m, other=0.0).to(ACC)
        q = tl.load(p_ptr + row * ps0 + cols * ps1, mask=m, other=0.0).to(ACC)
        n = tl.load(n_ptr + row * ns0 + cols * ns1, mask=m, other=0.0).to(ACC)
        s1 += tl.where(m, _pow_sum(a - q + eps, p, NORM), 0.0)
        s2 += tl.where(m, _pow_sum(a - n + eps, p, NORM), 0.0)
        if SWAP:
            s3 += tl.where(m, _pow_sum(q - n + eps, p, NORM), 0.0)
    d_ap = _root(tl.sum(s1, 0), p, NORM)
    d_an = _root(tl.sum(s2, 0), p, NORM)
    w_an = tl.full([], 1.0, ACC)
    w_pn = tl.full([], 0.0, ACC)
    d_neg = d_an
    d_pn = d_an
    if SWAP:
        d_pn = _root(tl.sum(s3, 0), p, NORM)
        d_neg = tl.minimum(d_an, d_pn)
        w_an = tl.where(d_an < d_pn, 1.0, tl.where(d_an == d_pn, 0.5, 0.0)).to(ACC)
        w_pn = 1.0 - w_an
    h = margin + d_ap - d_neg
    if GRAD == 0:
        _put_loss(loss_ptr, ws_ptr, row, ls, tl.maximum(h, 0.0), LOSS)
    else:
        c = tl.where(h >= 0, _upstream(g_ptr, row, gs, n_rows, GRAD, ACC), 0.0)
        for start in range(0, D, BLOCK):
            cols = start + tl.arange(0, BLOCK).to(tl.int64)
            m = cols < D
            a = tl.load(a_ptr + row * as0 + cols * as1, mask=m, other=0.0).to(ACC)
            q = tl.load(p_ptr + row * ps0 + cols * ps1, mask=m, other=0.0).to(ACC)
            n = tl.load(n_ptr + row * ns0 + cols * ns1, mask=m, other=0.0).to(ACC)
            f1 = _dnorm(a - q + eps, d_ap, p, NORM)
            f2 = _dnorm(a - n + eps, d_an, p, NORM) * w_an
            if SWAP:
                f3 = _dnorm(q - n + eps, d_pn, p, NORM) * w_pn
            else:
                f3 = tl.zeros([BLOCK], ACC)
            tl.store(da_ptr + row * das0 + cols * das1, (c * (f1 - f2)).to(
                da_ptr.dtype.element_ty), mask=m)
            tl.store(dp_ptr + row * dps0 + cols * dps1, (-c * (f1 + f3)).to(
                dp_ptr.dtype.element_ty), mask=m)
            tl.store(dn_ptr + row * dns0 + cols * dns1, (c * (f2 + f3)).to(
                dn_ptr.dtype.element_ty), mask=m)


# -- distance hinge (triplet_margin_with_distance_loss with a caller's distance) ------------
@triton.jit
def margin_hinge_kernel(
    p_ptr, n_ptr, s_ptr, g_ptr, loss_ptr, gp_ptr, gn_ptr, gsw_ptr, ws_ptr,
    n_rows, ps, ns, ss, ls, gs, gps, gns, gss, margin, margin_lo,
    SWAP: tl.constexpr, LOSS: tl.constexpr, GRAD: tl.constexpr, ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # float parameters arrive as float32 halves (Triton passes Python floats as fp32)
    margin = join_f64(margin, margin_lo, ACC)
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = rows < n_rows
    dp = tl.load(p_ptr + rows * ps, mask=m, other=0.0).to(ACC)
    dn = tl.load(n_ptr + rows * ns, mask=m, other=0.0).to(ACC)
    w_n = tl.full([BLOCK], 1.0, ACC)
    d_neg = dn
    if SWAP:
        dsw = tl.load(s_ptr + rows * ss, mask=m, other=0.0).to(ACC)
        d_neg = tl.minimum(dn, dsw)
        # NaN distances propagate as torch.minimum's
        d_neg = tl.where((dn != dn) | (dsw != dsw), dn + dsw, d_neg)
        w_n = tl.where(dn < dsw, 1.0, tl.where(dn == dsw, 0.5, 0.0)).to(ACC)
    h = margin + dp - d_neg
    if GRAD == 0:
        value = tl.where(h != h, h, tl.maximum(h, 0.0))
        if LOSS == 1:
            tl.store(loss_ptr + rows * ls, value.to(loss_ptr.dtype.element_ty), mask=m)
        else:
            tl.store(ws_ptr + rows, value, mask=m)
    else:
        if GRAD == 1:
            g = tl.load(g_ptr + rows * gs, mask=m, other=0.0).to(ACC)
        else:
            g = tl.load(g_ptr).to(ACC) + tl.zeros([BLOCK], ACC)
            if GRAD == 3:
                g = g / n_rows
        c = tl.where(h >= 0, g, 0.0)
        tl.store(gp_ptr + rows * gps, c.to(gp_ptr.dtype.element_ty), mask=m)
        tl.store(gn_ptr + rows * gns, (-c * w_n).to(gn_ptr.dtype.element_ty), mask=m)
        if SWAP:
            tl.store(gsw_ptr + rows * gss, (-c * (1.0 - w_n)).to(gsw_ptr.dtype.element_ty),
                     mask=m)


#: Kernels of this module the AOT check compiles (spec_structured).
KERNELS = (reduce_rows_kernel, multi_margin_kernel, multilabel_margin_kernel,
           cosine_embedding_kernel, triplet_margin_kernel, margin_hinge_kernel)
