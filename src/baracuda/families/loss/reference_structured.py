"""Float64 references of the structured losses (torch's own functional losses on the CPU)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def f64(t, grad: bool = False):
    if t is None:
        return None
    out = t.detach().to("cpu", torch.float64)
    return out.requires_grad_(grad)


def idx(t):
    return t.detach().to("cpu", torch.int64)


def loss_and_grads(fn, floats: list, others: list, g, **kw):
    """fn(*floats, *others, **kw) in float64 and, when g is given, d loss / d floats for the
    upstream gradient g (float64 tensors, in order)."""
    xs = [f64(t, g is not None) for t in floats]
    loss = fn(*xs, *others, **kw)
    if g is None:
        return loss.detach(), []
    grads = torch.autograd.grad(loss, xs, f64(g), allow_unused=True)
    return loss.detach(), [torch.zeros_like(x) if d is None else d for x, d in zip(xs, grads)]


def multi_margin(x, t, w, g, p, margin, reduction):
    return loss_and_grads(lambda a, tt: F.multi_margin_loss(a, tt, p, margin, f64(w),
                                                            reduction=reduction),
                          [x], [idx(t)], g)


def multilabel_margin(x, t, g, reduction):
    return loss_and_grads(lambda a, tt: F.multilabel_margin_loss(a, tt, reduction=reduction),
                          [x], [idx(t)], g)


def cosine_embedding(a, b, t, g, margin, reduction):
    tt = t.detach().to("cpu")
    return loss_and_grads(lambda u, v: F.cosine_embedding_loss(u, v, tt, margin,
                                                               reduction=reduction),
                          [a, b], [], g)


def triplet_margin(a, p, n, g, margin, pnorm, eps, swap, reduction):
    return loss_and_grads(lambda u, v, w: F.triplet_margin_loss(
        u, v, w, margin, pnorm, eps, swap, reduction=reduction), [a, p, n], [], g)


def margin_hinge(dp, dn, ds, g, margin, reduction):
    def fn(u, v, *s):
        neg = torch.minimum(v, s[0]) if s else v
        loss = torch.clamp_min(margin + u - neg, 0)
        return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]
    return loss_and_grads(fn, [dp, dn] + ([ds] if ds is not None else []), [], g)
