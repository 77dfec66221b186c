"""Pointwise loss kernels: one forward source (per-element losses, per-program partial sums, or
per-row means) and one backward source, the loss kind a constexpr (descriptors_pointwise.KINDS
holds the codes). Operands are read through up to four collapsed dims of strides (0 for
broadcast dims); math in f32 (f64 for f64)."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import join_f64

# kind codes (descriptors_pointwise.KINDS)
MSE: tl.constexpr = tl.constexpr(0)
L1: tl.constexpr = tl.constexpr(1)
SMOOTH_L1: tl.constexpr = tl.constexpr(2)
HUBER: tl.constexpr = tl.constexpr(3)
BCE: tl.constexpr = tl.constexpr(4)
BCE_LOGITS: tl.constexpr = tl.constexpr(5)
KL_DIV: tl.constexpr = tl.constexpr(6)
SOFT_MARGIN: tl.constexpr = tl.constexpr(7)
POISSON: tl.constexpr = tl.constexpr(8)
GAUSSIAN: tl.constexpr = tl.constexpr(9)
HINGE: tl.constexpr = tl.constexpr(10)
RANKING: tl.constexpr = tl.constexpr(11)
MULTILABEL: tl.constexpr = tl.constexpr(12)

#: 0.5 * log(2 pi): gaussian_nll's constant term and poisson_nll's Stirling term
HALF_LOG_2PI: tl.constexpr = tl.constexpr(0.9189385332046727)


@triton.jit
def _log1p(x):
    # log(1 + x) without the cancellation of 1 + x near 0 (Goldberg's correction)
    u = 1.0 + x
    d = u - 1.0
    r = tl.log(u) * (x / tl.where(d == 0.0, 1.0, d))
    return tl.where(d == 0.0, x, tl.where(u == float("inf"), u, r))


@triton.jit
def _softplus_neg(x):
    """log(1 + exp(-x)), stable for large |x|."""
    return tl.maximum(-x, 0.0) + _log1p(tl.exp(-tl.abs(x)))


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _relu(v):
    # torch's clamp_min(0) keeps NaN (tl.maximum would not)
    return tl.where(v < 0.0, 0.0, v)


@triton.jit
def _sign(z):
    return tl.where(z > 0.0, 1.0, tl.where(z < 0.0, -1.0, tl.where(z == z, 0.0, z)))


@triton.jit
def _stirling(y):
    """poisson_nll's `full` term: y log y - y + 0.5 log(2 pi y) where y > 1, else 0."""
    ys = tl.where(y > 1.0, y, 2.0)
    return tl.where(y > 1.0, ys * tl.log(ys) - ys + 0.5 * tl.log(ys) + HALF_LOG_2PI, 0.0)


@triton.jit
def _offsets(f, S1, S2, S3, NDIM: tl.constexpr):
    """The 4-d index of flat index f (row-major over [S0, S1, S2, S3]; NDIM used dims)."""
    i0 = f * 0
    i1 = i0
    i2 = i0
    i3 = f
    if NDIM >= 2:
        i3 = f % S3
        i2 = f // S3
    if NDIM >= 3:
        i1 = i2 // S2
        i2 = i2 % S2
    if NDIM >= 4:
        i0 = i1 // S1
        i1 = i1 % S1
    return i0, i1, i2, i3


@triton.jit
def _at(ptr, i0, i1, i2, i3, s0, s1, s2, s3, mask, ACC: tl.constexpr):
    return tl.load(ptr + (i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3), mask=mask, other=0.5).to(ACC)


@triton.jit
def loss_value(x, y, c, d, p, KIND: tl.constexpr, HAS_C: tl.constexpr, HAS_D: tl.constexpr,
               LOG: tl.constexpr, FULL: tl.constexpr):
    """The elementwise loss (before reduction); c: weight / var / ranking target, d: pos_weight;
    p: beta / delta / margin / eps."""
    if KIND == MSE:
        z = x - y
        v = z * z
    elif KIND == L1:
        v = tl.abs(x - y)
    elif KIND == SMOOTH_L1:
        z = tl.abs(x - y)
        v = tl.where(z < p, 0.5 * z * z / p, z - 0.5 * p)
    elif KIND == HUBER:
        z = tl.abs(x - y)
        v = tl.where(z < p, 0.5 * z * z, p * (z - 0.5 * p))
    elif KIND == BCE:
        # torch clamps both logs at -100 so that 0 * log(0) stays finite
        v = -(y * tl.maximum(tl.log(x), -100.0) + (1.0 - y) * tl.maximum(_log1p(-x), -100.0))
    elif KIND == BCE_LOGITS or KIND == MULTILABEL:
        s = _softplus_neg(x)
        if HAS_D:
            v = (1.0 - y) * x + (1.0 + (d - 1.0) * y) * s
        else:
            v = (1.0 - y) * x + s
    elif KIND == KL_DIV:
        if LOG:
            v = tl.exp(y) * (y - x)
        else:
            v = tl.where(y == 0.0, 0.0, y * tl.log(y)) - y * x
    elif KIND == SOFT_MARGIN:
        v = _softplus_neg(y * x)
    elif KIND == POISSON:
        if LOG:
            v = tl.exp(x) - y * x
        else:
            v = x - y * tl.log(x + p)
        if FULL:
            v += _stirling(y)
    elif KIND == GAUSSIAN:
        var = tl.where(c < p, p, c)
        z = x - y
        v = 0.5 * (tl.log(var) + z * z / var)
        if FULL:
            v += HALF_LOG_2PI
    elif KIND == HINGE:
        v = tl.where(y != 1.0, _relu(p - x), 0.0) + tl.where(y != -1.0, x, 0.0)
    else:  # RANKING: x, y the two inputs, c the target
        v = _relu(-c * (x - y) + p)
    if HAS_C and (KIND == MSE or KIND == L1 or KIND == HUBER or KIND == BCE or KIND == BCE_LOGITS
                  or KIND == MULTILABEL):
        v = v * c
    return v


@triton.jit
def loss_grads(x, y, c, d, p, KIND: tl.constexpr, HAS_C: tl.constexpr, HAS_D: tl.constexpr,
               LOG: tl.constexpr, FULL: tl.constexpr):
    """(d/dx, d/dy, d/dc) of the elementwise loss; a zero where torch has no gradient."""
    zero = x * 0.0
    dc = zero
    if KIND == MSE:
        z = x - y
        dx = 2.0 * z
        dc = z * z
    elif KIND == L1:
        dx = _sign(x - y)
        dc = tl.abs(x - y)
    elif KIND == SMOOTH_L1:
        z = x - y
        dx = tl.where(tl.abs(z) < p, z / p, _sign(z))
    elif KIND == HUBER:
        z = x - y
        dx = tl.where(z < -p, -p, tl.where(z > p, p, z))
        az = tl.abs(z)
        dc = tl.where(az < p, 0.5 * az * az, p * (az - 0.5 * p))
    elif KIND == BCE:
        dx = (x - y) / tl.maximum((1.0 - x) * x, 1e-12)
        dy = _log1p(-x) - tl.log(x)
    elif KIND == BCE_LOGITS or KIND == MULTILABEL:
        s = _softplus_neg(x)
        sig = _sigmoid(x)
        if HAS_D:
            dx = (1.0 + (d - 1.0) * y) * sig - d * y
            dy = (d - 1.0) * s - x
            dc = (1.0 - y) * x + (1.0 + (d - 1.0) * y) * s
        else:
            dx = sig - y
            dy = -x
            dc = (1.0 - y) * x + s
    elif KIND == KL_DIV:
        if LOG:
            e = tl.exp(y)
            dx = -e
            dy = e * (y - x + 1.0)
        else:
            dx = -y
            # torch differentiates xlogy(y, y) as log(y) + y / y: NaN at y == 0
            dy = tl.log(y) + y / y - x
    elif KIND == SOFT_MARGIN:
        dx = -y * _sigmoid(-y * x)
    elif KIND == POISSON:
        if LOG:
            dx = tl.exp(x) - y
            dy = -x
        else:
            dx = 1.0 - y / (x + p)
            dy = -tl.log(x + p)
        if FULL:
            ys = tl.where(y > 1.0, y, 2.0)
            dy += tl.where(y > 1.0, tl.log(ys) + 0.5 / ys, 0.0)
    elif KIND == GAUSSIAN:
        # var is clamped at eps under no_grad in torch: the gradient passes the clamp as is
        var = tl.where(c < p, p, c)
        z = x - y
        dx = z / var
        dc = 0.5 * (1.0 / var - z * z / (var * var))
    elif KIND == HINGE:
        # clamp_min's gradient passes where its input is >= the bound
        dx = tl.where(y != -1.0, 1.0, 0.0) - tl.where((y != 1.0) & (p - x >= 0.0), 1.0, 0.0)
    else:  # RANKING
        z = x - y
        on = tl.where(-c * z + p >= 0.0, 1.0, 0.0)
        dx = -c * on
        dc = -z * on
    if KIND == MSE or KIND == L1 or KIND == SMOOTH_L1 or KIND == HUBER or KIND == GAUSSIAN \
            or KIND == RANKING:
        dy = -dx
    elif KIND == SOFT_MARGIN or KIND == HINGE:
        dy = zero
    if HAS_C and (KIND == MSE or KIND == L1 or KIND == HUBER or KIND == BCE or KIND == BCE_LOGITS
                  or KIND == MULTILABEL):
        dx = dx * c
        dy = dy * c
    return dx, dy, dc


@triton.jit
def pointwise_loss_kernel(
    x_ptr, y_ptr, c_ptr, d_ptr, out_ptr, ws_ptr, dx_ptr, numel, S1, S2, S3,
    sx0, sx1, sx2, sx3, sy0, sy1, sy2, sy3, sc0, sc1, sc2, sc3, sd0, sd1, sd2, sd3,
    p_hi, p_lo, div_hi, div_lo,
    KIND: tl.constexpr, HAS_C: tl.constexpr, HAS_D: tl.constexpr, LOG: tl.constexpr,
    FULL: tl.constexpr, REDUCE: tl.constexpr, NDIM: tl.constexpr, ACC: tl.constexpr,
    BLOCK: tl.constexpr, DX: tl.constexpr = False,
):
    """Forward. REDUCE: the program's partial sum to ws[pid] (summed by sum_partials_kernel);
    else the per-element loss to the contiguous out. DX (reduced losses): also the input's
    gradient for a unit upstream gradient, 1 / divisor, to the contiguous dx (the fused
    forward: the backward then only rescales it)."""
    pid = tl.program_id(0).to(tl.int64)
    f = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)  # [BLOCK]
    mask = f < numel
    i0, i1, i2, i3 = _offsets(f, S1, S2, S3, NDIM)
    x = _at(x_ptr, i0, i1, i2, i3, sx0, sx1, sx2, sx3, mask, ACC)
    y = _at(y_ptr, i0, i1, i2, i3, sy0, sy1, sy2, sy3, mask, ACC)
    c = x
    d = x
    if HAS_C:
        c = _at(c_ptr, i0, i1, i2, i3, sc0, sc1, sc2, sc3, mask, ACC)
    if HAS_D:
        d = _at(d_ptr, i0, i1, i2, i3, sd0, sd1, sd2, sd3, mask, ACC)
    p = join_f64(p_hi, p_lo, ACC)
    v = loss_value(x, y, c, d, p, KIND, HAS_C, HAS_D, LOG, FULL)
    if DX:
        gx, gy, gc = loss_grads(x, y, c, d, p, KIND, HAS_C, HAS_D, LOG, FULL)
        gx = gx / join_f64(div_hi, div_lo, ACC)
        tl.store(dx_ptr + f, gx.to(dx_ptr.dtype.element_ty), mask=mask)
    if REDUCE:
        tl.store(ws_ptr + pid, tl.sum(tl.where(mask, v, 0.0), 0))
    else:
        tl.store(out_ptr + f, v.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def pointwise_loss_rows_kernel(
    x_ptr, y_ptr, c_ptr, d_ptr, out_ptr, rows, C, S1, S2, S3,
    sx0, sx1, sx2, sx3, sy0, sy1, sy2, sy3, sc0, sc1, sc2, sc3, sd0, sd1, sd2, sd3,
    p_hi, p_lo,
    KIND: tl.constexpr, HAS_C: tl.constexpr, HAS_D: tl.constexpr, LOG: tl.constexpr,
    FULL: tl.constexpr, NDIM: tl.constexpr, ACC: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """Forward, per row: the mean over the last dim (C) of the elementwise losses, summed in
    a fixed order (multilabel_soft_margin with reduction none)."""
    pid = tl.program_id(0).to(tl.int64)
    r = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)  # [BLOCK_R]
    cols = tl.arange(0, BLOCK_C).to(tl.int64)
    p = join_f64(p_hi, p_lo, ACC)
    acc = tl.zeros([BLOCK_R, BLOCK_C], ACC)
    for c0 in range(0, C, BLOCK_C):
        col = c0 + cols
        mask = (r[:, None] < rows) & (col[None, :] < C)  # [BLOCK_R, BLOCK_C]
        f = r[:, None] * C + col[None, :]
        i0, i1, i2, i3 = _offsets(f, S1, S2, S3, NDIM)
        x = _at(x_ptr, i0, i1, i2, i3, sx0, sx1, sx2, sx3, mask, ACC)
        y = _at(y_ptr, i0, i1, i2, i3, sy0, sy1, sy2, sy3, mask, ACC)
        c = x
        d = x
        if HAS_C:
            c = _at(c_ptr, i0, i1, i2, i3, sc0, sc1, sc2, sc3, mask, ACC)
        if HAS_D:
            d = _at(d_ptr, i0, i1, i2, i3, sd0, sd1, sd2, sd3, mask, ACC)
        v = loss_value(x, y, c, d, p, KIND, HAS_C, HAS_D, LOG, FULL)
        acc += tl.where(mask, v, 0.0)
    total = tl.sum(acc, 1) / C  # (C == 1 arrives as a constexpr: no .to on it)
    tl.store(out_ptr + r, total.to(out_ptr.dtype.element_ty), mask=r < rows)


@triton.jit
def sum_partials_kernel(ws_ptr, out_ptr, n, div_hi, div_lo, ACC: tl.constexpr,
                        BLOCK: tl.constexpr):
    """One program: out = sum(ws[:n]) / divisor, lane sums in a fixed order (deterministic)."""
    acc = tl.zeros([BLOCK], ACC)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(ws_ptr + i, mask=i < n, other=0.0).to(ACC)
    total = tl.sum(acc, 0) / join_f64(div_hi, div_lo, ACC)
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


@triton.jit
def pointwise_loss_bwd_kernel(
    g_ptr, x_ptr, y_ptr, c_ptr, d_ptr, dx_ptr, dy_ptr, dc_ptr, numel, S1, S2, S3,
    sg0, sg1, sg2, sg3, sx0, sx1, sx2, sx3, sy0, sy1, sy2, sy3, sc0, sc1, sc2, sc3,
    sd0, sd1, sd2, sd3, p_hi, p_lo, div_hi, div_lo,
    KIND: tl.constexpr, HAS_C: tl.constexpr, HAS_D: tl.constexpr, LOG: tl.constexpr,
    FULL: tl.constexpr, SCALAR_G: tl.constexpr, DX: tl.constexpr, DY: tl.constexpr,
    DC: tl.constexpr, NDIM: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    """Backward: the requested gradients (DX / DY / DC) of sum(loss * g) / divisor, written
    contiguous; g a scalar (SCALAR_G: reduced losses) or read through its strides."""
    pid = tl.program_id(0).to(tl.int64)
    f = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)  # [BLOCK]
    mask = f < numel
    i0, i1, i2, i3 = _offsets(f, S1, S2, S3, NDIM)
    x = _at(x_ptr, i0, i1, i2, i3, sx0, sx1, sx2, sx3, mask, ACC)
    y = _at(y_ptr, i0, i1, i2, i3, sy0, sy1, sy2, sy3, mask, ACC)
    c = x
    d = x
    if HAS_C:
        c = _at(c_ptr, i0, i1, i2, i3, sc0, sc1, sc2, sc3, mask, ACC)
    if HAS_D:
        d = _at(d_ptr, i0, i1, i2, i3, sd0, sd1, sd2, sd3, mask, ACC)
    if SCALAR_G:
        g = tl.load(g_ptr).to(ACC)
    else:
        g = _at(g_ptr, i0, i1, i2, i3, sg0, sg1, sg2, sg3, mask, ACC)
    g = g / join_f64(div_hi, div_lo, ACC)
    p = join_f64(p_hi, p_lo, ACC)
    dx, dy, dc = loss_grads(x, y, c, d, p, KIND, HAS_C, HAS_D, LOG, FULL)
    if DX:
        tl.store(dx_ptr + f, (dx * g).to(dx_ptr.dtype.element_ty), mask=mask)
    if DY:
        tl.store(dy_ptr + f, (dy * g).to(dy_ptr.dtype.element_ty), mask=mask)
    if DC:
        tl.store(dc_ptr + f, (dc * g).to(dc_ptr.dtype.element_ty), mask=mask)
