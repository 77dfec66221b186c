"""Distance kernels: one source per pattern, the order p as a constexpr kind.

- `rows_kernel`: a reduction along rows of (x - y + eps) (or of x alone): norms, partial
  norms and their combination (dist), tie counts (the +-inf backward), plain row sums.
- `rows_grad_kernel`: the gradient of a row norm, written to x's and y's gradients.
- `pair_fwd_kernel` / `pair_bwd_kernel`: cdist's direct form on [BLOCK_I, BLOCK_J] tiles of
  row pairs, pdist's condensed upper triangle as a constexpr; the backward gathers over the
  other operand's rows in order (no atomics).
- `euclid_tile_kernel`: the elementwise tiles of cdist's matmul form (distance epilogue,
  gradient ratio, x * rowsum - product).
- `cosine_fwd_kernel` / `cosine_bwd_kernel`: cosine similarity along rows.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import join_f64

# p kinds (descriptors.p_kind)
P_ZERO = tl.constexpr(0)
P_ONE = tl.constexpr(1)
P_TWO = tl.constexpr(2)
P_INF = tl.constexpr(3)
P_NEG_INF = tl.constexpr(4)
P_GENERAL = tl.constexpr(5)

# rows_kernel modes
M_NORM = tl.constexpr(0)      # ||x - y + eps||_p per row
M_PARTIAL = tl.constexpr(1)   # the accumulation without its root (first stage of dist)
M_COMBINE = tl.constexpr(2)   # combine partials (x alone) and take the root
M_TIE = tl.constexpr(3)       # count |x - y + eps| == ref[row]
M_SUM = tl.constexpr(4)       # plain sum of x

# euclid_tile_kernel modes
E_DIST = tl.constexpr(0)
E_RATIO = tl.constexpr(1)
E_AXPY = tl.constexpr(2)


@triton.jit
def _sign(d):
    return tl.where(d > 0, 1.0, tl.where(d < 0, -1.0, 0.0)).to(d.dtype)


@triton.jit
def _elem(d, p, KIND: tl.constexpr):
    """What one difference adds to the accumulation (|d|^p, or |d| for the max/min kinds)."""
    a = tl.abs(d)
    if KIND == P_ZERO:
        return (d != 0).to(d.dtype)
    elif KIND == P_TWO:
        return d * d
    elif KIND == P_GENERAL:
        # |d|^p: log2(0) = -inf gives 0 for p > 0 and inf for p < 0, as pow does
        return tl.exp2(p * tl.log2(a))
    else:
        return a


@triton.jit
def _reduce(e, COMB: tl.constexpr, AXIS: tl.constexpr):
    if COMB == 1:
        return tl.max(e, axis=AXIS)
    elif COMB == 2:
        return tl.min(e, axis=AXIS)
    else:
        return tl.sum(e, axis=AXIS)


@triton.jit
def _merge(acc, part, COMB: tl.constexpr):
    if COMB == 1:
        return tl.maximum(acc, part)
    elif COMB == 2:
        return tl.minimum(acc, part)
    else:
        return acc + part


@triton.jit
def _root(acc, p, KIND: tl.constexpr):
    if KIND == P_TWO:
        return tl.sqrt(acc)
    elif KIND == P_GENERAL:
        return tl.exp2(tl.log2(acc) / p)
    else:
        return acc


@triton.jit
def _grad(d, D, g, p, KIND: tl.constexpr):
    """g * d||v||_p / dv_m at v_m = d with ||v||_p = D (torch's subgradients: 0 where D = 0,
    and where d = 0 for p < 1; the +-inf kinds give every tie the whole g)."""
    s = _sign(d)
    if KIND == P_ZERO:
        return tl.zeros_like(d)
    elif KIND == P_ONE:
        return s * g
    elif KIND == P_TWO:
        return tl.where(D == 0, 0.0, d * (g / D))
    elif KIND == P_INF or KIND == P_NEG_INF:
        return tl.where(tl.abs(d) == D, s * g, 0.0)
    else:
        # |d|^(p-1) / D^(p-1) as one power of the ratio (no overflow of either power)
        ratio = tl.exp2((p - 1.0) * (tl.log2(tl.abs(d)) - tl.log2(D)))
        zero = (D == 0) | (tl.where(p < 1.0, tl.abs(d), 1.0) == 0)
        return tl.where(zero, 0.0, s * g * ratio)


@triton.jit
def _round_to(v, ELEM: tl.constexpr):
    """v rounded to ELEM (to nearest, ties to even) and back; bf16 by its bits, which the
    interpreter's bf16 cast (it truncates) does not do."""
    if ELEM == tl.bfloat16:
        bits = v.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.to(tl.float32, bitcast=True)
    else:
        return v.to(ELEM).to(v.dtype)


@triton.jit
def _diff(x, y, eps, ELEM: tl.constexpr):
    """x - y + eps rounded to the operands' type after each step, as torch's (x - y) + eps
    on 16-bit tensors is: its ties (+-inf norms) and zeros are torch's."""
    return _round_to(_round_to(x - y, ELEM) + eps, ELEM)


@triton.jit
def rows_kernel(x_ptr, y_ptr, ref_ptr, out_ptr, R, M, sxr, sxm, syr, sym, sref, sout, p, p_lo, eps,
                eps_lo, KIND: tl.constexpr, MODE: tl.constexpr, COMB: tl.constexpr,
                IDENT: tl.constexpr, HAS_Y: tl.constexpr, ACC: tl.constexpr,
                BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr):
    """out[r] = reduction over m of the row's values; COMB 0 sum, 1 max, 2 min; IDENT the
    combine's identity (0 for the max of absolute values: an empty max is 0, as torch's)."""
    p = join_f64(p, p_lo, ACC)
    eps = join_f64(eps, eps_lo, ACC)
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    rmask = rows < R
    acc = tl.zeros([BLOCK_R], ACC) + IDENT
    if MODE == M_TIE:
        ref = tl.load(ref_ptr + rows * sref, mask=rmask, other=0.0).to(ACC)
    for m0 in range(0, M, BLOCK_M):
        cols = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
        mask = rmask[:, None] & (cols < M)[None, :]
        # [BLOCK_R, BLOCK_M]
        d = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxm, mask=mask,
                    other=0.0).to(ACC)
        if HAS_Y:
            yv = tl.load(y_ptr + rows[:, None] * syr + cols[None, :] * sym, mask=mask,
                         other=0.0).to(ACC)
            d = _diff(d, yv, eps, x_ptr.dtype.element_ty)
        if MODE == M_NORM or MODE == M_PARTIAL:
            e = _elem(d, p, KIND)
        elif MODE == M_TIE:
            e = (tl.abs(d) == ref[:, None]).to(ACC)
        else:
            e = d
        e = tl.where(mask, e, IDENT)
        acc = _merge(acc, _reduce(e, COMB, 1), COMB)
    if MODE == M_NORM or MODE == M_COMBINE:
        acc = _root(acc, p, KIND)
    tl.store(out_ptr + rows * sout, acc, mask=rmask)


@triton.jit
def rows_grad_kernel(g_ptr, x_ptr, y_ptr, d_ptr, cnt_ptr, gx_ptr, gy_ptr, R, M, sg, sxr, sxm,
                     syr, sym, sd, scnt, sgxr, sgxm, sgyr, sgym, p, p_lo, eps, eps_lo,
                     KIND: tl.constexpr,
                     ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr):
    """gx[r] = g[r] d||v||_p/dv at v = x[r] - y[r] + eps, gy = -gx; the +-inf kinds divide g
    among the row's cnt[r] ties (torch's norm backward)."""
    p = join_f64(p, p_lo, ACC)
    eps = join_f64(eps, eps_lo, ACC)
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    rmask = rows < R
    g = tl.load(g_ptr + rows * sg, mask=rmask, other=0.0).to(ACC)
    D = tl.load(d_ptr + rows * sd, mask=rmask, other=1.0).to(ACC)
    if KIND == P_INF or KIND == P_NEG_INF:
        g = g / tl.load(cnt_ptr + rows * scnt, mask=rmask, other=1.0).to(ACC)
    for m0 in range(0, M, BLOCK_M):
        cols = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
        mask = rmask[:, None] & (cols < M)[None, :]
        # [BLOCK_R, BLOCK_M]
        xv = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxm, mask=mask,
                     other=0.0).to(ACC)
        yv = tl.load(y_ptr + rows[:, None] * syr + cols[None, :] * sym, mask=mask,
                     other=0.0).to(ACC)
        h = _grad(_diff(xv, yv, eps, x_ptr.dtype.element_ty), D[:, None], g[:, None], p, KIND)
        tl.store(gx_ptr + rows[:, None] * sgxr + cols[None, :] * sgxm, h, mask=mask)
        tl.store(gy_ptr + rows[:, None] * sgyr + cols[None, :] * sgym, -h, mask=mask)


@triton.jit
def _condensed_index(i, j, P):
    """Index of pair (i, j), i < j, in pdist's row-major upper triangle of P rows."""
    return i * P - (i * (i + 1)) // 2 + (j - i - 1)


@triton.jit
def pair_fwd_kernel(x_ptr, y_ptr, out_ptr, P, Q, M, sxb, sxi, sxm, syb, syj, sym, sob, soi,
                    soj, p, p_lo, KIND: tl.constexpr, COMB: tl.constexpr, CONDENSED: tl.constexpr,
                    ACC: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    """out[b, i, j] = ||x[b, i] - y[b, j]||_p; CONDENSED: pairs i < j of x with itself,
    stored at their condensed index (soj its stride)."""
    p = join_f64(p, p_lo, ACC)
    pid_i = tl.program_id(0).to(tl.int64)
    pid_j = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    ii = pid_i * BLOCK_I + tl.arange(0, BLOCK_I).to(tl.int64)
    jj = pid_j * BLOCK_J + tl.arange(0, BLOCK_J).to(tl.int64)
    imask = ii < P
    jmask = jj < Q
    # (p >= 0 here: masked columns load 0 and add the identity of sum and max)
    acc = tl.zeros([BLOCK_I, BLOCK_J], ACC)
    for k0 in range(0, M, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K).to(tl.int64)
        kmask = kk < M
        # [BLOCK_I, BLOCK_K], [BLOCK_J, BLOCK_K]
        xt = tl.load(x_ptr + b * sxb + ii[:, None] * sxi + kk[None, :] * sxm,
                     mask=imask[:, None] & kmask[None, :], other=0.0).to(ACC)
        yt = tl.load(y_ptr + b * syb + jj[:, None] * syj + kk[None, :] * sym,
                     mask=jmask[:, None] & kmask[None, :], other=0.0).to(ACC)
        # [BLOCK_I, BLOCK_J, BLOCK_K]
        e = _elem(xt[:, None, :] - yt[None, :, :], p, KIND)
        acc = _merge(acc, _reduce(e, COMB, 2), COMB)
    acc = _root(acc, p, KIND)
    mask = imask[:, None] & jmask[None, :]
    if CONDENSED:
        mask = mask & (ii[:, None] < jj[None, :])
        k = _condensed_index(ii[:, None], jj[None, :], P)
        tl.store(out_ptr + k * soj, acc, mask=mask)
    else:
        tl.store(out_ptr + b * sob + ii[:, None] * soi + jj[None, :] * soj, acc, mask=mask)


@triton.jit
def pair_bwd_kernel(g_ptr, x_ptr, y_ptr, d_ptr, gx_ptr, P, Q, M, sgb, sgi, sgj, sxb, sxi, sxm,
                    syb, syj, sym, sdb, sdi, sdj, sgxb, sgxi, sgxm, p, p_lo,
                    KIND: tl.constexpr,
                    CONDENSED: tl.constexpr, ACC: tl.constexpr, BLOCK_I: tl.constexpr,
                    BLOCK_J: tl.constexpr, BLOCK_M: tl.constexpr):
    """gx[b, i] = sum_j g[b, i, j] dD[b, i, j]/dx[b, i], summed over j in order. y's gradient
    is the same with x and y swapped and g, D transposed (the derivative is odd in x - y).
    CONDENSED: g and D are pdist's condensed vectors (stride sgj, sdj), symmetric in i, j."""
    p = join_f64(p, p_lo, ACC)
    pid_i = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    ii = pid_i * BLOCK_I + tl.arange(0, BLOCK_I).to(tl.int64)
    mm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    imask = ii < P
    mmask = mm < M
    xmask = imask[:, None] & mmask[None, :]
    # [BLOCK_I, BLOCK_M]
    xt = tl.load(x_ptr + b * sxb + ii[:, None] * sxi + mm[None, :] * sxm, mask=xmask,
                 other=0.0).to(ACC)
    acc = tl.zeros([BLOCK_I, BLOCK_M], ACC)
    for j0 in range(0, Q, BLOCK_J):
        jj = j0 + tl.arange(0, BLOCK_J).to(tl.int64)
        jmask = jj < Q
        # [BLOCK_J, BLOCK_M]
        yt = tl.load(y_ptr + b * syb + jj[:, None] * syj + mm[None, :] * sym,
                     mask=jmask[:, None] & mmask[None, :], other=0.0).to(ACC)
        pmask = imask[:, None] & jmask[None, :]
        if CONDENSED:
            pmask = pmask & (ii[:, None] != jj[None, :])
            lo = tl.minimum(ii[:, None], jj[None, :])
            hi = tl.maximum(ii[:, None], jj[None, :])
            k = _condensed_index(lo, hi, P)
            gt = tl.load(g_ptr + k * sgj, mask=pmask, other=0.0).to(ACC)
            dt = tl.load(d_ptr + k * sdj, mask=pmask, other=1.0).to(ACC)
        else:
            gt = tl.load(g_ptr + b * sgb + ii[:, None] * sgi + jj[None, :] * sgj, mask=pmask,
                         other=0.0).to(ACC)
            dt = tl.load(d_ptr + b * sdb + ii[:, None] * sdi + jj[None, :] * sdj, mask=pmask,
                         other=1.0).to(ACC)
        # [BLOCK_I, BLOCK_J, BLOCK_M]
        h = _grad(xt[:, None, :] - yt[None, :, :], dt[:, :, None], gt[:, :, None], p, KIND)
        h = tl.where(pmask[:, :, None], h, 0.0)
        acc += tl.sum(h, axis=1)
    tl.store(gx_ptr + b * sgxb + ii[:, None] * sgxi + mm[None, :] * sgxm, acc, mask=xmask)


@triton.jit
def euclid_tile_kernel(a_ptr, u_ptr, v_ptr, out_ptr, P, Q, sab, sai, sbb, sbj, sub, sui, suj,
                       svb, svi, svj, sob, soi, soj, b_ptr, MODE: tl.constexpr,
                       ACC: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """E_DIST: out = sqrt(max(a_i + b_j - 2 u_ij, 0)) (u the Gram product, a and b squared
    norms); E_RATIO: out = u / v, 0 where v = 0; E_AXPY: out = u a_i - v. May run in place
    (out is u or v): each element is read and written by one program."""
    pid_i = tl.program_id(0).to(tl.int64)
    pid_j = tl.program_id(1).to(tl.int64)
    bb = tl.program_id(2).to(tl.int64)
    ii = pid_i * BLOCK_I + tl.arange(0, BLOCK_I).to(tl.int64)
    jj = pid_j * BLOCK_J + tl.arange(0, BLOCK_J).to(tl.int64)
    imask = ii < P
    jmask = jj < Q
    mask = imask[:, None] & jmask[None, :]
    # [BLOCK_I, BLOCK_J]
    u = tl.load(u_ptr + bb * sub + ii[:, None] * sui + jj[None, :] * suj, mask=mask,
                other=0.0).to(ACC)
    if MODE == E_DIST:
        a = tl.load(a_ptr + bb * sab + ii * sai, mask=imask, other=0.0).to(ACC)
        bv = tl.load(b_ptr + bb * sbb + jj * sbj, mask=jmask, other=0.0).to(ACC)
        out = tl.sqrt(tl.maximum(a[:, None] + bv[None, :] - 2.0 * u, 0.0))
    else:
        v = tl.load(v_ptr + bb * svb + ii[:, None] * svi + jj[None, :] * svj, mask=mask,
                    other=1.0).to(ACC)
        if MODE == E_RATIO:
            out = tl.where(v == 0, 0.0, u / v)
        else:
            a = tl.load(a_ptr + bb * sab + ii * sai, mask=imask, other=0.0).to(ACC)
            out = u * a[:, None] - v
    tl.store(out_ptr + bb * sob + ii[:, None] * soi + jj[None, :] * soj, out, mask=mask)


@triton.jit
def _cosine_sums(x_ptr, y_ptr, rows, rmask, M, sxr, sxm, syr, sym, ACC: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr):
    s11 = tl.zeros([BLOCK_R], ACC)
    s22 = tl.zeros([BLOCK_R], ACC)
    s12 = tl.zeros([BLOCK_R], ACC)
    for m0 in range(0, M, BLOCK_M):
        cols = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
        mask = rmask[:, None] & (cols < M)[None, :]
        xv = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxm, mask=mask,
                     other=0.0).to(ACC)
        yv = tl.load(y_ptr + rows[:, None] * syr + cols[None, :] * sym, mask=mask,
                     other=0.0).to(ACC)
        s11 += tl.sum(xv * xv, axis=1)
        s22 += tl.sum(yv * yv, axis=1)
        s12 += tl.sum(xv * yv, axis=1)
    return s11, s22, s12


@triton.jit
def cosine_fwd_kernel(x_ptr, y_ptr, out_ptr, R, M, sxr, sxm, syr, sym, so, eps, eps_lo,
                      ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr):
    """out[r] = <x, y> / max(|x|, eps) / max(|y|, eps) (torch's normalize-then-dot, one pass)."""
    eps = join_f64(eps, eps_lo, ACC)
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    rmask = rows < R
    s11, s22, s12 = _cosine_sums(x_ptr, y_ptr, rows, rmask, M, sxr, sxm, syr, sym, ACC,
                                 BLOCK_R, BLOCK_M)
    n1c = tl.maximum(tl.sqrt(s11), eps)
    n2c = tl.maximum(tl.sqrt(s22), eps)
    tl.store(out_ptr + rows * so, s12 / n1c / n2c, mask=rmask)


@triton.jit
def cosine_bwd_kernel(g_ptr, x_ptr, y_ptr, gx_ptr, gy_ptr, R, M, sg, sxr, sxm, syr, sym, sgxr,
                      sgxm, sgyr, sgym, eps, eps_lo, ACC: tl.constexpr, BLOCK_R: tl.constexpr,
                      BLOCK_M: tl.constexpr):
    """gx = g / n1c (y / n2c - cos x / n1), gy likewise (n = |row|, nc = max(n, eps); the
    second term is 0 where n = 0): torch's graph, whose clamp runs outside autograd."""
    eps = join_f64(eps, eps_lo, ACC)
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    rmask = rows < R
    s11, s22, s12 = _cosine_sums(x_ptr, y_ptr, rows, rmask, M, sxr, sxm, syr, sym, ACC,
                                 BLOCK_R, BLOCK_M)
    n1 = tl.sqrt(s11)
    n2 = tl.sqrt(s22)
    n1c = tl.maximum(n1, eps)
    n2c = tl.maximum(n2, eps)
    cos = s12 / n1c / n2c
    g = tl.load(g_ptr + rows * sg, mask=rmask, other=0.0).to(ACC)
    a1 = (g / n1c)[:, None]
    a2 = (g / n2c)[:, None]
    c1 = tl.where(n1 == 0, 0.0, cos / tl.where(n1 == 0, 1.0, n1))[:, None]
    c2 = tl.where(n2 == 0, 0.0, cos / tl.where(n2 == 0, 1.0, n2))[:, None]
    for m0 in range(0, M, BLOCK_M):
        cols = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
        mask = rmask[:, None] & (cols < M)[None, :]
        # [BLOCK_R, BLOCK_M]
        xv = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxm, mask=mask,
                     other=0.0).to(ACC)
        yv = tl.load(y_ptr + rows[:, None] * syr + cols[None, :] * sym, mask=mask,
                     other=0.0).to(ACC)
        tl.store(gx_ptr + rows[:, None] * sgxr + cols[None, :] * sgxm,
                 a1 * (yv / n2c[:, None] - c1 * xv), mask=mask)
        tl.store(gy_ptr + rows[:, None] * sgyr + cols[None, :] * sgym,
                 a2 * (xv / n1c[:, None] - c2 * yv), mask=mask)
