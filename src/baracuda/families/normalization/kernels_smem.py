"""RMSNorm / LayerNorm forward of long 16-bit rows by chunk exchange, each chunk held in
shared memory (Gluon, cp.async; the shared pieces and why: backends/gluon_chunks.py). Not run
by the Triton interpreter: plans select it on sm_90 only.

Per program (one chunk of one row): copy the chunk to shared memory; reduce it to the sums of
(x - k) and (x - k)^2, k = the row's first element (layer_norm; 0 for rms_norm), so that the
variance does not cancel when |mean| >> std (the loop forward's shift, kernels.py); publish
them, count in and wait for the row's other chunks; sum the row's partials in chunk order (the
same bits in every program of the row); write the chunk from shared memory, and (chunk 0) the
row's mean and rstd. A program that stops waiting after SPIN polls sums the missing partials
from global memory with the same code (`chunk_sums` with FROM_GLOBAL): the same bits.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ...backends.gluon_chunks import (
    LANE,
    copy_chunk,
    exchange_pairs,
    load_slice,
    slice_cols,
    slice_layout,
)


@gluon.jit
def chunk_sums(slices, row_ptr, c, M, k, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
                SL: gl.constexpr, num_warps: gl.constexpr):
    """Chunk c's sums of d and d^2, d = x - k over the row's columns (0 past its end)."""
    layout: gl.constexpr = slice_layout(num_warps)
    s1 = gl.zeros([SL, LANE], gl.float32, layout)
    s2 = gl.zeros([SL, LANE], gl.float32, layout)
    for s in range(R // SL):  # a loop, not unrolled: slices are re-read, not held
        cols = slice_cols(c, s, R, SL, num_warps)
        x = load_slice(slices, row_ptr, c, s, M, 0.0, FROM_GLOBAL, R, SL, num_warps)
        d = gl.where(cols < M, x - k, 0.0)
        s1 += d
        s2 += d * d
    return gl.sum(gl.sum(s1, axis=1), axis=0), gl.sum(gl.sum(s2, axis=1), axis=0)


@gluon.jit
def row_norm_fwd_smem_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, part_ptr, count_ptr,
    M, stride_x, stride_y, eps, SPIN,
    NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
    RMS: gl.constexpr, HAS_W: gl.constexpr, HAS_B: gl.constexpr, num_warps: gl.constexpr,
):
    pid = gl.program_id(0)
    row = pid // NCH
    c = pid % NCH
    x_row = x_ptr + row.to(gl.int64) * stride_x
    slices = copy_chunk(x_row, c, M, R, SL, num_warps)
    if RMS:
        k = 0.0
    else:
        k = gl.load(x_row).to(gl.float32)  # one scalar per program (L2 after the first)

    t1, t2 = chunk_sums(slices, x_row, c, M, k, False, R, SL, num_warps)
    p1, p2 = exchange_pairs(t1, t2, part_ptr, count_ptr, slices, x_row, row, M, k, SPIN,
                            chunk_sums, 0.0, NCH, NCH_P2, R, SL, num_warps)
    m1 = gl.sum(p1, axis=0) / M
    if RMS:
        mean = 0.0
        var = gl.sum(p2, axis=0) / M
    else:
        mean = k + m1
        var = gl.maximum(gl.sum(p2, axis=0) / M - m1 * m1, 0.0)
    rstd = 1.0 / gl.sqrt(var + eps)
    if c == 0:
        if not RMS:
            gl.store(mean_ptr + row, mean)
        gl.store(rstd_ptr + row, rstd)

    y_row = y_ptr + row.to(gl.int64) * stride_y
    for s in range(R // SL):
        cols = slice_cols(c, s, R, SL, num_warps)
        live = cols < M
        x = slices.index(s).load(slice_layout(num_warps)).to(gl.float32)
        y = (x - mean) * rstd
        if HAS_W:
            y = y * gl.load(w_ptr + cols, mask=live, other=0.0).to(gl.float32)
        if HAS_B:
            y = y + gl.load(b_ptr + cols, mask=live, other=0.0).to(gl.float32)
        gl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=live)
