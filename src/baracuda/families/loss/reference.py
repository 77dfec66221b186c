"""Float64 references (torch's own functional losses on the CPU): the oracle for tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _f64(t):
    return None if t is None else t.detach().to("cpu", torch.float64)


def _target(t, prob: bool):
    return _f64(t) if prob else t.detach().to("cpu", torch.int64)


def cross_entropy(x, t, w, reduction: str, ignore_index: int, label_smoothing: float,
                  prob: bool, requires_grad: bool = False):
    xr = _f64(x).requires_grad_(requires_grad)
    loss = F.cross_entropy(xr, _target(t, prob), _f64(w), ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    return xr, loss


def cross_entropy_grad(g, x, t, w, reduction, ignore_index, label_smoothing, prob):
    """d loss / d x for upstream gradient g (None = ones, the fused plan's unit gradient)."""
    xr, loss = cross_entropy(x, t, w, reduction, ignore_index, label_smoothing, prob, True)
    g = torch.ones_like(loss) if g is None else _f64(g)
    (dx,) = torch.autograd.grad(loss, xr, g)
    return dx


def cross_entropy_target_grad(g, x, t, w, reduction, ignore_index, label_smoothing):
    """d loss / d t of probability targets for upstream gradient g."""
    tr = _f64(t).requires_grad_(True)
    loss = F.cross_entropy(_f64(x), tr, _f64(w), ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    (dt,) = torch.autograd.grad(loss, tr, _f64(g))
    return dt


def nll_loss(x, t, w, reduction: str, ignore_index: int):
    return F.nll_loss(_f64(x), _target(t, False), _f64(w), ignore_index=ignore_index,
                      reduction=reduction)


def nll_loss_grad(g, shape, t, w, reduction, ignore_index):
    xr = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    loss = F.nll_loss(xr, _target(t, False), _f64(w), ignore_index=ignore_index,
                      reduction=reduction)
    (dx,) = torch.autograd.grad(loss, xr, _f64(g))
    return dx
