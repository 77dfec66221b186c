"""SdpaPlan / SdpaBackwardPlan and their Triton flash-attention candidates.

**Formula**: S = scale · Q Kᵀ (+ additive mask | -inf where a boolean mask is False | -inf
above the causal diagonal j > i + offset), P = softmax(S) (a row masked everywhere is all
zeros, as torch), out = dropout(P) V with dropout keep-probability 1 - p and 1/(1 - p)
rescaling. lse = logsumexp(S) per row (+inf for a fully masked row). Backward: dV = Pdᵀ dO,
dP = dO Vᵀ (dropped like P), dS = P ∘ (dP - rowsum(dO ∘ O)), dQ = scale · dS K,
dK = scale · dSᵀ Q, with dK / dV summed over the query heads that share a kv head (GQA).

**Dtypes / shape**: Q [B, H, Sq, Dk], K [B, Hkv, Sk, Dk], V [B, Hkv, Sk, Dv], Hkv | H,
Dk, Dv in 1..256 (Dk != Dv allowed); any non-negative outer strides, unit stride on the head
dim. {f16, bf16} on tensor cores with f32 accumulation; f32 in exact f32 (TF32 only when
PlanPreference.allow_tf32); f64 in f64. Masks: additive (the element type or f32) or bool,
any strides, stride 0 on broadcast dims.

**Backends**: cuDNN's fused attention (plans_cudnn.py, nvidia-cudnn-frontend) first where it
takes the cell (f16/bf16, no user mask, no dropout; the fastest on the H100), these Triton flash
kernels otherwise or when PlanPreference asks for them. Both write the same natural-log lse,
so either backward pairs with either forward.

**Workspace**: Triton: forward none; backward B·H·Sq accumulator elements (the row
dot(dO, O)). cuDNN: what its built graph asks for.

**Precision** (Triton; cuDNN in plans_cudnn.py): deterministic and bit-stable on the same
hardware: every output element is reduced by one program in a fixed order, no atomics (the GQA
sum over query heads runs inside the dK/dV program). Dropout draws come from counter-based
philox on (seed, offset, batch·head, query, key), so reruns and the backward replay them
exactly.
"""

from __future__ import annotations

import dataclasses

import torch
import triton.language as tl

from ...backends.triton_support import INTERP, acc_type, next_pow2, split_f64
from ...core.errors import InvalidProblem
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from .descriptors import (
    CausalKind,
    MaskKind,
    SdpaArgs,
    SdpaBackwardArgs,
    SdpaBackwardDescriptor,
    SdpaDescriptor,
)
from .kernels import (
    LOG2E_F,
    sdpa_bwd_delta_kernel,
    sdpa_bwd_dkdv_kernel,
    sdpa_bwd_dq_kernel,
    sdpa_fwd_kernel,
)

HALF = (ElementKind.F16, ElementKind.BF16)

# Tile tables, keyed by (pass, precision class, padded head dim); values are
# (BLOCK_M, BLOCK_N, num_warps, num_stages). Half-precision rows tuned on the H100; all checked
# by the sm_90a AOT compile (shared memory within the limit, no spills).
_FWD = {
    ("half", 64): (64, 64, 4, 3), ("half", 128): (64, 64, 4, 3), ("half", 256): (32, 64, 8, 2),
    ("f32", 64): (64, 32, 4, 2), ("f32", 128): (32, 32, 8, 2), ("f32", 256): (16, 32, 8, 1),
    ("f64", 64): (16, 16, 8, 1), ("f64", 128): (16, 16, 8, 1), ("f64", 256): (16, 16, 8, 1),
}
_DKDV = {
    ("half", 64): (32, 64, 4, 3), ("half", 128): (32, 64, 8, 3), ("half", 256): (32, 32, 8, 1),
    ("f32", 64): (32, 32, 4, 2), ("f32", 128): (16, 32, 4, 1), ("f32", 256): (16, 16, 4, 1),
    ("f64", 64): (16, 16, 8, 1), ("f64", 128): (16, 16, 8, 1), ("f64", 256): (16, 16, 8, 1),
}
#: dK/dV for MHA (group == 1) with 16-element-aligned strides: the JIT then specializes
#: group = 1 and the strides' divisibility, and this faster tile then fits in registers;
#: GQA's runtime group loop (or unaligned strides) spills it, so those take _DKDV.
_DKDV_MHA = {("half", 128): (32, 64, 4, 3)}
_DQ = {
    ("half", 64): (64, 64, 4, 3), ("half", 128): (128, 64, 8, 3), ("half", 256): (32, 32, 8, 1),
    ("f32", 64): (32, 32, 4, 2), ("f32", 128): (32, 16, 4, 1), ("f32", 256): (16, 16, 4, 1),
    ("f64", 64): (16, 16, 8, 1), ("f64", 128): (16, 16, 8, 1), ("f64", 256): (16, 16, 8, 1),
}

#: dQ with a mask or dropout at D=128: the unmasked tile halved to 64 rows spills (AOT check);
#: this one does not.
_DQ_MASKED = {("half", 128): (32, 64, 4, 2)}


def _klass(element: ElementKind) -> str:
    return "half" if element in HALF else element.value


def head_blocks(desc: SdpaDescriptor) -> tuple[int, int]:
    return max(16, next_pow2(desc.head_dim)), max(16, next_pow2(desc.value_dim))


def tile_config(desc: SdpaDescriptor, table: str, aligned: bool = False) -> dict:
    """BLOCK_M/BLOCK_N/num_warps/num_stages for one pass, shrunk for short sequences.
    `aligned`: every outer stride is a multiple of 16 elements (see _DKDV_MHA)."""
    bdk, bdv = head_blocks(desc)
    bd = max(64, bdk, bdv)
    key = (_klass(desc.element), bd)
    tables = {"fwd": _FWD, "dkdv": _DKDV, "dq": _DQ}
    if (table == "dkdv" and aligned and key in _DKDV_MHA and desc.num_heads == desc.num_kv_heads
            and desc.mask is MaskKind.NONE and desc.dropout_p == 0.0):
        tables["dkdv"] = _DKDV_MHA
    bm, bn, warps, stages = tables[table][key]
    if bd >= 128 and (desc.mask is not MaskKind.NONE or desc.dropout_p > 0):
        # mask loads and philox draws add live registers: halve the tile that is not held
        # across the loop (AOT-checked for spills with the JIT's specialization)
        if table == "dq" and key in _DQ_MASKED:
            bm, bn, warps, stages = _DQ_MASKED[key]
        elif table == "dq":
            bm = max(16, bm // 2)
        elif table == "dkdv" or bd == 128:  # the D=256 forward tile already fits
            bn = max(16, bn // 2)
    bm = min(bm, max(16, next_pow2(desc.query_len)))
    bn = min(bn, max(16, next_pow2(desc.key_len)))
    if (table == "fwd" and key[0] == "half" and bm >= 32 and warps == 4
            and (desc.head_dim != bdk or desc.value_dim != bdv)):
        # Triton 3.6 on sm_90 miscompiles this forward (4 warps, 64-row tile) when a head dim
        # is padded to its block (e.g. Dk=24, Dv=4 or 12): wrong outputs, at times an illegal
        # address. 8 warps compile it correctly.
        warps = 8
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": warps, "num_stages": stages}


def precision_mode(element: ElementKind, tf32: bool) -> int:
    if element in HALF:
        return 0
    if element is ElementKind.F64:
        return 3
    return 2 if tf32 else 1


def common_constexprs(desc: SdpaDescriptor, tf32: bool) -> dict:
    bdk, bdv = head_blocks(desc)
    return {
        "DK": desc.head_dim, "DV": desc.value_dim, "BLOCK_DK": bdk, "BLOCK_DV": bdv,
        "CAUSAL": desc.causal is not CausalKind.NONE,
        "MASK_KIND": {MaskKind.NONE: 0, MaskKind.ADDITIVE: 1, MaskKind.BOOLEAN: 2}[desc.mask],
        "DROPOUT": desc.dropout_p > 0.0, "PREC": precision_mode(desc.element, tf32),
        "ACC": acc_type(desc.element), "INTERP": INTERP, "IDX": tl.int32,
    }


def index_type(*tensors):
    """int32 in-head offsets (fewer registers) unless a head's span needs 64 bits."""
    span = 0
    for t in tensors:
        if t is not None and t.dim() == 4:
            span = max(span, sum((d - 1) * st for d, st in zip(t.shape[2:], t.stride()[2:])))
    return tl.int32 if span < 2**31 - 1 else tl.int64


class AttentionPlan(Plan):
    """Base of the family's plans (the Args classes declare the layouts the kernels take)."""

    category = OpCategory.ATTENTION


class _SdpaPlanBase(AttentionPlan):
    def check_args(self, args) -> None:
        super().check_args(args)
        if self.desc.dropout_p > 0.0 and args.rng_state is None:
            raise InvalidProblem(f"{type(self).__name__}: dropout_p > 0 needs rng_state "
                                 "(int64 [2]: seed, offset)")


def _mask_strides(d: SdpaDescriptor, mask) -> list[int]:
    if mask is None:
        return [0, 0, 0, 0]
    return [0 if e == 1 else s for e, s in zip(mask.shape, mask.stride())]


def _mask_ptr(mask, fallback):
    if mask is None:
        return fallback
    return mask.view(torch.uint8) if mask.dtype == torch.bool else mask


def _strides3(t) -> list[int]:
    return [t.stride(0), t.stride(1), t.stride(2)]


@register_plan
class SdpaPlan(_SdpaPlanBase):
    __doc__ = __doc__
    OP_NAME = "sdpa"
    descriptor_type = SdpaDescriptor
    args_type = SdpaArgs
    partner = "SdpaBackwardPlan"


@register_plan
class SdpaBackwardPlan(_SdpaPlanBase):
    __doc__ = __doc__
    OP_NAME = "sdpa_backward"
    descriptor_type = SdpaBackwardDescriptor
    args_type = SdpaBackwardArgs
    partner = "SdpaPlan"
    is_backward = True


class _FlashBase(Candidate):
    tf32 = False
    replayable = True  # only Triton launches (backends/launch_replay.py)

    def supports(self, desc, pref, arch):
        if self.tf32 and not (desc.element is ElementKind.F32 and pref.allow_tf32):
            return "tf32 path: only f32 with PlanPreference(allow_tf32=True)"
        return None

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        if self.tf32:
            return PrecisionGuarantee(MathPrecision.TF32, ElementKind.F32)
        return PrecisionGuarantee.for_element(desc.element)


def _scalars(d: SdpaDescriptor) -> dict:
    qk_hi, qk_lo = split_f64(float(d.scale) * LOG2E_F)
    return {"H": d.num_heads, "Sq": d.query_len, "Sk": d.key_len,
            "group": d.num_heads // max(d.num_kv_heads, 1),
            "qk_scale": qk_hi, "qk_lo": qk_lo, "causal_off": d.causal_offset,
            "p_drop": float(d.dropout_p)}


@dataclasses.dataclass
class Launch:
    """One kernel launch as data: run by the candidates, turned into the AOT check's
    specialization (the same argument values the JIT sees) by spec.py."""

    kernel: object
    grid: tuple[int, ...]
    args: tuple
    kwargs: dict

    def __call__(self) -> None:
        self.kernel[self.grid](*self.args, **self.kwargs)


def forward_launches(d: SdpaDescriptor, a: SdpaArgs, tf32: bool) -> list[Launch]:
    cfg = tile_config(d, "fwd")
    bm = cfg.pop("BLOCK_M")
    grid = (cdiv(d.query_len, bm), d.batch * d.num_heads)
    sc = _scalars(d)
    sm = _mask_strides(d, a.mask)
    args = (a.q, a.k, a.v, a.out, a.lse, _mask_ptr(a.mask, a.q),
            a.rng_state if a.rng_state is not None else a.lse,
            sc["H"], sc["Sq"], sc["Sk"], sc["group"], sc["qk_scale"], sc["qk_lo"],
            sc["causal_off"], sc["p_drop"],
            *_strides3(a.q), *_strides3(a.k), *_strides3(a.v), *_strides3(a.out),
            *a.lse.stride(), *sm)
    cc = dict(common_constexprs(d, tf32), IDX=index_type(a.q, a.k, a.v, a.out, a.mask))
    return [Launch(sdpa_fwd_kernel, grid, args, dict(BLOCK_M=bm, **cfg, **cc))]


def _aligned(*tensors) -> bool:
    """Every outer stride a multiple of 16 elements: the JIT then specializes them as
    divisible, which is what lets the MHA dK/dV tile fit in registers."""
    return all(s % 16 == 0 for t in tensors for s in t.stride()[:-1])


def _even(d: SdpaDescriptor, cfg: dict, cc: dict) -> bool:
    """No tile of the backward kernels runs past Sq, Sk or the head dims: they then skip every
    bound mask (and, off the causal diagonal, every score mask)."""
    return (d.query_len % cfg["BLOCK_M"] == 0 and d.key_len % cfg["BLOCK_N"] == 0
            and d.head_dim == cc["BLOCK_DK"] and d.value_dim == cc["BLOCK_DV"])


def backward_launches(d: SdpaDescriptor, a: SdpaBackwardArgs, workspace,
                      tf32: bool) -> list[Launch]:
    acc = d.element.compute_kind.torch_dtype
    n = d.batch * d.num_heads * d.query_len
    delta = workspace[: n * acc.itemsize].view(acc) if n else a.dq
    cc = dict(common_constexprs(d, tf32),
              IDX=index_type(a.q, a.k, a.v, a.out, a.dout, a.dq, a.dk, a.dv, a.mask))
    sc = _scalars(d)
    sm = _mask_strides(d, a.mask)
    mptr = _mask_ptr(a.mask, a.q)
    rng = a.rng_state if a.rng_state is not None else a.lse
    bh = d.batch * d.num_heads
    out = []
    if n:
        bmd = min(64, max(16, next_pow2(d.query_len)))
        out.append(Launch(sdpa_bwd_delta_kernel, (cdiv(d.query_len, bmd), bh), (
            a.out, a.dout, delta, d.num_heads, d.query_len, *_strides3(a.out),
            *_strides3(a.dout)), dict(DV=d.value_dim, BLOCK_DV=cc["BLOCK_DV"], BLOCK_M=bmd,
                                      ACC=cc["ACC"], IDX=cc["IDX"])))
    common = [sc["H"], sc["Sq"], sc["Sk"], sc["group"], sc["qk_scale"], sc["qk_lo"],
              *split_f64(float(d.scale)), sc["causal_off"], sc["p_drop"], *_strides3(a.q),
              *_strides3(a.k), *_strides3(a.v), *_strides3(a.dout), *a.lse.stride()]
    if d.key_len and d.batch * d.num_kv_heads:
        cfg = tile_config(d, "dkdv", _aligned(a.q, a.k, a.v, a.dout, a.dk, a.dv))
        grid = (cdiv(d.key_len, cfg["BLOCK_N"]), d.batch * d.num_kv_heads)
        out.append(Launch(sdpa_bwd_dkdv_kernel, grid, (
            a.q, a.k, a.v, a.dout, a.lse, delta, a.dk, a.dv, mptr, rng, *common,
            *_strides3(a.dk), *_strides3(a.dv), *sm), dict(**cfg, **cc, EVEN=_even(d, cfg, cc))))
    if n:
        cfg = tile_config(d, "dq")
        grid = (cdiv(d.query_len, cfg["BLOCK_M"]), bh)
        out.append(Launch(sdpa_bwd_dq_kernel, grid, (
            a.q, a.k, a.v, a.dout, a.lse, delta, a.dq, mptr, rng, *common, *_strides3(a.dq),
            *sm), dict(**cfg, **cc, EVEN=_even(d, cfg, cc))))
    return out


@register_candidate(SdpaPlan)
class TritonFlashForward(_FlashBase):
    name = "triton_flash_fwd"

    def launch(self, desc, args, workspace) -> None:
        for launch in forward_launches(desc, args, self.tf32):
            launch()


@register_candidate(SdpaPlan)
class TritonFlashForwardTf32(TritonFlashForward):
    name = "triton_flash_fwd_tf32"
    tf32 = True
    priority = -1  # before the exact f32 path when the preference allows tf32


@register_candidate(SdpaBackwardPlan)
class TritonFlashBackward(_FlashBase):
    name = "triton_flash_bwd"

    def workspace_size(self, desc) -> int:
        acc = desc.element.compute_kind.itemsize
        return desc.batch * desc.num_heads * desc.query_len * acc

    def launch(self, desc, args, workspace) -> None:
        for launch in backward_launches(desc, args, workspace, self.tf32):
            launch()


@register_candidate(SdpaBackwardPlan)
class TritonFlashBackwardTf32(TritonFlashBackward):
    name = "triton_flash_bwd_tf32"
    tf32 = True
    priority = -1

