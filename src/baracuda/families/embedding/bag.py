"""EmbeddingBagPlan: bags of embedding rows reduced by sum, mean or max (per_sample_weights,
padding_idx), forward. Its gradient is an EmbeddingBackwardPlan over per-token rows built by
the torch frontend (deterministic)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ...backends.triton_support import INTERPRET, acc_type, next_pow2
from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Candidate, Descriptor
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, PrecisionGuarantee
from .descriptors import table_shape, tokens, validate_embedding_desc
from .plans import EmbeddingFamilyPlan

BAG_MODES = ("sum", "mean", "max")


@dataclass(frozen=True)
class EmbeddingBagDescriptor(Descriptor):
    """out[b] = reduce over tokens t in [bounds[b], bounds[b+1]) of weight[indices[t]]
    (times per_sample_weights[t] when has_weights); padding_idx tokens are skipped."""

    num_embeddings: int
    embedding_dim: int
    num_tokens: int
    num_bags: int
    mode: str
    element: ElementKind
    index_element: ElementKind = ElementKind.I64
    has_weights: bool = False
    padding_idx: int | None = None

    def validate(self, who: str) -> None:
        validate_embedding_desc(self, who)
        V.check_in(who, "mode", self.mode, BAG_MODES)
        nb = self.num_bags
        if isinstance(nb, bool) or not isinstance(nb, int) or nb < 0:
            raise V.InvalidProblem(f"{who}: num_bags must be an int >= 0, got {nb!r}")
        if not isinstance(self.has_weights, bool):
            raise V.InvalidProblem(f"{who}: has_weights must be a bool, "
                                   f"got {self.has_weights!r}")
        if self.has_weights and self.mode != "sum":
            raise V.InvalidProblem(f"{who}: per_sample_weights need mode 'sum' (as torch), got "
                                   f"{self.mode!r}")


def _bag_rows(d) -> tuple[int, int]:
    return (d.num_bags, d.embedding_dim)


@dataclass
class EmbeddingBagArgs(Args):
    """bounds: [num_bags + 1] (offsets with the total appended); max_token (mode max, optional):
    int64 [num_bags, embedding_dim], the token position of each maximum (-1: empty bag)."""

    weight: torch.Tensor = operand(table_shape, "element")
    indices: torch.Tensor = operand(tokens, "index_element")
    bounds: torch.Tensor = operand(lambda d: (d.num_bags + 1,), "index_element")
    out: torch.Tensor = operand(_bag_rows, "element", output=True)
    per_sample_weights: torch.Tensor | None = operand(tokens, "element",
                                                      when=lambda d: d.has_weights)
    max_token: torch.Tensor | None = operand(_bag_rows, ElementKind.I64, output=True,
                                             optional=True)


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


@register_plan
class EmbeddingBagPlan(EmbeddingFamilyPlan):
    """torch.nn.functional.embedding_bag forward: out[b] = sum / mean / max over the bag's
    tokens of weight[indices[t]] (times per_sample_weights[t], sum mode only); padding_idx
    tokens are skipped (and not counted by mean); an empty bag gives 0.

    Shapes: weight [V, Dm], indices [T], bounds [B + 1] (offsets + total), out [B, Dm]
    (unit column stride), optional max_token [B, Dm] int64. Workspace: none.
    Precision: accumulation in f32 (f64 for f64), fixed order; deterministic. max keeps the
    first token on ties (NaN wins).
    """

    descriptor_type = EmbeddingBagDescriptor
    args_type = EmbeddingBagArgs

    @classmethod
    def op_name(cls, desc) -> str:
        return "embedding_bag_" + desc.mode

    def check_args(self, args) -> None:
        super().check_args(args)
        who, d = type(self).__name__, self.desc
        if args.max_token is not None and d.mode != "max":
            raise V.InvalidProblem(f"{who}: max_token is an output of mode 'max' only")
        for name in ("indices", "bounds", "per_sample_weights"):
            t = getattr(args, name)
            if t is not None and t.numel() > 1 and t.stride(0) != 1:
                raise V.Unsupported(f"{who}: {name} must be contiguous, got stride {t.stride()}")
        for name in ("out", "max_token"):
            t = getattr(args, name)
            if t is not None and t.numel() and t.stride(1) != 1:
                raise V.Unsupported(f"{who}: {name} needs unit column stride, got {t.stride()}")


@register_candidate(EmbeddingBagPlan)
class TritonEmbeddingBag(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_embedding_bag"

    def guarantee(self, desc, pref):
        return PrecisionGuarantee.for_element(desc.element)

    def launch(self, desc, args, workspace) -> None:
        dm = desc.embedding_dim
        block_d = min(next_pow2(dm), 256)
        w, mt = args.weight, args.max_token
        embedding_bag_kernel[(desc.num_bags, cdiv(dm, block_d))](
            w, args.indices, args.bounds,
            args.per_sample_weights if desc.has_weights else w, args.out,
            mt if mt is not None else args.out, desc.num_embeddings, dm, w.stride(0),
            w.stride(1), args.out.stride(0), mt.stride(0) if mt is not None else 0,
            -1 if desc.padding_idx is None else desc.padding_idx,
            MODE=BAG_MODES.index(desc.mode), HAS_W=desc.has_weights, STORE_MT=mt is not None,
            ACC=acc_type(desc.element),
            BLOCK_T=4 if INTERPRET else 8, BLOCK_D=block_d, num_warps=1 if INTERPRET else 4)
