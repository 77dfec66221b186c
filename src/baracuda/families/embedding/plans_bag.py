"""EmbeddingBagPlan: bags of embedding rows reduced by sum, mean or max (per_sample_weights,
padding_idx), forward. Its gradient is an EmbeddingBackwardPlan over per-token rows built by
the torch frontend (deterministic)."""

from __future__ import annotations

from ...backends.triton_support import INTERPRET, acc_type, next_pow2
from ...core import validate as V
from ...core.plan import Candidate
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import PrecisionGuarantee
from .descriptors import BAG_MODES, EmbeddingBagArgs, EmbeddingBagDescriptor
from .kernels import embedding_bag_kernel
from .plans import EmbeddingFamilyPlan


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
