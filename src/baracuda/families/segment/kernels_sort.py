"""Deterministic, allocation-free stable sort of segment ids (LSD radix sort in workspace).

Keys are ids mapped into [0, num_segments]: out-of-range ids, and ids equal to DROP (an
embedding's padding_idx), become num_segments, a bucket that sorts last and is dropped. Values
are row numbers. Every pass is a stable counting sort on DIGIT_BITS bits: per-chunk digit
histograms, one exclusive scan, then each chunk places its rows at (scanned offset + stable
rank inside the chunk). Integer counts only, so every run places every row at the same
position: the permutation, and every float reduction over it, is bit-identical run to run.
`lower_bound_kernel` then turns sorted keys into segment offsets.
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
def exclusive_scan_kernel(x_ptr, M, BLOCK: tl.constexpr):
    """In-place exclusive prefix sum of M int32 (one program; M is small)."""
    carry = tl.zeros([], tl.int32)
    for start in range(0, M, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < M
        v = tl.load(x_ptr + offs, mask=m, other=0)
        inc = tl.cumsum(v, axis=0)
        tl.store(x_ptr + offs, inc - v + carry, mask=m)
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
def bucket_scan_kernel(counts_ptr, off_ptr, S, BLOCK: tl.constexpr):
    """off[s] = exclusive prefix of counts (s in [0, S]); counts becomes the same prefix, the
    per-bucket cursor of `bucket_place_kernel` (one program; S is a segment count)."""
    carry = tl.zeros([], tl.int32)
    for start in range(0, S + 1, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(counts_ptr + offs, mask=offs < S, other=0)
        exc = tl.cumsum(v, axis=0) - v + carry
        tl.store(off_ptr + offs, exc, mask=offs <= S)
        tl.store(counts_ptr + offs, exc, mask=offs < S)
        carry += tl.sum(v, axis=0)


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
