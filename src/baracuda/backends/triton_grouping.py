"""Deterministic, allocation-free stable grouping of rows by an integer key, in workspace.

Keys are ids mapped into [0, S]: out-of-range ids, and ids equal to DROP (a caller's padding
id), become S, a bucket that sorts last and is dropped. Values are row numbers. The LSD radix
sort makes every pass a stable counting sort on a few bits: per-chunk digit histograms, one
exclusive scan, then each chunk places its rows at (scanned offset + stable rank inside the
chunk). Integer counts only, so every run places every row at the same position: the
permutation, and every float reduction over it, is bit-identical run to run.
`lower_bound_kernel` then turns sorted keys into group offsets.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _digits(keys_in, ids_ptr, chunk, N, S, ids_stride, SHIFT, DROP,
            FIRST: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    rows = chunk * C + tl.arange(0, C)
    m = rows < N
    if FIRST:
        raw = tl.load(ids_ptr + rows.to(tl.int64) * ids_stride, mask=m, other=0).to(tl.int64)
        key = tl.where((raw >= 0) & (raw < S) & (raw != DROP), raw, S).to(tl.int32)
    else:
        key = tl.load(keys_in + rows, mask=m, other=0)
    digit = (key >> SHIFT) & (R - 1)
    onehot = (digit[:, None] == tl.arange(0, R)[None, :]) & m[:, None]  # [C, R]
    return rows, m, key, digit, onehot


@triton.jit
def radix_hist_kernel(keys_in, ids_ptr, hist_ptr, N, S, ids_stride, SHIFT, DROP, n_chunks,
                      FIRST: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    chunk = tl.program_id(0)
    _, _, _, _, onehot = _digits(keys_in, ids_ptr, chunk, N, S, ids_stride, SHIFT, DROP,
                                 FIRST=FIRST, R=R, C=C)
    counts = tl.sum(onehot.to(tl.int32), axis=0)  # [R]
    # digit-major layout: one exclusive scan gives each (digit, chunk) its global offset
    tl.store(hist_ptr + tl.arange(0, R) * n_chunks + chunk, counts)


@triton.jit
def exclusive_scan_kernel(x_ptr, out_ptr, M, BLOCK: tl.constexpr, TOTAL: tl.constexpr = False,
                          CURSOR: tl.constexpr = False):
    """out[i] = x[0] + ... + x[i-1] for M int32 (one program; M is small); out may be x (in
    place). TOTAL: out[M] = the sum too. CURSOR: x becomes the same prefix (the per-bucket
    cursors of `bucket_place_kernel`)."""
    carry = tl.zeros([], tl.int32)
    for start in range(0, M + TOTAL, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < M, other=0)
        exc = tl.cumsum(v, axis=0) - v + carry
        tl.store(out_ptr + offs, exc, mask=offs < M + TOTAL)
        if CURSOR:
            tl.store(x_ptr + offs, exc, mask=offs < M)
        carry += tl.sum(v, axis=0)


@triton.jit
def radix_scatter_kernel(keys_in, vals_in, ids_ptr, keys_out, vals_out, hist_ptr, N, S,
                         ids_stride, SHIFT, DROP, n_chunks,
                         FIRST: tl.constexpr, R: tl.constexpr, C: tl.constexpr,
                         FUSED: tl.constexpr, NCH: tl.constexpr):
    """FUSED (few chunks: R x NCH counts fit one tile): each program scans the raw histogram
    itself instead of reading `exclusive_scan_kernel`'s result, one launch less per pass."""
    chunk = tl.program_id(0)
    rows, m, key, digit, onehot = _digits(keys_in, ids_ptr, chunk, N, S, ids_stride, SHIFT,
                                          DROP, FIRST=FIRST, R=R, C=C)
    if FIRST:
        val = rows
    else:
        val = tl.load(vals_in + rows, mask=m, other=0)
    cum = tl.cumsum(onehot.to(tl.int32), axis=0)  # [C, R] inclusive per digit
    rank = tl.sum(tl.where(onehot, cum, 0), axis=1) - 1  # stable rank inside the chunk
    if FUSED:
        dg = tl.arange(0, R)
        ch = tl.arange(0, NCH)
        h = tl.load(hist_ptr + dg[:, None] * n_chunks + ch[None, :],
                    mask=(ch < n_chunks)[None, :], other=0)  # [R, NCH]
        tot = tl.sum(h, axis=1)
        # digit-major order: all smaller digits, then this digit in earlier chunks
        bvec = tl.cumsum(tot, axis=0) - tot + tl.sum(tl.where(ch[None, :] < chunk, h, 0), axis=1)
        base = tl.sum(tl.where(onehot, bvec[None, :], 0), axis=1)
    else:
        base = tl.load(hist_ptr + digit * n_chunks + chunk, mask=m, other=0)
    pos = base + rank
    tl.store(keys_out + pos, key, mask=m)
    tl.store(vals_out + pos, val, mask=m)


@triton.jit
def lower_bound_kernel(keys_ptr, N, key_stride, out_ptr, n_out, STEPS,
                       BLOCK: tl.constexpr):
    """out[s] = first position p with keys[p] >= s, for s in [0, n_out) (keys ascending)."""
    s = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    lo = tl.zeros([BLOCK], tl.int64)
    hi = tl.zeros([BLOCK], tl.int64) + N
    for _ in range(STEPS):
        active = lo < hi
        mid = (lo + hi) // 2
        v = tl.load(keys_ptr + mid * key_stride, mask=active, other=0).to(tl.int64)
        right = active & (v < s)
        lo = tl.where(right, mid + 1, lo)
        hi = tl.where(active & ~right, mid, hi)
    tl.store(out_ptr + s, lo.to(tl.int32), mask=s < n_out)


@triton.jit
def histogram_kernel(ids_ptr, N, S, ids_stride, counts_ptr, BLOCK: tl.constexpr):
    """counts[s] += #{i : ids[i] == s}; integer atomics, so the counts are exact."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    raw = tl.load(ids_ptr + rows * ids_stride, mask=rows < N, other=-1).to(tl.int64)
    ok = (rows < N) & (raw >= 0) & (raw < S)
    tl.atomic_add(counts_ptr + tl.where(ok, raw, 0), tl.full([BLOCK], 1, tl.int32), mask=ok,
                  sem="relaxed")


@triton.jit
def bucket_place_kernel(ids_ptr, cur_ptr, perm_ptr, N, S, ids_stride, BLOCK: tl.constexpr):
    """perm[cursor[id]++] = row: groups rows by id, in no fixed order inside a group (only for
    reductions whose result does not depend on that order: max / min with row tie-breaks)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    raw = tl.load(ids_ptr + rows * ids_stride, mask=rows < N, other=-1).to(tl.int64)
    ok = (rows < N) & (raw >= 0) & (raw < S)
    pos = tl.atomic_add(cur_ptr + tl.where(ok, raw, 0), tl.full([BLOCK], 1, tl.int32), mask=ok,
                        sem="relaxed")
    tl.store(perm_ptr + pos, rows.to(tl.int32), mask=ok)


# -- one-pass stable counting sort (keys in [0, K), K = num_segments + 1 small enough) --------
# Three launches instead of the radix sort's 2-3 per 4-bit digit. Rows are cut into chunks of
# C; step 1 sorts each chunk locally (key, row) and counts its keys; step 2 scans the counts
# key-major (all chunks of key 0, then of key 1, ...); step 3 places every row at
# (start of its key) + (rows of its key in earlier chunks) + (its rank inside the chunk). Only
# integer counts and a row-number tie-break: the permutation is the stable one, whatever the
# scheduling. Padding rows of the last chunk get key K: they sort last and are never placed.


@triton.jit
def _max_i32(a, b):
    return tl.maximum(a, b)


@triton.jit
def _chunk_runs(srt, sorted_row_ptr, local, C: tl.constexpr, LOGC: tl.constexpr):
    """(key, run start, is run end) of a sorted chunk; the neighbours come back from the
    chunk's own sorted copy in global memory (written and fenced by the caller)."""
    key = srt >> LOGC
    prv = tl.load(sorted_row_ptr + local - 1, mask=local > 0, other=0)
    nxt = tl.load(sorted_row_ptr + local + 1, mask=local < C - 1, other=0)
    first = (local == 0) | ((prv >> LOGC) != key)
    last = (local == C - 1) | ((nxt >> LOGC) != key)
    start = tl.associative_scan(tl.where(first, local, 0), 0, _max_i32)
    return key, start, last


@triton.jit
def count_sort_chunk_kernel(ids_ptr, sorted_ptr, hist_ptr, N, S, K, ids_stride, DROP,
                            C: tl.constexpr, LOGC: tl.constexpr, ZB: tl.constexpr):
    """Step 1, program = chunk: sorted_ptr[chunk] = its (key << LOGC | local row), ascending;
    hist_ptr[chunk, k] = rows of key k in the chunk (row of K counts, zeros included)."""
    chunk = tl.program_id(0).to(tl.int64)
    local = tl.arange(0, C)
    rows = chunk * C + local
    m = rows < N
    raw = tl.load(ids_ptr + rows * ids_stride, mask=m, other=0).to(tl.int64)
    key = tl.where((raw >= 0) & (raw < S) & (raw != DROP), raw, S)
    key = tl.where(m, key, K)
    srt = tl.sort(((key << LOGC) + local).to(tl.int32))
    row_ptr = sorted_ptr + chunk * C
    tl.store(row_ptr + local, srt)
    h_ptr = hist_ptr + chunk * K
    for k0 in range(0, K, ZB):
        z = k0 + tl.arange(0, ZB)
        tl.store(h_ptr + z, tl.zeros([ZB], tl.int32), mask=z < K)
    # the zeros and the sorted copy are read / overwritten below by other threads
    tl.debug_barrier()
    key, start, last = _chunk_runs(srt, row_ptr, local, C=C, LOGC=LOGC)
    # one store per key present (at its run's end): no two threads write one count
    tl.store(h_ptr + key, local - start + 1, mask=last & (key < K))


@triton.jit
def count_scan_kernel(hist_ptr, part_ptr, btot_ptr, P, K, PP: tl.constexpr, KB: tl.constexpr):
    """Step 2, program = block of KB keys: hist[c, k] becomes the rows of key k in chunks
    before c; part[k] = rows of keys before k inside the block; btot[block] = the block's
    rows (step 3 adds the blocks before)."""
    blk = tl.program_id(0)
    ch = tl.arange(0, PP)
    ks = blk * KB + tl.arange(0, KB)
    m = (ch < P)[:, None] & (ks < K)[None, :]
    ptrs = hist_ptr + ch.to(tl.int64)[:, None] * K + ks[None, :]
    h = tl.load(ptrs, mask=m, other=0)
    tl.store(ptrs, tl.cumsum(h, axis=0) - h, mask=m)
    tot = tl.sum(h, axis=0)
    tl.store(part_ptr + ks, tl.cumsum(tot, axis=0) - tot, mask=ks < K)
    tl.store(btot_ptr + blk, tl.sum(tot, axis=0))


@triton.jit
def count_place_kernel(sorted_ptr, hist_ptr, part_ptr, btot_ptr, perm_ptr, off_ptr, N, K, NB,
                       SLICE, C: tl.constexpr, LOGC: tl.constexpr, KB: tl.constexpr,
                       NBP: tl.constexpr, OB: tl.constexpr):
    """Step 3, program = chunk: perm[position] = row for the chunk's rows; off[k] (k in
    [0, K]) for this program's slice of keys: the segment offsets of the reduction."""
    chunk = tl.program_id(0).to(tl.int64)
    local = tl.arange(0, C)
    row_ptr = sorted_ptr + chunk * C
    srt = tl.load(row_ptr + local)
    key, start, _ = _chunk_runs(srt, row_ptr, local, C=C, LOGC=LOGC)
    b = tl.arange(0, NBP)
    bt = tl.load(btot_ptr + b, mask=b < NB, other=0)
    bpre = tl.cumsum(bt, axis=0) - bt  # rows in key blocks before each block
    ok = key < K
    kk = tl.where(ok, key, 0)
    base = tl.gather(bpre, kk // KB, 0) + tl.load(part_ptr + kk, mask=ok, other=0)
    base += tl.load(hist_ptr + chunk * K + kk, mask=ok, other=0)
    row = chunk * C + (srt & (C - 1))
    tl.store(perm_ptr + base + (local - start), row.to(tl.int32), mask=ok)
    for k0 in range(chunk * SLICE, tl.minimum(chunk * SLICE + SLICE, K + 1), OB):
        k = k0 + tl.arange(0, OB)
        km = k < tl.minimum(chunk * SLICE + SLICE, K + 1)
        inner = k < K
        kc = tl.where(inner, k, 0)
        v = tl.gather(bpre, (kc // KB).to(tl.int32), 0) + tl.load(part_ptr + kc, mask=km & inner,
                                                                  other=0)
        tl.store(off_ptr + k, tl.where(inner, v, N), mask=km)
