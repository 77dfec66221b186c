"""Mask kernels: masked_fill, one_hot, and the deterministic stream compaction behind
nonzero / masked_select / masked_scatter.

Compaction runs in two passes over fixed blocks of the logical (row-major) element order:
per-block counts, an exclusive scan (the segment family's scan kernel), then each block writes
its elements at (block offset + rank inside the block). Integer counts only: the output order
is the row-major order and identical on every run. Logical index -> memory offset (and
coordinates, for nonzero) come from unravelling over up to 8 dims with per-dim strides.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import line_offset


@triton.jit
def masked_fill_kernel(x_ptr, m_ptr, out_ptr, n, value_bits,
                       S1, S2, S3,
                       xs0, xs1, xs2, xs3,
                       ms0, ms1, ms2, ms3,
                       os0, os1, os2, os3,
                       IS_FLOAT: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # the value travels as the int64 bits of a double (float) or as an int64: Triton passes
    # Python floats as fp32, which would round an f64 fill value
    bits = tl.full([BLOCK], value_bits, tl.int64)
    if IS_FLOAT:
        v = bits.to(tl.float64, bitcast=True)
    else:
        v = bits
    # int32 element indices unless an index or offset can pass 2**31 (WIDE): the unravel's
    # divisions are per element, and 64-bit ones are a slow subroutine
    if WIDE:
        e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    em = e < n
    x = tl.load(x_ptr + line_offset(e, S1, S2, S3, xs0, xs1, xs2, xs3), mask=em)
    m = tl.load(m_ptr + line_offset(e, S1, S2, S3, ms0, ms1, ms2, ms3), mask=em, other=0)
    if IS_FLOAT and x.dtype != tl.float64:
        fill = v.to(tl.float32).to(x.dtype)  # f64 -> bf16 directly is not reliable
    else:
        fill = v.to(x.dtype)
    y = tl.where(m != 0, fill, x)
    tl.store(out_ptr + line_offset(e, S1, S2, S3, os0, os1, os2, os3), y, mask=em)


@triton.jit
def one_hot_kernel(x_ptr, out_ptr, n, C, xs, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    cls = tl.program_id(1).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    rm = rows < n
    v = tl.load(x_ptr + rows * xs, mask=rm, other=-1).to(tl.int64)
    hot = (v[:, None] == cls[None, :]).to(tl.int64)
    tl.store(out_ptr + rows[:, None] * C + cls[None, :], hot,
             mask=rm[:, None] & (cls < C)[None, :])


@triton.jit
def _unravel(e, D1, D2, D3, D4, D5, D6, D7, s0, s1, s2, s3, s4, s5, s6, s7):
    """Row-major logical index -> element offset over 8 dims (leading extents of 1 pad)."""
    r = e
    c7 = r % D7
    r = r // D7
    c6 = r % D6
    r = r // D6
    c5 = r % D5
    r = r // D5
    c4 = r % D4
    r = r // D4
    c3 = r % D3
    r = r // D3
    c2 = r % D2
    r = r // D2
    c1 = r % D1
    c0 = r // D1
    off = c0 * s0 + c1 * s1 + c2 * s2 + c3 * s3 + c4 * s4 + c5 * s5 + c6 * s6 + c7 * s7
    return off, c0, c1, c2, c3, c4, c5, c6, c7


@triton.jit
def compact_count_kernel(m_ptr, counts_ptr, n, D1, D2, D3, D4, D5, D6, D7,
                         s0, s1, s2, s3, s4, s5, s6, s7, BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    off, _, _, _, _, _, _, _, _ = _unravel(e, D1, D2, D3, D4, D5, D6, D7,
                                           s0, s1, s2, s3, s4, s5, s6, s7)
    m = tl.load(m_ptr + off, mask=e < n, other=0) != 0
    tl.store(counts_ptr + tl.program_id(0), tl.sum(m.to(tl.int32), axis=0))


@triton.jit
def compact_write_kernel(m_ptr, x_ptr, src_ptr, out_ptr, count_ptr, offsets_ptr, n, n_blocks,
                         D1, D2, D3, D4, D5, D6, D7,
                         ms0, ms1, ms2, ms3, ms4, ms5, ms6, ms7,
                         xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7,
                         os0, os1, os2, os3, os4, os5, os6, os7,
                         src_stride, RANK: tl.constexpr, MODE: tl.constexpr,
                         BLOCK: tl.constexpr):
    """MODE 0 nonzero: out[k, :] = coordinates of the k-th true element (int64 [cap, RANK]).
    MODE 1 masked_select: out[k] = x[k-th true element].
    MODE 2 masked_scatter: out[e] = src[rank of e] where mask[e], else x[e] (out strided)."""
    b = tl.program_id(0)
    e = b.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    em = e < n
    m_off, c0, c1, c2, c3, c4, c5, c6, c7 = _unravel(e, D1, D2, D3, D4, D5, D6, D7,
                                                     ms0, ms1, ms2, ms3, ms4, ms5, ms6, ms7)
    m = (tl.load(m_ptr + m_off, mask=em, other=0) != 0) & em
    mi = m.to(tl.int32)
    base = tl.load(offsets_ptr + b).to(tl.int64)
    rank = base + tl.cumsum(mi, axis=0).to(tl.int64) - 1
    if MODE != 2:
        # the total: only the last block knows it (masked_scatter has no count output; its
        # count_ptr may alias the offsets other blocks are still reading)
        if b == n_blocks - 1:
            tl.store(count_ptr, base + tl.sum(mi, axis=0).to(tl.int64))
    if MODE == 0:
        # coordinates are the last RANK of the 8 padded dims
        for d in tl.static_range(RANK):
            k = 8 - RANK + d
            c = c0
            if k == 1:
                c = c1
            elif k == 2:
                c = c2
            elif k == 3:
                c = c3
            elif k == 4:
                c = c4
            elif k == 5:
                c = c5
            elif k == 6:
                c = c6
            elif k == 7:
                c = c7
            tl.store(out_ptr + rank * RANK + d, c, mask=m)
    else:
        x_off, _, _, _, _, _, _, _, _ = _unravel(e, D1, D2, D3, D4, D5, D6, D7,
                                                 xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7)
        if MODE == 1:
            v = tl.load(x_ptr + x_off, mask=m)
            tl.store(out_ptr + rank, v, mask=m)
        else:
            o_off, _, _, _, _, _, _, _, _ = _unravel(e, D1, D2, D3, D4, D5, D6, D7,
                                                     os0, os1, os2, os3, os4, os5, os6, os7)
            x = tl.load(x_ptr + x_off, mask=em)
            s = tl.load(src_ptr + tl.where(m, rank, 0) * src_stride, mask=m)
            tl.store(out_ptr + o_off, tl.where(m, s, x), mask=em)


@triton.jit
def scatter_keys_kernel(idx_ptr, keys_ptr, P, n, S, D1, D2, D3, D4, D5, D6, D7,
                        c0, c1, c2, c3, c4, c5, c6, c7, dim_stride, BLOCK: tl.constexpr):
    """keys[p] = flat (row-major) index in `out` of the element index[p] scatters into: the
    coordinates of p with the scatter dim replaced by index[p] (c* are out's row-major strides
    with the scatter dim's set to 0). Out-of-range indices get S, a dropped bucket."""
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    pm = p < P
    off, _, _, _, _, _, _, _, _ = _unravel(p, D1, D2, D3, D4, D5, D6, D7,
                                           c0, c1, c2, c3, c4, c5, c6, c7)
    i = tl.load(idx_ptr + p, mask=pm, other=0).to(tl.int64)
    key = tl.where((i >= 0) & (i < n), off + i * dim_stride, S)
    tl.store(keys_ptr + p, key.to(tl.int32), mask=pm)
