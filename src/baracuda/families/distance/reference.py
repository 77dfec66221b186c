"""Float64 references: the oracle for tests, `baracuda check` and benches. Plain torch in
float64 (torch's own formulas, so the subgradients are torch's too)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _f64(*ts):
    return [t.detach().to("cpu", torch.float64) for t in ts]


def _grads(fn, grad, *inputs):
    """d(fn(*inputs) . grad) / d inputs, in float64 (zeros where the output does not depend
    on them: p = 0 counts)."""
    leaves = [t.clone().requires_grad_(True) for t in _f64(*inputs)]
    out = fn(*leaves)
    if not out.requires_grad:
        return tuple(torch.zeros_like(t) for t in leaves)
    return torch.autograd.grad(out, leaves, _f64(grad)[0], allow_unused=True)


def _cdist(x, y, p: float, mm: bool) -> torch.Tensor:
    mode = "use_mm_for_euclid_dist" if mm else "donot_use_mm_for_euclid_dist"
    return torch.cdist(x, y, p, compute_mode=mode)


def cdist(x, y, p: float, mm: bool = False) -> torch.Tensor:
    """Batched [B, P, M] x [B, R, M]; `mm`: torch's matmul form (p = 2)."""
    return _cdist(*_f64(x, y), p, mm)


def cdist_backward(grad, x, y, p: float, mm: bool = False):
    return _grads(lambda a, b: _cdist(a, b, p, mm), grad, x, y)


def pdist(x, p: float) -> torch.Tensor:
    return F.pdist(_f64(x)[0], p)


def pdist_backward(grad, x, p: float):
    if x.shape[0] <= 1:  # no pairs (torch's own pdist backward faults on zero rows)
        return torch.zeros(x.shape, dtype=torch.float64)
    return _grads(lambda a: F.pdist(a, p), grad, x)[0]


def _row_distance(x, y, p: float, eps: float, reduce_all: bool) -> torch.Tensor:
    if reduce_all:
        return torch.linalg.vector_norm(x - y + eps, p)
    return F.pairwise_distance(x, y, p, eps)


def row_distance(x, y, p: float, eps: float, reduce_all: bool) -> torch.Tensor:
    """Rows [R, M]: pairwise_distance (the last dim) or, `reduce_all`, the norm of every
    element of x - y + eps (torch.dist when eps is 0)."""
    return _row_distance(*_f64(x, y), p, eps, reduce_all)


def row_distance_backward(grad, x, y, p: float, eps: float, reduce_all: bool):
    if p == 0:  # a count: zero gradient (torch.dist's own backward refuses p = 0)
        zero = torch.zeros(x.shape, dtype=torch.float64)
        return zero, zero
    return _grads(lambda a, b: _row_distance(a, b, p, eps, reduce_all), grad, x, y)


def cosine(x, y, eps: float) -> torch.Tensor:
    return F.cosine_similarity(*_f64(x, y), dim=-1, eps=eps)


def cosine_backward(grad, x, y, eps: float):
    return _grads(lambda a, b: F.cosine_similarity(a, b, dim=-1, eps=eps), grad, x, y)
