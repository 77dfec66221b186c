"""Float64 references: the oracle for tests and benches."""

from __future__ import annotations

import torch


def softmax_forward(x: torch.Tensor, axis: int, log: bool) -> torch.Tensor:
    x = x.detach().to("cpu", torch.float64)
    return torch.log_softmax(x, axis) if log else torch.softmax(x, axis)


def softmax_backward(dy: torch.Tensor, y: torch.Tensor, axis: int, log: bool) -> torch.Tensor:
    """Seed formulas: softmax dx = y (dy - sum(y dy)); log_softmax dx = dy - exp(y) sum(dy)."""
    dy = dy.detach().to("cpu", torch.float64)
    y = y.detach().to("cpu", torch.float64)
    if log:
        return dy - torch.exp(y) * dy.sum(axis, keepdim=True)
    return y * (dy - (y * dy).sum(axis, keepdim=True))
