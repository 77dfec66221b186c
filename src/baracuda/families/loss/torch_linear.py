"""torch.nn.functional.linear_cross_entropy on the fused, chunked plans, differentiable in
input, linear_weight and linear_bias.

Class-index targets with a (C, H) linear_weight take the fused path: the [tokens, classes]
logits are never held whole (LinearCrossEntropyPlan, chunked over tokens). When a backward is
certain to follow (a scalar loss, grad mode, an operand that requires grad) the forward
computes the gradients too, for a unit upstream gradient, and the backward only scales them
by grad_output (no traffic when it is 1), as Liger-Kernel does; otherwise (reduction 'none',
no gradient) the forward computes the loss only and the backward recomputes the logits chunk
by chunk (LinearCrossEntropyBackwardPlan).

Probability targets and K-dimensional linear weights (C, d1, ..., H) take torch's reference
composition (F.linear, then this family's cross_entropy): correct, not memory-saving.

Extras, keyword-only (torch has neither): `softcap` (logits = softcap * tanh(logits /
softcap), Gemma-2 style) and `z_loss` (coefficient of logsumexp(logits)^2 per kept token,
added to the loss and reduced as Liger's `lse_square_scale` and PaLM's z-loss are: averaged
over kept tokens for 'mean', not class-weighted); `return_z_loss=True` returns (loss, z-loss
part) as Liger's `return_z_loss` does; the z-loss part is for logging (no gradient flows
through it; the total loss carries the z-loss gradient). `options` (torch's
LinearCrossEntropyOptions) is accepted; its `batch_chunk_size`, when set, is the chunk.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...backends.torch_ops import define_op, run_plan
from ...backends.triton_support import sm_count
from ...core import validate as V
from ...core.runtime import cdiv
from .kernels import scale_unless_one_kernel
from .plans_linear import LinearCrossEntropyBackwardPlan, LinearCrossEntropyPlan

__all__ = ["linear_cross_entropy"]

_REDUCTIONS = ("none", "mean", "sum")


def _desc(plan, input, weight_lin, target, bias, weight, reduction, ignore_index, eps, cap,
          zc, chunk):
    n, h = input.shape
    return plan.descriptor_type.cached(n, h, weight_lin.shape[0], input.dtype, target.dtype,
                                       reduction, bias is not None, weight is not None,
                                       ignore_index, eps, cap, zc, chunk)


def _loss_like(input, reduction):
    return input.new_empty((input.shape[0],) if reduction == "none" else ())


def _traced(t: torch.Tensor) -> bool:
    """Under torch.compile / aot tracing tensors are fake or functional wrappers."""
    return type(t) is not torch.Tensor


def _scale_grad(grad: torch.Tensor, grad_loss: torch.Tensor) -> None:
    """grad *= grad_loss (a scalar) in place; no memory traffic when grad_loss == 1 (the
    gradients are this op's own fresh contiguous outputs)."""
    n = grad.numel()
    if n:
        block = 4096
        scale_unless_one_kernel[(min(cdiv(n, block), 4 * sm_count()),)](
            grad, grad_loss, n, BLOCK=block, num_warps=8)


def _dense(weight):
    # the kernels read the class weights as a dense vector (C elements: a cheap copy)
    return weight if weight is None or weight.is_contiguous() else weight.contiguous()


# -- forward only / recomputing backward -----------------------------------------------------
def _forward(input: torch.Tensor, linear_weight: torch.Tensor, target: torch.Tensor,
             linear_bias: torch.Tensor | None, weight: torch.Tensor | None, reduction: str,
             ignore_index: int, label_smoothing: float, softcap: float, z_loss: float,
             chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    opts = (reduction, ignore_index, label_smoothing, softcap, z_loss, chunk)
    loss, z = _loss_like(input, reduction), _loss_like(input, reduction)
    weight = _dense(weight)
    desc = _desc(LinearCrossEntropyPlan, input, linear_weight, target, linear_bias, weight,
                 *opts)
    run_plan(LinearCrossEntropyPlan, desc, LinearCrossEntropyPlan.args_type(
        input, linear_weight, target, linear_bias, weight, loss, z))
    return loss, z


def _forward_fake(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                  label_smoothing, softcap, z_loss, chunk):
    return _loss_like(input, reduction), _loss_like(input, reduction)


def _grads_like(input, linear_weight, linear_bias, need):
    return (torch.empty_like(input, memory_format=torch.contiguous_format) if need[0]
            else input.new_empty(0),
            torch.empty_like(linear_weight, memory_format=torch.contiguous_format) if need[1]
            else input.new_empty(0),
            torch.empty_like(linear_bias, memory_format=torch.contiguous_format)
            if need[2] and linear_bias is not None else input.new_empty(0))


def _present(grads, need):
    return [g if n else None for g, n in zip(grads, need)]


def _backward(grad: torch.Tensor, input: torch.Tensor, linear_weight: torch.Tensor,
              target: torch.Tensor, linear_bias: torch.Tensor | None,
              weight: torch.Tensor | None, reduction: str, ignore_index: int,
              label_smoothing: float, softcap: float, z_loss: float, chunk: int,
              need_input: bool, need_weight: bool,
              need_bias: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    opts = (reduction, ignore_index, label_smoothing, softcap, z_loss, chunk)
    need = (need_input, need_weight, need_bias and linear_bias is not None)
    grads = _grads_like(input, linear_weight, linear_bias, need)
    weight = _dense(weight)
    desc = _desc(LinearCrossEntropyBackwardPlan, input, linear_weight, target, linear_bias,
                 weight, *opts)
    run_plan(LinearCrossEntropyBackwardPlan, desc, LinearCrossEntropyBackwardPlan.args_type(
        grad, input, linear_weight, target, linear_bias, weight, *_present(grads, need)))
    return grads


def _backward_fake(grad, input, linear_weight, target, linear_bias, weight, reduction,
                   ignore_index, label_smoothing, softcap, z_loss, chunk, need_input,
                   need_weight, need_bias):
    need = (need_input, need_weight, need_bias and linear_bias is not None)
    return _grads_like(input, linear_weight, linear_bias, need)


_bwd_op = define_op("linear_cross_entropy_backward", _backward, _backward_fake)


def _needs(ctx) -> tuple[bool, bool, bool]:
    need = ctx.needs_input_grad
    return bool(need[0]), bool(need[1]), bool(need[3])


def _setup(ctx, inputs, output):
    input, linear_weight, target, linear_bias, weight, *params = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(input, linear_weight, target, linear_bias, weight)
    ctx.params = params


def _autograd(ctx, grad_loss, _grad_z):
    input, linear_weight, target, linear_bias, weight = ctx.saved_tensors
    need = _needs(ctx)
    dx = dw = db = None
    if grad_loss is not None and any(need):
        dx, dw, db = _bwd_op(grad_loss, input, linear_weight, target, linear_bias, weight,
                             *ctx.params, *need)
    return (dx if need[0] else None, dw if need[1] else None, None,
            db if need[2] and linear_bias is not None else None, None,
            *(None,) * len(ctx.params))


_op = define_op("linear_cross_entropy", _forward, _forward_fake, backward=_autograd,
                setup_context=_setup)


# -- fused: the forward computes the gradients -----------------------------------------------
def _fused(input: torch.Tensor, linear_weight: torch.Tensor, target: torch.Tensor,
           linear_bias: torch.Tensor | None, weight: torch.Tensor | None, reduction: str,
           ignore_index: int, label_smoothing: float, softcap: float, z_loss: float,
           chunk: int, need_input: bool, need_weight: bool, need_bias: bool,
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    opts = (reduction, ignore_index, label_smoothing, softcap, z_loss, chunk)
    need = (need_input, need_weight, need_bias and linear_bias is not None)
    loss, z = _loss_like(input, reduction), _loss_like(input, reduction)
    grads = _grads_like(input, linear_weight, linear_bias, need)
    weight = _dense(weight)
    desc = _desc(LinearCrossEntropyPlan, input, linear_weight, target, linear_bias, weight,
                 *opts)
    run_plan(LinearCrossEntropyPlan, desc, LinearCrossEntropyPlan.args_type(
        input, linear_weight, target, linear_bias, weight, loss, z, *_present(grads, need)))
    return loss, z, *grads


def _fused_fake(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                label_smoothing, softcap, z_loss, chunk, need_input, need_weight, need_bias):
    need = (need_input, need_weight, need_bias and linear_bias is not None)
    return (_loss_like(input, reduction), _loss_like(input, reduction),
            *_grads_like(input, linear_weight, linear_bias, need))


def _fused_setup(ctx, inputs, output):
    input, linear_weight, target, linear_bias, weight, *params = inputs
    for out in output[1:]:
        ctx.mark_non_differentiable(out)
    # the gradient outputs get no gradient: unmaterialized, autograd would zero-fill them
    ctx.set_materialize_grads(False)
    ctx.params = params
    ctx.traced = _traced(output[0])
    grads = tuple(output[2:])
    if ctx.traced:  # graphs stay functional: the backward is grads * grad_loss
        ctx.save_for_backward(input, linear_weight, target, linear_bias, weight, *grads)
        return
    ctx.save_for_backward(input, linear_weight, target, linear_bias, weight)
    # eager: kept as attributes, not saved, so the first backward may scale them in place
    # and hand them on without a copy
    ctx.grads = grads


def _fused_autograd(ctx, grad_loss, *_unused):
    need = ctx.params[-3:]
    tail = (None,) * len(ctx.params)
    if grad_loss is None:  # the loss itself received no gradient
        return (None,) * 5 + tail
    if ctx.traced:
        grads = [g * grad_loss for g in ctx.saved_tensors[5:]]
    else:
        grads, ctx.grads = ctx.grads, None
        if grads is None:
            # a second backward through the same graph (retain_graph=True): the first gave
            # its gradients away, so recompute them
            grads = _bwd_op(grad_loss, *ctx.saved_tensors, *ctx.params)
        else:
            for g, n in zip(grads, need):
                if n:
                    _scale_grad(g, grad_loss)
    dx, dw, db = (g if n else None for g, n in zip(grads, need))
    return dx, dw, None, db, None, *tail


_fused_op = define_op("linear_cross_entropy_fused", _fused, _fused_fake,
                      backward=_fused_autograd, setup_context=_fused_setup)


# -- the torch function ----------------------------------------------------------------------
def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check(input, linear_weight, target, linear_bias, weight, reduction, label_smoothing):
    """torch's own checks and messages (its reference path's, then cross_entropy's); returns
    out_features and the logits' shape."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    out_features = tuple(linear_weight.shape[1:-1])
    classes = linear_weight.shape[0]
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and input.dim() == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {input.shape[-1]}), got unbatched input with shape "
            f"{tuple(input.shape)}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if linear_weight.dtype != input.dtype:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{_name(input.dtype)} != {_name(linear_weight.dtype)}")
    for t in (linear_bias, weight):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_name(input.dtype).capitalize()} but "
                               f"found {_name(t.dtype).capitalize()}")
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    return out_features, (*input.shape[:-1], classes, *out_features)


def _z_term(logits, target, reduction, ignore_index, z_loss, prob):
    """The z-loss on materialized logits (the composed path)."""
    lse = torch.logsumexp(logits, 1 if logits.dim() >= 2 else 0)
    keep = torch.ones_like(lse) if prob else (target != ignore_index).to(lse.dtype)
    zl = z_loss * lse * lse * keep
    if reduction == "none":
        return zl
    return zl.sum() / keep.sum() if reduction == "mean" else zl.sum()


def _composed(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
              label_smoothing, softcap, z_loss, logits_shape, prob):
    """Probability targets, K-dimensional weights: torch's composition, on this family's
    cross_entropy (the logits are materialized)."""
    from .torch_api import cross_entropy  # at call time: torch_api imports this module

    flat_w = linear_weight.reshape(-1, input.shape[-1])
    flat_b = linear_bias.reshape(-1) if linear_bias is not None else None
    logits = F.linear(input, flat_w, flat_b).reshape(logits_shape)
    if softcap:
        logits = softcap * torch.tanh(logits / softcap)
    loss = cross_entropy(logits, target, weight, ignore_index=ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)
    if not z_loss:
        return loss, torch.zeros_like(loss).detach()
    z = _z_term(logits, target, reduction, ignore_index, z_loss, prob)
    return loss + z, z.detach()


def _check_index_target(input, linear_weight, target, ignore_index):
    """Class-index target checks (torch's messages); returns the target to use."""
    if target.is_floating_point() or target.dtype not in (torch.int64, torch.int32,
                                                          torch.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_name(target.dtype).capitalize()}")
    if input.dim() == 2 and tuple(target.shape) != tuple(input.shape[:1]):
        got = target.shape[0] if target.dim() else 1
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({got}).")
    if input.dim() == 1 and target.dim() != 0:
        raise RuntimeError("expected a 0-dim class-index target for unbatched input, got "
                           f"shape {tuple(target.shape)}")
    if not target.is_cuda and target.numel():
        # CUDA kernels assert on the device instead (no sync per call)
        bad = V.first_out_of_range(target, linear_weight.shape[0], ignore_index)
        if bad is not None:
            raise IndexError(f"Target {bad} is out of bounds.")
    # uint8 class indices: the plans read i32 / i64 (a copy of N bytes)
    return target.long() if target.dtype == torch.uint8 else target


def linear_cross_entropy(
        input: torch.Tensor, linear_weight: torch.Tensor, target: torch.Tensor, *,
        linear_bias: torch.Tensor | None = None, weight: torch.Tensor | None = None,
        reduction: str = "mean", ignore_index: int | None = None, label_smoothing: float = 0.0,
        options=None, softcap: float | None = None, z_loss: float = 0.0,
        return_z_loss: bool = False):
    """torch.nn.functional.linear_cross_entropy (cross_entropy(linear(input, linear_weight,
    linear_bias), target, ...)) fused and chunked over tokens; extras `softcap`, `z_loss`,
    `return_z_loss` (keyword-only; see the module docstring)."""
    label_smoothing = float(label_smoothing)
    out_features, logits_shape = _check(input, linear_weight, target, linear_bias, weight,
                                        reduction, label_smoothing)
    prob = tuple(target.shape) == logits_shape
    if prob and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else int(ignore_index)
    if not label_smoothing > 0.0:  # torch smooths only when > 0 (NaN and negatives: none)
        label_smoothing = 0.0
    cap = 0.0 if softcap is None else float(softcap)
    if softcap is not None and not cap > 0.0:
        raise ValueError(f"linear_cross_entropy: softcap must be > 0 or None, got {softcap!r}")
    z_loss = float(z_loss)
    if not z_loss >= 0.0:  # NaN too
        raise ValueError(f"linear_cross_entropy: z_loss must be >= 0, got {z_loss!r}")
    if prob or out_features:
        loss, z = _composed(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, label_smoothing, cap, z_loss, logits_shape, prob)
        return (loss, z) if return_z_loss else loss
    target = _check_index_target(input, linear_weight, target, ignore_index)
    if weight is not None and weight.requires_grad and torch.is_grad_enabled():
        raise RuntimeError("The function 'nll_loss_forward' is not differentiable with respect "
                           "to argument 'weight'. This input cannot have requires_grad True.")
    batched = input.dim() == 2
    x, t = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
    chunk = int(getattr(options, "batch_chunk_size", None) or 0)
    args = (x, linear_weight, t, linear_bias, weight, reduction, ignore_index, label_smoothing,
            cap, z_loss, chunk)
    grad_on = torch.is_grad_enabled()
    need = (grad_on and input.requires_grad, grad_on and linear_weight.requires_grad,
            grad_on and linear_bias is not None and linear_bias.requires_grad)
    if any(need) and reduction != "none":
        loss, z = _fused_op(*args, *need)[:2]
    else:
        loss, z = _op(*args)
    if not batched and reduction == "none":
        loss, z = loss.squeeze(0), z.squeeze(0)
    # the z-loss part is for logging: its gradient flows through the total loss
    return (loss, z.detach()) if return_z_loss else loss
