"""Embedding kernels of their own: max_norm renormalization and the bag reduction (the lookup
is `backends.triton_rows.row_gather_kernel`, the gradient `backends.rows.run_reduce`)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def embedding_renorm_kernel(w_ptr, cnt_ptr, V, Dm, wr, wc, max_norm, norm_type,
                            P: tl.constexpr, ACC: tl.constexpr, BLOCK_D: tl.constexpr):
    """Rows named by the indices (count > 0) whose p-norm exceeds max_norm are scaled by
    max_norm / (norm + 1e-7) in place, as torch.embedding_renorm_. P: 1, 2, 0 (inf) or -1
    (any other p: the norm is computed in f32 even for f64 weights)."""
    row = tl.program_id(0).to(tl.int64)
    if tl.load(cnt_ptr + row) > 0:
        cols = tl.arange(0, BLOCK_D)
        acc = tl.zeros([BLOCK_D], ACC)
        for c0 in range(0, Dm, BLOCK_D):
            c = c0 + cols
            w = tl.abs(tl.load(w_ptr + row * wr + c * wc, mask=c < Dm, other=0.0).to(ACC))
            if P == 1:
                acc += w
            elif P == 2:
                acc += w * w
            elif P == 0:
                acc = tl.maximum(acc, w)
            else:  # any other p: |w|^p through exp2 / log2 in f32 (f64 exp/log are not
                # reliable on the GPU), accumulated in ACC
                wf = w.to(tl.float32)
                acc += tl.where(wf > 0, tl.exp2(norm_type * tl.log2(wf)), 0.0).to(ACC)
        if P == 1:
            norm = tl.sum(acc, axis=0)
        elif P == 2:
            norm = tl.sqrt(tl.sum(acc, axis=0))
        elif P == 0:
            norm = tl.max(acc, axis=0)
        else:
            total = tl.sum(acc, axis=0).to(tl.float32)
            norm = tl.where(total > 0, tl.exp2(tl.log2(total) / norm_type), 0.0).to(ACC)
        if norm > max_norm:
            scale = max_norm / (norm + 1e-7)
            for c0 in range(0, Dm, BLOCK_D):
                c = c0 + cols
                ptrs = w_ptr + row * wr + c * wc
                w = tl.load(ptrs, mask=c < Dm, other=0.0)
                tl.store(ptrs, (w.to(ACC) * scale).to(w_ptr.dtype.element_ty),
                         mask=c < Dm)


@triton.jit
def embedding_bag_kernel(w_ptr, idx_ptr, b_ptr, psw_ptr, out_ptr, mt_ptr, V, Dm, wr, wc, outr,
                         mtr, PAD, MODE: tl.constexpr, HAS_W: tl.constexpr,
                         STORE_MT: tl.constexpr, ACC: tl.constexpr, BLOCK_T: tl.constexpr,
                         BLOCK_D: tl.constexpr):
    bag = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    cm = cols < Dm
    start = tl.load(b_ptr + bag).to(tl.int64)
    end = tl.load(b_ptr + bag + 1).to(tl.int64)
    ar = tl.arange(0, BLOCK_T)
    if MODE == 2:
        acc2 = tl.full([BLOCK_T, BLOCK_D], -float("inf"), ACC)
    else:
        acc2 = tl.zeros([BLOCK_T, BLOCK_D], ACC)
    pos2 = tl.full([BLOCK_T, BLOCK_D], -1, tl.int64)
    cnt = tl.zeros([BLOCK_T], tl.int32)
    for k in range(start, end, BLOCK_T):
        t = k + ar
        i = tl.load(idx_ptr + t, mask=t < end, other=-1).to(tl.int64)
        ok = (t < end) & (i != PAD) & (i >= 0) & (i < V)
        m2 = ok[:, None] & cm[None, :]
        w = tl.load(w_ptr + tl.where(ok, i, 0)[:, None] * wr + cols[None, :] * wc, mask=m2,
                    other=0.0).to(ACC)
        if HAS_W:
            w = w * tl.load(psw_ptr + t, mask=ok, other=0.0).to(ACC)[:, None]
        cnt += ok.to(tl.int32)
        if MODE == 2:
            take = m2 & ((w > acc2) | ((w != w) & (acc2 == acc2)) | (pos2 < 0))
            acc2 = tl.where(take, w, acc2)
            pos2 = tl.where(take, t[:, None], pos2)
        else:
            acc2 += w
    if MODE == 2:
        hit2 = pos2 >= 0
        nan2 = acc2 != acc2
        any_nan = tl.max(nan2.to(tl.int32), axis=0) > 0
        vmax = tl.max(tl.where(hit2 & ~nan2, acc2, -float("inf")), axis=0)
        cand = hit2 & tl.where(any_nan[None, :], nan2, (acc2 == vmax[None, :]) & ~nan2)
        first = tl.min(tl.where(cand, pos2, 2**62), axis=0)
        found = first < 2**62
        res = tl.where(found, tl.where(any_nan, float("nan"), vmax), 0.0)  # empty bag: 0
        if STORE_MT:
            tl.store(mt_ptr + bag * mtr + cols, tl.where(found, first, -1), mask=cm)
    else:
        res = tl.sum(acc2, axis=0)
        if MODE == 1:
            res = res / tl.maximum(tl.sum(cnt, axis=0), 1).to(ACC)
    tl.store(out_ptr + bag * outr + cols, res.to(out_ptr.dtype.element_ty), mask=cm)
