"""Poisson descriptors and args: n counts, count i drawn from Poisson(rate_i) with the
counter-based stream of backends/philox.py (kernels_poisson.py says how)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind
from .descriptors import FLOAT_ELEMENTS

E = ElementKind


@dataclass(frozen=True)
class PoissonDescriptor(Descriptor):
    """`n` Poisson counts from `n` rates (flat, contiguous), both of `element`."""

    n: int
    element: ElementKind

    def validate(self, who: str) -> None:
        V.check_shape(who, "(n,)", (self.n,))
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)


@dataclass
class PoissonArgs(Args):
    rate: torch.Tensor = operand(lambda d: (d.n,), "element", strides="unit_last")
    y: torch.Tensor = operand(lambda d: (d.n,), "element", output=True, strides="unit_last")
    rng_state: torch.Tensor = operand(lambda d: (2,), E.I64)
