"""Float64 references (exact int64 for integer results) of the kinds with an order or a mask:
the norms, logmeanexp, ptp, the bitwise reductions, hash, and torch.masked's reductions."""

from __future__ import annotations

import functools
import warnings

import torch

from .descriptors import MASK_EXCLUDES
from .descriptors import ReductionKind as K
from .reference import _wide, reduction_forward


def _identity(kind: K, dtype: torch.dtype, order: float) -> float | int:
    """torch.masked's identity of `kind` on `dtype` (what masked-out elements read as)."""
    if dtype.is_floating_point:
        lo, hi = -float("inf"), float("inf")
    else:
        lo, hi = torch.iinfo(dtype).min, torch.iinfo(dtype).max
    return {K.SUM: 0, K.PROD: 1, K.AMAX: lo, K.ARGMAX: lo, K.AMIN: hi, K.ARGMIN: hi,
            K.LOGSUMEXP: lo, K.NORM: float("inf") if order == -float("inf") else 0}[kind]


def _bitwise(x: torch.Tensor, kind: K, dims: tuple[int, ...], keepdim: bool) -> torch.Tensor:
    op = {K.XOR: torch.bitwise_xor, K.AND: torch.bitwise_and, K.OR: torch.bitwise_or}[kind]
    start = {K.XOR: 0, K.AND: -1, K.OR: 0}[kind]
    wide = x.to(torch.int64)
    moved = wide.movedim(dims, tuple(range(x.dim() - len(dims), x.dim())))
    flat = moved.reshape(*moved.shape[:x.dim() - len(dims)], -1)
    y = functools.reduce(op, flat.unbind(-1), torch.full(flat.shape[:-1], start,
                                                         dtype=torch.int64))
    if keepdim:
        y = y.reshape(tuple(1 if i in dims else d for i, d in enumerate(x.shape)))
    return y.to(x.dtype)


def forward_ext(x: torch.Tensor, kind: K, axes: tuple[int, ...], keepdim: bool,
                order: float = 0.0, mask: torch.Tensor | None = None,
                correction: float = 0.0, out_dtype: torch.dtype | None = None) -> dict:
    """{"y": ...} of a reduction with an order or a mask, by torch on the CPU in float64
    (integers exactly); keeps autograd (a reference for gradients too)."""
    dims = tuple(axes) if x.dim() else ()
    xw = _wide(x)
    if mask is not None:
        m = mask.cpu().expand(x.shape)
        if kind in MASK_EXCLUDES:
            fn = {K.MEAN: torch.masked.mean, K.VAR: torch.masked.var,
                  K.STD: torch.masked.std}[kind]
            extra = {} if kind is K.MEAN else {"correction": correction}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = fn(xw, dims, keepdim=keepdim, mask=m, **extra)
            return {"y": y}
        ident = _identity(kind, x.dtype, order)
        xw = torch.where(m, xw, torch.tensor(ident, dtype=xw.dtype))
    if kind is K.NORM:
        return {"y": torch.linalg.vector_norm(xw, order, dims or None, keepdim=keepdim)}
    if kind in (K.LOGMEANEXP, K.LOGSUMEXP):
        y = torch.logsumexp(xw.to(torch.float64), dims, keepdim=keepdim)
        if kind is K.LOGMEANEXP:
            n = 1
            for d in dims:
                n *= x.shape[d]
            y = y - torch.log(torch.tensor(float(n), dtype=torch.float64))
        return {"y": y}
    if kind is K.PTP:
        y = torch.amax(xw, dims, keepdim=keepdim) - torch.amin(xw, dims, keepdim=keepdim)
        return {"y": y if x.is_floating_point() else y.to(x.dtype).to(torch.int64)}
    if kind in (K.XOR, K.AND, K.OR):
        return {"y": _bitwise(x.cpu(), kind, dims or (0,), keepdim) if x.dim() else x.cpu()}
    if kind is K.HASH:
        y = torch.hash_tensor(x.detach().cpu(), dims or None, keepdim=keepdim)
        return {"y": y.view(torch.int64)}
    return reduction_forward(xw, kind, axes, keepdim, correction, out_dtype)


def backward_ext(kind: K, x: torch.Tensor, dy: torch.Tensor, axes: tuple[int, ...],
                 keepdim: bool, order: float = 0.0, mask: torch.Tensor | None = None,
                 correction: float = 0.0) -> torch.Tensor:
    """dx by torch's autograd in float64 through `forward_ext`."""
    xd = _wide(x).detach().requires_grad_()
    y = forward_ext(xd, kind, axes, keepdim, order, mask, correction)["y"]
    (dx,) = torch.autograd.grad(y, xd, _wide(dy), allow_unused=True)
    return torch.zeros_like(xd) if dx is None else dx
