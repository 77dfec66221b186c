"""Softmax forward of long 16-bit lines by chunk exchange, each chunk held in shared memory
(Gluon, cp.async; the shared pieces and why: backends/gluon_chunks.py). Not run by the Triton
interpreter: plans select it on sm_90 only.

Per program (one chunk of one line): copy the chunk to shared memory; from it, per-lane max
(no exp), then per-lane sums of exp(x - max), reduced to the chunk's (max, sum); publish them,
count in and wait for the line's other chunks; merge the line's partials in chunk order (the
same bits in every program of the line); write the chunk from shared memory. A program that
stops waiting after SPIN polls computes the missing partials from global memory with the same
code (`_chunk_stats` with FROM_GLOBAL): the same bits, only slower; GPU tests compare both.
TMA was measured first: its descriptor is encoded on the host for every call, which made the
frontend's calls host-bound; cp.async takes plain pointers.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ...backends.gluon_chunks import (
    LANE,
    copy_chunk,
    count_in_and_poll,
    load_slice,
    partials_layout,
    slice_cols,
    slice_layout,
)

LOG2E = gl.constexpr(1.4426950408889634)


@gluon.jit
def _chunk_stats(slices, line_ptr, c, N, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
                 SL: gl.constexpr, num_warps: gl.constexpr):
    """Chunk c's (max, sum of exp(x - max)); 0 for the sum of an all -inf chunk."""
    layout: gl.constexpr = slice_layout(num_warps)
    macc = gl.full([SL, LANE], float("-inf"), gl.float32, layout)
    for s in range(R // SL):  # a loop, not unrolled: slices are re-read, not held
        macc = gl.maximum(macc, load_slice(slices, line_ptr, c, s, N, float("-inf"),
                                           FROM_GLOBAL, R, SL, num_warps))
    m = gl.max(gl.max(macc, axis=1), axis=0)
    m_safe = gl.where(m == float("-inf"), 0.0, m) * LOG2E
    sacc = gl.zeros([SL, LANE], gl.float32, layout)
    for s in range(R // SL):
        x = load_slice(slices, line_ptr, c, s, N, float("-inf"), FROM_GLOBAL, R, SL, num_warps)
        sacc += gl.exp2(x * LOG2E - m_safe)
    return m, gl.sum(gl.sum(sacc, axis=1), axis=0)


@gluon.jit
def softmax_fwd_smem_kernel(
    x_ptr, y_ptr, part_ptr, count_ptr, N, stride_x, stride_y, SPIN,
    NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
    LOG: gl.constexpr, num_warps: gl.constexpr,
):
    pid = gl.program_id(0)
    line = pid // NCH
    c = pid % NCH
    x_line = x_ptr + line.to(gl.int64) * stride_x
    slices = copy_chunk(x_line, c, N, R, SL, num_warps)

    m, s = _chunk_stats(slices, x_line, c, N, False, R, SL, num_warps)
    gl.store(part_ptr + pid * 2, m)
    gl.store(part_ptr + pid * 2 + 1, s)
    all_in = count_in_and_poll(count_ptr + line, NCH, SPIN)

    p_layout: gl.constexpr = partials_layout(num_warps)
    po = gl.arange(0, NCH_P2, layout=p_layout)
    in_line = po < NCH
    if all_in:
        pm = gl.load(part_ptr + (line * NCH + po) * 2, mask=in_line, other=float("-inf"),
                     volatile=True)
        ps = gl.load(part_ptr + (line * NCH + po) * 2 + 1, mask=in_line, other=0.0,
                     volatile=True)
    else:  # no-wait path: every chunk's partial from global memory, the same code and bits
        pm = gl.full([NCH_P2], float("-inf"), gl.float32, p_layout)
        ps = gl.zeros([NCH_P2], gl.float32, p_layout)
        for other in range(NCH):
            om, osum = _chunk_stats(slices, x_line, other, N, True, R, SL, num_warps)
            pm = gl.where(po == other, om, pm)
            ps = gl.where(po == other, osum, ps)
    big = gl.max(pm, axis=0)
    scaled = gl.where(pm > float("-inf"), ps * gl.exp2((pm - big) * LOG2E), 0.0)
    total = gl.sum(scaled, axis=0)
    total = gl.where(big == float("-inf"), float("nan"), total)  # all -inf line: NaN, as torch

    y_line = y_ptr + line.to(gl.int64) * stride_y
    shift = big + gl.log(total)
    inv = 1.0 / total
    for sl in range(R // SL):
        cols = slice_cols(c, sl, R, SL, num_warps)
        x = slices.index(sl).load(slice_layout(num_warps)).to(gl.float32)
        if LOG:
            y = x - shift
        else:
            y = gl.exp2(x * LOG2E - big * LOG2E) * inv
        gl.store(y_line + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
