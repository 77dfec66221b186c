"""torch.nn.functional.softmax / log_softmax on baracuda plans, differentiable."""

from __future__ import annotations

import warnings

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from .descriptors import (
    SoftmaxArgs,
    SoftmaxBackwardArgs,
    SoftmaxBackwardDescriptor,
    SoftmaxDescriptor,
    SoftmaxKind,
)
from .plans import SoftmaxBackwardPlan, SoftmaxPlan

__all__ = ["softmax", "log_softmax"]

_KIND = {False: SoftmaxKind.SOFTMAX, True: SoftmaxKind.LOG_SOFTMAX}


def _as_lines(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(1) if t.dim() == 0 else t


def _desc(cls, log: bool, shape: tuple, dim: int, dtype: torch.dtype):
    return cls.cached(_KIND[log], shape, dim, dtype)


def _forward(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    y = torch.empty_like(x)
    xl, yl = _as_lines(x), _as_lines(y)
    desc = _desc(SoftmaxDescriptor, log, tuple(xl.shape), dim, x.dtype)
    run_plan(SoftmaxPlan, desc, SoftmaxArgs(x=xl, y=yl))
    return y


def _forward_fake(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    return torch.empty_like(x)


def _backward_impl(dy: torch.Tensor, y: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    dx = torch.empty_like(y)
    dyl, yl, dxl = _as_lines(dy), _as_lines(y), _as_lines(dx)
    desc = _desc(SoftmaxBackwardDescriptor, log, tuple(yl.shape), dim, y.dtype)
    run_plan(SoftmaxBackwardPlan, desc, SoftmaxBackwardArgs(dy=dyl, y=yl, dx=dxl))
    return dx


def _backward_fake(dy: torch.Tensor, y: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    return torch.empty_like(y)


_softmax_backward = define_op("softmax_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output):
    _, dim, log = inputs
    ctx.save_for_backward(output)
    ctx.dim, ctx.log = dim, log


def _autograd(ctx, grad):
    (y,) = ctx.saved_tensors
    return _softmax_backward(grad, y, ctx.dim, ctx.log), None, None


_softmax = define_op("softmax", _forward, _forward_fake, backward=_autograd, setup_context=_setup)


def _legacy_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _call(input: torch.Tensor, dim: int | None, dtype: torch.dtype | None, log: bool,
          who: str) -> torch.Tensor:
    if dim is None:
        dim = _legacy_dim(input.dim())
    if dtype is not None:
        input = input.to(dtype)
    return _softmax(input, normalize_dim(dim, input.dim(), who), log)


def softmax(input: torch.Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.nn.functional.softmax on SoftmaxPlan; differentiable through SoftmaxBackwardPlan."""
    return _call(input, dim, dtype, False, "softmax")


def log_softmax(input: torch.Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.nn.functional.log_softmax on SoftmaxPlan; differentiable."""
    return _call(input, dim, dtype, True, "log_softmax")
