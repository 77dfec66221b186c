"""Float64 reference of the fused linear + cross-entropy: torch's linear and cross_entropy on
the CPU, with the soft-cap and z-loss terms written out (the oracle for tests and specs)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _f64(t, grad: bool = False):
    if t is None:
        return None
    return t.detach().to("cpu", torch.float64).requires_grad_(grad)


def linear_cross_entropy(x, w_lin, t, b, w, reduction: str = "mean", ignore_index: int = -100,
                         label_smoothing: float = 0.0, softcap: float = 0.0,
                         z_loss: float = 0.0, grad=None):
    """(loss, z-loss part) and, when `grad` is given ("ones" for the unit gradient, or the
    upstream gradient), (dx, dW, db) too."""
    want = grad is not None
    xr, wr, br = _f64(x, want), _f64(w_lin, want), _f64(b, want and b is not None)
    tt = t.detach().to("cpu", torch.int64)
    logits = F.linear(xr, wr, br)
    if softcap:
        logits = softcap * torch.tanh(logits / softcap)
    ce = F.cross_entropy(logits, tt, _f64(w), ignore_index=ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)
    keep = (tt != ignore_index).to(torch.float64)
    zl = z_loss * torch.logsumexp(logits, -1) ** 2 * keep if logits.numel() else keep * 0
    if reduction == "mean":
        z = zl.sum() / keep.sum() if z_loss else zl.sum()
    elif reduction == "sum":
        z = zl.sum()
    else:
        z = zl
    loss = ce + z
    if not want:
        return loss.detach(), z.detach()
    g = torch.ones_like(loss) if isinstance(grad, str) else _f64(grad)
    inputs = [xr, wr] + ([br] if br is not None else [])
    grads = torch.autograd.grad(loss, inputs, g, allow_unused=True)
    grads = [torch.zeros_like(i) if d is None else d for i, d in zip(inputs, grads)]
    return loss.detach(), z.detach(), (*grads, *([None] if br is None else []))
