"""RopePlan / RopeBackwardPlan and KvCacheAppendPlan with their Triton candidates.

**Formula**: RoPE y[p1] = x[p1] cos θ - x[p2] sin θ, y[p2] = x[p2] cos θ + x[p1] sin θ for
each feature pair (p1, p2) among the first `rotary_dim` features (half-split: (i, i + R/2);
interleaved: (2i, 2i + 1)), θ = the tables at the row's position (position_ids[b, s], or s);
features past R are copied. Backward: the transpose, i.e. the same with sin negated.
KV-cache append: cache[b, h, start[b] + t] = new[b, h, t] for t < new_len, rows at or past
capacity skipped.

**Dtypes / shape**: x [B, d1, d2, D] (sequence on axis 1 or 2) in {f32, f16, bf16, f64},
tables [P, R/2] in any float kind, position_ids [B, S] int32/int64; any non-negative strides,
unit stride on the feature dim. Cache [B, Hkv, capacity, D], cache_seqlens [B] int32/int64.

**Workspace**: none.

**Precision**: halves compute in f32, f64 in f64; one program per row block writes each
element once: deterministic and bit-stable on the same hardware. KV-cache append is an exact
copy.
"""

from __future__ import annotations

from ...backends.triton_support import acc_type, next_pow2
from ...core.plan import Candidate
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import MathPrecision, PrecisionGuarantee
from .descriptors import (
    KvCacheAppendArgs,
    KvCacheAppendDescriptor,
    RopeArgs,
    RopeBackwardArgs,
    RopeBackwardDescriptor,
    RopeDescriptor,
    RopeLayout,
)
from .kernels_rope import kv_append_kernel, rope_kernel
from .plans import AttentionPlan


def rope_config(desc: RopeDescriptor) -> dict:
    bh = max(1, next_pow2(desc.rotary_dim // 2))
    rows = max(1, min(16, 512 // bh))
    return {"BLOCK_H": bh, "BLOCK_P": max(1, next_pow2(desc.x_shape[3] - desc.rotary_dim)),
            "ROWS": rows, "num_warps": 4}


@register_plan
class RopePlan(AttentionPlan):
    __doc__ = __doc__
    OP_NAME = "rope"
    descriptor_type = RopeDescriptor
    args_type = RopeArgs
    partner = "RopeBackwardPlan"


@register_plan
class RopeBackwardPlan(AttentionPlan):
    __doc__ = __doc__
    OP_NAME = "rope_backward"
    descriptor_type = RopeBackwardDescriptor
    args_type = RopeBackwardArgs
    partner = "RopePlan"
    is_backward = True


def launch_rope(d: RopeDescriptor, x, y, cos, sin, pos, sign: int) -> None:
    b, d1, d2, dh = d.x_shape
    n_rows = b * d1 * d2
    cfg = rope_config(d)
    rows = cfg["ROWS"]
    p_strides = pos.stride() if pos is not None else (0, 0)
    rope_kernel[(cdiv(n_rows, rows),)](
        x, y, cos, sin, pos if pos is not None else cos, n_rows, d1, d2, d.max_positions,
        x.stride(0), x.stride(1), x.stride(2), y.stride(0), y.stride(1), y.stride(2),
        cos.stride(0), sin.stride(0), *p_strides,
        R=d.rotary_dim, D=dh, SEQ_AXIS=d.seq_axis, INTERLEAVED=d.layout is RopeLayout.INTERLEAVED,
        HAS_POS=pos is not None, SIGN=sign, ACC=acc_type(d.element), **cfg)


class _RowGuarantee(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)


@register_candidate(RopePlan)
class TritonRope(_RowGuarantee):
    name = "triton_rope"

    def launch(self, desc, args, workspace) -> None:
        launch_rope(desc, args.x, args.y, args.cos, args.sin, args.position_ids, 1)


@register_candidate(RopeBackwardPlan)
class TritonRopeBackward(_RowGuarantee):
    name = "triton_rope_backward"

    def launch(self, desc, args, workspace) -> None:
        launch_rope(desc, args.dy, args.dx, args.cos, args.sin, args.position_ids, -1)


@register_plan
class KvCacheAppendPlan(AttentionPlan):
    __doc__ = __doc__
    OP_NAME = "kv_cache_append"
    descriptor_type = KvCacheAppendDescriptor
    args_type = KvCacheAppendArgs


@register_candidate(KvCacheAppendPlan)
class TritonKvCacheAppend(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_kv_cache_append"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee(MathPrecision.EXACT, desc.element)

    def launch(self, desc, args, workspace) -> None:
        d = desc
        n_rows = d.batch * d.num_kv_heads * d.new_len
        if n_rows == 0:
            return
        bdk, bdv = next_pow2(d.head_dim), next_pow2(d.value_dim)
        rows = max(1, min(64, 4096 // max(bdk, bdv)))
        st = [s for t in (args.k_new, args.v_new, args.k_cache, args.v_cache)
              for s in t.stride()[:3]]
        kv_append_kernel[(cdiv(n_rows, rows),)](
            args.k_new, args.v_new, args.cache_seqlens, args.k_cache, args.v_cache,
            n_rows, d.num_kv_heads, d.new_len, d.capacity, *st,
            DK=d.head_dim, DV=d.value_dim, BLOCK_DK=bdk, BLOCK_DV=bdv, ROWS=rows)

