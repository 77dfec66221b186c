"""torch.nn.functional's pointwise losses on the PointwiseLoss plans, differentiable.

Each function does what torch's does before its kernel (argument checks with torch's errors,
legacy size_average / reduce, dtype promotion, broadcasting) and hands one op the operands as
broadcast views of one dtype: the casts and expands stay outside the op, in autograd, so the
gradients of promoted or broadcast operands are cast and summed back by torch itself. The op's
backward writes the gradients torch gives (PointwiseLossBackwardPlan) for the operands that
need one. A reduced loss whose only gradient is the input's takes the fused forward instead:
the loss and the input's gradient (for a unit upstream gradient) in one pass, the backward
scaling that gradient in place only when the upstream gradient is not 1 (a device-side check).

binary_cross_entropy checks input and target lie in [0, 1] on the host for CPU tensors, as
torch's CPU kernel does; on CUDA there is no check (torch asserts on the device), and values
outside give NaN.
"""

from __future__ import annotations

import warnings

import torch
from torch.nn import _reduction as _Reduction

from ...backends.torch_ops import define_op, run_plan
from ...backends.triton_support import sm_count
from ...core import validate as V
from ...core.layout import broadcast_shapes as _fast_broadcast_shapes
from ...core.runtime import cdiv
from .descriptors_pointwise import KINDS, PointwiseLossKind
from .kernels import scale_unless_one_kernel
from .plans_pointwise import PointwiseLossBackwardPlan, PointwiseLossPlan, joint_layout

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "gaussian_nll_loss",
    "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss",
    "mse_loss", "multilabel_soft_margin_loss", "poisson_nll_loss", "smooth_l1_loss",
    "soft_margin_loss",
]

K = PointwiseLossKind


def _desc(cls, x, extra, pos_weight, kind, reduction, param, log_input, full):
    return cls.descriptor_type.cached(kind, tuple(x.shape), x.dtype, reduction,
                                      extra is not None, pos_weight is not None, param,
                                      log_input, full)


def _dense(tensors, shape, grad_seen=None):
    """The operands, copied to dense tensors when their joint layout (with the upstream
    gradient seen at `shape`, when it is read per element) is more than the kernels walk
    (four dims after collapsing); the usual case passes through untouched."""
    present = [t for t in (grad_seen, *tensors) if t is not None and t.shape == shape]
    if joint_layout(shape, present) is not None:
        return tensors
    return [None if t is None else t.contiguous() for t in tensors]


def _loss_shape(x: torch.Tensor, kind: str, reduction: str) -> list[int]:
    if reduction != "none":
        return []
    return list(x.shape[:-1]) if kind == K.MULTILABEL_SOFT_MARGIN.value else list(x.shape)


def _forward(input: torch.Tensor, target: torch.Tensor, extra: torch.Tensor | None,
             pos_weight: torch.Tensor | None, kind: str, reduction: str, param: float,
             log_input: bool, full: bool) -> torch.Tensor:
    loss = input.new_empty(_loss_shape(input, kind, reduction))
    x, y, c, d = _dense([input, target, extra, pos_weight], tuple(input.shape))
    desc = _desc(PointwiseLossPlan, x, c, d, kind, reduction, param, log_input, full)
    run_plan(PointwiseLossPlan, desc, PointwiseLossPlan.args_type(x, y, c, d, loss))
    return loss


def _forward_fake(input, target, extra, pos_weight, kind, reduction, param, log_input, full):
    return input.new_empty(_loss_shape(input, kind, reduction))


def _backward(grad: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
              extra: torch.Tensor | None, pos_weight: torch.Tensor | None, kind: str,
              reduction: str, param: float, log_input: bool, full: bool, need_input: bool,
              need_target: bool, need_extra: bool) -> list[torch.Tensor]:
    shape = tuple(input.shape)
    outs = [torch.empty(shape, dtype=input.dtype, device=input.device) if n else None
            for n in (need_input, need_target, need_extra)]
    seen = None
    if reduction == "none":
        seen = grad.unsqueeze(-1).expand(shape) if grad.dim() < len(shape) else grad
    g, x, y, c, d = _dense([grad, input, target, extra, pos_weight], shape, seen)
    desc = _desc(PointwiseLossBackwardPlan, x, c, d, kind, reduction, param, log_input, full)
    run_plan(PointwiseLossBackwardPlan, desc,
             PointwiseLossBackwardPlan.args_type(g, x, y, c, d, *outs))
    return [o for o in outs if o is not None]


def _backward_fake(grad, input, target, extra, pos_weight, kind, reduction, param, log_input,
                   full, need_input, need_target, need_extra):
    return [torch.empty_like(input, memory_format=torch.contiguous_format)
            for n in (need_input, need_target, need_extra) if n]


_bwd_op = define_op("pointwise_loss_backward", _backward, _backward_fake)


def _setup(ctx, inputs, output):
    input, target, extra, pos_weight, *params = inputs
    ctx.save_for_backward(input, target, extra, pos_weight)
    ctx.params = params


def _autograd(ctx, grad):
    input, target, extra, pos_weight = ctx.saved_tensors
    grads = KINDS[PointwiseLossKind(ctx.params[0])].grads
    need = [ctx.needs_input_grad[i] and name in grads and t is not None
            for i, (name, t) in enumerate(zip(("input", "target", "extra"),
                                              (input, target, extra)))]
    nones = (None,) * (1 + len(ctx.params))
    if not any(need):
        return None, None, None, *nones
    outs = iter(_bwd_op(grad, input, target, extra, pos_weight, *ctx.params, *need))
    return (*(next(outs) if n else None for n in need), *nones)


_op = define_op("pointwise_loss", _forward, _forward_fake, backward=_autograd,
                setup_context=_setup)


# -- fused forward: the loss and the input's gradient in one pass ------------------------------
def _fused(input: torch.Tensor, target: torch.Tensor, extra: torch.Tensor | None,
           pos_weight: torch.Tensor | None, kind: str, reduction: str, param: float,
           log_input: bool, full: bool) -> tuple[torch.Tensor, torch.Tensor]:
    loss = input.new_empty(())
    dx = torch.empty(input.shape, dtype=input.dtype, device=input.device)
    x, y, c, d = _dense([input, target, extra, pos_weight], tuple(input.shape))
    desc = _desc(PointwiseLossPlan, x, c, d, kind, reduction, param, log_input, full)
    run_plan(PointwiseLossPlan, desc, PointwiseLossPlan.args_type(x, y, c, d, loss, dx))
    return loss, dx


def _fused_fake(input, target, extra, pos_weight, kind, reduction, param, log_input, full):
    return input.new_empty(()), torch.empty_like(input, memory_format=torch.contiguous_format)


def _scale_grad(dx: torch.Tensor, grad_loss: torch.Tensor) -> None:
    """dx *= grad_loss (a scalar) in place; no memory traffic when grad_loss == 1."""
    n = dx.numel()
    if n == 0:
        return
    block = 4096
    scale_unless_one_kernel[(min(cdiv(n, block), 4 * sm_count()),)](
        dx, grad_loss, n, BLOCK=block, num_warps=8)


def _fused_setup(ctx, inputs, output):
    input, target, extra, pos_weight, *params = inputs
    dx = output[1]
    ctx.mark_non_differentiable(dx)
    # dx gets no gradient: unmaterialized, autograd would pass a zero-filled tensor
    ctx.set_materialize_grads(False)
    ctx.params = params
    ctx.traced = type(dx) is not torch.Tensor  # fake / functional under torch.compile
    if ctx.traced:
        ctx.save_for_backward(input, target, extra, pos_weight, dx)
        return
    ctx.save_for_backward(input, target, extra, pos_weight)
    # eager: an attribute, not saved, so that the backward may scale it in place and hand it
    # on without a copy (it is this op's own fresh output, held by nobody else)
    ctx.dx = dx


def _fused_autograd(ctx, grad_loss, _grad_dx):
    nones = (None,) * (3 + len(ctx.params))
    if grad_loss is None:
        return None, *nones
    if ctx.traced:
        *_, dx = ctx.saved_tensors
        return dx * grad_loss, *nones
    dx, ctx.dx = ctx.dx, None
    if dx is None:
        # a second backward through the graph (retain_graph=True): the first gave dx away
        input, target, extra, pos_weight = ctx.saved_tensors
        return _bwd_op(grad_loss, input, target, extra, pos_weight, *ctx.params, True, False,
                       False)[0], *nones
    _scale_grad(dx, grad_loss)
    return dx, *nones


_fused_op = define_op("pointwise_loss_fused", _fused, _fused_fake, backward=_fused_autograd,
                      setup_context=_fused_setup)


# -- shared argument handling ----------------------------------------------------------------
def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """core's host-fast broadcast_shapes eagerly; torch's under torch.compile (dynamo does not
    trace the former's max(..., default=))."""
    if torch.compiler.is_compiling():
        return tuple(torch.broadcast_shapes(*shapes))
    return _fast_broadcast_shapes(*shapes)


def _legacy(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _Reduction.legacy_get_string(size_average, reduce)
    return reduction


def _check_reduction(reduction: str) -> None:
    _Reduction.get_enum(reduction)  # torch's ValueError for an unknown string


def _size_warning(input: torch.Tensor, target: torch.Tensor) -> None:
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.", stacklevel=3)


def _not_differentiable(fn: str, arg: str, t: torch.Tensor | None) -> None:
    if t is not None and t.requires_grad and torch.is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


def _run(kind: PointwiseLossKind, tensors: list, reduction: str, dtype: torch.dtype | None = None,
         extra=None, pos_weight=None, param: float | None = None, log_input: bool = False,
         full: bool = False) -> torch.Tensor:
    """Promote (to `dtype`, or torch's result type of the operands), broadcast, run the op."""
    ops = [t for t in (*tensors, extra, pos_weight) if t is not None]
    if dtype is None:
        dtype = ops[0].dtype
        for t in ops[1:]:
            dtype = torch.promote_types(dtype, t.dtype)
    shape = broadcast_shapes(*(t.shape for t in ops))
    cast = [None if t is None else t.to(dtype).expand(shape)
            for t in (*tensors, extra, pos_weight)]
    x, y, c, d = cast
    default = KINDS[kind].param
    p = float(param if param is not None else default[1] if default else 0.0)
    args = (x, y, c, d, kind.value, reduction, p, bool(log_input), bool(full))
    # a reduced loss whose only gradient is the input's: the loss and that gradient in one
    # pass over the operands (the backward rescales it, in place and only when not 1)
    if (reduction != "none" and x.requires_grad and torch.is_grad_enabled()
            and not any(t is not None and t.requires_grad for t in (y, c, d))):
        return _fused_op(*args)[0]
    return _op(*args)


def _weighted_mean(kind, input, target, weight, reduction, by_weight_sum: bool, **kw):
    """mse / l1 / huber with a weight (the size of input, as torch requires)."""
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', "
                         "'mean', 'sum'.")
    if reduction == "mean" and by_weight_sum:
        return _run(kind, [input, target], "sum", extra=weight, **kw) / torch.sum(weight)
    return _run(kind, [input, target], reduction, extra=weight, **kw)


# -- the functions ---------------------------------------------------------------------------
def mse_loss(input: torch.Tensor, target: torch.Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: torch.Tensor | None = None) -> torch.Tensor:
    """torch.nn.functional.mse_loss; differentiable in input, target and weight."""
    _size_warning(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    if weight is not None:
        return _weighted_mean(K.MSE, input, target, weight, reduction, True)
    _check_reduction(reduction)
    return _run(K.MSE, [input, target], reduction)


def l1_loss(input: torch.Tensor, target: torch.Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: torch.Tensor | None = None) -> torch.Tensor:
    """torch.nn.functional.l1_loss; differentiable in input, target and weight."""
    _size_warning(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    if weight is not None:
        return _weighted_mean(K.L1, input, target, weight, reduction, True)
    _check_reduction(reduction)
    return _run(K.L1, [input, target], reduction)


def smooth_l1_loss(input: torch.Tensor, target: torch.Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> torch.Tensor:
    """torch.nn.functional.smooth_l1_loss (beta 0 is l1_loss, as in torch)."""
    _size_warning(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return _run(K.L1, [input, target], reduction)
    return _run(K.SMOOTH_L1, [input, target], reduction, param=beta)


def huber_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean",
               delta: float = 1.0, weight: torch.Tensor | None = None) -> torch.Tensor:
    """torch.nn.functional.huber_loss (the loss has input's dtype, as torch's kernel)."""
    _size_warning(input, target)
    if weight is None:
        _check_reduction(reduction)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        return _weighted_mean(K.HUBER, input, target, weight, reduction, False, param=delta,
                              dtype=torch.promote_types(input.dtype, weight.dtype))
    return _run(K.HUBER, [input, target], reduction, dtype=input.dtype, param=delta)


def _check_unit_interval(t: torch.Tensor, name: str) -> None:
    if t.device.type == "cpu" and t.numel():
        V.host_check(((t >= 0) & (t <= 1)).all(), RuntimeError,
                     f"all elements of {name} should be between 0 and 1")


def _dtype_name(dtype: torch.dtype) -> str:
    return {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
            torch.bfloat16: "BFloat16"}.get(dtype, str(dtype).removeprefix("torch."))


def binary_cross_entropy(input: torch.Tensor, target: torch.Tensor,
                         weight: torch.Tensor | None = None, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.binary_cross_entropy; differentiable in input and target."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is deprecated. Please ensure they have the same size.")
    for t in (target, weight):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"Found dtype {_dtype_name(t.dtype)} but expected "
                               f"{_dtype_name(input.dtype)}")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    if weight is not None:
        weight = weight.expand(broadcast_shapes(target.shape, weight.shape))
    _check_unit_interval(input, "input")
    _check_unit_interval(target, "target")
    return _run(K.BCE, [input, target], reduction, extra=weight)


def binary_cross_entropy_with_logits(input: torch.Tensor, target: torch.Tensor,
                                     weight: torch.Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: torch.Tensor | None = None) -> torch.Tensor:
    """torch.nn.functional.binary_cross_entropy_with_logits (pos_weight broadcast over the
    trailing dims as torch does); the loss has target's dtype, as torch's."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    shape = broadcast_shapes(*(t.shape for t in (input, weight, pos_weight) if t is not None))
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    return _run(K.BCE_LOGITS, [input, target], reduction, dtype=target.dtype, extra=weight,
                pos_weight=pos_weight)


def kl_div(input: torch.Tensor, target: torch.Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> torch.Tensor:
    """torch.nn.functional.kl_div (batchmean divides the sum by input.size(0))."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", stacklevel=2)
    if reduction != "batchmean":
        _check_reduction(reduction)
        return _run(K.KL_DIV, [input, target], reduction, log_input=log_target)
    shape = broadcast_shapes(input.shape, target.shape)
    if input.dim() == 0 or (input.dim() == len(shape) and input.shape[0] == shape[0]):
        return _run(K.KL_DIV, [input, target], "batchmean", log_input=log_target)
    # target broadcast beyond input's leading dim: torch still divides by input.size(0)
    return _run(K.KL_DIV, [input, target], "sum", log_input=log_target) / input.size(0)


def soft_margin_loss(input: torch.Tensor, target: torch.Tensor,
                     size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.soft_margin_loss; differentiable in input (torch refuses a target
    that requires grad)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    _not_differentiable("soft_margin_loss", "target", target)
    return _run(K.SOFT_MARGIN, [input, target], reduction, dtype=input.dtype)


def poisson_nll_loss(input: torch.Tensor, target: torch.Tensor, log_input: bool = True,
                     full: bool = False, size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.poisson_nll_loss; differentiable in input and target."""
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    return _run(K.POISSON_NLL, [input, target], reduction, param=eps, log_input=log_input,
                full=full)


def gaussian_nll_loss(input: torch.Tensor, target: torch.Tensor, var: torch.Tensor | float,
                      full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.gaussian_nll_loss (var of input's size, one dim short, or with one
    mismatched extent-1 dim); differentiable in input, target and var."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = torch.full_like(input, float(var))
    elif var.numel():
        V.host_check(~(var < 0).any(), ValueError, "var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = torch.unsqueeze(var, -1)
        elif not (input.dim() == var.dim() and sum(
                b for a, b in zip(input.size(), var.size()) if a != b) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _run(K.GAUSSIAN_NLL, [input, target], reduction, extra=var, param=eps, full=full)


def hinge_embedding_loss(input: torch.Tensor, target: torch.Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.hinge_embedding_loss; differentiable in input."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _run(K.HINGE_EMBEDDING, [input, target.detach()], reduction, dtype=input.dtype,
                param=margin)


def margin_ranking_loss(input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor,
                        margin: float = 0, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.margin_ranking_loss; differentiable in all three operands."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _run(K.MARGIN_RANKING, [input1, input2], reduction, extra=target, param=margin)


def multilabel_soft_margin_loss(input: torch.Tensor, target: torch.Tensor,
                                weight: torch.Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> torch.Tensor:
    """torch.nn.functional.multilabel_soft_margin_loss (the mean over the last dim, then the
    reduction over samples); differentiable in input, target and weight."""
    reduction = _legacy(size_average, reduce, reduction)
    input.size(input.dim() - 1)  # torch's IndexError for a 0-d input
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _run(K.MULTILABEL_SOFT_MARGIN, [input, target], reduction, extra=weight)

