"""torch.poisson on PoissonPlan: counts drawn per rate from the family's stream, a
(seed, offset) drawn per call from the generator (torch's default one of the device unless
given). As torch, the gradient with respect to the rates is zero."""

from __future__ import annotations

import torch

from ...backends.philox import draw_state
from ...backends.torch_ops import define_op, run_plan
from .descriptors_poisson import PoissonArgs, PoissonDescriptor
from .plans_poisson import PoissonPlan
from .torch_common import on_host

__all__ = ["poisson"]


def _impl(rate: torch.Tensor, rng: torch.Tensor) -> torch.Tensor:
    flat = rate.contiguous().reshape(-1)
    y = torch.empty_like(flat)
    if flat.numel():
        run_plan(PoissonPlan, PoissonDescriptor.cached(flat.numel(), flat.dtype),
                 PoissonArgs(rate=flat, y=y, rng_state=rng))
    return y.reshape(rate.shape)


def _fake(rate, rng):
    return torch.empty(rate.shape, dtype=rate.dtype, device=rate.device)


def _setup(ctx, inputs, output) -> None:
    pass


def _backward(ctx, dy):
    return torch.zeros_like(dy), None


poisson_op = define_op("random_poisson", _impl, _fake, backward=_backward, setup_context=_setup)


def poisson(input, generator=None) -> torch.Tensor:
    """torch.poisson: y_i ~ Poisson(input_i). Negative, NaN and (unlike torch, which returns
    an undefined integer cast) infinite rates are refused."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"poisson" not implemented for {input.dtype}: expected a '
                                  "floating point tensor of rates")
    if input.numel() and not torch.compiler.is_compiling():
        if not bool(((input >= 0) & (input < float("inf"))).all()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative and "
                               "finite")
    if on_host(input.device):
        return torch.poisson(input, generator)
    return poisson_op(input, draw_state(input.device, generator))
