"""torch's dropouts on DropoutPlan: dropout, dropout1d / 2d / 3d (channel-wise), alpha_dropout,
feature_alpha_dropout, native_dropout and native_dropout_backward. The keep mask is drawn from
the stream of backends/philox.py with a (seed, offset) taken per call from torch's default
generator of the device (torch.manual_seed makes a call reproducible; two calls differ), and
the backward regenerates it from the same state: nothing but the 16-byte state is saved."""

from __future__ import annotations

import math
import warnings

import torch

from ...backends.philox import draw_state
from ...backends.torch_ops import define_op, run_plan
from ...core.runtime import interpreter_active
from .descriptors import DropoutArgs, DropoutDescriptor, DropoutMode
from .plans import DropoutPlan
from .torch_rrelu import rrelu, rrelu_  # noqa: F401 - the random leaky ReLU

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "native_dropout", "native_dropout_backward", "rrelu",
           "rrelu_"]

M = DropoutMode


def _run(x: torch.Tensor, rng, mode: DropoutMode, p: float, alpha: bool, inner: int,
         mask=None, mask_in=None, scale: float = 1.0) -> torch.Tensor:
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel():
        desc = DropoutDescriptor.cached(tuple(x.shape), x.dtype, float(p), mode, alpha, inner,
                                        mask is not None, float(scale))
        run_plan(DropoutPlan, desc,
                 DropoutArgs(x=x, y=y, rng_state=rng, mask=mask, mask_in=mask_in))
    return y


# -- the ops --------------------------------------------------------------------------------
def _grad_impl(dy: torch.Tensor, rng: torch.Tensor, p: float, alpha: bool,
               inner: int) -> torch.Tensor:
    return _run(dy, rng, M.GRAD, p, alpha, inner)


def _grad_fake(dy, rng, p, alpha, inner):
    return torch.empty(dy.shape, dtype=dy.dtype, device=dy.device)


def _keep_setup(ctx, inputs, output) -> None:
    _, rng, p, alpha, inner = inputs[:5]
    ctx.save_for_backward(rng)
    ctx.params = (p, alpha, inner)


def _grad_backward(ctx, ddx):
    """The gradient is linear in dy: its own derivative is the same masked scaling."""
    (rng,) = ctx.saved_tensors
    return grad_op(ddx, rng, *ctx.params), None, None, None, None


grad_op = define_op("dropout_grad", _grad_impl, _grad_fake, backward=_grad_backward,
                    setup_context=_keep_setup)


def _fwd_impl(x: torch.Tensor, rng: torch.Tensor, p: float, alpha: bool,
              inner: int) -> torch.Tensor:
    return _run(x, rng, M.FORWARD, p, alpha, inner)


def _fwd_backward(ctx, dy):
    (rng,) = ctx.saved_tensors
    return grad_op(dy, rng, *ctx.params), None, None, None, None


forward_op = define_op("dropout_forward", _fwd_impl, _grad_fake, backward=_fwd_backward,
                       setup_context=_keep_setup)


def _native_impl(x: torch.Tensor, rng: torch.Tensor, p: float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    mask = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    return _run(x, rng, M.FORWARD, p, False, 0, mask=mask), mask


def _native_fake(x, rng, p):
    return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
            torch.empty(x.shape, dtype=torch.bool, device=x.device))


def _native_setup(ctx, inputs, output) -> None:
    _, rng, p = inputs
    ctx.save_for_backward(rng)
    ctx.params = (p, False, 0)


def _native_backward(ctx, dy, dmask):
    (rng,) = ctx.saved_tensors
    return grad_op(dy, rng, *ctx.params), None, None


native_op = define_op("dropout_native", _native_impl, _native_fake, backward=_native_backward,
                      setup_context=_native_setup)


def _from_mask_impl(dy: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    return _run(dy, None, M.FROM_MASK, 0.0, False, 0, mask_in=mask, scale=scale)


def _from_mask_fake(dy, mask, scale):
    return torch.empty(dy.shape, dtype=dy.dtype, device=dy.device)


def _from_mask_setup(ctx, inputs, output) -> None:
    _, mask, scale = inputs
    ctx.save_for_backward(mask)
    ctx.scale = scale


def _from_mask_backward(ctx, ddx):
    (mask,) = ctx.saved_tensors
    return from_mask_op(ddx, mask, ctx.scale), None, None


from_mask_op = define_op("dropout_from_mask", _from_mask_impl, _from_mask_fake,
                         backward=_from_mask_backward, setup_context=_from_mask_setup)


# -- the torch functions ---------------------------------------------------------------------
def _check_p(p) -> float:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def _on_host(x: torch.Tensor) -> bool:
    return x.device.type == "cpu" and not interpreter_active()


def _apply(x: torch.Tensor, p: float, alpha: bool, inner: int, inplace: bool) -> torch.Tensor:
    if x.numel() == 0:
        return x if inplace else x.clone()
    if not x.is_floating_point():
        raise RuntimeError(f"dropout: expected a floating point input, got {x.dtype}")
    y = forward_op(x, draw_state(x.device), p, alpha, inner)
    return x.copy_(y) if inplace else y


def dropout(input, p=0.5, training=True, inplace=False) -> torch.Tensor:
    """torch.nn.functional.dropout: zero each element with probability p and scale the rest
    by 1 / (1 - p) (training); the input itself when not training or p = 0."""
    p = _check_p(p)
    if not training or p == 0.0:
        return input
    if _on_host(input):
        return torch.nn.functional.dropout(input, p, training, inplace)
    return _apply(input, p, False, 0, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False) -> torch.Tensor:
    """torch.nn.functional.alpha_dropout (SELU-preserving dropout; not training by default)."""
    p = _check_p(p)
    if not training or p == 0.0:
        return input
    if _on_host(input):
        return torch.nn.functional.alpha_dropout(input, p, training, inplace)
    return _apply(input, p, True, 0, inplace)


def _feature(who: str, input, p, training, inplace, alpha: bool, batched_rank=None,
             torch_fn=None) -> torch.Tensor:
    p = _check_p(p)
    # (dynamo cannot trace warnings.warn: a compiled call skips torch's deprecation notes)
    warn = warnings.warn if not torch.compiler.is_compiling() else (lambda *a, **k: None)
    if batched_rank is not None:
        ranks = (batched_rank - 1, batched_rank)
        if input.dim() not in ranks:
            if who == "dropout2d":
                warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, "
                              "which is deprecated and will result in an error in a future "
                              "release.", stacklevel=3)
            else:
                raise RuntimeError(
                    f"{who}: Expected {ranks[0]}D or {ranks[1]}D input, but received a "
                    f"{input.dim()}D input.")
        elif who == "dropout2d" and input.dim() == 3:
            warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
                 "dropout behavior is desired - input is interpreted as shape (N, C, L), where "
                 "C is the channel dim.", stacklevel=3)
    if not training or p == 0.0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if _on_host(input):
        return torch_fn(input, p, training, inplace)
    unbatched = batched_rank is not None and input.dim() == batched_rank - 1 and \
        who != "dropout2d"
    inner = math.prod(input.shape[1:] if unbatched else input.shape[2:])
    return _apply(input, p, alpha, max(inner, 1), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False) -> torch.Tensor:
    """torch.nn.functional.dropout1d: whole channels of (N, C, L) or (C, L) zeroed."""
    return _feature("dropout1d", input, p, training, inplace, False, 3,
                    torch.nn.functional.dropout1d)


def dropout2d(input, p=0.5, training=True, inplace=False) -> torch.Tensor:
    """torch.nn.functional.dropout2d: whole channels of (N, C, H, W) zeroed (a 3-D input is
    taken as (N, C, L), as torch, with its warning)."""
    return _feature("dropout2d", input, p, training, inplace, False, 4,
                    torch.nn.functional.dropout2d)


def dropout3d(input, p=0.5, training=True, inplace=False) -> torch.Tensor:
    """torch.nn.functional.dropout3d: whole channels of (N, C, D, H, W) or (C, D, H, W)."""
    return _feature("dropout3d", input, p, training, inplace, False, 5,
                    torch.nn.functional.dropout3d)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False) -> torch.Tensor:
    """torch.nn.functional.feature_alpha_dropout: alpha dropout of whole channels."""
    return _feature("feature_alpha_dropout", input, p, training, inplace, True, None,
                    torch.nn.functional.feature_alpha_dropout)


def native_dropout(input, p, train) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.native_dropout: (output, bool keep mask); not training: (a copy, all True)."""
    if train is None or train:
        if not 0.0 <= p <= 1.0:
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        if _on_host(input):
            return torch.native_dropout(input, p, train)
        return native_op(input, draw_state(input.device), float(p))
    return input.clone(), torch.ones(input.shape, dtype=torch.bool, device=input.device)


def native_dropout_backward(grad_output, mask, scale) -> torch.Tensor:
    """torch.ops.aten.native_dropout_backward: grad_output * mask * scale."""
    if mask.dtype != torch.bool:
        raise RuntimeError(f"Mask should be Bool Scalar Type{mask.dtype}")
    if _on_host(grad_output):
        return torch.ops.aten.native_dropout_backward(grad_output, mask, scale)
    mask = mask.broadcast_to(grad_output.shape)
    return from_mask_op(grad_output, mask, float(scale))
