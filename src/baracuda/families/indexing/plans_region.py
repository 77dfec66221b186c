"""Indexing plans: StridedCopy (the region scatters and dynamic slices), IndexReduce (sorted,
destination-owned) and UnravelIndex."""

from __future__ import annotations

import math

from ...backends.grouping import segment_offsets
from ...backends.rows import ReduceKind, RowGroups, inner_layout, is_flat, run_reduce
from ...backends.triton_support import INTERPRET, acc_type, next_pow2
from ...core.errors import Unsupported
from ...core.layout import collapse_dims
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from .descriptors import IndexUpdateArgs, ScatterKind
from .descriptors_region import (
    MAX_COPY_RANK,
    IndexReduceDescriptor,
    StridedCopyArgs,
    StridedCopyDescriptor,
    UnravelArgs,
    UnravelDescriptor,
)
from .kernels_region import index_reduce_combine_kernel, strided_copy_kernel, unravel_kernel
from .plans import (
    WARPS,
    ExactCandidate,
    IndexingPlan,
    _check_rows,
    _rows_first,
    _SortedRowsCandidate,
    check_strides,
)

#: the grouped reduction each index_reduce kind runs (mean: the sum, divided in the combine)
REDUCE_OF = {ScatterKind.PROD: ReduceKind.PROD, ScatterKind.MEAN: ReduceKind.SUM,
             ScatterKind.AMAX: ReduceKind.MAX, ScatterKind.AMIN: ReduceKind.MIN}
#: the combine kernel's KIND constexpr (kernels_region.R_*)
COMBINE_ID = {ScatterKind.PROD: 2, ScatterKind.MEAN: 3, ScatterKind.AMAX: 4,
              ScatterKind.AMIN: 5}
#: elements per program of the strided copy (inner columns x outer lines)
COPY_TILE = 1024 if INTERPRET else 4096


@register_plan
class StridedCopyPlan(IndexingPlan):
    """out[...] = src[...] for strided src and out of one shape (rank 0..8): the region write
    of select / slice / diagonal / as_strided scatter and of the dynamic slices.

    `out` is typically a view into a larger tensor; `dynamic_src` / `dynamic_out` add an int64
    element offset read on the device (no host sync). Dtypes: every copyable kind and bool.
    Workspace: none. Precision: exact (a copy); deterministic.
    """

    OP_NAME = "strided_copy"
    descriptor_type = StridedCopyDescriptor
    args_type = StridedCopyArgs


def copy_layout(shape, src_stride, out_stride):
    """(outer dims D1..D6, src strides, out strides), padded to 8 dims, of the collapsed
    copy."""
    if math.prod(shape) == 0:
        return None
    dims, (a, b) = collapse_dims(list(shape) or [1], [list(src_stride) or [1],
                                                      list(out_stride) or [1]])
    pad = MAX_COPY_RANK - len(dims)
    return [1] * pad + list(dims), [0] * pad + list(a), [0] * pad + list(b)


@register_candidate(StridedCopyPlan)
class TritonStridedCopy(ExactCandidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_strided_copy"

    def can_implement(self, desc, args) -> None:
        check_strides(type(self).__name__, args, ("src", "out"))

    def launch(self, desc, args, workspace) -> None:
        got = copy_layout(desc.shape, args.src.stride(), args.out.stride())
        if got is None:
            return
        dims, a, b = got
        inner = dims[-1]
        block_c = min(next_pow2(inner), COPY_TILE // 4)
        block_r = max(1, COPY_TILE // block_c)
        lines = math.prod(dims[:-1])
        col_blocks = cdiv(inner, block_c)
        strided_copy_kernel[(cdiv(lines, block_r) * col_blocks,)](
            args.src, args.out,
            args.src_offset if desc.dynamic_src else args.src,
            args.out_offset if desc.dynamic_out else args.out,
            lines, inner, col_blocks, *dims[1:7], *a, *b,
            DYN_SRC=desc.dynamic_src, DYN_OUT=desc.dynamic_out, BLOCK_R=block_r,
            BLOCK_C=block_c, num_warps=WARPS)


@register_plan
class IndexReducePlan(IndexingPlan):
    """out = input.index_reduce(dim, index, source, reduce, include_self) for reduce in prod,
    mean, amax, amin (torch's rules: a row no index names keeps input; amax / amin propagate
    NaN; mean divides by the count, + 1 with include_self).

    Shapes: input / out any rank (strided), index [K] int32/int64, source = input's shape with
    K at dim. Dtypes: f32, f16, bf16 (computed in f32), f64.
    Workspace: a stable radix sort of index (about 16 K + 4 n bytes).
    Precision: deterministic and bit-stable: each destination (row, column block) is reduced
    by one program over its sources in index order, then combined with input; no atomics.
    """

    descriptor_type = IndexReduceDescriptor
    args_type = IndexUpdateArgs

    @classmethod
    def op_name(cls, desc) -> str:
        return "index_reduce_" + desc.kind.value


@register_candidate(IndexReducePlan)
class TritonSortedIndexReduce(_SortedRowsCandidate):
    name = "triton_radix_sorted_index_reduce"

    def can_implement(self, desc, args) -> None:
        _check_rows(type(self).__name__, desc.axis, args, ("source", "out", "input"),
                    ("index",))

    def launch(self, desc, args, workspace) -> None:
        a = desc.axis
        n = desc.input_shape[a]
        rest = tuple(e for i, e in enumerate(desc.input_shape) if i != a)
        d = math.prod(rest)
        if n == 0 or d == 0:
            return
        views = self._layout(desc).views(workspace)
        groups = RowGroups((desc.num_indices, *rest), n, desc.element)
        perm = segment_offsets(args.index, n, views, True)
        out = _rows_first(args.out, a)
        selfv = _rows_first(args.input, a)
        run_reduce(groups, REDUCE_OF[desc.kind], _rows_first(args.source, a), perm,
                   views["offsets"], out, None)
        shape, (ss, os_) = inner_layout(type(self).__name__, out.shape[1:], [selfv, out])
        block_d = min(next_pow2(d), 256 if INTERPRET else 1024)
        index_reduce_combine_kernel[(n, cdiv(d, block_d))](
            views["offsets"], selfv, out, d, *shape[1:], selfv.stride(0), *ss,
            out.stride(0), *os_, KIND=COMBINE_ID[desc.kind], INCLUDE_SELF=desc.include_self,
            ACC=acc_type(desc.element), BLOCK_D=block_d, FLAT=is_flat(shape),
            num_warps=WARPS)


@register_plan
class UnravelIndexPlan(IndexingPlan):
    """out[i, :] = the row-major coordinates of index[i] in a tensor of `dims`, each taken
    modulo its extent with floor semantics (torch.unravel_index: no range check).

    Shapes: index [N] int32/int64 (strided), out [N, len(dims)] int64 contiguous.
    Workspace: none. Precision: exact; deterministic.
    """

    OP_NAME = "unravel_index"
    descriptor_type = UnravelDescriptor
    args_type = UnravelArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        if not args.out.is_contiguous():
            raise Unsupported(f"{type(self).__name__}: out must be contiguous")


@register_candidate(UnravelIndexPlan)
class TritonUnravel(ExactCandidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_unravel"

    def can_implement(self, desc, args) -> None:
        check_strides(type(self).__name__, args, ("index",))

    def launch(self, desc, args, workspace) -> None:
        n = desc.num_indices
        if n == 0:
            return
        dims = [1] * (MAX_COPY_RANK - len(desc.dims)) + list(desc.dims)
        block = 256 if INTERPRET else 1024
        unravel_kernel[(cdiv(n, block),)](args.index, args.out, n, args.index.stride(0),
                                          *dims, R=len(desc.dims), BLOCK=block,
                                          num_warps=WARPS)
