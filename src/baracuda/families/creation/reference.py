"""float64 / exact references for the creation plans (plain torch on the CPU)."""

from __future__ import annotations

import torch

from .descriptors import RangeKind, TriangleKind


def fill(shape, value, dtype: torch.dtype) -> torch.Tensor:
    """The exact result: value converted to the dtype (as torch's fill), then widened."""
    if isinstance(value, torch.Tensor):
        value = value.to(dtype).item()
    y = torch.full(tuple(shape), value, dtype=dtype)
    return y.double() if dtype.is_floating_point else y


def range_values(kind: RangeKind, n: int, start, stop_or_step, base: float,
                 dtype: torch.dtype) -> torch.Tensor:
    """arange / linspace / logspace in float64 (integer results: torch's CPU arithmetic, the
    same formula, truncated to the dtype)."""
    i = torch.arange(n, dtype=torch.float64)
    if kind is RangeKind.ARANGE:
        if not dtype.is_floating_point:
            return (int(start) + int(stop_or_step) * torch.arange(n)).to(dtype)
        return float(start) + float(stop_or_step) * i
    if dtype.is_floating_point:
        a, b = float(start), float(stop_or_step)
        v = a + (b - a) * i / max(n - 1, 1)
        if n:
            v[-1] = b if n > 1 else a
    else:
        a, b = int(start), int(stop_or_step)
        step = (b - a) / max(n - 1, 1)
        half = max(n // 2, 1)
        v = torch.where(i < half, a + step * i, b - step * (n - 1 - i))
    if kind is RangeKind.LOGSPACE:
        v = torch.pow(torch.tensor(float(base), dtype=torch.float64), v)
    return v if dtype.is_floating_point else v.trunc().to(dtype)


def band(rows: int, cols: int, lower: int, upper: int, dtype: torch.dtype) -> torch.Tensor:
    r = torch.arange(rows)[:, None]
    c = torch.arange(cols)[None, :]
    y = ((c - r >= lower) & (c - r <= upper)).to(dtype)
    return y.double() if dtype.is_floating_point else y


def tri_indices(kind: TriangleKind, rows: int, cols: int, offset: int,
                dtype: torch.dtype) -> torch.Tensor:
    """By enumeration of the mask (independent of torch's and our closed forms)."""
    r = torch.arange(rows)[:, None].expand(rows, cols)
    c = torch.arange(cols)[None, :].expand(rows, cols)
    keep = (c - r <= offset) if kind is TriangleKind.TRIL else (c - r >= offset)
    return torch.stack([r[keep], c[keep]]).to(dtype)
