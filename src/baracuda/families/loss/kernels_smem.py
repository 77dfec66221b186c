"""Fused cross-entropy (loss and the gradient for a unit upstream gradient) of long 16-bit
class lines by chunk exchange, each chunk of logits held in shared memory (Gluon, cp.async;
the shared pieces and why: backends/gluon_chunks.py). Class-index targets, optional class
weights, ignore_index; no label smoothing (plans_smem.py routes the rest to ce_kernel). Not
run by the Triton interpreter: plans select it on sm_90 only.

Per program (one chunk of one sample's class line): copy the logits chunk to shared memory;
reduce it to (max, sum of exp) with gluon_chunks' `chunk_max_sum`; swap those with the
line's other chunks and merge them in chunk order (the same bits in every program of the
line, and on the no-wait path). The sample's target logit x[t] and weight w[t] are scalar
loads. Loss (chunk 0 writes it): w[t] ((max - x[t]) + log(sum)); the gradient of the chunk:
(exp(x - lse) - [c == t]) w[t] / (total weight, for mean), its target entry from
exp((x[t] - max) - log(sum)) - 1 (precise for a confident sample), 0 for an ignored
sample; a class index out of range fails a device-side assert (CHECK), as torch's does.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ...backends.gluon_chunks import (
    LOG2E,
    chunk_max_sum,
    copy_chunk,
    exchange_pairs,
    merge_max_sum,
    slice_cols,
    slice_layout,
)


@gluon.jit
def ce_fused_smem_kernel(
    x_ptr, t_ptr, w_ptr, dx_ptr, loss_ptr, ws_ptr, part_ptr, count_ptr,
    C, stride_x, stride_dx, ignore_index, SPIN,
    NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
    HAS_W: gl.constexpr, LOSS: gl.constexpr, MEAN: gl.constexpr, num_warps: gl.constexpr,
    CHECK: gl.constexpr = False,
):
    """LOSS: 1 per-sample into loss_ptr (reduction none), 2 per-sample into the workspace
    slot ws_ptr[4 + row] (mean / sum: finalize_kernel adds them in order). MEAN: the gradient
    divides by the total weight at ws_ptr[0] (weight_total_kernel, launched before)."""
    pid = gl.program_id(0)
    row = pid // NCH
    c = pid % NCH
    x_row = x_ptr + row.to(gl.int64) * stride_x
    slices = copy_chunk(x_row, c, C, R, SL, num_warps)
    # the sample's target class, its weight and its logit (scalar loads)
    t = gl.load(t_ptr + row).to(gl.int64)
    valid = t != ignore_index
    inb = (t >= 0) & (t < C)
    bad = valid & (~inb)
    if CHECK:  # torch's device-side assert (backends.rows.ASSERT_LAUNCH)
        gl.device_assert(~bad, "cross_entropy: target out of bounds (t >= 0 && t < C)")
    if HAS_W:
        tw = gl.load(w_ptr + t, mask=valid & inb, other=0.0).to(gl.float32)
    else:
        tw = 1.0
    tw = gl.where(valid, tw, 0.0)
    x_t = gl.load(x_row + t, mask=valid & inb, other=0.0).to(gl.float32)

    m, s = chunk_max_sum(slices, x_row, c, C, 0.0, False, R, SL, num_warps)
    pm, ps = exchange_pairs(m, s, part_ptr, count_ptr, slices, x_row, row, C, 0.0, SPIN,
                            chunk_max_sum, float("-inf"), NCH, NCH_P2, R, SL, num_warps)
    big, total = merge_max_sum(pm, ps)
    # The loss and the target's p_t - 1 from big - x_t, exact near the max, never from
    # lse = big + log(total), which rounds to the ulp of big (up to 7.6e-6 at logits ~100):
    # a confident sample's small loss and gradient keep their digits at large logits (as
    # ce_kernel's, kernels.py; GPU fuzz case 20363). The other classes' p come from lse,
    # one FMA each: their relative error (~1e-5 there) is far below the 16-bit output's ulp.
    log_total = gl.log(total)
    loss = gl.where(valid, tw * ((big - x_t) + log_total), 0.0)
    loss = gl.where(bad, float("nan"), loss)
    if c == 0:
        if LOSS == 1:
            gl.store(loss_ptr + row, loss.to(loss_ptr.dtype.element_ty))
        else:
            gl.store(ws_ptr + 4 + row, loss)
    scale = tw
    if MEAN:
        scale = scale / gl.load(ws_ptr)
    scale = gl.where(bad, float("nan"), scale)
    lse2 = (big + log_total) * LOG2E
    pt_1 = gl.exp2((x_t - big) * LOG2E - gl.log2(total)) - 1.0  # p_t - 1
    dx_row = dx_ptr + row.to(gl.int64) * stride_dx
    for sl in range(R // SL):
        cols = slice_cols(c, sl, R, SL, num_warps)
        x = slices.index(sl).load(slice_layout(num_warps)).to(gl.float32)
        g = gl.where(cols == t, pt_1, gl.exp2(x * LOG2E - lse2)) * scale
        g = gl.where(valid | bad, g, 0.0)  # an ignored sample: 0, whatever its logits
        gl.store(dx_row + cols, g.to(dx_ptr.dtype.element_ty), mask=cols < C)
