"""Indexing plans: IndexSelect (+ deterministic backward), Gather, ScatterReduce."""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from ...backends.grouping import MAX_ROWS, Layout, segment_offsets, sort_sections
from ...backends.rows import (
    ASSERT_LAUNCH,
    ReduceKind,
    RowGroups,
    gather_tile,
    inner_layout,
    is_flat,
    run_reduce,
)
from ...backends.triton_rows import row_gather_kernel
from ...backends.triton_support import (
    INTERPRET,
    RecipeCache,
    acc_type,
    next_pow2,
    outer_launch_groups,
)
from ...core import validate as V
from ...core.errors import InvalidProblem
from ...core.layout import axis_view, row_major_strides
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from .descriptors import (
    GatherArgs,
    GatherDescriptor,
    IndexSelectArgs,
    IndexSelectBackwardArgs,
    IndexSelectBackwardDescriptor,
    IndexSelectDescriptor,
    IndexUpdateArgs,
    IndexUpdateDescriptor,
    ScatterArgs,
    ScatterDescriptor,
    ScatterKind,
    check_number,
)
from .kernels import line_gather_kernel, line_scatter_kernel
from .kernels_mask import scatter_keys_kernel

SCATTER_ID = {ScatterKind.ASSIGN: 0, ScatterKind.SUM: 1, ScatterKind.PROD: 2,
              ScatterKind.MEAN: 3, ScatterKind.AMAX: 4, ScatterKind.AMIN: 5}
WARPS = 1 if INTERPRET else 4
#: (bytes per program, bytes per row chunk, warps) of index_select's row gather: 1 KiB row
#: chunks (the embedding lookup keeps the wider default)
INDEX_GATHER_TILE = (8192, 1024, 4)


EXACT = PrecisionGuarantee.for_element(ElementKind.I64)


class ExactCandidate(Candidate):
    """A candidate that only moves values: exact."""

    def guarantee(self, desc, pref):
        return EXACT


class IndexingPlan(Plan):
    """Base of the indexing plans (each names its op with `OP_NAME`)."""

    category = OpCategory.INDEXING


def check_strides(who: str, args, names) -> None:
    """Non-negative strides on every named tensor of `args` that is present."""
    for n in names:
        t = getattr(args, n)
        if t is not None:
            V.check_nonnegative_strides(who, n, t)


@register_plan
class IndexSelectPlan(IndexingPlan):
    """out = input.index_select(dim, index).

    Shapes: input any rank (strided), index [K] int32/int64, out = input's shape with K at dim.
    Dtypes: floats, int8/16/32/64, uint8. Workspace: none. Out-of-range indices: a device-side
    assert on CUDA (as torch's CUDA kernel; no host sync), zero rows under the interpreter,
    where the torch frontend raises IndexError first.
    Precision: exact (a copy); deterministic.
    """

    OP_NAME = "index_select"
    descriptor_type = IndexSelectDescriptor
    args_type = IndexSelectArgs
    partner = "IndexSelectBackwardPlan"


@register_plan
class IndexSelectBackwardPlan(IndexingPlan):
    """grad_input = zeros(input_shape).index_add(dim, index, grad_out), deterministically.

    Workspace: a stable radix sort of index (about 16 K + 4 n bytes).
    Precision: deterministic and bit-stable: the index is stable-sorted and each (row, column
    block) of grad_input is summed by one program in index order (f32, f64 for f64); no float
    atomics. Rows nothing selected are 0.
    """

    OP_NAME = "index_select_backward"
    descriptor_type = IndexSelectBackwardDescriptor
    args_type = IndexSelectBackwardArgs
    partner = "IndexSelectPlan"
    is_backward = True


def _rows_first(t: torch.Tensor, axis: int) -> torch.Tensor:
    return t.movedim(axis, 0)


def _check_rows(who: str, axis: int, args, rows, others) -> None:
    """Strides of every operand, and the inner dims of the `rows` operands (`dim` moved to the
    front; the first one's shape) collapse to the kernels' limit."""
    check_strides(who, args, rows + others)
    views = [_rows_first(getattr(args, n), axis) for n in rows]
    inner_layout(who, views[0].shape[1:], views)


@register_candidate(IndexSelectPlan)
class TritonIndexSelect(ExactCandidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_row_gather"

    def can_implement(self, desc, args) -> None:
        _check_rows(type(self).__name__, desc.axis, args, ("out", "input"), ("index",))

    def launch(self, desc, args, workspace) -> None:
        a = desc.axis
        # dim 0 needs no movedim views (one torch op each: host time of an eager call)
        src = args.input if a == 0 else _rows_first(args.input, a)
        dst = args.out if a == 0 else _rows_first(args.out, a)
        idx = args.index
        key = (desc, src.stride(), dst.stride(), idx.stride())
        grid, ints, const = _GATHER_RECIPES.get(key, lambda: _gather_recipe(desc, src, dst, idx))
        row_gather_kernel[grid](src, idx, dst, *ints, **const)


_GATHER_RECIPES = RecipeCache()


def _gather_recipe(desc, src, dst, idx):
    """(grid, integer arguments, launch constexprs and options) of the row gather."""
    shape, (ss, ds) = inner_layout("IndexSelectPlan", dst.shape[1:], [src, dst])
    k, n = desc.num_indices, desc.input_shape[desc.axis]
    d = 1
    for e in dst.shape[1:]:
        d *= e
    block_k, block_d, warps = gather_tile(d, desc.element.torch_dtype.itemsize,
                                          INDEX_GATHER_TILE)
    ints = (k, n, d, idx.stride(0) if k else 1, *shape[1:], src.stride(0), *ss,
            dst.stride(0), *ds)
    const = dict(BLOCK_K=block_k, BLOCK_D=block_d, FLAT=is_flat(shape), **ASSERT_LAUNCH,
                 num_warps=warps)
    return (cdiv(k, block_k), cdiv(d, block_d)), ints, const


class _SortedRowsCandidate(Candidate):
    """Rows of a source summed (or last-one-kept) into the destination rows the index names,
    through a stable sort of the index: deterministic, no float atomics."""

    replayable = True  # only Triton launches (backends/launch_replay.py)

    def _layout(self, desc) -> Layout:
        return Layout.build(sort_sections(desc.num_indices, desc.input_shape[desc.axis], True))

    def workspace_size(self, desc) -> int:
        return self._layout(desc).nbytes

    def _reduce(self, desc, workspace, index, src, out, kind: ReduceKind, base=None,
                alpha: float = 1.0) -> None:
        a = desc.axis
        views = self._layout(desc).views(workspace)
        rest = tuple(e for i, e in enumerate(desc.input_shape) if i != a)
        groups = RowGroups((desc.num_indices, *rest), desc.input_shape[a], desc.element)
        perm = segment_offsets(index, groups.num_segments, views, True)
        run_reduce(groups, kind, _rows_first(src, a), perm, views["offsets"],
                   _rows_first(out, a), None,
                   base=None if base is None else _rows_first(base, a), alpha=alpha)


@register_candidate(IndexSelectBackwardPlan)
class TritonIndexSelectBackward(_SortedRowsCandidate):
    name = "triton_radix_sorted_segment_sum"

    def can_implement(self, desc, args) -> None:
        _check_rows(type(self).__name__, desc.axis, args, ("grad_out", "grad_input"),
                    ("index",))

    def launch(self, desc, args, workspace) -> None:
        self._reduce(desc, workspace, args.index, args.grad_out, args.grad_input,
                     ReduceKind.SUM)


def _narrow_to(t: torch.Tensor, shape, axis: int) -> torch.Tensor:
    """View of `t` cut to `shape` in every dim but `axis`."""
    for d, e in enumerate(shape):
        if d != axis and t.shape[d] != e:
            t = t.narrow(d, 0, e)
    return t


@register_plan
class GatherPlan(IndexingPlan):
    """out = torch.gather(input, dim, index).

    Shapes: index and out share index_shape; input_shape >= index_shape in dims other than dim.
    Any strides. Dtypes: floats and integers. Workspace: none.
    Precision: exact (a copy); deterministic. Out-of-range indices give 0 here; the torch
    frontend raises first.
    """

    OP_NAME = "gather"
    descriptor_type = GatherDescriptor
    args_type = GatherArgs
    partner = "ScatterReducePlan"


@register_plan
class ScatterReducePlan(IndexingPlan):
    """out = self.scatter_reduce(dim, index, src, reduce, include_self) for reduce in sum,
    prod, mean, amax, amin; ASSIGN is torch.scatter (the last duplicate wins, deterministic);
    has_self=False scatters into zeros (gather's backward); `alpha` scales src (index_add).

    Shapes: self / out input_shape; index index_shape; src >= index_shape in every dim.
    Dtypes: f32, f16, bf16 (computed in f32), f64. Workspace: none.
    Precision: deterministic and bit-stable: each destination block is owned by one program
    that scans its line's indices in order (O(extent x index length) per line); no atomics.
    """

    descriptor_type = ScatterDescriptor
    args_type = ScatterArgs
    partner = "GatherPlan"
    is_backward = True

    @classmethod
    def op_name(cls, desc) -> str:
        return "scatter_" + desc.kind.value

    def check_args(self, args) -> None:
        super().check_args(args)
        who, d = type(self).__name__, self.desc
        if args.src.dim() != len(d.index_shape) or any(
                a < b for a, b in zip(args.src.shape, d.index_shape)):
            raise InvalidProblem(f"{who}: src.shape {tuple(args.src.shape)} must be >= "
                                 f"index_shape {d.index_shape} in every dim")
        check_number(who, "alpha", args.alpha)


def _strided_lines(index_shape, tensors, axis):
    """(extent along axis, [(tensors, outer shape, lines, per-tensor strides + axis stride)])
    of the lines of `tensors` along `axis`."""
    view = axis_view(index_shape, tensors, axis)
    launches = []
    for group, shape, strides in outer_launch_groups(view, tensors):
        st = []
        for t_i, s in enumerate(strides):
            st += [*s, view.axis_strides[t_i]]
        launches.append((group, shape, math.prod(shape), st))
    return view.extent, launches


@register_candidate(GatherPlan)
class TritonGather(ExactCandidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_line_gather"

    def can_implement(self, desc, args) -> None:
        check_strides(type(self).__name__, args, ("input", "index", "out"))

    def launch(self, desc, args, workspace) -> None:
        a = desc.axis
        x = _narrow_to(args.input, desc.index_shape, a)
        k, launches = _strided_lines(desc.index_shape, [x, args.index, args.out], a)
        n = desc.input_shape[a]
        block_j = min(next_pow2(k), 256)
        block_l = 16 if INTERPRET else max(1, 2048 // block_j)
        for group, shape, n_lines, st in launches:
            line_gather_kernel[(cdiv(n_lines, block_l), cdiv(k, block_j))](
                *group, n_lines, k, n, *shape[1:], *st, BLOCK_L=block_l, BLOCK_J=block_j,
                num_warps=WARPS)


@register_candidate(ScatterReducePlan)
class TritonScatterReduce(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_owner_scatter"

    def can_implement(self, desc, args) -> None:
        check_strides(type(self).__name__, args, ("self_", "index", "src", "out"))

    def launch(self, desc, args, workspace) -> None:
        a = desc.axis
        ishape = desc.index_shape
        out = _narrow_to(args.out, ishape, a)
        narrowed = tuple(out.shape) != tuple(args.out.shape)
        if narrowed:  # positions outside the index's extent keep self (or 0)
            if desc.has_self:
                args.out.copy_(args.self_)
            else:
                args.out.zero_()
        selfv = _narrow_to(args.self_, ishape, a) if desc.has_self else out
        src = args.src
        for d, e in enumerate(ishape):
            if src.shape[d] != e:
                src = src.narrow(d, 0, e)
        k, launches = _strided_lines(ishape, [selfv, args.index, src, out], a)
        n = desc.input_shape[a]
        if n == 0:
            return
        block_s = min(next_pow2(n), 64)
        block_j = min(next_pow2(k), 32)
        acc = acc_type(desc.element)
        for group, shape, n_lines, st in launches:
            line_scatter_kernel[(n_lines, cdiv(n, block_s))](
                *group, k, n, float(args.alpha), *shape[1:], *st,
                KIND=SCATTER_ID[desc.kind], HAS_SELF=desc.has_self,
                INCLUDE_SELF=desc.include_self and desc.has_self, ACC=acc, BLOCK_S=block_s,
                BLOCK_J=block_j, num_warps=WARPS)


class _IndexUpdatePlan(IndexingPlan):
    descriptor_type = IndexUpdateDescriptor
    args_type = IndexUpdateArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        check_number(type(self).__name__, "alpha", args.alpha)


@register_plan
class IndexAddPlan(_IndexUpdatePlan):
    """out = input.index_add(dim, index, source, alpha=alpha), deterministically.

    Shapes: input / out any rank (strided), index [K], source = input's shape with K at dim.
    Workspace: a stable radix sort of index (about 16 K + 4 n bytes).
    Precision: deterministic and bit-stable: each destination row block sums its sources in
    index order (f32, f64 for f64), then adds input once; no float atomics.
    """

    OP_NAME = "index_add"


@register_plan
class IndexCopyPlan(_IndexUpdatePlan):
    """out = input.index_copy(dim, index, source); on duplicate indices the last one wins
    (deterministic, where torch leaves it unspecified).

    Workspace: a stable radix sort of index. Precision: exact copy (via the compute type:
    f32 / f64, exact for every float input); deterministic.
    """

    OP_NAME = "index_copy"


class _IndexUpdateCandidate(_SortedRowsCandidate):
    KIND: ClassVar[ReduceKind]

    def can_implement(self, desc, args) -> None:
        _check_rows(type(self).__name__, desc.axis, args, ("source", "out", "input"),
                    ("index",))

    def launch(self, desc, args, workspace) -> None:
        self._reduce(desc, workspace, args.index, args.source, args.out, self.KIND,
                     base=args.input, alpha=float(args.alpha))


@register_candidate(IndexAddPlan)
class TritonIndexAdd(_IndexUpdateCandidate):
    name = "triton_radix_sorted_index_add"
    KIND = ReduceKind.SUM


@register_candidate(IndexCopyPlan)
class TritonIndexCopy(_IndexUpdateCandidate):
    name = "triton_radix_sorted_index_copy"
    KIND = ReduceKind.LAST


@register_candidate(ScatterReducePlan)
class TritonSortedScatter(TritonScatterReduce):
    """Sum (self + src, or into zeros) and assign (last duplicate wins) through a stable sort
    of destination keys: O(index numel) instead of O(extent x index length) per line. Needs
    contiguous index / src (src the index's shape) / self / out; otherwise it runs the
    destination-owned kernel of TritonScatterReduce."""

    name = "triton_sorted_scatter"
    priority = -1

    def supports(self, desc, pref, arch):
        if desc.kind is ScatterKind.ASSIGN or (desc.kind is ScatterKind.SUM and (
                desc.include_self or not desc.has_self)):
            if math.prod(desc.input_shape) <= MAX_ROWS:
                return None
            return "more than 2^31 - 2 destination elements"
        return "only sum (include_self, or without self) and assign go through the sort"

    def _layout(self, desc) -> Layout:
        p, s = math.prod(desc.index_shape), math.prod(desc.input_shape)
        return Layout.build([("keys", max(p, 1), torch.int32)] + sort_sections(p, s, True))

    def workspace_size(self, desc) -> int:
        return self._layout(desc).nbytes

    def launch(self, desc, args, workspace) -> None:
        ok = (args.index.is_contiguous() and args.src.is_contiguous()
              and tuple(args.src.shape) == tuple(desc.index_shape) and args.out.is_contiguous()
              and (args.self_ is None or args.self_.is_contiguous()))
        if not ok:
            super().launch(desc, args, workspace)
            return
        views = self._layout(desc).views(workspace)
        p, s = math.prod(desc.index_shape), math.prod(desc.input_shape)
        keys = views["keys"][:p]
        if p:
            rank = len(desc.index_shape)
            dims = [1] * (8 - rank) + list(desc.index_shape)
            strides = list(row_major_strides(desc.input_shape))
            dim_stride = strides[desc.axis]
            strides[desc.axis] = 0
            cs = [0] * (8 - rank) + strides
            scatter_keys_kernel[(cdiv(p, 1024),)](
                args.index, keys, p, desc.input_shape[desc.axis], s, *dims[1:], *cs,
                dim_stride, BLOCK=1024, num_warps=WARPS)
        perm = segment_offsets(keys, s, views, True)
        groups = RowGroups((p,), s, desc.element)
        kind = ReduceKind.SUM if desc.kind is ScatterKind.SUM else ReduceKind.LAST
        base = args.self_.reshape(-1) if desc.has_self else None
        run_reduce(groups, kind, args.src.reshape(-1), perm, views["offsets"],
                   args.out.view(-1), None, base=base, alpha=float(args.alpha))
