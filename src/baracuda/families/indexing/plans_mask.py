"""Mask plans: MaskedFill, OneHot, and deterministic compaction (Nonzero, MaskedSelect,
MaskedScatter). Data-dependent output sizes come back through a `count` output tensor: the
plans write into capacity-sized outputs and never sync; the torch frontend reads the count."""

from __future__ import annotations

import struct

import torch

from ...backends.grouping import Layout
from ...backends.triton_grouping import exclusive_scan_kernel
from ...backends.triton_support import INTERPRET, next_pow2, outer_launch_groups
from ...core import validate as V
from ...core.errors import Unsupported
from ...core.layout import AxisView, collapse_dims
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from .descriptors import (
    CompactDescriptor,
    MaskedDataDescriptor,
    MaskedFillArgs,
    MaskedFillDescriptor,
    MaskedScatterArgs,
    MaskedSelectArgs,
    NonzeroArgs,
    OneHotArgs,
    OneHotDescriptor,
    check_number,
)
from .kernels_mask import (
    compact_count_kernel,
    compact_write_kernel,
    masked_fill_kernel,
    one_hot_kernel,
)
from .plans import ExactCandidate, IndexingPlan, check_strides

WARPS = 1 if INTERPRET else 4
BLOCK = 1024
def _check_contiguous(who: str, name: str, t) -> None:
    if t.numel() > 1 and not t.is_contiguous():
        raise Unsupported(f"{who}: {name} must be contiguous, got strides {t.stride()}")


@register_plan
class MaskedFillPlan(IndexingPlan):
    """out = input.masked_fill(mask, value) (also masked_fill's backward, with value 0).

    Shapes: input, mask (bool; broadcast views welcome) and out share `shape`; any strides.
    Workspace: none. Precision: exact; deterministic.
    """

    OP_NAME = "masked_fill"
    descriptor_type = MaskedFillDescriptor
    args_type = MaskedFillArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        check_number(type(self).__name__, "value", args.value)


@register_candidate(MaskedFillPlan)
class TritonMaskedFill(ExactCandidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_masked_fill"

    def can_implement(self, desc, args) -> None:
        check_strides(type(self).__name__, args, ("input", "mask", "out"))

    def launch(self, desc, args, workspace) -> None:
        ts = [args.input, args.mask, args.out]
        shape = list(desc.shape) or [1]
        c_shape, c_strides = collapse_dims(shape, [list(t.stride()) or [1] for t in ts])
        view = AxisView(c_shape, c_strides, 1, (0, 0, 0))
        is_float = desc.element.is_float
        value = (struct.unpack("<q", struct.pack("<d", float(args.value)))[0] if is_float
                 else int(args.value))
        for group, gshape, strides in outer_launch_groups(view, ts):
            n = 1
            for e in gshape:
                n *= e
            flat = [s for st in strides for s in st]
            reach = max(sum((e - 1) * abs(s) for e, s in zip(gshape, st)) for st in strides)
            masked_fill_kernel[(cdiv(n, BLOCK),)](*group, n, value, *gshape[1:], *flat,
                                                  IS_FLOAT=is_float, BLOCK=BLOCK,
                                                  WIDE=max(n + BLOCK, reach) >= 1 << 31,
                                                  num_warps=WARPS)


@register_plan
class OneHotPlan(IndexingPlan):
    """out = torch.nn.functional.one_hot(input, num_classes): input [N] int32/int64, out
    [N, num_classes] int64 contiguous. Values outside [0, num_classes) give zero rows here; the
    torch frontend raises first. Workspace: none. Precision: exact; deterministic.
    """

    OP_NAME = "one_hot"
    descriptor_type = OneHotDescriptor
    args_type = OneHotArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        _check_contiguous(type(self).__name__, "out", args.out)


@register_candidate(OneHotPlan)
class TritonOneHot(ExactCandidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_one_hot"

    def launch(self, desc, args, workspace) -> None:
        n, c = desc.num_rows, desc.num_classes
        bc = min(next_pow2(c), 256)
        bn = max(1, 2048 // bc)
        one_hot_kernel[(cdiv(n, bn), cdiv(c, bc))](args.input, args.out, n, c,
                                                   args.input.stride(0) if n else 1,
                                                   BLOCK_N=bn, BLOCK_C=bc, num_warps=WARPS)


def _dims8(shape, t: torch.Tensor | None):
    pad = 8 - len(shape)
    dims = [1] * pad + list(shape)
    st = [0] * pad + (list(t.stride()) if t is not None else [0] * len(shape))
    return dims, st


class _CompactCandidate(ExactCandidate):
    MODE = 0

    def _layout(self, desc) -> Layout:
        return Layout.build([("counts", max(cdiv(desc.numel, BLOCK), 1), torch.int32)])

    def workspace_size(self, desc) -> int:
        return self._layout(desc).nbytes

    def _run(self, desc, workspace, mask, x, src, out, count, out_t=None):
        n = desc.numel
        if n == 0:
            if count is not None:
                count.zero_()
            return
        counts = self._layout(desc).views(workspace)["counts"]
        dims, ms = _dims8(desc.shape, mask)
        _, xs = _dims8(desc.shape, x)
        _, os_ = _dims8(desc.shape, out_t)
        nb = cdiv(n, BLOCK)
        compact_count_kernel[(nb,)](mask, counts, n, *dims[1:], *ms, BLOCK=BLOCK,
                                    num_warps=WARPS)
        exclusive_scan_kernel[(1,)](counts, counts, nb, BLOCK=1024 if INTERPRET else 8192,
                                    num_warps=WARPS if INTERPRET else 16)
        compact_write_kernel[(nb,)](
            mask, x if x is not None else mask, src if src is not None else out, out,
            count if count is not None else out, counts, n, nb, *dims[1:], *ms, *xs, *os_,
            src.stride(0) if src is not None and src.numel() else 1,
            RANK=max(len(desc.shape), 1), MODE=self.MODE, BLOCK=BLOCK, num_warps=WARPS)


@register_plan
class NonzeroPlan(IndexingPlan):
    """torch.nonzero: the coordinates of every nonzero element in row-major order.

    out: int64 [numel, rank] capacity (the first `count` rows are written; a rank-0 input is
    treated as [1]); count: int64 [1]. Deterministic two-pass compaction; workspace: one int32
    per 1024 elements. Precision: exact; deterministic (the order is row-major).
    """

    OP_NAME = "nonzero"
    descriptor_type = CompactDescriptor
    args_type = NonzeroArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        _check_contiguous(type(self).__name__, "out", args.out)

    def is_empty(self, args) -> bool:
        return False  # count is always written


@register_candidate(NonzeroPlan)
class TritonNonzero(_CompactCandidate):
    name = "triton_two_pass_compaction"
    MODE = 0

    def launch(self, desc, args, workspace) -> None:
        self._run(desc, workspace, args.input, None, None, args.out, args.count)


@register_plan
class MaskedSelectPlan(IndexingPlan):
    """torch.masked_select with mask already broadcast to the input's shape (views).

    out: [numel] capacity, the first `count` written in row-major order; count: int64 [1].
    Workspace: one int32 per 1024 elements. Precision: exact; deterministic.
    """

    OP_NAME = "masked_select"
    descriptor_type = MaskedDataDescriptor
    args_type = MaskedSelectArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        _check_contiguous(type(self).__name__, "out", args.out)

    def is_empty(self, args) -> bool:
        return False


@register_candidate(MaskedSelectPlan)
class TritonMaskedSelect(_CompactCandidate):
    name = "triton_two_pass_compaction"
    MODE = 1

    def launch(self, desc, args, workspace) -> None:
        self._run(desc, workspace, args.mask, args.input, None, args.out, args.count)


@register_plan
class MaskedScatterPlan(IndexingPlan):
    """torch.masked_scatter (out of place): out = input, with the masked elements replaced in
    row-major order by source[0], source[1], ... (source 1-D). A too-short source reads no
    memory out of bounds (those elements keep garbage-free zeros is not promised: the torch
    frontend checks the count first, as torch raises).

    Workspace: one int32 per 1024 elements. Precision: exact; deterministic.
    """

    OP_NAME = "masked_scatter"
    descriptor_type = MaskedDataDescriptor
    args_type = MaskedScatterArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        if args.source.dim() != 1:
            raise V.InvalidProblem(f"{type(self).__name__}: source must be 1-D, got shape "
                                   f"{tuple(args.source.shape)}")


@register_candidate(MaskedScatterPlan)
class TritonMaskedScatter(_CompactCandidate):
    name = "triton_two_pass_compaction"
    MODE = 2

    def launch(self, desc, args, workspace) -> None:
        self._run(desc, workspace, args.mask, args.input, args.source, args.out, None,
                  out_t=args.out)
