"""Table gather kernels (combinations): the forward gather and its gradient, a gather-form
ordered sum over the inverse table (no atomics: deterministic)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def table_gather_kernel(x_ptr, idx_ptr, y_ptr, M, xs, BLOCK: tl.constexpr):
    """y[i] = x[idx[i] * xs] for i < M; int64 offsets (a table may pass 2**31 entries)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < M
    j = tl.load(idx_ptr + offs, mask=ok, other=0)
    tl.store(y_ptr + offs, tl.load(x_ptr + j * xs, mask=ok), mask=ok)


@triton.jit
def table_gather_sum_kernel(dy_ptr, ptr_ptr, pos_ptr, dx_ptr, N, COLS, DEG, dys0, dys1, dxs,
                            BLOCK: tl.constexpr, ACC: tl.constexpr):
    """dx[j] = sum over k in [ptr[j], ptr[j + 1]) of dy[pos[k] // COLS, pos[k] % COLS], k
    ascending (each lane runs to DEG, the largest count, masked past its own)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < N
    lo = tl.load(ptr_ptr + offs, mask=ok, other=0)
    hi = tl.load(ptr_ptr + offs + 1, mask=ok, other=0)
    acc = tl.zeros([BLOCK], dtype=ACC)
    for k in range(0, DEG):
        t = lo + k
        m = t < hi
        p = tl.load(pos_ptr + t, mask=m, other=0)
        v = tl.load(dy_ptr + (p // COLS) * dys0 + (p % COLS) * dys1, mask=m, other=0.0)
        acc += v.to(ACC)
    tl.store(dx_ptr + offs * dxs, acc.to(dx_ptr.dtype.element_ty), mask=ok)
