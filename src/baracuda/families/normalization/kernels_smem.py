"""RMSNorm / LayerNorm forward of long 16-bit rows by chunk exchange, each chunk held in
shared memory (Gluon, cp.async; the shared pieces and why: backends/gluon_chunks.py). Not run
by the Triton interpreter: plans select it on sm_90 only.

Per program (one chunk of one row): copy the chunk to shared memory; reduce it to the sums of
(x - k) and (x - k)^2, k = the row's first element (layer_norm; 0 for rms_norm), so that the
variance does not cancel when |mean| >> std (the loop forward's shift, kernels.py); publish
them, count in and wait for the row's other chunks (gluon_chunks.exchange_pairs, or its
fenceless counted_slot_pairs); sum the row's partials in chunk order (the same bits in every
program of the row); write the chunk from shared memory, and (chunk 0) the row's mean and
rstd. A program that stops waiting after SPIN polls sums the missing partials
from global memory with the same code (`chunk_sums` with FROM_GLOBAL): the same bits.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from ...backends.gluon_chunks import (
    LANE,
    UNSWIZZLED,
    copy_chunk,
    copy_slice,
    counted_slot_pairs,
    empty_pairs,
    exchange_pairs,
    load_slice,
    partials_layout,
    published_pairs,
    slice_cols,
    slice_layout,
    wait_prior_grid,
)
from ...backends.line_reduce import clamped_variance


@gluon.jit
def chunk_sums(slices, row_ptr, c, M, k, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
                SL: gl.constexpr, num_warps: gl.constexpr, EVEN: gl.constexpr = False):
    """Chunk c's sums of d and d^2, d = x - k over the row's columns (0 past its end; EVEN:
    the chunk is whole, nothing to mask: the same values)."""
    layout: gl.constexpr = slice_layout(num_warps)
    s1 = gl.zeros([SL, LANE], gl.float32, layout)
    s2 = gl.zeros([SL, LANE], gl.float32, layout)
    for s in range(R // SL):  # a loop, not unrolled: slices are re-read, not held
        if EVEN and not FROM_GLOBAL:
            d = slices.index(s).load(layout).to(gl.float32) - k
        else:
            cols = slice_cols(c, s, R, SL, num_warps)
            x = load_slice(slices, row_ptr, c, s, M, 0.0, FROM_GLOBAL, R, SL, num_warps)
            d = gl.where(cols < M, x - k, 0.0)
        s1 += d
        s2 += d * d
    return gl.sum(gl.sum(s1, axis=1), axis=0), gl.sum(gl.sum(s2, axis=1), axis=0)


@gluon.jit
def pair_moments(p1, p2, k, M, eps, RMS: gl.constexpr):
    """(mean, rstd) of a row from its chunks' sums of d and d^2, d = x - k, in chunk order
    (mean 0 for rms_norm)."""
    m1 = gl.sum(p1, axis=0) / M
    if RMS:
        mean = 0.0
        var = gl.sum(p2, axis=0) / M
    else:
        mean = k + m1
        var = clamped_variance(gl.sum(p2, axis=0) / M - m1 * m1)
    return mean, 1.0 / gl.sqrt(var + eps)


@gluon.jit
def row_norm_fwd_smem_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, part_ptr, count_ptr,
    M, stride_x, stride_y, eps, SPIN,
    NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
    RMS: gl.constexpr, HAS_W: gl.constexpr, HAS_B: gl.constexpr, num_warps: gl.constexpr,
    EVEN: gl.constexpr = False, SLOTS: gl.constexpr = False,
):
    pid = gl.program_id(0)
    row = pid // NCH
    c = pid % NCH
    x_row = x_ptr + row.to(gl.int64) * stride_x
    if RMS:
        k = 0.0
    else:
        # one scalar per program (L2 after the first), issued with the chunk's copies rather
        # than after they land, so its latency hides behind theirs
        k = gl.load(x_row).to(gl.float32)
    slices = copy_chunk(x_row, c, M, R, SL, num_warps)

    t1, t2 = chunk_sums(slices, x_row, c, M, k, False, R, SL, num_warps, EVEN)
    if SLOTS:  # the fenceless protocol (plans_smem.COUNTED_SLOTS says which rows take it)
        p1, p2 = counted_slot_pairs(t1, t2, part_ptr, count_ptr, slices, x_row, row, M, k, SPIN,
                                    chunk_sums, 0.0, NCH, NCH_P2, R, SL, num_warps)
    else:
        p1, p2 = exchange_pairs(t1, t2, part_ptr, count_ptr, slices, x_row, row, M, k, SPIN,
                                chunk_sums, 0.0, NCH, NCH_P2, R, SL, num_warps)
    mean, rstd = pair_moments(p1, p2, k, M, eps, RMS)
    if c == 0:
        if not RMS:
            gl.store(mean_ptr + row, mean)
        gl.store(rstd_ptr + row, rstd)

    y_row = y_ptr + row.to(gl.int64) * stride_y
    # EVEN (the row is whole chunks): no masks on the sums, parameter loads and stores; the
    # same bits (plans_smem.fwd_even: 16-bit rows only, where it is faster)
    for s in range(R // SL):
        cols = slice_cols(c, s, R, SL, num_warps)
        if EVEN:
            live = None  # (lanes past the row's end exist only in a partial last chunk)
        else:
            live = cols < M
        x = slices.index(s).load(slice_layout(num_warps)).to(gl.float32)
        y = (x - mean) * rstd
        if HAS_W:  # masked lanes are never stored: no fill value needed
            y = y * gl.load(w_ptr + cols, mask=live).to(gl.float32)
        if HAS_B:
            y = y + gl.load(b_ptr + cols, mask=live).to(gl.float32)
        gl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=live)


@gluon.jit
def grad_terms(dy, x, w, mean, rstd, live, HAS_W: gl.constexpr):
    """(xhat, w dy) of a backward chunk, 0 past the row's end (mean = 0 for rms_norm:
    x - 0 is x, the same bits)."""
    xhat = gl.where(live, (x - mean) * rstd, 0.0)
    if HAS_W:
        wdy = gl.where(live, dy * w, 0.0)
    else:
        wdy = gl.where(live, dy, 0.0)
    return xhat, wdy


@gluon.jit
def pair_sums(xhat, wdy):
    """A chunk's partials sum(w dy xhat), sum(w dy): the one reduction of the chunk programs
    (from shared memory) and the no-wait path (from global memory), so both give the same
    bits."""
    return gl.sum(gl.sum(wdy * xhat, axis=1), axis=0), gl.sum(gl.sum(wdy, axis=1), axis=0)


@gluon.jit
def row_stats(mean_ptr, rstd_ptr, row, RMS: gl.constexpr):
    """(mean, rstd) saved by the forward; rms_norm has no mean (0)."""
    rstd = gl.load(rstd_ptr + row).to(gl.float32)
    if RMS:
        return 0.0, rstd
    return gl.load(mean_ptr + row).to(gl.float32), rstd


@gluon.jit
def row_norm_bwd_smem_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, part_ptr, slot_ptr,
    n_rows, M, G, group_rows, SPIN,
    NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr, NS: gl.constexpr,
    AHEAD: gl.constexpr, RMS: gl.constexpr, HAS_W: gl.constexpr, HAS_DB: gl.constexpr,
    num_warps: gl.constexpr,
):
    """Backward of long 16-bit rows, program id = group * NCH + chunk: a group's NCH
    programs walk its rows together, as kernels_exchange.row_norm_bwd_exchange_kernel does,
    but each row's chunks of dy and x land in a ring of NS shared-memory stages (cp.async,
    issued NS rows ahead) instead of registers, and the pairs are swapped through unset-marked
    slots, not counters (gluon_chunks.published_pairs: no fence or atomic per row). Step
    `row`: publish row `row` from its stage (sum(w dy xhat) and sum(w dy) into its slot,
    dgamma / dbeta partials in registers), then finish row `row - AHEAD` (its chunks have
    usually all published by now): take its chunk from the stage into registers, refill the
    stage with row `row - AHEAD + NS`, gather the row's pairs in chunk order and write dx.
    DRAM traffic: dy and x read once, dx written once, no L2 re-read."""
    gl.static_assert(NS > AHEAD)  # a stage is refilled only once its row is finished
    gl.static_assert(AHEAD >= 1)  # a row is finished only after its own arrival
    layout: gl.constexpr = slice_layout(num_warps)
    pid = gl.program_id(0)
    group = pid // NCH
    c = pid % NCH
    cols = slice_cols(c, 0, R, R, num_warps)
    live = cols < M
    dy_ring = gl.allocate_shared_memory(dy_ptr.dtype.element_ty, [NS, R, LANE], UNSWIZZLED)
    x_ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NS, R, LANE], UNSWIZZLED)
    r0 = group * group_rows
    if r0 >= n_rows:  # an empty group (more groups than rows in use): zero partials, no rows
        zero = gl.zeros([R, LANE], gl.float32, layout)
        store_param_partials(part_ptr, group, G, M, cols, live, zero, zero, HAS_W, HAS_DB)
        return
    r1 = gl.minimum(r0 + group_rows, n_rows)
    for k in gl.static_range(NS):  # one copy group per stage, empty past the group's rows
        if r0 + k < r1:
            off = (r0 + k).to(gl.int64) * M
            copy_slice(dy_ring.index(k), dy_ptr + off, c, 0, M, R, R, num_warps)
            copy_slice(x_ring.index(k), x_ptr + off, c, 0, M, R, R, num_warps)
        async_copy.commit_group()
    w = 1.0
    if HAS_W:
        w = gl.load(w_ptr + cols, mask=live, other=0.0).to(gl.float32)
    dg = gl.zeros([R, LANE], gl.float32, layout)
    db = gl.zeros([R, LANE], gl.float32, layout)
    wait_prior_grid()  # the slots are marked unset by the launch before this one
    for step in range(r0, r1 + AHEAD):
        done = step - AHEAD
        # the finished row's statistics, loaded first so their latency hides behind the
        # publish (a valid row even when nothing is finished yet)
        f_mean, f_rstd = row_stats(mean_ptr, rstd_ptr, gl.maximum(done, r0), RMS)
        if step < r1:  # publish row `step`
            # groups issued so far: NS + (step - r0 - AHEAD) refills; row `step` is the
            # (step - r0)-th, so at most NS - AHEAD - 1 may still be in flight
            async_copy.wait_group(NS - AHEAD - 1)
            gl.thread_barrier()
            stage = (step - r0) % NS  # the prologue put row r0 + k in stage k
            dy = gl.where(live, dy_ring.index(stage).load(layout).to(gl.float32), 0.0)
            x = x_ring.index(stage).load(layout).to(gl.float32)
            mean, rstd = row_stats(mean_ptr, rstd_ptr, step, RMS)
            xhat, wdy = grad_terms(dy, x, w, mean, rstd, live, HAS_W)
            a1, a2 = pair_sums(xhat, wdy)
            if HAS_W:
                dg += dy * xhat
            if HAS_DB:
                db += dy
            slot = slot_ptr + (step.to(gl.int64) * NCH + c) * 2
            gl.store(slot, a1)
            gl.store(slot + 1, a2)
        if done >= r0:  # finish row `done`
            # its chunk into registers first (as stored: 16-bit values, half the registers of
            # f32 terms), so its stage is refilled before the wait for the row's partials
            stage = (done - r0) % NS
            dy_held = dy_ring.index(stage).load(layout)
            x_held = x_ring.index(stage).load(layout)
            gl.thread_barrier()  # every thread read the stage before it is refilled
            if done + NS < r1:
                nxt = (done + NS).to(gl.int64) * M
                copy_slice(dy_ring.index(stage), dy_ptr + nxt, c, 0, M, R, R, num_warps)
                copy_slice(x_ring.index(stage), x_ptr + nxt, c, 0, M, R, R, num_warps)
            async_copy.commit_group()
            off = done.to(gl.int64) * M
            unset, p1, p2 = published_pairs(slot_ptr, done, NCH, NCH_P2, SPIN, num_warps)
            if unset > 0:  # a chunk did not publish: the row's pairs from global memory
                p1, p2 = empty_pairs(0.0, NCH_P2, num_warps)
                po = gl.arange(0, NCH_P2, layout=partials_layout(num_warps))
                for other in range(NCH):
                    oc = slice_cols(other, 0, R, R, num_warps)
                    o_live = oc < M
                    o_dy = gl.load(dy_ptr + off + oc, mask=o_live, other=0.0).to(gl.float32)
                    o_x = gl.load(x_ptr + off + oc, mask=o_live, other=0.0).to(gl.float32)
                    o_w = 1.0
                    if HAS_W:
                        o_w = gl.load(w_ptr + oc, mask=o_live, other=0.0).to(gl.float32)
                    o_xhat, o_wdy = grad_terms(o_dy, o_x, o_w, f_mean, f_rstd, o_live, HAS_W)
                    b1, b2 = pair_sums(o_xhat, o_wdy)
                    p1 = gl.where(po == other, b1, p1)
                    p2 = gl.where(po == other, b2, p2)
            c1 = gl.sum(p1, axis=0) / M
            xhat, wdy = grad_terms(dy_held.to(gl.float32), x_held.to(gl.float32), w, f_mean,
                                   f_rstd, live, HAS_W)
            if RMS:
                dx = (wdy - xhat * c1) * f_rstd
            else:
                dx = (wdy - xhat * c1 - gl.sum(p2, axis=0) / M) * f_rstd
            gl.store(dx_ptr + off + cols, dx.to(dx_ptr.dtype.element_ty), mask=live)
    store_param_partials(part_ptr, group, G, M, cols, live, dg, db, HAS_W, HAS_DB)


@gluon.jit
def store_param_partials(part_ptr, group, G, M, cols, live, dg, db, HAS_W: gl.constexpr,
                         HAS_DB: gl.constexpr):
    """A row group's dgamma partial, row `group` of [G, M], then dbeta's (its own [G, M], or
    alone without gamma): what the fixed-order sum of every group's row reads."""
    if HAS_W:
        gl.store(part_ptr + group.to(gl.int64) * M + cols, dg, mask=live)
    if HAS_DB:
        db_row = group.to(gl.int64)
        if HAS_W:
            db_row += G
        gl.store(part_ptr + db_row * M + cols, db, mask=live)
