"""Triton kernels of the GEMM family: one tiled GEMM with constexpr epilogues, a 2-D
activation (forward / derivative) kernel and a deterministic column-sum (bias gradient).

Activation codes (GemmActivation.code): 0 none, 1 relu, 2 gelu (erf), 3 gelu (tanh), 4 silu.
MATH codes: 0 tl.dot IEEE f32, 1 tl.dot TF32, 2 tl.dot on halves (f32 accumulate),
3 FMA broadcast-reduce (f64: no tensor-core path).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import (
    dot_acc,
    gelu_erf,
    gelu_erf_grad,
    gelu_tanh,
    gelu_tanh_grad,
    silu,
    silu_grad,
)


@triton.jit
def act_fwd(x, ACT: tl.constexpr):
    if ACT == 1:
        x = tl.where(x < 0, 0.0, x).to(x.dtype)  # keeps NaN like torch.relu
    elif ACT == 2:
        x = gelu_erf(x)
    elif ACT == 3:
        x = gelu_tanh(x)
    elif ACT == 4:
        x = silu(x)
    return x


@triton.jit
def act_grad(x, ACT: tl.constexpr):
    """activation'(x) at the pre-activation x."""
    if ACT == 1:
        g = tl.where(x > 0, 1.0, 0.0).to(x.dtype)
    elif ACT == 2:
        g = gelu_erf_grad(x)
    elif ACT == 3:
        g = gelu_tanh_grad(x)
    elif ACT == 4:
        g = silu_grad(x)
    else:
        g = tl.full(x.shape, 1.0, x.dtype)
    return g


@triton.jit
def gemm_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, pre_ptr, d_ptr, preo_ptr,
    M, N, K,
    s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn, s_bias,
    s_pb, s_pm, s_pn, s_db, s_dm, s_dn, s_ob, s_om, s_on,
    alpha_hi, alpha_lo, beta_hi, beta_lo,
    HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr, SAVE_PRE: tl.constexpr,
    DACT: tl.constexpr, MATH: tl.constexpr, ACC: tl.constexpr, EVEN_K: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    IDX64: tl.constexpr, INTERPRETING: tl.constexpr, EPI_SPLIT: tl.constexpr = 1,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_batch = tiles_m * tiles_n
    bid = pid // per_batch
    t = pid % per_batch
    # Grouped tile order: GROUP_M row-tiles share B columns while they sit in L2.
    width = GROUP_M * tiles_n
    first_m = (t // width) * GROUP_M
    gsize = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (t % width) % gsize
    pid_n = (t % width) // gsize

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    if IDX64:  # a matrix spans >= 2**31 elements: 64-bit in-tile offsets (slower)
        rm = rm.to(tl.int64)
        rn = rn.to(tl.int64)
        rk = rk.to(tl.int64)
    # Batch offsets are always 64-bit (scalars, cheap); in-tile offsets 32-bit when they fit.
    bid = bid.to(tl.int64)
    # Wrapped row/col indices keep loads in bounds without masks; stores are masked.
    am = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    bn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    a_ptrs = a_ptr + bid * s_ab + am[:, None] * s_am + rk[None, :] * s_ak  # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + bid * s_bb + rk[:, None] * s_bk + bn[None, :] * s_bn  # [BLOCK_K, BLOCK_N]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=rk[None, :] < K - k0, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        if MATH == 3:
            acc += tl.sum(a[:, :, None].to(ACC) * b[None, :, :].to(ACC), axis=1)
        elif MATH == 0:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        elif MATH == 1:
            acc = tl.dot(a, b, acc, input_precision="tf32")
        else:
            acc = dot_acc(a, b, acc, INTERPRETING=INTERPRETING)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk

    # alpha/beta arrive as f32 pairs (hi + lo) so f64 problems keep their precision.
    acc = acc * alpha_hi + acc * alpha_lo
    col0 = pid_n * BLOCK_N
    if EPI_SPLIT == 1:
        _epilogue(acc, rm, col0, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr, preo_ptr,
                  s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn, s_ob, s_om, s_on,
                  beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT, ACC, IDX64)
    else:
        # The epilogue on column pieces of the tile (halves, or quarters): an activation's
        # temporaries then need a fraction of the registers, which lets 128x256 tiles fuse it
        # without spilling (the accumulator alone holds 128 registers per thread).
        h0, h1 = _halves(acc)
        if EPI_SPLIT == 2:
            _epilogue(h0, rm, col0, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr, preo_ptr,
                      s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn, s_ob, s_om,
                      s_on, beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT, ACC, IDX64)
            _epilogue(h1, rm, col0 + BLOCK_N // 2, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr,
                      preo_ptr, s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn,
                      s_ob, s_om, s_on, beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT,
                      ACC, IDX64)
        else:
            q = BLOCK_N // 4
            q0, q1 = _halves(h0)
            _epilogue(q0, rm, col0, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr, preo_ptr,
                      s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn, s_ob, s_om,
                      s_on, beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT, ACC, IDX64)
            _epilogue(q1, rm, col0 + q, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr, preo_ptr,
                      s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn, s_ob, s_om,
                      s_on, beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT, ACC, IDX64)
            q2, q3 = _halves(h1)
            _epilogue(q2, rm, col0 + 2 * q, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr,
                      preo_ptr, s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn,
                      s_ob, s_om, s_on, beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT,
                      ACC, IDX64)
            _epilogue(q3, rm, col0 + 3 * q, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr,
                      preo_ptr, s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn,
                      s_ob, s_om, s_on, beta_hi, beta_lo, HAS_C, HAS_BIAS, ACT, SAVE_PRE, DACT,
                      ACC, IDX64)


@triton.jit
def _halves(x):
    """[R, C] -> its [R, C/2] left and right column halves."""
    return tl.split(tl.permute(tl.reshape(x, (x.shape[0], 2, x.shape[1] // 2)), (0, 2, 1)))


@triton.jit
def _epilogue(acc, rm, col0, bid, M, N, c_ptr, bias_ptr, pre_ptr, d_ptr, preo_ptr,
              s_cb, s_cm, s_cn, s_bias, s_pb, s_pm, s_pn, s_db, s_dm, s_dn, s_ob, s_om, s_on,
              beta_hi, beta_lo, HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
              SAVE_PRE: tl.constexpr, DACT: tl.constexpr, ACC: tl.constexpr,
              IDX64: tl.constexpr):
    """+ beta*C, + bias, save the pre-activation, activation or its derivative, store D; on
    the output columns [col0, col0 + acc.shape[1]) of the tile."""
    rn = col0 + tl.arange(0, acc.shape[1])
    if IDX64:
        rn = rn.to(tl.int64)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if HAS_C:
        c = tl.load(c_ptr + bid * s_cb + rm[:, None] * s_cm + rn[None, :] * s_cn, mask=mask)
        c = c.to(ACC)
        acc += c * beta_hi + c * beta_lo
    if HAS_BIAS:
        bias = tl.load(bias_ptr + rn * s_bias, mask=rn < N).to(ACC)
        acc += bias[None, :]
    if SAVE_PRE:
        tl.store(preo_ptr + bid * s_ob + rm[:, None] * s_om + rn[None, :] * s_on,
                 acc.to(preo_ptr.dtype.element_ty), mask=mask)
    if ACT != 0:
        acc = act_fwd(acc, ACT)
    if DACT != 0:
        p = tl.load(pre_ptr + bid * s_pb + rm[:, None] * s_pm + rn[None, :] * s_pn, mask=mask)
        acc = acc * act_grad(p.to(ACC), DACT)
    tl.store(d_ptr + bid * s_db + rm[:, None] * s_dm + rn[None, :] * s_dn,
             acc.to(d_ptr.dtype.element_ty), mask=mask)


@triton.jit
def act_rows_kernel(
    x_ptr, g_ptr, y_ptr, part_ptr, R, C, ROWS,
    s_xr, s_xc, s_gr, s_gc, s_yr, s_yc,
    ACT: tl.constexpr, GRAD: tl.constexpr, PARTIAL: tl.constexpr, ACC: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """y = act(x) (GRAD False) or y = g * act'(x) (GRAD True) over an [R, C] strided grid.
    Program (i, j) walks rows [i*ROWS, (i+1)*ROWS) of column block j, BLOCK_R rows a step, so
    each program streams wide rows (16-byte vectors) and, with PARTIAL, also writes the
    column sums of its rows of y (f32, before rounding) to part[i, :]: the first stage of a
    fixed-order, deterministic bias gradient that saves a second read of y."""
    pid_r = tl.program_id(0).to(tl.int64)
    pid_c = tl.program_id(1).to(tl.int64)
    rc = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = rc < C
    row0 = pid_r * ROWS
    xc = rc * s_xc
    gc = rc * s_gc
    yc = rc * s_yc
    lr = tl.arange(0, BLOCK_R)
    # Per-lane partial sums, reduced across rows once at the end: a cross-warp reduction on
    # every step costs as much as a second pass over y.
    colsum = tl.zeros((BLOCK_R, BLOCK_C), dtype=ACC)
    for r0 in range(0, ROWS, BLOCK_R):
        rr = row0 + r0 + lr
        mask = ((rr < R) & (r0 + lr < ROWS))[:, None] & cmask[None, :]
        x = tl.load(x_ptr + rr[:, None] * s_xr + xc[None, :], mask=mask).to(ACC)
        if GRAD:
            g = tl.load(g_ptr + rr[:, None] * s_gr + gc[None, :], mask=mask).to(ACC)
            y = g * act_grad(x, ACT)
        else:
            y = act_fwd(x, ACT)
        tl.store(y_ptr + rr[:, None] * s_yr + yc[None, :], y.to(y_ptr.dtype.element_ty),
                 mask=mask)
        if PARTIAL:
            colsum += tl.where(mask, y, 0.0)
    if PARTIAL:
        tl.store(part_ptr + pid_r * C + rc, tl.sum(colsum, axis=0), mask=cmask)


@triton.jit
def colsum_kernel(
    x_ptr, out_ptr, NB, R, C, s_xb, s_xr, s_xc, s_o,
    ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """out[c] = sum over batch and rows of x[b, r, c]; one program per column block, fixed
    order: deterministic and bit-stable."""
    pid = tl.program_id(0).to(tl.int64)
    rc = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=ACC)
    base = x_ptr  # advanced by pointer arithmetic (64-bit) from batch to batch
    for _b in range(0, NB):
        for r0 in range(0, R, BLOCK_R):
            rr = r0 + tl.arange(0, BLOCK_R)
            mask = (rr[:, None] < R) & (rc[None, :] < C)
            ptrs = base + rr[:, None].to(tl.int64) * s_xr + rc[None, :] * s_xc
            acc += tl.load(ptrs, mask=mask, other=0.0).to(ACC)
        base += s_xb
    tl.store(out_ptr + rc * s_o, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=rc < C)


@triton.jit
def colsum_split_kernel(
    x_ptr, part_ptr, R, C, CHUNK, s_xr, s_xc,
    ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """part[s, c] = sum of x[r, c] over rows r in chunk s (first stage of a deterministic
    two-stage column sum: fixed chunks, fixed order)."""
    pid_c = tl.program_id(0)
    pid_s = tl.program_id(1)
    rc = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    r_lo = pid_s.to(tl.int64) * CHUNK
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=ACC)
    for r0 in range(0, CHUNK, BLOCK_R):
        lr = r0 + tl.arange(0, BLOCK_R)
        rr = r_lo + lr
        mask = ((rr < R) & (lr < CHUNK))[:, None] & (rc[None, :] < C)
        acc += tl.load(x_ptr + rr[:, None] * s_xr + rc[None, :] * s_xc, mask=mask,
                       other=0.0).to(ACC)
    tl.store(part_ptr + pid_s.to(tl.int64) * C + rc, tl.sum(acc, axis=0), mask=rc < C)
