"""torch.cumsum / cumprod / cummax / cummin / logcumsumexp / diff / cumulative_trapezoid on
ScanPlan, differentiable through ScanBackwardPlan."""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from ...core.vocab import ElementKind
from .descriptors import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanDescriptor,
    ScanKind,
    scan_output_element,
    scan_output_shape,
)
from .plans import ScanBackwardPlan, ScanPlan

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff", "cumulative_trapezoid"]

_SAVES_VALUES = (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)


def _as_lines(t: torch.Tensor) -> torch.Tensor:
    """A 0-d tensor scans as one line of one element."""
    return t.reshape(1) if t.dim() == 0 else t


def _out_dtype(kind: ScanKind, dtype: torch.dtype) -> torch.dtype:
    return scan_output_element(kind, ElementKind.of(dtype)).torch_dtype


# -- cumsum / cumprod / logcumsumexp ----------------------------------------------------------
def _scan_impl(x: torch.Tensor, dim: int, kind: str, reverse: bool) -> torch.Tensor:
    k = ScanKind(kind)
    y = torch.empty_like(x, dtype=_out_dtype(k, x.dtype))
    xl, yl = _as_lines(x), _as_lines(y)
    desc = ScanDescriptor.cached(k, tuple(xl.shape), dim, x.dtype, reverse)
    run_plan(ScanPlan, desc, ScanArgs(x=xl, y=yl))
    return y


def _scan_fake(x: torch.Tensor, dim: int, kind: str, reverse: bool) -> torch.Tensor:
    return torch.empty_like(x, dtype=_out_dtype(ScanKind(kind), x.dtype))


def _backward_impl(dy: torch.Tensor, x: torch.Tensor, y: torch.Tensor, dim: int, kind: str,
                   reverse: bool) -> torch.Tensor:
    """dx from dy (x and y are read by cumprod and logcumsumexp only)."""
    k = ScanKind(kind)
    dx = torch.empty_like(x)
    saves = k in _SAVES_VALUES
    desc = ScanBackwardDescriptor.cached(k, tuple(_as_lines(x).shape), dim, x.dtype, reverse)
    args = ScanBackwardArgs(dy=_as_lines(dy), dx=_as_lines(dx),
                            x=_as_lines(x) if saves else None, y=_as_lines(y) if saves else None)
    run_plan(ScanBackwardPlan, desc, args)
    return dx


def _backward_fake(dy, x, y, dim: int, kind: str, reverse: bool) -> torch.Tensor:
    return torch.empty_like(x)


_scan_backward = define_op("scan_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output):
    x, dim, kind, reverse = inputs
    ctx.dim, ctx.kind, ctx.reverse = dim, kind, reverse
    if ScanKind(kind) in _SAVES_VALUES:
        ctx.save_for_backward(x, output)  # cumsum's gradient needs neither


def _autograd(ctx, grad):
    saved = ctx.saved_tensors
    x, y = saved if saved else (grad, grad)
    return _scan_backward(grad, x, y, ctx.dim, ctx.kind, ctx.reverse), None, None, None


_scan = define_op("scan", _scan_impl, _scan_fake, backward=_autograd, setup_context=_setup)


# -- cummax / cummin ----------------------------------------------------------------------------
def _indexed_impl(x: torch.Tensor, dim: int, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    k = ScanKind(kind)
    y = torch.empty_like(x)
    idx = torch.empty_like(x, dtype=torch.int64)
    desc = ScanDescriptor.cached(k, tuple(_as_lines(x).shape), dim, x.dtype)
    run_plan(ScanPlan, desc, ScanArgs(x=_as_lines(x), y=_as_lines(y), indices=_as_lines(idx)))
    return y, idx


def _indexed_fake(x: torch.Tensor, dim: int, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(x, dtype=torch.int64)


def _indexed_backward_impl(dy: torch.Tensor, indices: torch.Tensor, dim: int,
                           kind: str) -> torch.Tensor:
    """dx_j = the sum of dy_k over the k whose index is j (indices as the forward gave them:
    each position's index is itself or an earlier index)."""
    dx = torch.empty_like(dy)
    desc = ScanBackwardDescriptor.cached(ScanKind(kind), tuple(_as_lines(dy).shape), dim,
                                         dy.dtype)
    run_plan(ScanBackwardPlan, desc, ScanBackwardArgs(dy=_as_lines(dy), dx=_as_lines(dx),
                                                      indices=_as_lines(indices)))
    return dx


def _indexed_backward_fake(dy, indices, dim: int, kind: str) -> torch.Tensor:
    return torch.empty_like(dy)


_indexed_backward = define_op("scan_indexed_backward", _indexed_backward_impl,
                              _indexed_backward_fake)


def _indexed_setup(ctx, inputs, output):
    _, dim, kind = inputs
    ctx.dim, ctx.kind = dim, kind
    ctx.save_for_backward(output[1])
    ctx.mark_non_differentiable(output[1])


def _indexed_autograd(ctx, grad_values, grad_indices):
    (idx,) = ctx.saved_tensors
    if grad_values is None:
        return None, None, None
    return _indexed_backward(grad_values, idx, ctx.dim, ctx.kind), None, None


_scan_indexed = define_op("scan_indexed", _indexed_impl, _indexed_fake,
                          backward=_indexed_autograd, setup_context=_indexed_setup)


# -- diff ---------------------------------------------------------------------------------------
def _diff_impl(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The first-order forward difference along dim (one shorter there)."""
    desc = ScanDescriptor.cached(ScanKind.DIFF, tuple(x.shape), dim, x.dtype)
    y = x.new_empty(desc.output_shape)
    run_plan(ScanPlan, desc, ScanArgs(x=x, y=y))
    return y


def _diff_fake(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x.new_empty(scan_output_shape(ScanKind.DIFF, tuple(x.shape), dim))


def _diff_backward_impl(dy: torch.Tensor, dim: int) -> torch.Tensor:
    shape = list(dy.shape)
    shape[dim] += 1
    desc = ScanBackwardDescriptor.cached(ScanKind.DIFF, tuple(shape), dim, dy.dtype)
    dx = dy.new_empty(shape)
    run_plan(ScanBackwardPlan, desc, ScanBackwardArgs(dy=dy, dx=dx))
    return dx


def _diff_backward_fake(dy: torch.Tensor, dim: int) -> torch.Tensor:
    shape = list(dy.shape)
    shape[dim] += 1
    return dy.new_empty(shape)


_diff_backward = define_op("scan_diff_backward", _diff_backward_impl, _diff_backward_fake)


def _diff_setup(ctx, inputs, output):
    ctx.dim = inputs[1]


def _diff_autograd(ctx, grad):
    return _diff_backward(grad, ctx.dim), None


_diff = define_op("scan_diff", _diff_impl, _diff_fake, backward=_diff_autograd,
                  setup_context=_diff_setup)


# -- cumulative_trapezoid --------------------------------------------------------------------------
_TRAPEZOID = ScanKind.CUMULATIVE_TRAPEZOID


def _trapezoid_impl(y: torch.Tensor, spacing: torch.Tensor, dim: int) -> torch.Tensor:
    """spacing: one per neighbour pair, of the result's shape (any strides, 0 included)."""
    desc = ScanDescriptor.cached(_TRAPEZOID, tuple(y.shape), dim, y.dtype)
    out = y.new_empty(desc.output_shape)
    run_plan(ScanPlan, desc, ScanArgs(x=y, y=out, spacing=spacing))
    return out


def _trapezoid_fake(y: torch.Tensor, spacing: torch.Tensor, dim: int) -> torch.Tensor:
    return y.new_empty(scan_output_shape(_TRAPEZOID, tuple(y.shape), dim))


def _trapezoid_backward_impl(dy: torch.Tensor, y: torch.Tensor, spacing: torch.Tensor, dim: int,
                             spacing_grad: bool) -> torch.Tensor:
    desc = ScanBackwardDescriptor.cached(_TRAPEZOID, tuple(y.shape), dim, y.dtype, False,
                                         spacing_grad)
    dx = y.new_empty(desc.grad_shape)
    run_plan(ScanBackwardPlan, desc, ScanBackwardArgs(dy=dy, dx=dx, spacing=spacing,
                                                      x=y if spacing_grad else None))
    return dx


def _trapezoid_backward_fake(dy, y, spacing, dim: int, spacing_grad: bool) -> torch.Tensor:
    return y.new_empty(tuple(spacing.shape) if spacing_grad else tuple(y.shape))


_trapezoid_backward = define_op("scan_trapezoid_backward", _trapezoid_backward_impl,
                                _trapezoid_backward_fake)


def _trapezoid_setup(ctx, inputs, output):
    y, spacing, dim = inputs
    ctx.dim = dim
    ctx.save_for_backward(y, spacing)


def _trapezoid_autograd(ctx, grad):
    y, spacing = ctx.saved_tensors
    dy = dw = None
    if ctx.needs_input_grad[0]:
        dy = _trapezoid_backward(grad, y, spacing, ctx.dim, False)
    if ctx.needs_input_grad[1]:
        dw = _trapezoid_backward(grad, y, spacing, ctx.dim, True)
    return dy, dw, None


_trapezoid = define_op("scan_trapezoid", _trapezoid_impl, _trapezoid_fake,
                       backward=_trapezoid_autograd, setup_context=_trapezoid_setup)


# -- the torch functions ------------------------------------------------------------------------
def _accumulate(input: torch.Tensor, dim: int, dtype: torch.dtype | None, kind: ScanKind,
                who: str) -> torch.Tensor:
    d = normalize_dim(dim, input.dim(), who)
    if dtype is not None and input.dtype != dtype:
        input = input.to(dtype)
    out = _scan(input, d, kind.value, False)
    if dtype is not None and out.dtype != dtype:  # an integer dtype= narrows the int64 result
        out = out.to(dtype)
    return out


def cumsum(input: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.cumsum on ScanPlan; differentiable through ScanBackwardPlan."""
    return _accumulate(input, dim, dtype, ScanKind.CUMSUM, "cumsum")


def cumprod(input: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.cumprod on ScanPlan; its gradient is exact where the input has zeros."""
    return _accumulate(input, dim, dtype, ScanKind.CUMPROD, "cumprod")


def logcumsumexp(input: torch.Tensor, dim: int) -> torch.Tensor:
    """torch.logcumsumexp on ScanPlan; differentiable."""
    if not input.is_floating_point():
        raise NotImplementedError(f"logcumsumexp: not implemented for '{input.dtype}'; "
                                  "expected a floating dtype")
    return _accumulate(input, dim, None, ScanKind.LOGCUMSUMEXP, "logcumsumexp")


def _extreme(input: torch.Tensor, dim: int, kind: ScanKind, result_type, who: str):
    d = normalize_dim(dim, input.dim(), who)
    values, indices = _scan_indexed(input, d, kind.value)
    return result_type((values, indices))


def cummax(input: torch.Tensor, dim: int):
    """torch.cummax: (values, indices) as torch.return_types.cummax; the index of equal maxima
    is the last one, NaN propagates; the gradient goes to the returned indices."""
    return _extreme(input, dim, ScanKind.CUMMAX, torch.return_types.cummax, "cummax")


def cummin(input: torch.Tensor, dim: int):
    """torch.cummin: (values, indices) as torch.return_types.cummin."""
    return _extreme(input, dim, ScanKind.CUMMIN, torch.return_types.cummin, "cummin")



def diff(input: torch.Tensor, n: int = 1, dim: int = -1, prepend: torch.Tensor | None = None,
         append: torch.Tensor | None = None) -> torch.Tensor:
    """torch.diff: the n-th forward difference along dim (applied n times, as torch), after
    prepend / append are joined on (torch.cat, as torch does); differentiable."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, input.dim(), "diff")
    for extra in (prepend, append):
        if extra is not None and extra.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n == 0:  # torch leaves prepend / append off then
        return input.clone()
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, input, append) if t is not None]
        input = torch.cat(parts, d)
    out = input
    for _ in range(n):
        if out.shape[d] == 0:
            break
        out = _diff(out, d)
    return out.clone() if out is input else out


def cumulative_trapezoid(y: torch.Tensor, x: torch.Tensor | None = None, *,
                         dx: float | None = None, dim: int = -1) -> torch.Tensor:
    """torch.cumulative_trapezoid: the running trapezoid rule along dim, with sample points x
    (their differences, from `diff`, are the spacings) or a constant spacing dx (default 1);
    differentiable in y and x."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid: pass the sample points x or the spacing dx, "
                        "not both")
    if y.dim() == 0:
        raise IndexError("cumulative_trapezoid: slice() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, y.dim(), "cumulative_trapezoid")
    if not y.is_floating_point():
        y = y.to(torch.get_default_dtype())
    out_shape = scan_output_shape(_TRAPEZOID, tuple(y.shape), d)
    if x is None:
        spacing = torch.full((), 1.0 if dx is None else dx, dtype=y.dtype, device=y.device)
    else:
        if x.dim() == 1:
            if x.shape[0] != y.shape[d]:
                raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                                   "sample point")
            x = x.view([-1 if i == d else 1 for i in range(y.dim())])
        elif x.dim() < y.dim():
            x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
        if x.shape[d] != y.shape[d]:
            raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                               "sample point")
        spacing = diff(x.to(y.dtype), dim=d)
    return _trapezoid(y, spacing.expand(out_shape), d)
