"""torch.nn.functional's structured losses on baracuda plans, differentiable: multi_margin_loss,
multilabel_margin_loss, cosine_embedding_loss, triplet_margin_loss and
triplet_margin_with_distance_loss.

Each function checks its arguments as torch does (same exception types and messages), brings
its inputs to the plans' (N, D) rows (broadcasting, dtype promotion and reshapes are torch
views or copies outside the custom op, so autograd reduces broadcast gradients itself) and
runs one custom op whose backward is the partner plan. Class indices out of range raise
torch's RuntimeError on the CPU (a host check); CUDA kernels assert on the device.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch.nn import _reduction as _Reduction

from ...backends.torch_ops import define_op, run_plan
from ...core import validate as V
from .plans_structured import (
    CosineEmbeddingLossBackwardPlan,
    CosineEmbeddingLossPlan,
    MarginHingeLossBackwardPlan,
    MarginHingeLossPlan,
    MultilabelMarginLossBackwardPlan,
    MultilabelMarginLossPlan,
    MultiMarginLossBackwardPlan,
    MultiMarginLossPlan,
    TripletMarginLossBackwardPlan,
    TripletMarginLossPlan,
)

__all__ = ["cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss"]


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _Reduction.legacy_get_string(size_average, reduce)
    return reduction


def _number(fn: str, name: str, value, position: int) -> float:
    """torch's TypeError for a non-number scalar argument (a 1-element tensor is a number)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Number, not "
                        f"{type(value).__name__}")
    return float(value)


def _loss_out(x: torch.Tensor, reduction: str) -> torch.Tensor:
    return x.new_empty((x.shape[0],) if reduction == "none" else ())


def _run(plan, desc_args: tuple, *tensors) -> None:
    run_plan(plan, plan.descriptor_type.cached(*desc_args), plan.args_type(*tensors))


def _op(name: str, forward, fake, backward_op, n_inputs: int, n_params: int):
    """A loss custom op: forward(inputs..., params...) -> loss; its backward runs
    `backward_op(grad, inputs..., params...)`, which returns the gradients of the first
    inputs (those that are float tensors) in order."""
    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:n_inputs])
        ctx.params = inputs[n_inputs:]

    def backward(ctx, grad):
        saved = ctx.saved_tensors
        grads = backward_op(grad, *saved, *ctx.params)
        grads = grads if isinstance(grads, (tuple, list)) else (grads,)
        out = [None] * (n_inputs + n_params)
        for i, g in enumerate(grads):
            out[i] = g if ctx.needs_input_grad[i] else None
        return tuple(out)

    return define_op(name, forward, fake, backward=backward, setup_context=setup)


def _empty_like(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


# -- multi_margin_loss -----------------------------------------------------------------------
def _mm_forward(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
                p: int, margin: float, reduction: str) -> torch.Tensor:
    loss = _loss_out(input, reduction)
    _run(MultiMarginLossPlan, (tuple(input.shape), input.dtype, reduction, target.dtype, p,
                               margin, weight is not None), input, target, weight, loss)
    return loss


def _mm_forward_fake(input, target, weight, p, margin, reduction):
    return _loss_out(input, reduction)


def _mm_backward(grad: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
                 weight: torch.Tensor | None, p: int, margin: float,
                 reduction: str) -> torch.Tensor:
    dx = _empty_like(input)
    _run(MultiMarginLossBackwardPlan, (tuple(input.shape), input.dtype, reduction, target.dtype,
                                       p, margin, weight is not None),
         grad, input, target, weight, dx)
    return dx


def _mm_backward_fake(grad, input, target, weight, p, margin, reduction):
    return _empty_like(input)


_mm_bwd_op = define_op("multi_margin_loss_backward", _mm_backward, _mm_backward_fake)
_mm_op = _op("multi_margin_loss", _mm_forward, _mm_forward_fake, _mm_bwd_op, 3, 3)


def _check_rows(input: torch.Tensor) -> None:
    """torch's multi/multilabel margin check: a scalar (one class), (C,) or (N, C), C > 0."""
    if input.dim() > 2 or (input.dim() and input.shape[-1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")


def _check_long(target: torch.Tensor) -> None:
    if target.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target.dtype)}")


def _scalar_name(dtype: torch.dtype) -> str:
    return {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
            torch.bfloat16: "BFloat16", torch.int32: "Int", torch.int16: "Short",
            torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool"}.get(dtype, str(dtype))


def multi_margin_loss(input: torch.Tensor, target: torch.Tensor, p: int = 1,
                      margin: float = 1.0, weight: torch.Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.multi_margin_loss; differentiable in input."""
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    margin = _number("multi_margin_loss", "margin", margin, 4)
    _check_rows(input)
    rows = input.shape[0] if input.dim() == 2 else 1
    C = input.shape[-1] if input.dim() else 1
    if target.dim() > 1 or target.numel() != rows:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{rows}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    _check_long(target)
    if weight is not None:
        if weight.numel() != C:
            raise RuntimeError(f"inconsistent weight size, expected {C} but got "
                               f"{list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_scalar_name(input.dtype)} but found "
                               f"{_scalar_name(weight.dtype)}")
        if weight.requires_grad and torch.is_grad_enabled():
            raise RuntimeError("the derivative for 'weight' is not implemented.")
        weight = weight.contiguous()  # C elements, read as a dense vector
    if not target.is_cuda and V.first_out_of_range(target, C) is not None:
        raise RuntimeError("target out of range")
    x2 = input.reshape(rows, C)
    loss = _mm_op(x2, target.reshape(rows), weight, int(p), margin, reduction)
    if reduction == "none" and (input.dim() <= 1 and target.dim() == 0):
        loss = loss.reshape(())
    return loss


# -- multilabel_margin_loss ------------------------------------------------------------------
def _ml_forward(input: torch.Tensor, target: torch.Tensor, reduction: str) -> torch.Tensor:
    loss = _loss_out(input, reduction)
    _run(MultilabelMarginLossPlan, (tuple(input.shape), input.dtype, reduction, target.dtype),
         input, target, loss)
    return loss


def _ml_forward_fake(input, target, reduction):
    return _loss_out(input, reduction)


def _ml_backward(grad: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
                 reduction: str) -> torch.Tensor:
    dx = _empty_like(input)
    _run(MultilabelMarginLossBackwardPlan, (tuple(input.shape), input.dtype, reduction,
                                            target.dtype), grad, input, target, dx)
    return dx


def _ml_backward_fake(grad, input, target, reduction):
    return _empty_like(input)


_ml_bwd_op = define_op("multilabel_margin_loss_backward", _ml_backward, _ml_backward_fake)
_ml_op = _op("multilabel_margin_loss", _ml_forward, _ml_forward_fake, _ml_bwd_op, 2, 1)


def multilabel_margin_loss(input: torch.Tensor, target: torch.Tensor,
                           size_average: bool | None = None, reduce: bool | None = None,
                           reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.multilabel_margin_loss; differentiable in input."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_rows(input)
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    _check_long(target)
    C = input.shape[-1] if input.dim() else 1
    if not target.is_cuda and target.numel():
        if torch.compiler.is_compiling():  # no host read in a graph: a device-side check
            torch._assert_async(((target >= -1) & (target < C)).all(),
                                "argument #2 'target' is out of range")
        elif int(target.min()) < -1 or int(target.max()) >= C:
            raise RuntimeError("argument #2 'target' is out of range")
    rows = input.shape[0] if input.dim() == 2 else 1
    loss = _ml_op(input.reshape(rows, C), target.reshape(rows, C), reduction)
    return loss.reshape(()) if input.dim() <= 1 and reduction == "none" else loss


# -- cosine_embedding_loss -------------------------------------------------------------------
def _ce_forward(input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor,
                margin: float, reduction: str) -> torch.Tensor:
    loss = _loss_out(input1, reduction)
    _run(CosineEmbeddingLossPlan, (tuple(input1.shape), input1.dtype, reduction, target.dtype,
                                   margin), input1, input2, target, loss)
    return loss


def _ce_forward_fake(input1, input2, target, margin, reduction):
    return _loss_out(input1, reduction)


def _ce_backward(grad: torch.Tensor, input1: torch.Tensor, input2: torch.Tensor,
                 target: torch.Tensor, margin: float,
                 reduction: str) -> tuple[torch.Tensor, torch.Tensor]:
    d1, d2 = _empty_like(input1), _empty_like(input2)
    _run(CosineEmbeddingLossBackwardPlan, (tuple(input1.shape), input1.dtype, reduction,
                                           target.dtype, margin),
         grad, input1, input2, target, d1, d2)
    return d1, d2


def _ce_backward_fake(grad, input1, input2, target, margin, reduction):
    return _empty_like(input1), _empty_like(input2)


_cos_bwd_op = define_op("cosine_embedding_loss_backward", _ce_backward, _ce_backward_fake)
_cos_op = _op("cosine_embedding_loss", _ce_forward, _ce_forward_fake, _cos_bwd_op, 3, 2)


def cosine_embedding_loss(input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor,
                          margin: float = 0, size_average: bool | None = None,
                          reduce: bool | None = None, reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.cosine_embedding_loss; differentiable in both inputs (broadcast
    inputs get their gradients summed back by autograd)."""
    reduction = _reduction(size_average, reduce, reduction)
    margin = _number("cosine_embedding_loss", "margin", margin, 4)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = target.dim() + 1
    if input1.dim() != want or input2.dim() != want:
        raise RuntimeError(f"{target.dim()}D target tensor expects {want}D input tensors, but "
                           f"found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")
    shape = torch.broadcast_shapes(input1.shape, input2.shape)
    if target.dim() == 1:
        shape = torch.broadcast_shapes(shape, (target.shape[0], 1))
    dtype = torch.promote_types(input1.dtype, input2.dtype)
    a = input1.to(dtype).expand(shape).reshape(-1, shape[-1])
    b = input2.to(dtype).expand(shape).reshape(-1, shape[-1])
    t = target.reshape(-1).expand(a.shape[0])
    loss = _cos_op(a, b, t, margin, reduction)
    return loss.reshape(()) if target.dim() == 0 and reduction == "none" else loss


# -- triplet_margin_loss ---------------------------------------------------------------------
def _tm_forward(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                margin: float, p: float, eps: float, swap: bool, reduction: str) -> torch.Tensor:
    loss = _loss_out(anchor, reduction)
    _run(TripletMarginLossPlan, (tuple(anchor.shape), anchor.dtype, reduction, margin, p, eps,
                                 swap), anchor, positive, negative, loss)
    return loss


def _tm_forward_fake(anchor, positive, negative, margin, p, eps, swap, reduction):
    return _loss_out(anchor, reduction)


def _tm_backward(grad: torch.Tensor, anchor: torch.Tensor, positive: torch.Tensor,
                 negative: torch.Tensor, margin: float, p: float, eps: float, swap: bool,
                 reduction: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    da, dp, dn = _empty_like(anchor), _empty_like(positive), _empty_like(negative)
    _run(TripletMarginLossBackwardPlan, (tuple(anchor.shape), anchor.dtype, reduction, margin,
                                         p, eps, swap),
         grad, anchor, positive, negative, da, dp, dn)
    return da, dp, dn


def _tm_backward_fake(grad, anchor, positive, negative, margin, p, eps, swap, reduction):
    return _empty_like(anchor), _empty_like(positive), _empty_like(negative)


_tm_bwd_op = define_op("triplet_margin_loss_backward", _tm_backward, _tm_backward_fake)
_tm_op = _op("triplet_margin_loss", _tm_forward, _tm_forward_fake, _tm_bwd_op, 3, 5)


def _check_triplet_dims(anchor, positive, negative) -> None:
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def _check_margin(margin: float) -> None:
    if not margin > 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")


def _triplet(anchor, positive, negative, margin, p, eps, swap, reduction):
    shape = torch.broadcast_shapes(anchor.shape, positive.shape, negative.shape)
    dtype = torch.promote_types(torch.promote_types(anchor.dtype, positive.dtype),
                                negative.dtype)
    width = shape[-1] if shape else 1
    lead = tuple(shape[:-1])
    rows = [t.to(dtype).expand(shape).reshape(math.prod(lead), width)
            for t in (anchor, positive, negative)]
    loss = _tm_op(*rows, margin, p, eps, swap, reduction)
    return loss.reshape(lead) if reduction == "none" else loss


def triplet_margin_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.triplet_margin_loss (p finite and > 0); differentiable in all
    three inputs."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_triplet_dims(anchor, positive, negative)
    margin = _number("triplet_margin_loss", "margin", margin, 4)
    _check_margin(margin)
    p = _number("triplet_margin_loss", "p", p, 5)
    eps = _number("triplet_margin_loss", "eps", eps, 6)
    return _triplet(anchor, positive, negative, margin, p, eps, bool(swap), reduction)


# -- triplet_margin_with_distance_loss -------------------------------------------------------
def _mh_forward(dist_pos: torch.Tensor, dist_neg: torch.Tensor, dist_swap: torch.Tensor | None,
                margin: float, reduction: str) -> torch.Tensor:
    loss = dist_pos.new_empty((dist_pos.shape[0],) if reduction == "none" else ())
    _run(MarginHingeLossPlan, ((dist_pos.shape[0], 1), dist_pos.dtype, reduction, margin,
                               dist_swap is not None), dist_pos, dist_neg, dist_swap, loss)
    return loss


def _mh_forward_fake(dist_pos, dist_neg, dist_swap, margin, reduction):
    return dist_pos.new_empty((dist_pos.shape[0],) if reduction == "none" else ())


def _mh_backward(grad: torch.Tensor, dist_pos: torch.Tensor, dist_neg: torch.Tensor,
                 dist_swap: torch.Tensor | None, margin: float,
                 reduction: str) -> list[torch.Tensor]:
    gp, gn = _empty_like(dist_pos), _empty_like(dist_neg)
    gs = _empty_like(dist_swap) if dist_swap is not None else None
    _run(MarginHingeLossBackwardPlan, ((dist_pos.shape[0], 1), dist_pos.dtype, reduction, margin,
                                       dist_swap is not None),
         grad, dist_pos, dist_neg, dist_swap, gp, gn, gs)
    return [gp, gn] if gs is None else [gp, gn, gs]


def _mh_backward_fake(grad, dist_pos, dist_neg, dist_swap, margin, reduction):
    out = [_empty_like(dist_pos), _empty_like(dist_neg)]
    return out if dist_swap is None else [*out, _empty_like(dist_swap)]


_mh_bwd_op = define_op("margin_hinge_loss_backward", _mh_backward, _mh_backward_fake)
_mh_op = _op("margin_hinge_loss", _mh_forward, _mh_forward_fake, _mh_bwd_op, 3, 2)


def triplet_margin_with_distance_loss(anchor: torch.Tensor, positive: torch.Tensor,
                                      negative: torch.Tensor, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.triplet_margin_with_distance_loss. Without a distance function the
    distance is torch's pairwise_distance (p = 2, eps = 1e-6), fused with the hinge in the
    triplet kernel; a caller's distance function runs on the tensors as given and the hinge
    (and its gradient back into the distances) is the margin-hinge plan."""
    _check_triplet_dims(anchor, positive, negative)
    margin = _number("triplet_margin_with_distance_loss", "margin", margin, 4)
    _check_margin(margin)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if distance_function is None:
        return _triplet(anchor, positive, negative, margin, 2.0, 1e-6, bool(swap), reduction)
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    d_swap = distance_function(positive, negative) if swap else None
    dists = [d for d in (d_pos, d_neg, d_swap) if d is not None]
    shape = torch.broadcast_shapes(*(d.shape for d in dists))
    dtype = dists[0].dtype
    for d in dists[1:]:
        dtype = torch.promote_types(dtype, d.dtype)
    flat = [d.to(dtype).expand(shape).reshape(-1) for d in dists]
    loss = _mh_op(flat[0], flat[1], flat[2] if swap else None, margin, reduction)
    return loss.reshape(shape) if reduction == "none" else loss
