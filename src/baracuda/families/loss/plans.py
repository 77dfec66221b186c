"""Cross-entropy and NLL loss plans (forward, backward, fused loss + gradient).

**Formulas** (torch.nn.functional semantics; p = softmax(x) over the class axis,
lse = logsumexp(x), eps = label_smoothing, C classes, w = class weights or 1):
- per sample, class index t: l = (1 - eps) w[t] (lse - x[t]) + eps / C * sum_c w[c] (lse - x[c]);
  0 when t == ignore_index. A t outside [0, C) fails a device-side assert on CUDA, as in
  torch; under the interpreter the loss and gradient are NaN (the torch functions raise
  torch's IndexError on the host first).
- probability target q: q' = (1 - eps) q + eps / C; l = sum_c w[c] q'[c] (lse - x[c]).
- with a[c] the coefficient of (lse - x[c]) above and A = sum_c a[c]: dl/dx[c] = p[c] A - a[c].
  Probability targets are differentiable too: dl/dq[c] = (1 - eps) w[c] (lse - x[c]) (the
  backward plan's optional grad_target, written in the same pass).
- reduction mean divides by sum of w[t] over kept samples (class indices) or by the number
  of samples (probabilities); sum adds; none keeps the per-sample losses.
- NLL: l = -w[t] x[t] (x holds log-probabilities); dl/dx = -w[t] at t, 0 elsewhere.

**Dtypes / shape**: input (C,), (N, C) or (N, C, d1, ...) up to rank 8, any non-negative
strides, {f32, f16, bf16, f64} with f32 math (f64 for f64); targets i32/i64/u8 class indices or
probabilities of the input's dtype; vocabularies of any size (262,144 tested on the GPU).

**Workspace**: mean / sum forward: (4 + samples) accumulator elements (per-sample losses, then
a one-program reduction); mean backward: 4 elements (the total weight); none: 0.

**Precision**: deterministic and bit-stable on the same hardware: every sample is reduced by
one program in a fixed order, and mean / sum run a fixed-order second stage through the
workspace; no atomics.
"""

from __future__ import annotations

import math

import numpy as np

from ...backends.rows import ASSERT_LAUNCH
from ...backends.triton_support import acc_type, next_pow2, outer_launch_groups
from ...core import validate as V
from ...core.layout import axis_view
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory
from .descriptors import (
    CrossEntropyLossArgs,
    CrossEntropyLossBackwardArgs,
    CrossEntropyLossBackwardDescriptor,
    CrossEntropyLossDescriptor,
    CrossEntropyLossFusedArgs,
    LossReduction,
    NllLossArgs,
    NllLossBackwardArgs,
    NllLossBackwardDescriptor,
    NllLossDescriptor,
)
from .kernels import (
    WS_ROWS,
    ce_kernel,
    finalize_kernel,
    nll_bwd_kernel,
    nll_fwd_kernel,
    weight_total_kernel,
)

#: What the family package re-exports from this module.
__all__ = [
    "CrossEntropyLossBackwardPlan", "CrossEntropyLossFusedPlan", "CrossEntropyLossPlan",
    "NllLossBackwardPlan", "NllLossPlan",
]

#: Longest class line held in registers (a 32K line spills at 16 warps); longer ones loop,
#: the second (gradient) pass re-reading the line from L2.
MAX_SINGLE_BLOCK = 16384


def ce_config(extent: int, element: ElementKind, heavy: bool = False) -> dict:
    """Tile table for ce_kernel: block width, single pass or loop, warps, lines per program.

    Loop: 4096 wide, 8 warps, with L2 hints (first read evict_last, the gradient pass's
    re-read and stores evict_first: the hints are most of the loop's speed). `heavy`
    (probability targets or label smoothing: two more per-lane accumulators) halves the
    elements per thread so that no variant spills on sm_90a.
    """
    f64 = element is ElementKind.F64
    limit = (8192 if f64 else MAX_SINGLE_BLOCK) // (2 if heavy else 1)
    if extent <= limit:
        block = next_pow2(extent)
        warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
        if heavy:
            warps = min(16, warps * 2)
        rows = 4 if block <= 256 else 2 if block <= 512 else 1
        return {"BLOCK": block, "SINGLE": True, "ROWS": rows, "num_warps": warps}
    block = (2048 if f64 else 4096) // (2 if heavy else 1)
    return {"BLOCK": block, "SINGLE": False, "ROWS": 1, "num_warps": 8,
            "KEEP": "evict_last", "STREAM": "evict_first"}


# -- argument checks -------------------------------------------------------------------------
# -- launch helpers --------------------------------------------------------------------------
def _groups(desc, full: dict, per_row: dict):
    """Yield (row_base, n_rows, outer [S1, S2, S3], {name: (view, strides[4], class stride)})."""
    rank1 = len(desc.input_shape) == 1
    shape = (1, desc.num_classes) if rank1 else desc.input_shape
    names, tensors = [], []
    for n, t in full.items():
        names.append(n)
        tensors.append(t.unsqueeze(0) if rank1 else t)
    for n, t in per_row.items():
        names.append(n)
        tensors.append(t.reshape(1, 1) if rank1 else t.unsqueeze(1))
    view = axis_view(shape, tensors, 1)
    base = 0
    for group, oshape, strides in outer_launch_groups(view, tensors):
        n_rows = math.prod(oshape)
        info = {n: (g, list(st), view.axis_strides[k])
                for k, (n, g, st) in enumerate(zip(names, group, strides))}
        yield base, n_rows, list(oshape[1:]), info
        base += n_rows


def _strides(info, name, with_axis: bool) -> list[int]:
    if name not in info:
        return [0] * (5 if with_axis else 4)
    _, st, ax = info[name]
    return [*st, ax] if with_axis else st


#: Class lines whose element offsets can pass 2**31 get 64-bit column indices (WIDE).
WIDE_LIMIT = 2**31


def _wide(desc, info) -> bool:
    full = ("x", "dx", "t", "dt") if getattr(desc, "probability_target", False) else ("x", "dx")
    stride = max([abs(info[n][2]) for n in full if n in info] + [1])
    return desc.num_classes * stride >= WIDE_LIMIT


def _ptr(info, name, default):
    return info[name][0] if name in info else default


def _ws_view(desc, workspace):
    if workspace is None:
        return None
    dt = desc.element.compute_kind.torch_dtype
    n = workspace.numel() // dt.itemsize
    return workspace[: n * dt.itemsize].view(dt)


def _weight_total(desc, target, weight, ws, prob: bool) -> None:
    acc = acc_type(desc.element)
    if prob or desc.rows == 0:
        weight_total_kernel[(1,)](
            ws, ws, ws, desc.rows, desc.num_classes, desc.ignore_index, 1, 1, 1, 0, 0, 0, 0,
            HAS_W=False, PROB=True, ACCUMULATE=False, ACC=acc, BLOCK=16)
        return
    for i, (_, n_rows, outer, info) in enumerate(_groups(desc, {}, {"t": target})):
        weight_total_kernel[(1,)](
            info["t"][0], weight if weight is not None else ws, ws, n_rows, desc.num_classes,
            desc.ignore_index, *outer, *_strides(info, "t", False),
            HAS_W=weight is not None, PROB=False, ACCUMULATE=i > 0, ACC=acc, BLOCK=1024)


def _finalize(desc, ws, loss) -> None:
    finalize_kernel[(1,)](ws, loss, desc.rows, MEAN=desc.reduction is LossReduction.MEAN,
                          ACC=acc_type(desc.element), BLOCK=1024)


def _reduced_loss_mode(desc) -> int:
    return 1 if desc.reduction is LossReduction.NONE else 2


def ce_workspace(desc, loss: bool, grad: bool) -> int:
    acc = desc.element.compute_kind.torch_dtype.itemsize
    red = desc.reduction
    if loss and red is not LossReduction.NONE:
        return (WS_ROWS + desc.rows) * acc
    if grad and red is LossReduction.MEAN:
        return WS_ROWS * acc
    return 0


def launch_ce(desc, x, target, weight, loss=None, grad_input=None, grad_loss=None,
              workspace=None, cfg: dict | None = None, grad_target=None) -> None:
    """Forward (loss), backward (grad_input, and grad_target for probability targets when
    given, from grad_loss) or fused (both, unit gradient)."""
    prob = desc.probability_target
    mean = desc.reduction is LossReduction.MEAN
    ws = _ws_view(desc, workspace)
    loss_mode = 0 if loss is None else _reduced_loss_mode(desc)
    if grad_input is None:
        grad_mode = 0
    elif grad_loss is None:
        grad_mode = 1
    else:
        grad_mode = 2 if desc.reduction is LossReduction.NONE else 3
    if mean and (loss_mode == 2 or grad_mode != 0):
        _weight_total(desc, target, weight, ws, prob)
    if desc.rows > 0:
        heavy = prob or float(getattr(desc, "label_smoothing", 0.0)) > 0.0
        cfg = dict(cfg or ce_config(desc.num_classes, desc.element, heavy))
        rows_per_prog, warps = cfg.pop("ROWS"), cfg.pop("num_warps")
        full = {"x": x}
        per_row = {}
        if prob:
            full["t"] = target
        else:
            per_row["t"] = target
        if grad_input is not None:
            full["dx"] = grad_input
        if grad_target is not None:
            full["dt"] = grad_target
        if loss_mode == 1:
            per_row["l"] = loss
        if grad_mode == 2:
            per_row["g"] = grad_loss
        eps = float(getattr(desc, "label_smoothing", 0.0))
        eps_hi = float(np.float32(eps))
        dummy = x
        for base, n_rows, outer, info in _groups(desc, full, per_row):
            ce_kernel[(cdiv(n_rows, rows_per_prog),)](
                info["x"][0], info["t"][0], weight if weight is not None else dummy,
                _ptr(info, "g", grad_loss if grad_loss is not None else dummy),
                _ptr(info, "l", loss if loss is not None else dummy),
                _ptr(info, "dx", dummy), _ptr(info, "dt", dummy),
                ws if ws is not None else dummy,
                n_rows, base, desc.num_classes, desc.ignore_index, eps_hi, eps - eps_hi,
                *outer, *_strides(info, "x", True), *_strides(info, "t", True),
                *_strides(info, "l", False), *_strides(info, "g", False),
                *_strides(info, "dx", True), *_strides(info, "dt", True),
                PROB=prob, HAS_W=weight is not None, SMOOTH=eps > 0.0, LOSS=loss_mode,
                GRAD=grad_mode, MEAN=mean and grad_mode != 0, ACC=acc_type(desc.element),
                ROWS=rows_per_prog, num_warps=warps, WIDE=_wide(desc, info),
                DT=grad_target is not None, **cfg, **({} if prob else ASSERT_LAUNCH),
            )
    if loss_mode == 2:
        _finalize(desc, ws, loss)


def launch_nll_forward(desc, x, target, weight, loss, workspace) -> None:
    ws = _ws_view(desc, workspace)
    loss_mode = _reduced_loss_mode(desc)
    if desc.reduction is LossReduction.MEAN:
        _weight_total(desc, target, weight, ws, False)
    block_r = 128
    per_row = {"t": target, **({"l": loss} if loss_mode == 1 else {})}
    for base, n_rows, outer, info in _groups(desc, {"x": x}, per_row):
        if n_rows == 0:
            continue
        nll_fwd_kernel[(cdiv(n_rows, block_r),)](
            info["x"][0], info["t"][0], weight if weight is not None else x,
            _ptr(info, "l", loss), ws if ws is not None else x, n_rows, base,
            desc.num_classes, desc.ignore_index, *outer, *_strides(info, "x", True),
            *_strides(info, "t", False), *_strides(info, "l", False),
            HAS_W=weight is not None, LOSS=loss_mode, ACC=acc_type(desc.element), BLOCK_R=block_r,
            num_warps=4, **ASSERT_LAUNCH,
        )
    if loss_mode == 2:
        _finalize(desc, ws, loss)


def launch_nll_backward(desc, grad_loss, target, weight, grad_input, workspace) -> None:
    ws = _ws_view(desc, workspace)
    mean = desc.reduction is LossReduction.MEAN
    if mean:
        _weight_total(desc, target, weight, ws, False)
    none = desc.reduction is LossReduction.NONE
    per_row = {"t": target, **({"g": grad_loss} if none else {})}
    block = min(next_pow2(desc.num_classes), 4096)
    for _, n_rows, outer, info in _groups(desc, {"dx": grad_input}, per_row):
        if n_rows == 0:
            continue
        nll_bwd_kernel[(n_rows,)](
            info["t"][0], weight if weight is not None else grad_input,
            _ptr(info, "g", grad_loss), info["dx"][0], ws if ws is not None else grad_input,
            n_rows, desc.num_classes, desc.ignore_index, *outer, *_strides(info, "t", False),
            *_strides(info, "g", False), *_strides(info, "dx", True),
            HAS_W=weight is not None, GRAD=2 if none else 3, MEAN=mean,
            ACC=acc_type(desc.element), BLOCK=block, num_warps=4 if block <= 1024 else 8,
            WIDE=_wide(desc, info), **ASSERT_LAUNCH,
        )


# -- plans -----------------------------------------------------------------------------------
class _LossPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LOSS

    def check_args(self, args) -> None:
        """The declared operands, and strides the kernels can walk (none negative)."""
        super().check_args(args)
        who = type(self).__name__
        for name, t in args.tensors().items():
            V.check_nonnegative_strides(who, name, t)


@register_plan
class CrossEntropyLossPlan(_LossPlan):
    __doc__ = __doc__
    descriptor_type = CrossEntropyLossDescriptor
    args_type = CrossEntropyLossArgs
    partner = "CrossEntropyLossBackwardPlan"


@register_plan
class CrossEntropyLossBackwardPlan(_LossPlan):
    __doc__ = __doc__
    descriptor_type = CrossEntropyLossBackwardDescriptor
    args_type = CrossEntropyLossBackwardArgs
    partner = "CrossEntropyLossPlan"
    is_backward = True

    def check_args(self, args) -> None:
        super().check_args(args)
        if args.grad_target is not None and not self.desc.probability_target:
            raise V.InvalidProblem(
                f"{type(self).__name__}: grad_target is for probability targets only; class "
                f"indices have no gradient, got a {type(args.grad_target).__name__}")


@register_plan
class CrossEntropyLossFusedPlan(_LossPlan):
    """Cross-entropy loss and its input gradient (for a unit upstream gradient) in one pass
    over the logits: what a training step needs when backward is certain to follow."""

    __doc__ = (__doc__ or "") + "\n" + (_LossPlan.__doc__ or "")
    descriptor_type = CrossEntropyLossDescriptor
    args_type = CrossEntropyLossFusedArgs


@register_plan
class NllLossPlan(_LossPlan):
    __doc__ = __doc__
    descriptor_type = NllLossDescriptor
    args_type = NllLossArgs
    partner = "NllLossBackwardPlan"


@register_plan
class NllLossBackwardPlan(_LossPlan):
    __doc__ = __doc__
    descriptor_type = NllLossBackwardDescriptor
    args_type = NllLossBackwardArgs
    partner = "NllLossPlan"
    is_backward = True


# -- candidates ------------------------------------------------------------------------------
class _TritonLoss(Candidate):
    """`loss` / `grad`: what the plan writes (its workspace). The cross-entropy plans launch
    ce_kernel for the outputs their args hold."""

    replayable = True  # only Triton launches (backends/launch_replay.py)
    loss = grad = False

    def workspace_size(self, desc) -> int:
        return ce_workspace(desc, loss=self.loss, grad=self.grad)

    def launch(self, desc, a, workspace) -> None:
        launch_ce(desc, a.input, a.target, a.weight, loss=getattr(a, "loss", None),
                  grad_input=getattr(a, "grad_input", None),
                  grad_loss=getattr(a, "grad_loss", None), workspace=workspace,
                  grad_target=getattr(a, "grad_target", None))


@register_candidate(CrossEntropyLossPlan)
class TritonCrossEntropyForward(_TritonLoss):
    name = "triton_line_cross_entropy"
    loss = True


@register_candidate(CrossEntropyLossBackwardPlan)
class TritonCrossEntropyBackward(_TritonLoss):
    name = "triton_line_cross_entropy_backward"
    grad = True


@register_candidate(CrossEntropyLossFusedPlan)
class TritonCrossEntropyFused(_TritonLoss):
    name = "triton_line_cross_entropy_fused"
    loss = grad = True


@register_candidate(NllLossPlan)
class TritonNllForward(_TritonLoss):
    name = "triton_gather_nll"
    loss = True

    def launch(self, desc, a, workspace) -> None:
        launch_nll_forward(desc, a.input, a.target, a.weight, a.loss, workspace)


@register_candidate(NllLossBackwardPlan)
class TritonNllBackward(_TritonLoss):
    name = "triton_line_nll_backward"
    grad = True

    def launch(self, desc, a, workspace) -> None:
        launch_nll_backward(desc, a.grad_loss, a.target, a.weight, a.grad_input, workspace)
