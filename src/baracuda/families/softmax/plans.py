"""SoftmaxPlan / SoftmaxBackwardPlan and their Triton candidate.

**Formulas**: softmax y = exp(x - max) / sum(exp(x - max)); log_softmax y = x - max - log(sum).
Backward (from the saved y only): softmax dx = y (dy - sum(y dy)); log_softmax
dx = dy - exp(y) sum(dy).

**Dtypes / shape**: {f32, f16, bf16, f64}, rank 1..8, any axis, any non-negative strides
(outer dims collapsed on the host). f16/bf16 compute in f32, f64 in f64.

**Workspace**: none.

**Precision**: deterministic and bit-stable on the same hardware: each line is reduced by one
program in a fixed order; no atomics.
"""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.triton_support import next_pow2, outer_launch_groups
from ...core import validate as V
from ...core.layout import axis_view
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import ElementKind, OpCategory
from .descriptors import (
    SoftmaxArgs,
    SoftmaxBackwardArgs,
    SoftmaxBackwardDescriptor,
    SoftmaxDescriptor,
    SoftmaxKind,
)
from .kernels import softmax_bwd_kernel, softmax_fwd_kernel

#: Longest line held in registers in one pass; longer lines loop over blocks of this size.
MAX_SINGLE_BLOCK = 16384
LOOP_BLOCK = 4096


def launch_config(extent: int, element: ElementKind) -> dict:
    """Tile table: block width, single pass or loop, warps and lines per program."""
    single = extent <= MAX_SINGLE_BLOCK
    block = next_pow2(extent) if single else LOOP_BLOCK
    if element is ElementKind.F64:
        block = min(block, 8192) if not single else block
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    rows = 4 if block <= 256 else 2 if block <= 512 else 1
    return {"BLOCK": block, "SINGLE": single, "ROWS": rows, "num_warps": warps}


def _acc(element: ElementKind):
    return tl.float64 if element is ElementKind.F64 else tl.float32


@register_plan
class SoftmaxPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SOFTMAX
    descriptor_type = SoftmaxDescriptor
    args_type = SoftmaxArgs
    partner = "SoftmaxBackwardPlan"

    def check_args(self, args: SoftmaxArgs) -> None:
        who, d = type(self).__name__, self.desc
        V.check_tensor(who, "x", args.x, d.input_shape, d.element)
        V.check_tensor(who, "y", args.y, d.input_shape, d.element)


@register_plan
class SoftmaxBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SOFTMAX
    descriptor_type = SoftmaxBackwardDescriptor
    args_type = SoftmaxBackwardArgs
    partner = "SoftmaxPlan"
    is_backward = True

    def check_args(self, args: SoftmaxBackwardArgs) -> None:
        who, d = type(self).__name__, self.desc
        for name in ("dy", "y", "dx"):
            V.check_tensor(who, name, getattr(args, name), d.input_shape, d.element)


def _launch(kernel, desc, tensors: list[torch.Tensor]) -> None:
    axis = desc.axis
    view = axis_view(desc.input_shape, tensors, axis)
    cfg = launch_config(view.extent, desc.element)
    rows_per_prog = cfg.pop("ROWS")
    warps = cfg.pop("num_warps")
    for group, shape, strides in outer_launch_groups(view, tensors):
        n_rows = 1
        for s in shape:
            n_rows *= s
        stride_args = []
        for k, st in enumerate(strides):
            stride_args += [*st, view.axis_strides[k]]
        grid = (triton_cdiv(n_rows, rows_per_prog),)
        kernel[grid](
            *group, n_rows, view.extent, *shape[1:], *stride_args,
            LOG=desc.kind is SoftmaxKind.LOG_SOFTMAX, ACC=_acc(desc.element),
            ROWS=rows_per_prog, num_warps=warps, **cfg,
        )


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@register_candidate(SoftmaxPlan)
class TritonSoftmaxForward(Candidate):
    name = "triton_line_softmax"

    def can_implement(self, desc, args) -> None:
        V.check_nonnegative_strides(type(self).__name__, "x", args.x)
        V.check_nonnegative_strides(type(self).__name__, "y", args.y)

    def launch(self, desc, args, workspace) -> None:
        _launch(softmax_fwd_kernel, desc, [args.x, args.y])


@register_candidate(SoftmaxBackwardPlan)
class TritonSoftmaxBackward(Candidate):
    name = "triton_line_softmax_backward"

    def can_implement(self, desc, args) -> None:
        for n in ("dy", "y", "dx"):
            V.check_nonnegative_strides(type(self).__name__, n, getattr(args, n))

    def launch(self, desc, args, workspace) -> None:
        _launch(softmax_bwd_kernel, desc, [args.dy, args.y, args.dx])
