"""Fused cross-entropy (loss and the gradient for a unit upstream gradient) of long 16-bit
class lines by chunk exchange, each chunk of logits held in shared memory (Gluon, cp.async;
the shared pieces and why: backends/gluon_chunks.py). Class-index targets, optional class
weights, ignore_index; no label smoothing (plans_smem.py routes the rest to ce_kernel). Not
run by the Triton interpreter: plans select it on sm_90 only.

Per program (one chunk of one sample's class line): copy the logits chunk to shared memory;
reduce it to (max, sum of exp) with the softmax kernel's `_chunk_stats`; swap those with the
line's other chunks and merge them in chunk order (the same bits in every program of the
line, and on the no-wait path); lse = max + log(sum). The sample's target logit x[t] and
weight w[t] are scalar loads. Loss (chunk 0 writes it): w[t] (lse - x[t]); the gradient of
the chunk: (exp(x - lse) - [c == t]) w[t] / (total weight, for mean), 0 for an ignored
sample, NaN for a class index out of range (torch raises; a kernel cannot).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ...backends.gluon_chunks import (
    copy_chunk,
    count_in_and_poll,
    partials_layout,
    slice_cols,
    slice_layout,
)
from ..softmax.kernels_smem import LOG2E, _chunk_stats


@gluon.jit
def ce_fused_smem_kernel(
    x_ptr, t_ptr, w_ptr, dx_ptr, loss_ptr, ws_ptr, part_ptr, count_ptr,
    C, stride_x, stride_dx, ignore_index, SPIN,
    NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
    HAS_W: gl.constexpr, LOSS: gl.constexpr, MEAN: gl.constexpr, num_warps: gl.constexpr,
):
    """LOSS: 1 per-sample into loss_ptr (reduction none), 2 per-sample into the workspace
    slot ws_ptr[4 + row] (mean / sum: finalize_kernel adds them in order). MEAN: the gradient
    divides by the total weight at ws_ptr[0] (weight_total_kernel, launched before)."""
    pid = gl.program_id(0)
    row = pid // NCH
    c = pid % NCH
    x_row = x_ptr + row.to(gl.int64) * stride_x
    slices = copy_chunk(x_row, c, C, R, SL, num_warps)
    # the sample's target while the copies fly
    t = gl.load(t_ptr + row).to(gl.int64)
    valid = t != ignore_index
    inb = (t >= 0) & (t < C)
    bad = valid & (~inb)
    if HAS_W:
        tw = gl.load(w_ptr + t, mask=valid & inb, other=0.0).to(gl.float32)
    else:
        tw = 1.0
    tw = gl.where(valid, tw, 0.0)
    x_t = gl.load(x_row + t, mask=valid & inb, other=0.0).to(gl.float32)

    m, s = _chunk_stats(slices, x_row, c, C, False, R, SL, num_warps)
    gl.store(part_ptr + pid * 2, m)
    gl.store(part_ptr + pid * 2 + 1, s)
    all_in = count_in_and_poll(count_ptr + row, NCH, SPIN)

    p_layout: gl.constexpr = partials_layout(num_warps)
    po = gl.arange(0, NCH_P2, layout=p_layout)
    in_line = po < NCH
    if all_in:
        pm = gl.load(part_ptr + (row * NCH + po) * 2, mask=in_line, other=float("-inf"),
                     volatile=True)
        ps = gl.load(part_ptr + (row * NCH + po) * 2 + 1, mask=in_line, other=0.0,
                     volatile=True)
    else:  # no-wait path: every chunk's partial from global memory, the same code and bits
        pm = gl.full([NCH_P2], float("-inf"), gl.float32, p_layout)
        ps = gl.zeros([NCH_P2], gl.float32, p_layout)
        for other in range(NCH):
            om, osum = _chunk_stats(slices, x_row, other, C, True, R, SL, num_warps)
            pm = gl.where(po == other, om, pm)
            ps = gl.where(po == other, osum, ps)
    big = gl.max(pm, axis=0)
    total = gl.sum(gl.where(pm > float("-inf"), ps * gl.exp2((pm - big) * LOG2E), 0.0), axis=0)
    total = gl.where(big == float("-inf"), float("nan"), total)  # all -inf line: NaN
    lse = big + gl.log(total)

    loss = gl.where(valid, tw * (lse - x_t), 0.0)
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
    lse2 = lse * LOG2E
    dx_row = dx_ptr + row.to(gl.int64) * stride_dx
    for sl in range(R // SL):
        cols = slice_cols(c, sl, R, SL, num_warps)
        x = slices.index(sl).load(slice_layout(num_warps)).to(gl.float32)
        g = (gl.exp2(x * LOG2E - lse2) - gl.where(cols == t, 1.0, 0.0)) * scale
        g = gl.where(valid | bad, g, 0.0)  # an ignored sample: 0, whatever its logits
        gl.store(dx_row + cols, g.to(dx_ptr.dtype.element_ty), mask=cols < C)
