"""torch.nn.functional.cross_entropy / nll_loss on baracuda plans, differentiable.

cross_entropy runs CrossEntropyLossFusedPlan when a backward is certain to follow (the input
requires grad under grad mode, reduction mean or sum): the forward then reads the logits once
and writes the loss and the gradient for a unit upstream gradient; the backward only rescales
that gradient in place when the upstream gradient is not 1 (a device-side check, no sync).
Otherwise the forward plan runs and the backward recomputes the softmax from the logits.
Gradients flow to the input and, as in torch, to probability targets and (with probability
targets) to the class weights; class-index targets with a weight that requires grad raise as
torch's nll_loss does.

A class index outside [0, C) other than ignore_index raises torch's IndexError on the CPU (a
host check) and fails a device-side assert on CUDA, as torch's kernels do (no host sync).
"""

from __future__ import annotations

import torch
from torch.nn import _reduction as _Reduction

from ...backends.torch_ops import define_op, run_plan
from ...backends.triton_support import sm_count
from ...core import validate as V
from .kernels import scale_unless_one_kernel
from .plans import (
    CrossEntropyLossBackwardPlan,
    CrossEntropyLossFusedPlan,
    CrossEntropyLossPlan,
    NllLossBackwardPlan,
    NllLossPlan,
)

__all__ = ["cross_entropy", "nll_loss"]


def _run(plan, input, target, weight, options: tuple, *tensors) -> None:
    """Run `plan` on its args (`tensors` in their field order) with the descriptor of these
    operands; `options`: reduction, ignore_index (and label_smoothing). Targets and weights
    come from the caller: run_plan checks them against the descriptor (typed errors,
    `check_args`) on the first call of each argument signature, which holds their shapes,
    strides, dtypes and devices."""
    reduction, *rest = options
    if weight is not None and not weight.is_contiguous():
        # the kernels read the class weights as a dense vector (C elements: a cheap copy)
        dense = weight.contiguous()
        tensors = tuple(dense if t is weight else t for t in tensors)
    desc = plan.descriptor_type.cached(tuple(input.shape), input.dtype, target.dtype, reduction,
                                       weight is not None, *rest)
    run_plan(plan, desc, plan.args_type(*tensors))


def _check_targets(input: torch.Tensor, target: torch.Tensor, ignore_index: int) -> None:
    """CPU: torch's IndexError for the first class index outside [0, C) that is not
    ignore_index. CUDA kernels assert on the device instead (no sync per call)."""
    if target.is_cuda or target.is_floating_point() or target.numel() == 0 or input.dim() == 0:
        return
    bad = V.first_out_of_range(target, input.shape[1 if input.dim() >= 2 else 0], ignore_index)
    if bad is not None:
        raise IndexError(f"Target {bad} is out of bounds.")


def _weight_grad_refused(fn: str, weight: torch.Tensor | None) -> None:
    if weight is not None and weight.requires_grad and torch.is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           "'weight'. This input cannot have requires_grad True.")


def _loss_like(input: torch.Tensor, target: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction != "none" or input.dim() == 0:  # rank 0 is refused by the descriptor
        return input.new_empty(())
    shape = list(input.shape)
    del shape[1 if input.dim() >= 2 else 0]
    return input.new_empty(shape)


# -- cross_entropy ---------------------------------------------------------------------------
def _ce_forward(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
                reduction: str, ignore_index: int, label_smoothing: float) -> torch.Tensor:
    _check_targets(input, target, ignore_index)
    loss = _loss_like(input, target, reduction)
    _run(CrossEntropyLossPlan, input, target, weight, (reduction, ignore_index, label_smoothing),
         input, target, weight, loss)
    return loss


def _ce_forward_fake(input, target, weight, reduction, ignore_index, label_smoothing):
    return _loss_like(input, target, reduction)


def _ce_backward(grad: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
                 weight: torch.Tensor | None, reduction: str, ignore_index: int,
                 label_smoothing: float) -> torch.Tensor:
    dx = torch.empty_like(input, memory_format=torch.contiguous_format)
    _run(CrossEntropyLossBackwardPlan, input, target, weight,
         (reduction, ignore_index, label_smoothing), grad, input, target, weight, dx)
    return dx


def _ce_backward_fake(grad, input, target, weight, reduction, ignore_index, label_smoothing):
    return torch.empty_like(input, memory_format=torch.contiguous_format)


_ce_bwd_op = define_op("cross_entropy_backward", _ce_backward, _ce_backward_fake)


def _ce_backward_target(grad: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
                        weight: torch.Tensor | None, reduction: str, ignore_index: int,
                        label_smoothing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Probability targets: the gradients of the input and of the target, in one pass."""
    dx = torch.empty_like(input, memory_format=torch.contiguous_format)
    dt = torch.empty_like(target, memory_format=torch.contiguous_format)
    _run(CrossEntropyLossBackwardPlan, input, target, weight,
         (reduction, ignore_index, label_smoothing), grad, input, target, weight, dx, dt)
    return dx, dt


def _ce_backward_target_fake(grad, input, target, weight, reduction, ignore_index,
                             label_smoothing):
    return (torch.empty_like(input, memory_format=torch.contiguous_format),
            torch.empty_like(target, memory_format=torch.contiguous_format))


_ce_bwd_target_op = define_op("cross_entropy_backward_target", _ce_backward_target,
                              _ce_backward_target_fake)


def _ce_weight_grad(grad, input, target, weight, reduction, ignore_index, label_smoothing):
    """d loss / d weight (probability targets): sum over samples of q' (lse - x) scale, with
    q' the smoothed target; (lse - x) scale is the target gradient of an unweighted,
    unsmoothed problem (its scale, 1 / N for mean, does not depend on the weight)."""
    _, g = _ce_bwd_target_op(grad, input, target, None, reduction, ignore_index, 0.0)
    classes = input.shape[1 if input.dim() >= 2 else 0]
    q = target * (1.0 - label_smoothing) + label_smoothing / classes if label_smoothing \
        else target
    prod = q * g
    if input.dim() >= 2:
        prod = prod.transpose(0, 1)
    return prod.reshape(classes, -1).sum(1)


def _ce_autograd(ctx, grad):
    """Input gradient; probability targets and their weights get theirs when asked for."""
    input, target, weight = ctx.saved_tensors
    need = ctx.needs_input_grad
    nones = tuple(None for _ in ctx.params)
    dt = dw = None
    if need[1]:  # only probability targets can require grad
        dx, dt = _ce_bwd_target_op(grad, input, target, weight, *ctx.params)
    else:
        dx = _ce_bwd_op(grad, input, target, weight, *ctx.params)
    if weight is not None and need[2]:
        dw = _ce_weight_grad(grad, input, target, weight, *ctx.params)
    return (dx if need[0] else None), dt, dw, *nones


def _save_inputs(ctx, inputs, output):
    input, target, weight, *params = inputs
    # only the shape and dtype of input are needed; a meta-like empty view would do, but
    # saving input keeps the op functional under torch.compile
    ctx.save_for_backward(input, target, weight)
    ctx.params = params


def _autograd(backward_op):
    """The autograd formula of a loss op: its backward op on the saved inputs; no gradient
    for the target, the weight and the options."""
    def backward(ctx, grad):
        input, target, weight = ctx.saved_tensors
        return (backward_op(grad, input, target, weight, *ctx.params), None, None,
                *(None for _ in ctx.params))

    return backward


_ce_op = define_op("cross_entropy", _ce_forward, _ce_forward_fake,
                   backward=_ce_autograd, setup_context=_save_inputs)


def _ce_fused(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
              reduction: str, ignore_index: int,
              label_smoothing: float) -> tuple[torch.Tensor, torch.Tensor]:
    _check_targets(input, target, ignore_index)
    loss = _loss_like(input, target, reduction)
    dx = torch.empty_like(input, memory_format=torch.contiguous_format)
    _run(CrossEntropyLossFusedPlan, input, target, weight,
         (reduction, ignore_index, label_smoothing), input, target, weight, loss, dx)
    return loss, dx


def _ce_fused_fake(input, target, weight, reduction, ignore_index, label_smoothing):
    return (_loss_like(input, target, reduction),
            torch.empty_like(input, memory_format=torch.contiguous_format))


def _scale_grad(grad_input: torch.Tensor, grad_loss: torch.Tensor) -> None:
    """grad_input *= grad_loss (a scalar) in place; no memory traffic when grad_loss == 1."""
    n = grad_input.numel()
    if n == 0:
        return
    if not grad_input.is_contiguous():  # never for the fused op's own output
        grad_input.mul_(grad_loss)
        return
    block = 4096
    # grad_loss is read through its pointer as is (any float dtype, 0-d): no cast or view
    scale_unless_one_kernel[(min((n + block - 1) // block, 4 * sm_count()),)](
        grad_input, grad_loss, n, BLOCK=block, num_warps=8)


def _traced(t: torch.Tensor) -> bool:
    """Under torch.compile / aot tracing tensors are fake or functional wrappers."""
    return type(t) is not torch.Tensor


def _fused_setup(ctx, inputs, output):
    input, target, weight, *params = inputs
    dx = output[1]
    ctx.mark_non_differentiable(dx)
    # dx has no gradient: unmaterialized, autograd would pass a zero-filled tensor the size
    # of the logits, a fill per step
    ctx.set_materialize_grads(False)
    ctx.params = params
    ctx.traced = _traced(dx)
    if ctx.traced:
        # graphs stay functional: the backward is dx * grad_loss (the compiler may fuse it)
        ctx.save_for_backward(input, target, weight, dx)
        return
    ctx.save_for_backward(input, target, weight)
    # eager: kept as an attribute, not saved, so the first backward may rescale it in place
    # and hand it on without a copy
    ctx.dx = dx


def _fused_autograd(ctx, grad_loss, _grad_dx):
    nones = (None,) * 5
    if grad_loss is None:  # the loss itself received no gradient
        return None, *nones
    if ctx.traced:
        input, target, weight, dx = ctx.saved_tensors
        return dx * grad_loss, *nones
    input, target, weight = ctx.saved_tensors
    dx, ctx.dx = ctx.dx, None
    if dx is None:
        # a second backward through the same graph (retain_graph=True): the first one gave
        # its gradient away, so recompute from the logits
        return _ce_bwd_op(grad_loss, input, target, weight, *ctx.params), *nones
    # eager only (traced graphs took the branch above): dx is this op's own fresh output and
    # nobody else holds it, so the in-place scale needs no custom-op dispatch or version bump
    # (this runs on autograd's device thread, where host time is what bounds the step)
    _scale_grad(dx, grad_loss)
    return dx, *nones


_ce_fused_op = define_op("cross_entropy_fused", _ce_fused, _ce_fused_fake,
                         backward=_fused_autograd, setup_context=_fused_setup)


def cross_entropy(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """torch.nn.functional.cross_entropy on CrossEntropyLoss plans; differentiable in input
    and in probability targets and their class weights."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    label_smoothing = float(label_smoothing)
    if not label_smoothing > 0.0:
        # torch raises only for label_smoothing > 1 (NaN and negatives pass its check) and
        # smooths only when it is > 0: a negative or NaN value is no smoothing there, so it is
        # here (the descriptor keeps [0, 1] for the plan API)
        label_smoothing = 0.0
    prob = target.is_floating_point()
    if not prob:
        _weight_grad_refused("nll_loss_forward", weight)
    if prob and input.is_floating_point():
        # probability targets: torch multiplies log_softmax(input) by the target (and the
        # weight), so mixed float dtypes promote there and the loss has the promoted dtype;
        # the plans take one dtype, so the operands are cast to it (differentiably)
        common = torch.promote_types(input.dtype, target.dtype)
        if weight is not None:
            common = torch.promote_types(common, weight.dtype)
        input, target = input.to(common), target.to(common)
        weight = weight.to(common) if weight is not None else None
    args = (input, target, weight, reduction, int(ignore_index), label_smoothing)
    # the fused plan gives the input's gradient only
    others = target.requires_grad or (weight is not None and weight.requires_grad)
    if (torch.is_grad_enabled() and input.requires_grad and not others
            and reduction in ("mean", "sum")):
        return _ce_fused_op(*args)[0]
    return _ce_op(*args)


# -- nll_loss --------------------------------------------------------------------------------
def _nll_forward(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
                 reduction: str, ignore_index: int) -> torch.Tensor:
    _check_targets(input, target, ignore_index)
    loss = _loss_like(input, target, reduction)
    _run(NllLossPlan, input, target, weight, (reduction, ignore_index), input, target, weight,
         loss)
    return loss


def _nll_forward_fake(input, target, weight, reduction, ignore_index):
    return _loss_like(input, target, reduction)


def _nll_backward(grad: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
                  weight: torch.Tensor | None, reduction: str,
                  ignore_index: int) -> torch.Tensor:
    dx = torch.empty_like(input, memory_format=torch.contiguous_format)
    _run(NllLossBackwardPlan, input, target, weight, (reduction, ignore_index), grad, target,
         weight, dx)
    return dx


def _nll_backward_fake(grad, input, target, weight, reduction, ignore_index):
    return torch.empty_like(input, memory_format=torch.contiguous_format)


_nll_bwd_op = define_op("nll_loss_backward", _nll_backward, _nll_backward_fake)


_nll_op = define_op("nll_loss", _nll_forward, _nll_forward_fake,
                    backward=_autograd(_nll_bwd_op), setup_context=_save_inputs)


def nll_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.nll_loss on NllLoss plans; differentiable in input."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    _weight_grad_refused("nll_loss_forward", weight)
    return _nll_op(input, target, weight, reduction, int(ignore_index))


from . import torch_structured as _structured  # noqa: E402 - margin / triplet losses
from .torch_structured import *  # noqa: E402,F403

__all__ += _structured.__all__
from . import torch_pointwise as _pointwise  # noqa: E402 - pointwise losses
from .torch_pointwise import *  # noqa: E402,F403

__all__ += _pointwise.__all__


from . import torch_ctc as _ctc  # noqa: E402 - CTC loss
from .torch_ctc import *  # noqa: E402,F403

__all__ += _ctc.__all__


from .torch_linear import linear_cross_entropy  # noqa: E402 - fused linear + cross-entropy

__all__ += ["linear_cross_entropy"]
