"""Segment reduction plans: {sorted, unsorted} x {sum, mean, max, min, prod}, forward and
backward, all deterministic (no float atomics).

max / min backward split each (segment, column)'s gradient evenly among the rows equal to the
output (torch.segment_reduce's and jax's rule; a NaN output splits among the NaN rows): the
rows are marked, counted per segment by the grouped reduction (exact integer sums, so any
grouping order gives the same counts), then divided into.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from ...backends.grouping import (
    Layout,
    bucket_offsets,
    bucket_sections,
    segment_counts,
    segment_offsets,
    sort_layout,
    sort_sections,
)
from ...backends.rows import (
    EXTREMAL,
    MAX_INNER_DIMS,
    WARPS,
    ReduceKind,
    RowGroups,
    inner_layout,
    is_flat,
    run_reduce,
)
from ...backends.triton_support import INTERPRET, acc_type, next_pow2
from ...core import validate as V
from ...core.errors import InvalidProblem
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from .descriptors import (
    SegmentArgs,
    SegmentBackwardArgs,
    SegmentBackwardDescriptor,
    SegmentDescriptor,
    SegmentKind,
)
from .kernels import segment_backward_kernel, segment_ties_kernel

KIND_ID = {k: ReduceKind[k.name] for k in SegmentKind}
#: (rows, columns) per program of the row-parallel backward on the GPU
BACKWARD_TILE = (8, 128)
#: tie counts are summed in f32 (exact below 2**24 rows), in f64 beyond
EXACT_F32_COUNT = 1 << 24


class _SegmentPlan(Plan):
    category = OpCategory.SEGMENT_OPS
    KIND: ClassVar[SegmentKind]
    SORTED: ClassVar[bool]

    @classmethod
    def op_name(cls, desc) -> str:
        return ("" if cls.SORTED else "unsorted_") + "segment_" + cls.KIND.value + (
            "_backward" if cls.is_backward else "")


class _SegmentForward(_SegmentPlan):
    descriptor_type = SegmentDescriptor
    args_type = SegmentArgs

    def check_args(self, args: SegmentArgs) -> None:
        super().check_args(args)
        if args.argmax is not None and KIND_ID[self.KIND] not in EXTREMAL:
            raise InvalidProblem(f"{type(self).__name__}: argmax is an output of max / min "
                                 "plans only; expected None")


class _SegmentBackward(_SegmentPlan):
    descriptor_type = SegmentBackwardDescriptor
    args_type = SegmentBackwardArgs
    is_backward = True

    def check_args(self, args: SegmentBackwardArgs) -> None:
        super().check_args(args)
        who = type(self).__name__
        extremal = KIND_ID[self.KIND] in EXTREMAL
        if args.out is None and extremal:
            raise InvalidProblem(f"{who}: out (the forward's output) is required, got None")
        if args.out is not None and not extremal:
            raise InvalidProblem(f"{who}: out is an input of max / min backward plans only; "
                                 "expected None")
        if args.data is None and (extremal or self.KIND is SegmentKind.PROD):
            raise InvalidProblem(f"{who}: data (the forward's input) is required, got None")


class _SegmentCandidate(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    KIND: ClassVar[SegmentKind]
    SORTED: ClassVar[bool]

    def guarantee(self, desc, pref):
        return PrecisionGuarantee.for_element(desc.element)

    def workspace_size(self, desc) -> int:
        return self._layout(desc).nbytes


class _ForwardCandidate(_SegmentCandidate):
    @property
    def _bucketed(self) -> bool:
        # max / min pick their winner by value, then row number: unsorted ids only need
        # grouping, not the stable radix sort that sums need for a fixed summation order
        return not self.SORTED and KIND_ID[self.KIND] in EXTREMAL

    def _layout(self, desc) -> Layout:
        if self._bucketed:
            return Layout.build(bucket_sections(desc.num_rows, desc.num_segments))
        return sort_layout(desc.num_rows, desc.num_segments, not self.SORTED)

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        outs = [args.data, args.out] + ([args.argmax] if args.argmax is not None else [])
        for name, t in zip(("data", "out", "argmax"), outs):
            V.check_nonnegative_strides(who, name, t)
        inner_layout(who, desc.row_shape, outs)

    def launch(self, desc, args, workspace) -> None:
        views = self._layout(desc).views(workspace)
        if self._bucketed:
            perm = bucket_offsets(args.segment_ids, desc.num_segments, views)
        else:
            perm = segment_offsets(args.segment_ids, desc.num_segments, views, not self.SORTED)
        run_reduce(desc, KIND_ID[self.KIND], args.data, perm, views["offsets"], args.out,
                   args.argmax)


class _BackwardCandidate(_SegmentCandidate):
    def _layout(self, desc) -> Layout:
        n, s, d = desc.num_rows, desc.num_segments, desc.row_numel
        if self.KIND is SegmentKind.MEAN:  # one count at least: no segments, no workspace
            return Layout.build([("counts", max(s, 1), torch.int32)])
        if self.KIND is SegmentKind.PROD:
            acc = desc.element.compute_kind.torch_dtype
            return Layout.build(sort_sections(n, s, not self.SORTED) + [
                ("stats", s * d, acc), ("zeros", s * d, torch.int32)])
        if KIND_ID[self.KIND] in EXTREMAL:
            # counts are exact integer sums: unsorted ids need only the unordered bucketing
            groups = sort_sections(n, s, False) if self.SORTED else bucket_sections(n, s)
            return Layout.build(groups + [("hits", n * d, torch.uint8),
                                          ("ties", s * d, torch.int32)])
        return Layout.build([])

    def _tensors(self, args):
        return [args.grad_out, args.out, args.data, args.grad_data]

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        ts = [t for t in self._tensors(args) if t is not None]
        for t in ts:
            V.check_nonnegative_strides(who, "operand", t)
        inner_layout(who, desc.row_shape, ts)

    def _count_ties(self, desc, args, views) -> None:
        """views["hits"] [N, D] marks the rows equal to their segment's output; views["ties"]
        [S, D] counts them."""
        who = type(self).__name__
        s, n, d = desc.num_segments, desc.num_rows, desc.row_numel
        ids, x, o = args.segment_ids, args.data, args.out
        hits, ties = views["hits"], views["ties"]
        shape, (xst, ost) = inner_layout(who, desc.row_shape, [x, o])
        block_r, block_d = (16, 128) if INTERPRET else BACKWARD_TILE
        block_d = min(next_pow2(d), block_d)
        segment_ties_kernel[(cdiv(n, block_r), cdiv(d, block_d))](
            x, o, ids, hits, n, s, d, ids.stride(0) if n else 1, *shape[1:],
            x.stride(0), *xst, o.stride(0), *ost, ACC=acc_type(desc.element),
            BLOCK_R=block_r, BLOCK_D=block_d, FLAT=is_flat(shape), num_warps=WARPS)
        if self.SORTED:
            perm = segment_offsets(ids, s, views, False)
        else:
            perm = bucket_offsets(ids, s, views)
        count = ElementKind.F32 if n < EXACT_F32_COUNT else ElementKind.F64
        run_reduce(RowGroups((n, d), s, count), ReduceKind.SUM, hits.view(n, d), perm,
                   views["offsets"], ties.view(s, d), None)

    def launch(self, desc, args, workspace) -> None:
        views = self._layout(desc).views(workspace)
        s, n, d = desc.num_segments, desc.num_rows, desc.row_numel
        ids = args.segment_ids
        g, x, dx = args.grad_out, args.data, args.grad_data
        dummy = views.get("counts", ids)
        st = dc = cnt = hit = dummy
        if self.KIND is SegmentKind.MEAN:
            segment_counts(ids, s, views["counts"])
            cnt = views["counts"]
        if self.KIND is SegmentKind.PROD:
            perm = segment_offsets(ids, s, views, not self.SORTED)
            st, dc = views["stats"], views["zeros"]
            run_reduce(desc, ReduceKind.PROD_STATS, x, perm, views["offsets"], st, dc,
                       dense_stats=True)
        if KIND_ID[self.KIND] in EXTREMAL:
            self._count_ties(desc, args, views)
            hit, dc = views["hits"], views["ties"]
        xk = x if self.KIND is SegmentKind.PROD else None
        present = [t for t in (g, xk, dx) if t is not None]
        shape, strides = inner_layout(type(self).__name__, desc.row_shape, present)
        it = iter(zip(present, strides))
        per = {}
        for key, t in (("g", g), ("x", xk), ("dx", dx)):
            if t is None:
                per[key] = [0] * (MAX_INNER_DIMS + 1)
            else:
                tt, stv = next(it)
                per[key] = [tt.stride(0), *stv]
        block_r, block_d = (16, 128) if INTERPRET else BACKWARD_TILE
        block_d = min(next_pow2(d), block_d)
        grid = (cdiv(n, block_r), cdiv(d, block_d))
        segment_backward_kernel[grid](
            g, ids, xk if xk is not None else dummy, st, dc, cnt, hit, dx, n, s, d,
            ids.stride(0) if n else 1, *shape[1:], *per["g"], *per["x"], *per["dx"],
            KIND=int(KIND_ID[self.KIND]), ACC=acc_type(desc.element), BLOCK_R=block_r,
            BLOCK_D=block_d, FLAT=is_flat(shape), num_warps=WARPS,
        )


_DOC = """{title}.

Formula: {formula}. data [N, D...], segment_ids [N] int32/int64 ({order}), out [num_segments,
D...]; ids outside [0, num_segments) are dropped; an empty segment gives {identity}.
Dtypes: f32, f16, bf16 (computed in f32), f64.
Workspace: {workspace}.
Precision: deterministic and bit-stable (segment-owned reduction in ascending row order, no
float atomics); accumulation in f32 (f64 for f64).
"""

_FORMULA = {
    SegmentKind.SUM: ("out[s] = sum of data[i] over ids[i] == s", "0"),
    SegmentKind.MEAN: ("out[s] = sum / count over ids[i] == s", "0"),
    SegmentKind.MAX: ("out[s] = max of data[i] over ids[i] == s (NaN wins); optional argmax "
                      "output (the first of tied rows)", "-inf (argmax -1)"),
    SegmentKind.MIN: ("out[s] = min of data[i] over ids[i] == s (NaN wins); optional argmax "
                      "output (the first of tied rows)", "+inf (argmax -1)"),
    SegmentKind.PROD: ("out[s] = product of data[i] over ids[i] == s", "1"),
}

_BWD_FORMULA = {
    SegmentKind.SUM: "grad_data[i] = grad_out[ids[i]]",
    SegmentKind.MEAN: "grad_data[i] = grad_out[ids[i]] / count[ids[i]]",
    SegmentKind.MAX: "grad_data[i, d] = grad_out[s, d] / count[s, d] where data[i, d] == "
                     "out[s, d] (NaN == NaN), else 0; count = the rows of s equal to out[s, d] "
                     "(ties split evenly, as torch.segment_reduce)",
    SegmentKind.MIN: "grad_data[i, d] = grad_out[s, d] / count[s, d] where data[i, d] == "
                     "out[s, d] (NaN == NaN), else 0; count = the rows of s equal to out[s, d] "
                     "(ties split evenly, as torch.segment_reduce)",
    SegmentKind.PROD: "grad_data[i] = grad_out[s] * product of the other rows of segment s",
}


def _make(kind: SegmentKind, sorted_ids: bool, backward: bool):
    prefix = "" if sorted_ids else "Unsorted"
    name = f"{prefix}Segment{kind.value.capitalize()}{'Backward' if backward else ''}Plan"
    partner = f"{prefix}Segment{kind.value.capitalize()}{'' if backward else 'Backward'}Plan"
    order = "sorted ascending" if sorted_ids else "any order"
    if backward:
        groups = "segment offsets" + ("" if sorted_ids else " + radix sort")
        ties = ("segment offsets" if sorted_ids else "bucketed rows") + (
            " + [N, D] uint8 tie marks + [num_segments, D] int32 tie counts")
        ws = {SegmentKind.MEAN: "num_segments int32 counts",
              SegmentKind.PROD: groups + " + [num_segments, D] statistics",
              SegmentKind.MAX: ties, SegmentKind.MIN: ties}.get(kind, "none")
        doc = _DOC.format(title=f"Backward of {prefix}Segment{kind.value.capitalize()}Plan",
                          formula=_BWD_FORMULA[kind], order=order, identity="no gradient",
                          workspace=ws)
    else:
        ws = "segment offsets" + ("" if sorted_ids else " + a stable radix sort of the ids")
        formula, ident = _FORMULA[kind]
        doc = _DOC.format(title=f"{'Sorted' if sorted_ids else 'Unsorted'} segment {kind.value}",
                          formula=formula, order=order, identity=ident, workspace=ws)
    base = _SegmentBackward if backward else _SegmentForward
    plan = type(name, (base,), {"KIND": kind, "SORTED": sorted_ids, "partner": partner,
                                "__doc__": doc, "__module__": __name__})
    plan = register_plan(plan)
    cbase = _BackwardCandidate if backward else _ForwardCandidate
    cname = "triton_" + ("sorted" if sorted_ids else "radix_sorted") + "_segment_" + (
        "backward" if backward else "reduce")
    cand = type(f"Triton{name[:-4]}", (cbase,), {"KIND": kind, "SORTED": sorted_ids,
                                                 "name": cname, "__module__": __name__})
    register_candidate(plan)(cand)
    return plan


SegmentSumPlan = _make(SegmentKind.SUM, True, False)
SegmentMeanPlan = _make(SegmentKind.MEAN, True, False)
SegmentMaxPlan = _make(SegmentKind.MAX, True, False)
SegmentMinPlan = _make(SegmentKind.MIN, True, False)
SegmentProdPlan = _make(SegmentKind.PROD, True, False)
UnsortedSegmentSumPlan = _make(SegmentKind.SUM, False, False)
UnsortedSegmentMeanPlan = _make(SegmentKind.MEAN, False, False)
UnsortedSegmentMaxPlan = _make(SegmentKind.MAX, False, False)
UnsortedSegmentMinPlan = _make(SegmentKind.MIN, False, False)
UnsortedSegmentProdPlan = _make(SegmentKind.PROD, False, False)
SegmentSumBackwardPlan = _make(SegmentKind.SUM, True, True)
SegmentMeanBackwardPlan = _make(SegmentKind.MEAN, True, True)
SegmentMaxBackwardPlan = _make(SegmentKind.MAX, True, True)
SegmentMinBackwardPlan = _make(SegmentKind.MIN, True, True)
SegmentProdBackwardPlan = _make(SegmentKind.PROD, True, True)
UnsortedSegmentSumBackwardPlan = _make(SegmentKind.SUM, False, True)
UnsortedSegmentMeanBackwardPlan = _make(SegmentKind.MEAN, False, True)
UnsortedSegmentMaxBackwardPlan = _make(SegmentKind.MAX, False, True)
UnsortedSegmentMinBackwardPlan = _make(SegmentKind.MIN, False, True)
UnsortedSegmentProdBackwardPlan = _make(SegmentKind.PROD, False, True)

FORWARD_PLANS = {(k, s): _p for _p in (
    SegmentSumPlan, SegmentMeanPlan, SegmentMaxPlan, SegmentMinPlan, SegmentProdPlan,
    UnsortedSegmentSumPlan, UnsortedSegmentMeanPlan, UnsortedSegmentMaxPlan,
    UnsortedSegmentMinPlan, UnsortedSegmentProdPlan) for k, s in [(_p.KIND, _p.SORTED)]}
BACKWARD_PLANS = {(k, s): _p for _p in (
    SegmentSumBackwardPlan, SegmentMeanBackwardPlan, SegmentMaxBackwardPlan,
    SegmentMinBackwardPlan, SegmentProdBackwardPlan, UnsortedSegmentSumBackwardPlan,
    UnsortedSegmentMeanBackwardPlan, UnsortedSegmentMaxBackwardPlan,
    UnsortedSegmentMinBackwardPlan, UnsortedSegmentProdBackwardPlan) for k, s in
    [(_p.KIND, _p.SORTED)]}
