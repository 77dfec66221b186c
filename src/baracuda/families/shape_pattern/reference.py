"""Reference copies: index maps built with plain torch ops (exact for every dtype), and float64
autograd through them for the gradients. Nobody re-derives these formulas elsewhere."""

from __future__ import annotations

import torch


def pad_sources(n: int, lo: int, hi: int, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(source index, reads-the-input mask) of each output index along one dim."""
    o = torch.arange(n + lo + hi)
    if mode == "constant":
        t = o - lo
        ok = (t >= 0) & (t < n)
        return t.clamp(0, max(n - 1, 0)), ok
    if mode == "reflect":
        t = (o - lo).abs()
        t = torch.where(t >= n, 2 * (n - 1) - t, t)
    elif mode == "replicate":
        t = (o - lo).clamp(0, n - 1)
    elif mode == "symmetric":  # numpy's: the mirror including the edge
        t = o - lo
        t = torch.where(t < 0, -t - 1, t)
        t = torch.where(t >= n, 2 * n - 1 - t, t)
    else:  # circular: negative pads crop first, positive ones wrap inside what is left
        left = n + min(lo, 0) + min(hi, 0)
        t = torch.remainder(o - max(lo, 0), max(left, 1)) + max(-lo, 0)
    return t, torch.ones_like(o, dtype=torch.bool)


def pad(x: torch.Tensor, pads, mode: str, value=0) -> torch.Tensor:
    """x padded per dim by `pads` ((low, high) per dim), differentiable for floats."""
    out = x
    for d, (lo, hi) in enumerate(pads):
        if (lo, hi) == (0, 0):
            continue
        n = x.shape[d]
        t, ok = pad_sources(n, lo, hi, mode)
        if n == 0:
            shape = list(out.shape)
            shape[d] = n + lo + hi
            out = torch.full(shape, value, dtype=x.dtype)
            continue
        out = out.index_select(d, t)
        if mode == "constant":
            view = [1] * out.dim()
            view[d] = -1
            fill = torch.full((), value, dtype=x.dtype)
            out = torch.where(ok.view(view), out, fill)
    return out.clone()


def pad_backward(dy: torch.Tensor, input_shape, pads, mode: str) -> torch.Tensor:
    """The float64 gradient of `pad` for `dy`."""
    x = torch.zeros(input_shape, dtype=torch.float64, requires_grad=True)
    pad(x, pads, mode).backward(dy.detach().cpu().double())
    return x.grad
