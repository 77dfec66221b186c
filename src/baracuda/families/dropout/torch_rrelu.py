"""torch's rrelu and rrelu_ on RreluPlan. Training draws a (seed, offset) per call from the
generator (torch's default one of the device unless given) and the backward regenerates the
slopes from that state: only the 16-byte state and x are saved, not torch's noise tensor."""

from __future__ import annotations

import torch

from ...backends.philox import draw_state
from ...backends.torch_ops import define_op, run_plan
from ...core.runtime import interpreter_active
from .descriptors_rrelu import RreluArgs, RreluDescriptor
from .plans_rrelu import RreluPlan

__all__ = ["rrelu", "rrelu_"]


def _run(x: torch.Tensor, rng: torch.Tensor, lower: float, upper: float, training: bool,
         dy: torch.Tensor | None = None) -> torch.Tensor:
    src = x if dy is None else dy
    y = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    if x.numel():
        desc = RreluDescriptor.cached(tuple(x.shape), x.dtype, float(lower), float(upper),
                                      bool(training), dy is not None)
        run_plan(RreluPlan, desc, RreluArgs(x=x, y=y, dy=dy,
                                            rng_state=rng if training else None))
    return y


def _fake(a, *rest):
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


# -- the ops (rng is x itself when not training: the eval slope needs no state) -------------
def _grad_impl(dy: torch.Tensor, x: torch.Tensor, rng: torch.Tensor, lower: float,
               upper: float, training: bool) -> torch.Tensor:
    return _run(x, rng, lower, upper, training, dy=dy)


def _grad_setup(ctx, inputs, output) -> None:
    _, x, rng, *params = inputs
    ctx.save_for_backward(x, rng)
    ctx.params = params


def _grad_backward(ctx, ddx):
    """dx is linear in dy (the same slopes) and piecewise constant in x (zero almost
    everywhere, as torch's rrelu_with_noise_backward's own derivative)."""
    x, rng = ctx.saved_tensors
    return grad_op(ddx, x, rng, *ctx.params), None, None, None, None, None


grad_op = define_op("rrelu_grad", _grad_impl, _fake, backward=_grad_backward,
                    setup_context=_grad_setup)


def _fwd_impl(x: torch.Tensor, rng: torch.Tensor, lower: float, upper: float,
              training: bool) -> torch.Tensor:
    return _run(x, rng, lower, upper, training)


def _fwd_setup(ctx, inputs, output) -> None:
    x, rng, *params = inputs
    ctx.save_for_backward(x, rng)
    ctx.params = params


def _fwd_backward(ctx, dy):
    x, rng = ctx.saved_tensors
    return grad_op(dy, x, rng, *ctx.params), None, None, None, None


forward_op = define_op("rrelu_forward", _fwd_impl, _fake, backward=_fwd_backward,
                       setup_context=_fwd_setup)


# -- the torch functions ---------------------------------------------------------------------
def _apply(input, lower, upper, training, inplace, generator) -> torch.Tensor:
    lower, upper = float(lower), float(upper)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound, "
                           f"got lower={lower}, upper={upper}")
    if not input.is_floating_point():
        raise NotImplementedError(f'"rrelu" not implemented for {input.dtype}: expected a '
                                  "floating point input")
    if input.device.type == "cpu" and not interpreter_active():
        fn = torch.rrelu_ if inplace else torch.rrelu
        return fn(input, lower, upper, training, generator)
    if input.numel() == 0:
        return input if inplace else input.clone()
    training = bool(training)
    rng = draw_state(input.device, generator) if training else input
    y = forward_op(input, rng, lower, upper, training)
    return input.copy_(y) if inplace else y


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, *,
          generator=None) -> torch.Tensor:
    """torch.nn.functional.rrelu (and torch.rrelu, whose generator is keyword-only here):
    x where x > 0, else x * r with r ~ U(lower, upper) per element (training) or the mean
    slope (lower + upper) / 2. The backward regenerates r from the call's stream state."""
    return _apply(input, lower, upper, training, inplace, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None
           ) -> torch.Tensor:
    """torch.rrelu_: rrelu in place."""
    return _apply(input, lower, upper, training, True, generator)
