"""Float64 reference of RReLU: the slopes from the host twin of the stream
(backends/philox.py), then the formula in float64."""

from __future__ import annotations

import torch

from ...backends.philox import state_values, unit_host, words_host
from .descriptors_rrelu import RreluDescriptor
from .plans_rrelu import slope_constants


def slopes(desc: RreluDescriptor, rng_state: torch.Tensor | None) -> torch.Tensor:
    """The per-element negative-side slope r in x's logical shape (float64)."""
    r0, span = slope_constants(desc)
    n = desc.numel
    if not desc.training or n == 0:
        return torch.full(desc.shape, r0, dtype=torch.float64)
    seed, offset = state_values(rng_state)
    # the kernel computes r0 + span * u in its compute type: u is exact, the rest rounds
    u = unit_host(words_host(seed, offset, n, 4), 24)
    return torch.from_numpy(r0 + span * u).reshape(desc.shape)


def rrelu(desc: RreluDescriptor, x: torch.Tensor, rng_state, dy=None) -> dict[str, torch.Tensor]:
    xd = x.detach().cpu().double()
    r = slopes(desc, rng_state)
    slope = torch.where(xd <= 0, r, torch.ones((), dtype=torch.float64))
    v = dy.detach().cpu().double() if desc.grad else xd
    return {"y": v * slope}

