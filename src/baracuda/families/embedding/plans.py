"""EmbeddingPlan (row gather), EmbeddingBackwardPlan (deterministic sort-based sum) and
EmbeddingRenormPlan (max_norm)."""

from __future__ import annotations

from typing import ClassVar

import torch

from ...backends.grouping import Layout, segment_counts, segment_offsets, sort_sections
from ...backends.rows import ASSERT_LAUNCH, ReduceKind, RowGroups, gather_tile, run_reduce
from ...backends.triton_rows import row_gather_kernel
from ...backends.triton_support import INTERPRET, acc_type, next_pow2
from ...core import validate as V
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import OpCategory
from .descriptors import (
    EmbeddingArgs,
    EmbeddingBackwardArgs,
    EmbeddingBackwardDescriptor,
    EmbeddingDescriptor,
    EmbeddingRenormArgs,
    EmbeddingRenormDescriptor,
)
from .kernels import embedding_renorm_kernel


class EmbeddingFamilyPlan(Plan):
    """Base of the embedding plans (each names its op with `OP_NAME`)."""

    category = OpCategory.EMBEDDING


class _TritonCandidate(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    #: operands whose strides must be non-negative
    STRIDED: ClassVar[tuple[str, ...]] = ()

    def can_implement(self, desc, args) -> None:
        for n in self.STRIDED:
            V.check_nonnegative_strides(type(self).__name__, n, getattr(args, n))


@register_plan
class EmbeddingPlan(EmbeddingFamilyPlan):
    """Embedding lookup: out[t] = weight[indices[t]].

    Shapes: weight [V, Dm] (any strides), indices [T] int32/int64, out [T, Dm].
    Dtypes: f32, f16, bf16, f64. Workspace: none.
    Indices outside [0, V): a device-side assert on CUDA (as torch's CUDA kernel; no host
    sync); zero rows under the interpreter, where the torch frontend raises IndexError first.
    Precision: exact (a copy); deterministic.
    """

    OP_NAME = "embedding"
    descriptor_type = EmbeddingDescriptor
    args_type = EmbeddingArgs
    partner = "EmbeddingBackwardPlan"


@register_plan
class EmbeddingBackwardPlan(EmbeddingFamilyPlan):
    """Embedding gradient: grad_weight[v] = sum of grad_out[t] over indices[t] == v, divided by
    the count of v when scale_grad_by_freq; the padding_idx row and rows of unused ids are 0.

    Shapes: grad_out [T, Dm], indices [T], grad_weight [V, Dm] (written densely, every row).
    Workspace: a stable radix sort of the indices (about 16 T + 4 V bytes).
    Precision: deterministic and bit-stable: tokens are stable-sorted by id and each
    (id, column block) is summed by one program in token order, in f32 (f64 for f64); no float
    atomics. Out-of-range indices are dropped.
    """

    OP_NAME = "embedding_backward"
    descriptor_type = EmbeddingBackwardDescriptor
    args_type = EmbeddingBackwardArgs
    partner = "EmbeddingPlan"
    is_backward = True


@register_candidate(EmbeddingPlan)
class TritonEmbeddingGather(_TritonCandidate):
    name = "triton_embedding_gather"
    STRIDED = ("weight", "indices", "out")

    def launch(self, desc, args, workspace) -> None:
        t, dm = desc.num_tokens, desc.embedding_dim
        block_t, block_d, warps = gather_tile(dm, desc.element.torch_dtype.itemsize)
        w, o, idx = args.weight, args.out, args.indices
        # index_select's row gather over rows of one flat dim (out-of-range ids: torch's
        # device-side assert, and they read nothing)
        row_gather_kernel[(cdiv(t, block_t), cdiv(dm, block_d))](
            w, idx, o, t, desc.num_embeddings, dm, idx.stride(0), 1, 1, 1,
            w.stride(0), 0, 0, 0, w.stride(1), o.stride(0), 0, 0, 0, o.stride(1),
            BLOCK_K=block_t, BLOCK_D=block_d, FLAT=True, **ASSERT_LAUNCH, num_warps=warps)


@register_candidate(EmbeddingBackwardPlan)
class TritonEmbeddingBackward(_TritonCandidate):
    name = "triton_radix_sorted_segment_sum"
    STRIDED = ("grad_out", "indices", "grad_weight")

    def _layout(self, desc) -> Layout:
        return Layout.build(sort_sections(desc.num_tokens, desc.num_embeddings, True))

    def workspace_size(self, desc) -> int:
        return self._layout(desc).nbytes

    def launch(self, desc, args, workspace) -> None:
        views = self._layout(desc).views(workspace)
        drop = -1 if desc.padding_idx is None else desc.padding_idx
        perm = segment_offsets(args.indices, desc.num_embeddings, views, True, drop=drop)
        kind = ReduceKind.MEAN if desc.scale_grad_by_freq else ReduceKind.SUM
        groups = RowGroups((desc.num_tokens, desc.embedding_dim), desc.num_embeddings,
                           desc.element)
        run_reduce(groups, kind, args.grad_out, perm, views["offsets"], args.grad_weight, None)


@register_plan
class EmbeddingRenormPlan(EmbeddingFamilyPlan):
    """In-place max_norm renormalization of the weight rows an embedding call reads
    (torch.embedding_renorm_, run by F.embedding(max_norm=...) before the lookup).

    Shapes: indices [T], weight [V, Dm] (read and written). Workspace: V int32 counts.
    Precision: norms in f32; deterministic (each referenced row is handled once, by one
    program, whatever the duplicates).
    """

    OP_NAME = "embedding_renorm"
    descriptor_type = EmbeddingRenormDescriptor
    args_type = EmbeddingRenormArgs

    def is_empty(self, args) -> bool:
        return args.weight.numel() == 0 or args.indices.numel() == 0


@register_candidate(EmbeddingRenormPlan)
class TritonEmbeddingRenorm(_TritonCandidate):
    name = "triton_embedding_renorm"
    STRIDED = ("weight",)

    def _layout(self, desc) -> Layout:
        return Layout.build([("counts", desc.num_embeddings, torch.int32)])

    def workspace_size(self, desc) -> int:
        return self._layout(desc).nbytes

    def launch(self, desc, args, workspace) -> None:
        counts = self._layout(desc).views(workspace)["counts"]
        segment_counts(args.indices, desc.num_embeddings, counts)
        nt = float(desc.norm_type)
        p = 1 if nt == 1.0 else 2 if nt == 2.0 else 0 if nt == float("inf") else -1
        w = args.weight
        embedding_renorm_kernel[(desc.num_embeddings,)](
            w, counts, desc.num_embeddings, desc.embedding_dim, w.stride(0), w.stride(1),
            float(desc.max_norm), nt if p == -1 else 1.0, P=p,
            ACC=acc_type(desc.element),
            BLOCK_D=min(next_pow2(desc.embedding_dim), 1024), num_warps=1 if INTERPRET else 4)
