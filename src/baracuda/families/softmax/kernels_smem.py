"""Softmax forward of long 16-bit lines by chunk exchange, each chunk held in shared memory
(Gluon, cp.async; the shared pieces and why: backends/gluon_chunks.py). Not run by the Triton
interpreter: plans select it on sm_90 only.

Per program (one chunk of one line): copy the chunk to shared memory; from it, per-lane max
(no exp), then per-lane sums of exp(x - max), reduced to the chunk's (max, sum); publish them,
count in and wait for the line's other chunks; merge the line's partials in chunk order (the
same bits in every program of the line); write the chunk from shared memory. A program that
stops waiting after SPIN polls computes the missing partials from global memory with the same
code (`chunk_max_sum` with FROM_GLOBAL): the same bits, only slower; GPU tests compare both.
Not TMA: its descriptor is encoded on the host for every call, which makes the frontend's
calls host-bound; cp.async takes plain pointers.
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

    m, s = chunk_max_sum(slices, x_line, c, N, 0.0, False, R, SL, num_warps)
    pm, ps = exchange_pairs(m, s, part_ptr, count_ptr, slices, x_line, line, N, 0.0, SPIN,
                            chunk_max_sum, float("-inf"), NCH, NCH_P2, R, SL, num_warps)
    big, total = merge_max_sum(pm, ps)

    y_line = y_ptr + line.to(gl.int64) * stride_y
    log_total = gl.log(total)
    inv = 1.0 / total
    for sl in range(R // SL):
        cols = slice_cols(c, sl, R, SL, num_warps)
        x = slices.index(sl).load(slice_layout(num_warps)).to(gl.float32)
        if LOG:
            y = (x - big) - log_total  # never x - (big + log(total)): softmax/kernels.py
        else:
            y = gl.exp2(x * LOG2E - big * LOG2E) * inv
        gl.store(y_line + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
