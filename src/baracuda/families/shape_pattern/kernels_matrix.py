"""The matrix-pattern kernel: y[b, i, j] = keep(i, j) ? x[b, src(i, j)] : 0 over [BLOCK_M,
BLOCK_N] tiles of a batched [M, N] output, one pass writing values and zeros.

The pattern (a constexpr) decides which (i, j) keep their source and where the source is;
the host hands the source as a base offset and (m, n) strides, so one kernel covers
triangles (the source is the same element), diagonal embeddings (a stride-0 role: the
diagonal's element k reads x[b, i] or x[b, j]), diagonal copies (N = 1, the m stride steps
along the diagonal) and the bands of a block-diagonal matrix (columns [k, k2) of a row band
read their block shifted by k).
"""

from __future__ import annotations

import triton
import triton.language as tl

LOWER: tl.constexpr = tl.constexpr(0)
UPPER: tl.constexpr = tl.constexpr(1)
DIAG: tl.constexpr = tl.constexpr(2)
BAND: tl.constexpr = tl.constexpr(3)
ALL: tl.constexpr = tl.constexpr(4)


@triton.jit
def matrix_kernel(x_ptr, y_ptr, x_shift, M, N, k, k2, B2, B3, tiles_m, tiles_n,
                  xb1, xb2, xb3, xm, xn, yb1, yb2, yb3, ym, yn,
                  PATTERN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """keep: j - i <= k (LOWER), j - i >= k (UPPER), j - i == k (DIAG), k <= j < k2 (BAND,
    reading column j - k), everything (ALL). Batch dims b1, b2, b3 (extents of the unused
    ones 1)."""
    pid = tl.program_id(0)
    tn = pid % tiles_n
    rest = pid // tiles_n
    tm = rest % tiles_m
    b = rest // tiles_m  # int32: the host keeps the tile count below 2**31
    b3 = b % B3
    b = b // B3
    b2 = b % B2
    b1 = b // B2
    i = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    j = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    store = (i < M)[:, None] & (j < N)[None, :]
    # [BLOCK_M, BLOCK_N]
    d = j[None, :] - i[:, None]
    if PATTERN == LOWER:
        keep = d <= k
    elif PATTERN == UPPER:
        keep = d >= k
    elif PATTERN == DIAG:
        keep = d == k
    elif PATTERN == BAND:
        keep = (j >= k)[None, :] & (j < k2)[None, :] & (i >= 0)[:, None]
    else:
        keep = store
    col = j - k if PATTERN == BAND else j
    xbase = x_shift + b1.to(tl.int64) * xb1 + b2.to(tl.int64) * xb2 + b3.to(tl.int64) * xb3
    src = xbase + (i.to(tl.int64) * xm)[:, None] + (col.to(tl.int64) * xn)[None, :]
    v = tl.load(x_ptr + src, mask=store & keep, other=0)
    v = tl.where(keep, v, 0).to(y_ptr.dtype.element_ty)
    ybase = b1.to(tl.int64) * yb1 + b2.to(tl.int64) * yb2 + b3.to(tl.int64) * yb3
    dst = ybase + (i.to(tl.int64) * ym)[:, None] + (j.to(tl.int64) * yn)[None, :]
    tl.store(y_ptr + dst, v, mask=store)
