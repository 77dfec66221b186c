"""torch.trapezoid / torch.trapz: the trapezoid rule along one dim, composite as torch's own
(aten/src/ATen/native/Integration.cpp): the sums run on the reduction custom op, the
neighbour differences and scalings are torch's elementwise ops. Differentiable in y and x
through those (the sums' gradient is ReductionBackwardPlan's)."""

from __future__ import annotations

import numbers

import torch

from ...backends.torch_ops import normalize_dim
from ...core.vocab import ElementKind
from .custom_ops import reduce_op
from .descriptors import ReductionKind as K
from .descriptors import default_out_element


def _sum(t: torch.Tensor, dim: int) -> torch.Tensor:
    """torch.sum(t, dim): integers and bool in int64."""
    out = default_out_element(K.SUM, ElementKind.of(t.dtype)).torch_dtype
    return reduce_op(t, K.SUM.value, [dim], False, 0.0, out)


def _slice(t: torch.Tensor, dim: int, start: int | None, stop: int | None) -> torch.Tensor:
    """t[..., start:stop, ...] along dim, with Python's (and aten's slice) clamping."""
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _integrate(y: torch.Tensor, x: torch.Tensor | None, dx, dim: int) -> torch.Tensor:
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim(dim, y.dim(), "trapezoid")
    if y.shape[d] == 0:  # no samples: zeros, as numpy (and in y's dtype, as torch)
        return y.new_zeros(y.shape[:d] + y.shape[d + 1:])
    if y.dtype == torch.bool or (x is not None and x.dtype == torch.bool):
        who = "`y`" if x is None else "`x` or `y`"
        raise RuntimeError(f"trapezoid: received a bool input for {who}, but bool is not "
                           "supported")
    if x is None:
        if isinstance(dx, torch.Tensor):
            dx = dx.item()
        if isinstance(dx, bool) or not isinstance(dx, numbers.Real):
            raise RuntimeError("trapezoid: Currently, we only support dx as a real number.")
        ends = y.select(d, 0) + y.select(d, -1)
        return (_sum(y, d) - ends * 0.5) * dx
    if x.dim() == 1:  # one sample point per element along dim, broadcast over the others
        if x.shape[0] != y.shape[d]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        x = x.view([x.shape[0] if i == d else 1 for i in range(y.dim())])
    elif x.dim() < y.dim():
        x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    # x is not broadcast to y before its differences are taken (numpy's rule, as torch)
    spacing = _slice(x, d, 1, None) - _slice(x, d, 0, -1)
    pairs = _slice(y, d, 0, -1) + _slice(y, d, 1, None)
    return _sum(pairs * spacing, d) / 2.0


def trapezoid(y: torch.Tensor, x: torch.Tensor | None = None, *, dx=None,
              dim: int = -1) -> torch.Tensor:
    """torch.trapezoid: sum over neighbour pairs of (x[i+1] - x[i]) (y[i] + y[i+1]) / 2 along
    dim, or with a constant spacing dx (default 1) dx (sum(y) - (y[0] + y[-1]) / 2); x is
    1-D (one point per sample) or broadcasts against y. No samples give zeros; integer y
    gives the default float dtype."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid(): pass the sample points x or the spacing dx, not both")
    if x is not None and not isinstance(x, torch.Tensor):
        raise TypeError(f"trapezoid(): argument 'x' must be Tensor, not {type(x).__name__}")
    return _integrate(y, x, 1.0 if dx is None else dx, dim)


def trapz(y: torch.Tensor, x: torch.Tensor | None = None, *, dx=None,
          dim: int = -1) -> torch.Tensor:
    """torch.trapz, trapezoid's older name: trapz(y, x, *, dim=-1) or trapz(y, *, dx=1,
    dim=-1)."""
    if x is not None and dx is not None:
        raise TypeError("trapz(): pass the sample points x or the spacing dx, not both")
    if x is not None and not isinstance(x, torch.Tensor):
        raise TypeError(f"trapz(): argument 'x' must be Tensor, not {type(x).__name__}")
    return _integrate(y, x, 1.0 if dx is None else dx, dim)
