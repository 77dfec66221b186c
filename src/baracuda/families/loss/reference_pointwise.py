"""Float64 references of the pointwise losses: torch.nn.functional on float64 copies (weighted
mse / l1 by their formula: the plan's mean divides by the element count, the torch functions
by the weight's sum), gradients by autograd."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from .descriptors_pointwise import PointwiseLossKind as K
from .descriptors_pointwise import PointwiseReduction


def _f64(t):
    return None if t is None else t.detach().to(torch.float64)


def _reduce(v: torch.Tensor, desc) -> torch.Tensor:
    red = desc.reduction
    if red is PointwiseReduction.MEAN:
        return v.mean()
    if red is PointwiseReduction.SUM:
        return v.sum()
    return v


def _loss(desc, x, y, c, d):
    red = desc.reduction.value
    p = desc.param
    kind = desc.kind
    if kind is K.MSE:
        if c is not None:
            return _reduce(c * (x - y) ** 2, desc)
        return F.mse_loss(x, y, reduction=red)
    if kind is K.L1:
        if c is not None:
            return _reduce(c * (x - y).abs(), desc)
        return F.l1_loss(x, y, reduction=red)
    if kind is K.SMOOTH_L1:
        return F.smooth_l1_loss(x, y, reduction=red, beta=p)
    if kind is K.HUBER:
        return F.huber_loss(x, y, reduction=red, delta=p, weight=c)
    if kind is K.BCE:
        return F.binary_cross_entropy(x, y, weight=c, reduction=red)
    if kind is K.BCE_LOGITS:
        return F.binary_cross_entropy_with_logits(x, y, weight=c, pos_weight=d, reduction=red)
    if kind is K.KL_DIV:
        with warnings.catch_warnings():  # torch's note on 'mean' (the plan means the same)
            warnings.simplefilter("ignore")
            return F.kl_div(x, y, reduction=red, log_target=desc.log_input)
    if kind is K.SOFT_MARGIN:
        return F.soft_margin_loss(x, y, reduction=red)
    if kind is K.POISSON_NLL:
        return F.poisson_nll_loss(x, y, log_input=desc.log_input, full=desc.full, eps=p,
                                  reduction=red)
    if kind is K.GAUSSIAN_NLL:
        return F.gaussian_nll_loss(x, y, c, full=desc.full, eps=p, reduction=red)
    if kind is K.HINGE_EMBEDDING:
        return F.hinge_embedding_loss(x, y, margin=p, reduction=red)
    if kind is K.MARGIN_RANKING:
        return F.margin_ranking_loss(x, y, c, margin=p, reduction=red)
    return F.multilabel_soft_margin_loss(x, y, weight=c, reduction=red)


def pointwise_loss(desc, input, target, extra=None, pos_weight=None) -> torch.Tensor:
    """The loss of `desc` (reduced as it says) in float64."""
    with torch.no_grad():
        return _loss(desc, _f64(input), _f64(target), _f64(extra), _f64(pos_weight))


def pointwise_loss_grads(desc, grad_loss, input, target, extra=None, pos_weight=None,
                         wanted=("input", "target", "extra")) -> dict[str, torch.Tensor]:
    """{"grad_<name>": d(sum(loss * grad_loss)) / d(name)} in float64, at the operands'
    (broadcast) shape, for the `wanted` operands."""
    ops = {"input": _f64(input), "target": _f64(target), "extra": _f64(extra)}
    leaves = {}
    for name in wanted:
        if ops[name] is not None:
            ops[name] = ops[name].clone().requires_grad_(True)
            leaves[name] = ops[name]
    with torch.enable_grad():
        loss = _loss(desc, ops["input"], ops["target"], ops["extra"], _f64(pos_weight))
        grads = torch.autograd.grad(loss, list(leaves.values()), _f64(grad_loss),
                                    allow_unused=True)
    return {f"grad_{n}": (g if g is not None else torch.zeros_like(leaves[n]))
            for n, g in zip(leaves, grads)}
