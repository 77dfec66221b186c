"""The random family's custom ops and the helpers its torch functions share: one op that
writes draws into a tensor (factories, Tensor.*_ methods) and one that returns draws whose
parameters are tensors (normal, bernoulli), differentiable as torch's (zero gradients)."""

from __future__ import annotations

import torch

from ...backends.factory_args import (  # noqa: F401 - the family's modules import them here
    check_options,
    finish,
    on_host,
    size_of,
)
from ...backends.philox import draw_state
from ...backends.torch_ops import define_op, run_plan
from .descriptors import Dist, MultinomialArgs, MultinomialDescriptor, RandomArgs, RandomDescriptor
from .plans import RandomPlan
from .plans_multinomial import MultinomialPlan

_U64 = 1 << 64


def new_tensor(shape, dtype, device, out) -> torch.Tensor:
    """The tensor a factory writes: a new one, or `out` after torch's dtype check."""
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if out.dtype != dtype:
        raise RuntimeError(f"dtype {dtype} does not match dtype of out parameter ({out.dtype})")
    if tuple(out.shape) != tuple(shape):
        out.resize_(shape)
    return out


# -- the ops --------------------------------------------------------------------------------
def _descriptor(y, a, b, dist: str, fa: float, fb: float, low: int, span_bits: int):
    d = Dist(dist)
    if d is Dist.RANDINT:  # span 2^64 arrives as 0 (its int64 bits)
        pa, pb = low, span_bits if span_bits > 0 else span_bits + _U64
    else:
        pa, pb = fa, fb
    return RandomDescriptor.cached(tuple(y.shape), y.dtype, d, pa, pb,
                                   None if a is None else a.dtype,
                                   None if b is None else b.dtype)


def _fill_impl(y: torch.Tensor, rng: torch.Tensor, dist: str, fa: float, fb: float, low: int,
               span_bits: int) -> None:
    desc = _descriptor(y, None, None, dist, fa, fb, low, span_bits)
    run_plan(RandomPlan, desc, RandomArgs(y=y, rng_state=rng))


def _fill_fake(y, rng, dist, fa, fb, low, span_bits) -> None:
    return None


def _params_impl(rng: torch.Tensor, a: torch.Tensor, b: torch.Tensor | None, dist: str,
                 fb: float, dtype: torch.dtype) -> torch.Tensor:
    y = torch.empty(a.shape, dtype=dtype, device=a.device)
    if y.numel():
        desc = _descriptor(y, a, b, dist, 0.0, fb, 0, 1)
        run_plan(RandomPlan, desc, RandomArgs(y=y, rng_state=rng, a=a, b=b))
    return y


def _params_fake(rng, a, b, dist, fb, dtype):
    return torch.empty(a.shape, dtype=dtype, device=a.device)


def _params_setup(ctx, inputs, output) -> None:
    _, a, b, *_ = inputs
    ctx.shapes = [(t.shape, t.dtype) if t is not None else None for t in (a, b)]


def _params_backward(ctx, grad):
    """torch's formula: draws are not reparameterized, the parameters get zero gradients."""
    ga, gb = (None if s is None else grad.new_zeros(s[0], dtype=s[1]) for s in ctx.shapes)
    return None, ga, gb, None, None, None


fill_op = define_op("random_fill_", _fill_impl, _fill_fake, mutates_args=("y",))
params_op = define_op("random_params", _params_impl, _params_fake, backward=_params_backward,
                      setup_context=_params_setup)


def fill_into(y: torch.Tensor, dist: Dist, a=0.0, b=1.0, generator=None) -> torch.Tensor:
    """y filled with draws of `dist` (in place; returns y). RANDINT: a = low, b = span."""
    if y.numel() == 0:
        return y
    rng = draw_state(y.device, generator)
    if dist is Dist.RANDINT:
        fill_op(y, rng, dist.value, 0.0, 1.0, int(a), int(b) - _U64 if b >= 1 << 63 else int(b))
    else:
        fill_op(y, rng, dist.value, float(a), float(b), 0, 1)
    return y


def with_params(dist: Dist, a: torch.Tensor, b: torch.Tensor | None, fb: float,
                dtype: torch.dtype, generator=None) -> torch.Tensor:
    """Draws of `dist` with tensor parameters a (and b), already broadcast to one shape."""
    rng = draw_state(a.device, generator)
    return params_op(rng, a, b, dist.value, float(fb), dtype)


def in_place(who: str, x: torch.Tensor, dist: Dist, a, b, generator) -> torch.Tensor:
    """Tensor.<dist>_: x overwritten with draws. Autograd as torch: a leaf that requires grad
    refuses, otherwise no gradient reaches x's earlier values (the draws are written back by
    copy_, whose gradient to the draws is dropped)."""
    if torch.is_grad_enabled() and x.requires_grad:
        if x.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        return x.copy_(fill_into(torch.empty_like(x), dist, a, b, generator))
    return fill_into(x, dist, a, b, generator)


def _multinomial_impl(probs: torch.Tensor, rng: torch.Tensor, samples: int,
                      replacement: bool) -> torch.Tensor:
    out = torch.empty(probs.shape[0], samples, dtype=torch.int64, device=probs.device)
    desc = MultinomialDescriptor.cached(probs.shape[0], probs.shape[1], samples, replacement,
                                        probs.dtype)
    run_plan(MultinomialPlan, desc, MultinomialArgs(probs=probs, out=out, rng_state=rng))
    return out


def _multinomial_fake(probs, rng, samples, replacement):
    return torch.empty(probs.shape[0], samples, dtype=torch.int64, device=probs.device)


multinomial_op = define_op("random_multinomial", _multinomial_impl, _multinomial_fake)
