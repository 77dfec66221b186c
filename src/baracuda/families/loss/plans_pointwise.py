"""Pointwise loss plans (forward and backward): mse, l1, smooth_l1, huber,
binary_cross_entropy (weight), binary_cross_entropy_with_logits (weight, pos_weight), kl_div
(log_target), soft_margin, poisson_nll (log_input, full, eps), gaussian_nll (full, eps),
hinge_embedding (margin), margin_ranking (margin), multilabel_soft_margin (weight).

**Formulas** (torch.nn.functional semantics; x input, y target, c the third operand, z = x - y):
mse z^2 (c z^2 weighted); l1 |z|; smooth_l1 0.5 z^2 / beta if |z| < beta else |z| - beta / 2;
huber 0.5 z^2 if |z| < delta else delta (|z| - delta / 2); bce -c (y max(log x, -100) +
(1 - y) max(log(1 - x), -100)); bce_with_logits c ((1 - y) x + (1 + (pw - 1) y) softplus(-x));
kl_div y log y - y x (exp(y) (y - x) with log_target); soft_margin log(1 + exp(-y x));
poisson_nll exp(x) - y x (x - y log(x + eps) without log_input), plus Stirling's
y log y - y + log(2 pi y) / 2 where y > 1 when full; gaussian_nll (log v + z^2 / v) / 2 with
v = max(var, eps), plus log(2 pi) / 2 when full; hinge_embedding max(0, margin - x) where
y != 1 plus x where y != -1; margin_ranking max(0, -c (x - y) + margin);
multilabel_soft_margin c ((1 - y) x + softplus(-x)), averaged over the last dim.
Reductions: mean divides the sum by the element count, batchmean (kl_div) by the extent of
dim 0, sum adds, none keeps the elementwise losses (per row for multilabel_soft_margin). The
backward writes the gradients torch gives for each operand, at the broadcast shape; a reduced
forward may also write the input's gradient for a unit upstream gradient (`grad_input`, the
fused forward: one pass where forward and backward would read the operands twice).

**Dtypes / shape**: operands {f32, f16, bf16, f64} of one dtype, seen at one shape of rank <= 8
(broadcast views with zero strides welcome) whose joint layout collapses to <= 4 dims; math in
f32 (f64 for f64); losses and gradients written contiguous.

**Workspace**: mean / sum / batchmean forward: one accumulator element per 4096 elements
(per-program partial sums); otherwise 0.

**Precision**: deterministic and bit-stable: each program sums its block in a fixed tree, one
program adds the partials in a fixed order; the backward is elementwise; no atomics.
"""

from __future__ import annotations

from ...backends.triton_support import acc_type, next_pow2, split_f64
from ...core import validate as V
from ...core.errors import Unsupported
from ...core.layout import collapse_dims, row_major_strides
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import OpCategory
from .descriptors_pointwise import (
    KINDS,
    PointwiseLossArgs,
    PointwiseLossBackwardArgs,
    PointwiseLossBackwardDescriptor,
    PointwiseLossDescriptor,
    PointwiseReduction,
)
from .kernels_pointwise import (
    pointwise_loss_bwd_kernel,
    pointwise_loss_kernel,
    pointwise_loss_rows_kernel,
    sum_partials_kernel,
)

#: What the family package re-exports from this module.
__all__ = ["PointwiseLossBackwardPlan", "PointwiseLossPlan"]

#: Most dims the kernels index after collapsing (more: Unsupported; the torch functions copy)
MAX_DIMS = 4
#: Elements per forward program (16 per thread at 8 warps: two 16-byte loads for halves)
FWD_BLOCK, FWD_WARPS = 4096, 8
#: The backward holds up to three operands and three gradients per element: half the block
BWD_BLOCK, BWD_WARPS = 2048, 8


def fwd_warps(ndim: int, heavy: bool = False) -> int:
    """Warps of a forward program: the int64 index math of strided layouts (and the fused
    gradient with weights) take registers, so those spread the block over more threads
    (sm_90a: no spills, <= ~128 registers)."""
    if ndim >= 3:
        return 32
    return 16 if ndim == 2 or heavy else FWD_WARPS


def bwd_warps(ndim: int) -> int:
    return BWD_WARPS if ndim == 1 else 16
#: Tile of the per-row (multilabel none) forward: rows x classes per step
ROWS_TILE = 4096


def joint_layout(shape, tensors) -> tuple[int, list[int], list[list[int]]] | None:
    """(ndim, [S0..S3], per-tensor strides[4]) of tensors seen at `shape`, collapsed jointly
    with a contiguous output so that one flat index walks them all; None past MAX_DIMS."""
    out = row_major_strides(shape)
    cshape, cstrides = collapse_dims(shape, [t.stride() for t in tensors] + [out])
    if len(cshape) > MAX_DIMS:
        return None
    pad = MAX_DIMS - len(cshape)
    dims = [1] * pad + list(cshape)
    return len(cshape), dims, [[0] * pad + list(s) for s in cstrides[:-1]]


def _operands(a) -> list:
    return [t for t in (a.input, a.target, a.extra, a.pos_weight) if t is not None]


def _grad_view(desc, g):
    """grad_loss seen at the elementwise shape (a per-row loss spreads over the last dim)."""
    if desc.reduction is not PointwiseReduction.NONE:
        return None
    if desc.per_row:
        return g.unsqueeze(-1).expand(desc.shape)
    return g


def _check_layout(who: str, desc, tensors) -> None:
    if joint_layout(desc.shape, tensors) is None:
        raise Unsupported(
            f"{who}: the operands' strides at shape {desc.shape} collapse to more than "
            f"{MAX_DIMS} dims; expected at most {MAX_DIMS} (make the operands contiguous)")


def _check_contiguous(who: str, outputs: dict) -> None:
    for name, t in outputs.items():
        if not t.is_contiguous():
            raise Unsupported(f"{who}: {name} must be contiguous, got strides {t.stride()}")


def _slots(a) -> list:
    """(x, y, c, d) pointers; an absent operand passes x (never read)."""
    x = a.input
    return [a.input, a.target, a.extra if a.extra is not None else x,
            a.pos_weight if a.pos_weight is not None else x]


def _constexprs(desc) -> dict:
    return dict(KIND=desc.row.code, HAS_C=desc.has_extra, HAS_D=desc.has_pos_weight,
                LOG=desc.log_input, FULL=desc.full, ACC=acc_type(desc.element))


def _layout_of(desc, a, extra_first=()):
    """Joint layout of [*extra_first, x, y, (c), (d)] with each slot's strides in order."""
    ins = _operands(a)
    ndim, dims, strides = joint_layout(desc.shape, [*extra_first, *ins])
    lead, rest = strides[:len(extra_first)], strides[len(extra_first):]
    slot_strides = [rest[0], rest[1]]
    k = 2
    for present in (desc.has_extra, desc.has_pos_weight):
        if present:
            slot_strides.append(rest[k])
            k += 1
        else:
            slot_strides.append(rest[0])
    return ndim, dims, lead, slot_strides


def launch_forward(desc, a, workspace) -> None:
    n = desc.numel
    ndim, dims, _, st = _layout_of(desc, a)
    flat = [s for slot in st for s in slot]
    p = split_f64(desc.param)
    const = _constexprs(desc)
    x, y, c, d = _slots(a)
    if desc.reduction is PointwiseReduction.NONE and desc.per_row:
        C = desc.shape[-1]
        rows = n // C if C else 0
        if rows == 0:
            return
        block_c = min(next_pow2(max(C, 1)), 1024)
        block_r = max(1, ROWS_TILE // block_c)
        pointwise_loss_rows_kernel[(cdiv(rows, block_r),)](
            x, y, c, d, a.loss, rows, C, *dims[1:], *flat, *p, **const, NDIM=ndim,
            BLOCK_R=block_r, BLOCK_C=block_c, num_warps=fwd_warps(ndim))
        return
    reduce = desc.reduction is not PointwiseReduction.NONE
    grid = cdiv(n, FWD_BLOCK)
    ws = None
    if reduce:
        ws = workspace[: grid * desc.element.compute_kind.torch_dtype.itemsize].view(
            desc.element.compute_kind.torch_dtype) if grid else a.loss
    dx = a.grad_input
    if grid:
        heavy = dx is not None and (desc.has_extra or desc.has_pos_weight)
        pointwise_loss_kernel[(grid,)](
            x, y, c, d, a.loss, ws if reduce else a.loss, dx if dx is not None else a.loss, n,
            *dims[1:], *flat, *p, *split_f64(desc.divisor), **const, REDUCE=reduce,
            NDIM=ndim, BLOCK=FWD_BLOCK, DX=dx is not None, num_warps=fwd_warps(ndim, heavy))
    if reduce:
        sum_partials_kernel[(1,)](ws, a.loss, grid, *split_f64(desc.divisor),
                                  ACC=const["ACC"], BLOCK=1024, num_warps=4)


def launch_backward(desc, a, workspace) -> None:
    n = desc.numel
    if n == 0:
        return
    g = _grad_view(desc, a.grad_loss)
    ndim, dims, lead, st = _layout_of(desc, a, () if g is None else (g,))
    gst = lead[0] if lead else [0, 0, 0, 0]
    flat = [s for slot in st for s in slot]
    x, y, c, d = _slots(a)
    none = desc.reduction is PointwiseReduction.NONE
    div = float(desc.shape[-1]) if none and desc.per_row else (1.0 if none else desc.divisor)
    outs = [a.grad_input, a.grad_target, a.grad_extra]
    if all(o is None for o in outs):
        return
    dx, dy, dc = (o if o is not None else next(t for t in outs if t is not None) for o in outs)
    pointwise_loss_bwd_kernel[(cdiv(n, BWD_BLOCK),)](
        a.grad_loss, x, y, c, d, dx, dy, dc, n, *dims[1:], *gst, *flat,
        *split_f64(desc.param), *split_f64(div), **_constexprs(desc), SCALAR_G=g is None,
        DX=a.grad_input is not None, DY=a.grad_target is not None,
        DC=a.grad_extra is not None, NDIM=ndim, BLOCK=BWD_BLOCK, num_warps=bwd_warps(ndim))


# -- plans -----------------------------------------------------------------------------------
class _PointwisePlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LOSS

    def check_args(self, args) -> None:
        super().check_args(args)
        who = type(self).__name__
        _check_contiguous(who, args.outputs())


@register_plan
class PointwiseLossPlan(_PointwisePlan):
    __doc__ = __doc__
    descriptor_type = PointwiseLossDescriptor
    args_type = PointwiseLossArgs
    partner = "PointwiseLossBackwardPlan"

    def check_args(self, args) -> None:
        super().check_args(args)
        d = self.desc
        if args.grad_input is not None and d.reduction is PointwiseReduction.NONE:
            raise V.InvalidProblem(
                f"{type(self).__name__}: grad_input (the fused gradient) is for reduced losses; "
                f"expected reduction mean, sum or batchmean, got {d.reduction.value}")


@register_plan
class PointwiseLossBackwardPlan(_PointwisePlan):
    __doc__ = __doc__
    descriptor_type = PointwiseLossBackwardDescriptor
    args_type = PointwiseLossBackwardArgs
    partner = "PointwiseLossPlan"
    is_backward = True

    def check_args(self, args) -> None:
        super().check_args(args)
        who = type(self).__name__
        grads = KINDS[self.desc.kind].grads
        for name in ("input", "target", "extra"):
            if getattr(args, f"grad_{name}") is None:
                continue
            if name not in grads or (name == "extra" and not self.desc.has_extra):
                raise V.InvalidProblem(
                    f"{who}: {self.desc.kind.value} has no gradient w.r.t. its {name}; "
                    f"expected grad_{name} None, got a tensor")


# -- candidates ------------------------------------------------------------------------------
@register_candidate(PointwiseLossPlan)
class TritonPointwiseLoss(Candidate):
    name = "triton_pointwise_loss"
    replayable = True  # only Triton launches (backends/launch_replay.py)

    def workspace_size(self, desc) -> int:
        if desc.reduction is PointwiseReduction.NONE:
            return 0
        return cdiv(desc.numel, FWD_BLOCK) * desc.element.compute_kind.torch_dtype.itemsize

    def can_implement(self, desc, args) -> None:
        _check_layout(self.name, desc, _operands(args))

    def launch(self, desc, a, workspace) -> None:
        launch_forward(desc, a, workspace)


@register_candidate(PointwiseLossBackwardPlan)
class TritonPointwiseLossBackward(Candidate):
    name = "triton_pointwise_loss_backward"
    replayable = True

    def can_implement(self, desc, args) -> None:
        g = _grad_view(desc, args.grad_loss)
        _check_layout(self.name, desc, ([] if g is None else [g]) + _operands(args))

    def launch(self, desc, a, workspace) -> None:
        launch_backward(desc, a, workspace)
