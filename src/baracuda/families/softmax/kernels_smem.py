"""Softmax forward of long 16-bit lines by chunk exchange, each chunk held in shared memory
(Gluon, cp.async). Not run by the Triton interpreter: plans select it on sm_90 only.

Why: the register EXCHANGE (kernels.py) holds a bf16 chunk as f32 values across the wait, so
per register it keeps half the bytes in flight that an f32 chunk does, and the bf16 forward
stayed at ~2.1-2.3 TB/s while f32 reached 2.7. Here asynchronous copies put the raw chunk in
shared memory, so a program holds ~40 registers and 16-32 KB of shared memory: up to 13
programs per SM keep their chunks in flight while others wait on their line (H100,
softmax/PERF_NOTES.md, session 9). cp.async rather than TMA: a TMA descriptor is encoded on
the host for every call (~50 us of host time per launch, measured), cp.async takes pointers.

Per program (one chunk of R * 256 elements of one line; program id = line * NCH + chunk):
1. copy the chunk (R x 256 elements, 16 bytes per copy) into shared memory, asynchronously;
2. from shared memory, in slices of SL x 256: per-lane max (no exp), then per-lane sums of
   exp(x - max); reduce both to the chunk's (max, sum) and publish them to the workspace;
3. count in at the line's counter and wait for its other chunks
   (backends/triton_exchange.py's protocol, spelled in Gluon's atomics);
4. merge the line's partials in chunk order (the same bits in every program of the line) and
   write the chunk from shared memory.

A program that stops waiting after SPIN polls computes the missing partials itself from global
memory with the same slice order and layout (`_chunk_stats` over a global-memory view): the
same bits, only slower. GPU tests compare that path with the waiting one bit for bit.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

#: A chunk is R x LANE elements, held as R // SL slices of SL x LANE.
LANE = gl.constexpr(256)
LOG2E = gl.constexpr(1.4426950408889634)


@gluon.constexpr_function
def _slice_layout(num_warps):
    """Register layout of one [SL, LANE] slice: 8 contiguous elements (16 B) per thread."""
    return gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])


@gluon.jit
def _slice_cols(c, s, R: gl.constexpr, SL: gl.constexpr, num_warps: gl.constexpr):
    """Line columns of slice s of chunk c, as an [SL, LANE] tensor."""
    layout: gl.constexpr = _slice_layout(num_warps)
    r_idx = gl.arange(0, SL, layout=gl.SliceLayout(1, layout))
    l_idx = gl.arange(0, LANE, layout=gl.SliceLayout(0, layout))
    return c * (R * LANE) + s * (SL * LANE) + gl.expand_dims(r_idx, 1) * LANE \
        + gl.expand_dims(l_idx, 0)


@gluon.jit
def _load_slice(slices, line_ptr, c, s, N, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
                SL: gl.constexpr, num_warps: gl.constexpr):
    """Slice s of chunk c as f32 with -inf past the line's end; from shared memory (this
    program's chunk) or from global memory (another chunk, no-wait path): the same values."""
    cols = _slice_cols(c, s, R, SL, num_warps)
    if FROM_GLOBAL:
        x = gl.load(line_ptr + cols, mask=cols < N, other=float("-inf")).to(gl.float32)
    else:
        x = slices.index(s).load(_slice_layout(num_warps)).to(gl.float32)
    return gl.where(cols < N, x, float("-inf"))  # the copy leaves past-N elements unset


@gluon.jit
def _chunk_stats(slices, line_ptr, c, N, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
                 SL: gl.constexpr, num_warps: gl.constexpr):
    """Chunk c's (max, sum of exp(x - max)); 0 for the sum of an all -inf chunk."""
    layout: gl.constexpr = _slice_layout(num_warps)
    macc = gl.full([SL, LANE], float("-inf"), gl.float32, layout)
    for s in range(R // SL):  # a loop, not unrolled: slices are re-read, not held
        macc = gl.maximum(macc, _load_slice(slices, line_ptr, c, s, N, FROM_GLOBAL, R, SL,
                                            num_warps))
    m = gl.max(gl.max(macc, axis=1), axis=0)
    m_safe = gl.where(m == float("-inf"), 0.0, m) * LOG2E
    sacc = gl.zeros([SL, LANE], gl.float32, layout)
    for s in range(R // SL):
        x = _load_slice(slices, line_ptr, c, s, N, FROM_GLOBAL, R, SL, num_warps)
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
    unswizzled: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    slices = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [R // SL, SL, LANE], unswizzled)
    x_line = x_ptr + line.to(gl.int64) * stride_x
    for s in gl.static_range(R // SL):  # every copy issued before any wait
        cols = _slice_cols(c, s, R, SL, num_warps)
        async_copy.async_copy_global_to_shared(slices.index(s), x_line + cols, mask=cols < N)
    async_copy.commit_group()
    async_copy.wait_group(0)
    gl.thread_barrier()  # the copies of every thread have landed

    m, s = _chunk_stats(slices, x_line, c, N, False, R, SL, num_warps)
    gl.store(part_ptr + pid * 2, m)
    gl.store(part_ptr + pid * 2 + 1, s)
    gl.thread_barrier()  # every thread's partial store is issued before the arrival (release)
    count = count_ptr + line
    seen = gl.atomic_add(count, 1, sem="acq_rel") + 1
    polls = 0
    while (seen < NCH) & (polls < SPIN):
        seen = gl.atomic_add(count, 0, sem="acquire")
        polls += 1

    p_layout: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
    po = gl.arange(0, NCH_P2, layout=p_layout)
    in_line = po < NCH
    if seen >= NCH:
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
        cols = _slice_cols(c, sl, R, SL, num_warps)
        x = slices.index(sl).load(_slice_layout(num_warps)).to(gl.float32)
        if LOG:
            y = x - shift
        else:
            y = gl.exp2(x * LOG2E - big * LOG2E) * inv
        gl.store(y_line + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
