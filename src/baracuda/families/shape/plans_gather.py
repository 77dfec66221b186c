"""TableGatherPlan and TableGatherSumPlan (its gradient), on Triton.

**TableGatherPlan**: y[i] = x[idx[i]] for a host-built int64 table (torch.combinations'
rows, flattened); BLOCK entries per program, int64 offsets.

**TableGatherSumPlan**: dx[j] = the sum of dy at the positions holding x[j] (the inverse
table in CSR form: ptr[n + 1], pos sorted by input element, ascending positions within
one), one lane per input element, in order: deterministic, no atomics; f32 accumulation
(f64 for f64).

**Precision**: the gather is exact; the sums round once per term in the accumulator.
"""

from __future__ import annotations

from ...backends.triton_support import acc_type
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels_gather as K
from .descriptors_gather import (
    GatherArgs,
    GatherDescriptor,
    GatherSumArgs,
    GatherSumDescriptor,
)

GATHER_BLOCK = 1024
SUM_BLOCK = 128


@register_plan
class TableGatherPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = GatherDescriptor
    args_type = GatherArgs
    partner = "TableGatherSumPlan"


@register_plan
class TableGatherSumPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = GatherSumDescriptor
    args_type = GatherSumArgs
    is_backward = True


@register_candidate(TableGatherPlan)
class TritonTableGather(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_table_gather"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee(MathPrecision.EXACT, ElementKind.F64)

    def launch(self, desc, args, workspace) -> None:
        if desc.m == 0:
            return
        K.table_gather_kernel[(cdiv(desc.m, GATHER_BLOCK),)](
            args.x, args.idx, args.y, desc.m, args.x.stride(0), BLOCK=GATHER_BLOCK,
            num_warps=4)


@register_candidate(TableGatherSumPlan)
class TritonTableGatherSum(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_csr_ordered_sum"

    def launch(self, desc, args, workspace) -> None:
        if desc.n == 0:
            return
        K.table_gather_sum_kernel[(cdiv(desc.n, SUM_BLOCK),)](
            args.dy, args.ptr, args.pos, args.dx, desc.n, max(desc.cols, 1), desc.degree,
            args.dy.stride(0), args.dy.stride(1), args.dx.stride(0), BLOCK=SUM_BLOCK,
            ACC=acc_type(desc.element), num_warps=4)
