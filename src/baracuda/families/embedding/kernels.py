"""Embedding gather kernel (the backward reuses the segment family's deterministic
sort + segment-owned sum)."""

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
