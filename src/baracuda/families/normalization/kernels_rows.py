"""RMSNorm / LayerNorm forward of 16-bit rows that fit in one SM's shared memory, a whole row
per program, no exchange (Gluon, cp.async; sm_90 only, not run by the Triton interpreter).

Why: the chunk-exchange forward (kernels_smem.py) pays for its exchange. On the H100 at bf16
[1024, 65536], kernel only, the same kernel without its exchange ran 2856-2872 GB/s against
2688-2697 with it; its release-ordered arrival alone cost 3% (PERF_NOTES.md, session 19). A
row of up to ~100K 16-bit elements fits in shared memory (227 KB), so one persistent program
per SM can hold its row whole and reduce it alone.

Per program (rows pid, pid + G, ...): the program's rows stream through a ring of S chunk
slots, R x LANE elements each, as one sequence of cp.async copies, one commit group per chunk,
issued S chunks ahead of their use. For each row: wait for its NCH chunks in order (NCH <= S,
so they are all resident) and sum them (rms_norm: x^2; layer_norm: x, then (x - mean)^2 from
shared memory, the exact two-pass variance); then write the row chunk by chunk, refilling each
slot with the chunk S ahead as soon as it is written. The loads of the next rows stay in
flight while a row is reduced and written, so HBM never waits for the program.

Every thread copies and reads back the same 16-byte pieces of a slot (one register layout for
both), so no barrier guards a slot's refill. The chunk sums run in a fixed order: bit-stable.
gamma / beta (L2 reads, the same for every row) are loaded two chunks ahead of their use,
carried across rows.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from ...backends.gluon_chunks import LANE, UNSWIZZLED, copy_slice, slice_cols, slice_layout


@gluon.jit
def _issue(ring, x_ptr, first_row, G, n_mine, g, M, NCH: gl.constexpr, S: gl.constexpr,
           R: gl.constexpr, num_warps: gl.constexpr):
    """Copy chunk g of this program's stream into its slot (nothing past the program's last
    row) and commit it as one group, so that group counts stay static."""
    i = g // NCH
    row = gl.minimum(first_row + i * G, first_row + (n_mine - 1) * G)  # an address in bounds
    live_m = gl.where(i < n_mine, M, 0)  # past the last row: every lane masked off
    copy_slice(ring.index(g % S), x_ptr + row.to(gl.int64) * M, g % NCH, 0, live_m, R, R,
               num_warps)
    async_copy.commit_group()


@gluon.jit
def _params(w_ptr, b_ptr, c, M, R: gl.constexpr, EVEN: gl.constexpr, HAS_W: gl.constexpr,
            HAS_B: gl.constexpr, num_warps: gl.constexpr):
    """gamma and beta of chunk c, as stored (zeros stand in for an absent one)."""
    cols = slice_cols(c, 0, R, R, num_warps)
    live = None if EVEN else cols < M
    if HAS_W:
        w = gl.load(w_ptr + cols, mask=live)
    else:
        w = gl.zeros([R, LANE], gl.float32, slice_layout(num_warps))
    if HAS_B:
        b = gl.load(b_ptr + cols, mask=live)
    else:
        b = gl.zeros([R, LANE], gl.float32, slice_layout(num_warps))
    return w, b


@gluon.jit
def _chunk(ring, g, c, M, shift, S: gl.constexpr, R: gl.constexpr, EVEN: gl.constexpr,
           num_warps: gl.constexpr):
    """Chunk c of the row (stream chunk g) from its slot as f32, minus `shift`, 0 past the
    row's end."""
    x = ring.index(g % S).load(slice_layout(num_warps)).to(gl.float32) - shift
    if EVEN:
        return x
    return gl.where(slice_cols(c, 0, R, R, num_warps) < M, x, 0.0)


@gluon.jit
def row_norm_fwd_rows_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_rows, M, eps,
    NCH: gl.constexpr, S: gl.constexpr, R: gl.constexpr, RMS: gl.constexpr,
    HAS_W: gl.constexpr, HAS_B: gl.constexpr, EVEN: gl.constexpr, num_warps: gl.constexpr,
):
    gl.static_assert(S >= NCH)  # a row's chunks are all resident before it is written
    layout: gl.constexpr = slice_layout(num_warps)
    pid = gl.program_id(0)
    G = gl.num_programs(0)
    n_mine = (n_rows - pid + G - 1) // G
    ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [S, R, LANE], UNSWIZZLED)
    for g in gl.static_range(S):
        _issue(ring, x_ptr, pid, G, n_mine, g, M, NCH, S, R, num_warps)
    w0, b0 = _params(w_ptr, b_ptr, 0, M, R, EVEN, HAS_W, HAS_B, num_warps)
    w1, b1 = _params(w_ptr, b_ptr, 1 % NCH, M, R, EVEN, HAS_W, HAS_B, num_warps)
    for i in range(n_mine):
        row = pid + i * G
        base = i * NCH  # stream index of the row's chunk 0
        # S + base groups are committed here; chunk c is group base + c + 1
        acc = gl.zeros([R, LANE], gl.float32, layout)
        for c in gl.static_range(NCH):
            async_copy.wait_group(S - 1 - c)
            x = _chunk(ring, base + c, c, M, 0.0, S, R, EVEN, num_warps)
            if RMS:
                acc += x * x
            else:
                acc += x
        total = gl.sum(gl.sum(acc, axis=1), axis=0)
        if RMS:
            mean = 0.0
            rstd = 1.0 / gl.sqrt(total / M + eps)
        else:
            mean = total / M
            acc = gl.zeros([R, LANE], gl.float32, layout)
            for c in gl.static_range(NCH):
                d = _chunk(ring, base + c, c, M, mean, S, R, EVEN, num_warps)
                acc += d * d
            rstd = 1.0 / gl.sqrt(gl.sum(gl.sum(acc, axis=1), axis=0) / M + eps)
            gl.store(mean_ptr + row, mean)
        gl.store(rstd_ptr + row, rstd)

        y_row = y_ptr + row.to(gl.int64) * M
        for c in gl.static_range(NCH):
            # gamma / beta two chunks ahead (wrapping to the next row's first chunks)
            w2, b2 = _params(w_ptr, b_ptr, (c + 2) % NCH, M, R, EVEN, HAS_W, HAS_B, num_warps)
            cols = slice_cols(c, 0, R, R, num_warps)
            x = ring.index((base + c) % S).load(layout).to(gl.float32)
            y = (x - mean) * rstd
            if HAS_W:
                y = y * w0.to(gl.float32)
            if HAS_B:
                y = y + b0.to(gl.float32)
            gl.store(y_row + cols, y.to(y_ptr.dtype.element_ty),
                     mask=None if EVEN else cols < M)
            _issue(ring, x_ptr, pid, G, n_mine, base + c + S, M, NCH, S, R, num_warps)
            w0, b0, w1, b1 = w1, b1, w2, b2
