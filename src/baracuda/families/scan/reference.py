"""Float64 references (int64 for integers, exact indices): the oracle for tests and benches."""

from __future__ import annotations

import torch

from .descriptors import ScanKind

_OPS = {ScanKind.CUMSUM: torch.cumsum, ScanKind.CUMPROD: torch.cumprod,
        ScanKind.LOGCUMSUMEXP: torch.logcumsumexp,
        ScanKind.DIFF: lambda t, axis: torch.diff(t, dim=axis)}


def _wide(x: torch.Tensor) -> torch.Tensor:
    x = x.detach().to("cpu")
    return x.to(torch.float64) if x.is_floating_point() else x.to(torch.int64)


def _directed(fn, x: torch.Tensor, axis: int, reverse: bool):
    """fn along `axis`, from its end when `reverse` (a flip on each side)."""
    if not reverse:
        return fn(x)
    out = fn(x.flip(axis))
    if isinstance(out, tuple):
        values, indices = out
        return values.flip(axis), (x.shape[axis] - 1 - indices).flip(axis)
    return out.flip(axis)


def trapezoid(x: torch.Tensor, spacing: torch.Tensor, axis: int) -> torch.Tensor:
    """cumulative_trapezoid with one spacing per neighbour pair (differentiable)."""
    n = x.shape[axis]
    pairs = x.narrow(axis, 0, max(n - 1, 0)) + x.narrow(axis, min(1, n), max(n - 1, 0))
    return (spacing * pairs / 2).cumsum(axis)


def scan_forward(x: torch.Tensor, axis: int, kind: ScanKind, reverse: bool = False,
                 spacing: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """{"y": ...} (and {"indices": ...} for cummax / cummin)."""
    if kind is ScanKind.CUMULATIVE_TRAPEZOID:
        return {"y": trapezoid(_wide(x), _wide(spacing), axis)}
    if kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
        # the extremes of the exact input values: their order does not depend on the width
        src = x.detach().to("cpu")
        op = torch.cummax if kind is ScanKind.CUMMAX else torch.cummin
        values, indices = _directed(lambda t: tuple(op(t, axis)), src, axis, reverse)
        return {"y": _wide(values), "indices": indices}
    if kind is ScanKind.DIFF:  # in the input's own dtype: integers wrap, bools compare
        return {"y": _wide(torch.diff(x.detach().to("cpu"), dim=axis))}
    op = _OPS[kind]
    return {"y": _directed(lambda t: op(t, axis), _wide(x), axis, reverse)}


def scan_backward(dy: torch.Tensor, x: torch.Tensor, axis: int, kind: ScanKind,
                  reverse: bool = False, spacing: torch.Tensor | None = None,
                  spacing_grad: bool = False) -> torch.Tensor:
    """dx of the forward at x (autograd through torch's float64 ops) for the upstream dy; for
    cumulative_trapezoid with `spacing_grad`, the spacings' gradient."""
    xd = _wide(x).requires_grad_()
    if kind is ScanKind.CUMULATIVE_TRAPEZOID:
        w = _wide(spacing).requires_grad_()
        y = trapezoid(xd, w, axis)
        return torch.autograd.grad(y, w if spacing_grad else xd, _wide(dy))[0]
    if kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
        y = scan_forward_differentiable(xd, axis, kind, reverse)
    else:
        op = _OPS[kind]
        y = _directed(lambda t: op(t, axis), xd, axis, reverse)
    (dx,) = torch.autograd.grad(y, xd, _wide(dy))
    return dx


def scan_forward_differentiable(x: torch.Tensor, axis: int, kind: ScanKind,
                                reverse: bool) -> torch.Tensor:
    """cummax / cummin values through torch's autograd (gradient to the returned index)."""
    op = torch.cummax if kind is ScanKind.CUMMAX else torch.cummin
    return _directed(lambda t: op(t, axis).values, x, axis, reverse)


def scan_backward_indexed(dy: torch.Tensor, indices: torch.Tensor, axis: int) -> torch.Tensor:
    """cummax / cummin's gradient: dy scattered (summed) onto the indices."""
    dy = _wide(dy)
    return torch.zeros_like(dy).scatter_add_(axis, indices.to("cpu"), dy)


def stencil(x: torch.Tensor, table: torch.Tensor, axis: int) -> torch.Tensor:
    """GradientPlan's three-point stencil in float64 (differentiable in x): taps s_i + k with
    s_i = clamp(i - 1, 0, max(N - 3, 0)), weights and divisor from the table rows, a zero
    weight skipping its tap."""
    xm = x.movedim(axis, -1)
    t = _wide(table)
    n = xm.shape[-1]
    pos = torch.arange(n)
    s = (pos - 1).clamp(0, max(n - 3, 0))
    acc = torch.zeros_like(xm)
    for k in range(3):
        idx = s + k
        w = t[:, k]
        xk = xm.index_select(-1, idx.clamp(max=max(n - 1, 0)))
        acc = acc + torch.where((w != 0) & (idx < n), w * xk, 0.0)
    return (acc / t[:, 3]).movedim(-1, axis)


def stencil_backward(dy: torch.Tensor, table: torch.Tensor, axis: int) -> torch.Tensor:
    """dx of `stencil` for the upstream dy (autograd in float64)."""
    x = torch.zeros(dy.shape, dtype=torch.float64, requires_grad=True)
    return torch.autograd.grad(stencil(x, table, axis), x, _wide(dy))[0]


def associative_scan(x: torch.Tensor, axis: int, op, reverse: bool = False) -> torch.Tensor:
    """The inclusive scan of `op` (a torch function of two tensors) along axis, left to right
    (from the end when `reverse`): the oracle of AssociativeScanPlan for exact combines."""
    x = x.detach().to("cpu")
    src = x.flip(axis) if reverse else x
    parts = list(src.unbind(axis))
    for i in range(1, len(parts)):
        parts[i] = op(parts[i - 1], parts[i])
    out = torch.stack(parts, axis) if parts else src.clone()
    return out.flip(axis) if reverse else out
