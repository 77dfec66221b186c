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

import triton.language as tl

from ...backends.triton_support import next_pow2
from ...core import validate as V
from ...core.errors import InvalidProblem
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import INDEX_KINDS, ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
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


def rope_config(desc: RopeDescriptor) -> dict:
    bh = max(1, next_pow2(desc.rotary_dim // 2))
    rows = max(1, min(16, 512 // bh))
    return {"BLOCK_H": bh, "BLOCK_P": max(1, next_pow2(desc.x_shape[3] - desc.rotary_dim)),
            "ROWS": rows, "num_warps": 4}


def _check_rope(who, d: RopeDescriptor, args, x_name: str, y_name: str) -> None:
    for name in (x_name, y_name):
        t = V.check_tensor(who, name, getattr(args, name), d.x_shape, d.element)
        V.check_nonnegative_strides(who, name, t)
        V.check_unit_stride(who, name, t, 3)
    for name in ("cos", "sin"):
        t = V.check_tensor(who, name, getattr(args, name), d.table_shape, d.table_element)
        V.check_nonnegative_strides(who, name, t)
        V.check_unit_stride(who, name, t, 1)
    pos = args.position_ids
    if d.has_position_ids:
        V.check_tensor(who, "position_ids", pos, (d.x_shape[0], d.seq_len), INDEX_KINDS)
        V.check_nonnegative_strides(who, "position_ids", pos)
    elif pos is not None:
        raise InvalidProblem(f"{who}: position_ids given but has_position_ids is False")


@register_plan
class RopePlan(Plan):
    __doc__ = __doc__
    category = OpCategory.ATTENTION
    descriptor_type = RopeDescriptor
    args_type = RopeArgs
    partner = "RopeBackwardPlan"

    @classmethod
    def op_name(cls, desc) -> str:
        return "rope"

    def check_args(self, args: RopeArgs) -> None:
        _check_rope(type(self).__name__, self.desc, args, "x", "y")


@register_plan
class RopeBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.ATTENTION
    descriptor_type = RopeBackwardDescriptor
    args_type = RopeBackwardArgs
    partner = "RopePlan"
    is_backward = True

    @classmethod
    def op_name(cls, desc) -> str:
        return "rope_backward"

    def check_args(self, args: RopeBackwardArgs) -> None:
        _check_rope(type(self).__name__, self.desc, args, "dy", "dx")


def launch_rope(d: RopeDescriptor, x, y, cos, sin, pos, sign: int) -> None:
    b, d1, d2, dh = d.x_shape
    n_rows = b * d1 * d2
    cfg = rope_config(d)
    rows = cfg["ROWS"]
    acc = tl.float64 if d.element is ElementKind.F64 else tl.float32
    p_strides = pos.stride() if pos is not None else (0, 0)
    rope_kernel[((n_rows + rows - 1) // rows,)](
        x, y, cos, sin, pos if pos is not None else cos, n_rows, d1, d2, d.max_positions,
        x.stride(0), x.stride(1), x.stride(2), y.stride(0), y.stride(1), y.stride(2),
        cos.stride(0), sin.stride(0), *p_strides,
        R=d.rotary_dim, D=dh, SEQ_AXIS=d.seq_axis, INTERLEAVED=d.layout is RopeLayout.INTERLEAVED,
        HAS_POS=pos is not None, SIGN=sign, ACC=acc, **cfg)


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
class KvCacheAppendPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.ATTENTION
    descriptor_type = KvCacheAppendDescriptor
    args_type = KvCacheAppendArgs

    @classmethod
    def op_name(cls, desc) -> str:
        return "kv_cache_append"

    def check_args(self, args: KvCacheAppendArgs) -> None:
        who, d = type(self).__name__, self.desc
        shapes = {"k_new": (d.batch, d.num_kv_heads, d.new_len, d.head_dim),
                  "v_new": (d.batch, d.num_kv_heads, d.new_len, d.value_dim),
                  "k_cache": (d.batch, d.num_kv_heads, d.capacity, d.head_dim),
                  "v_cache": (d.batch, d.num_kv_heads, d.capacity, d.value_dim)}
        for name, shape in shapes.items():
            t = V.check_tensor(who, name, getattr(args, name), shape, d.element)
            V.check_nonnegative_strides(who, name, t)
            V.check_unit_stride(who, name, t, 3)
        V.check_tensor(who, "cache_seqlens", args.cache_seqlens, (d.batch,), INDEX_KINDS)


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
        kv_append_kernel[((n_rows + rows - 1) // rows,)](
            args.k_new, args.v_new, args.cache_seqlens, args.k_cache, args.v_cache,
            n_rows, d.num_kv_heads, d.new_len, d.capacity, *st,
            DK=d.head_dim, DV=d.value_dim, BLOCK_DK=bdk, BLOCK_DV=bdv, ROWS=rows)

