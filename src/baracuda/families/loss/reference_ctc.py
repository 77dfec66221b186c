"""Float64 references of the CTC loss: torch's own ctc_loss on the CPU, and log_alpha (the
forward plan's saved table) by the textbook recursion."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _host(t):
    return t.detach().to("cpu")


def ctc_loss(lp, targets, il, tl, blank, reduction, zero_infinity, g=None):
    """(loss, d loss / d log_probs for upstream gradient g, or None)."""
    x = _host(lp).to(torch.float64).requires_grad_(g is not None)
    loss = F.ctc_loss(x, _host(targets).long(), _host(il), _host(tl), blank=blank,
                      reduction=reduction, zero_infinity=zero_infinity)
    if g is None:
        return loss.detach(), None
    (dx,) = torch.autograd.grad(loss, x, _host(g).to(torch.float64))
    return loss.detach(), dx


def targets_of(targets, tl, b: int) -> list[int]:
    t, lengths = _host(targets).long(), _host(tl).tolist()
    if t.dim() == 1:
        start = sum(lengths[:b])
        return t[start:start + lengths[b]].tolist()
    return t[b, :lengths[b]].tolist()


def log_alpha(lp, targets, il, tl, blank, states: int):
    """(N, T, states) float64; entries at t >= input_length[b] are -inf."""
    x = _host(lp).to(torch.float64)
    T, N, _ = x.shape
    out = torch.full((N, T, states), -float("inf"), dtype=torch.float64)
    for b in range(N):
        labels = targets_of(targets, tl, b)
        ext = [blank]
        for c in labels:
            ext += [c, blank]
        ext_t = torch.tensor(ext)
        S = len(ext)
        skip = torch.tensor([s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]
                             for s in range(S)])
        Tb = int(_host(il)[b])
        if Tb == 0:
            continue
        a = torch.full((S,), -float("inf"), dtype=torch.float64)
        a[: min(2, S)] = x[0, b, ext_t[: min(2, S)]]
        out[b, 0, :S] = a
        for t in range(1, Tb):
            a1 = torch.cat([a.new_full((1,), -float("inf")), a[:-1]])
            a2 = torch.cat([a.new_full((2,), -float("inf")), a[:-2]])[:S]
            a2 = torch.where(skip, a2, -float("inf"))
            a = torch.logsumexp(torch.stack([a, a1, a2]), 0) + x[t, b, ext_t]
            out[b, t, :S] = a
    return out
