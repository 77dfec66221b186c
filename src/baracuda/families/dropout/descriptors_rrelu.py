"""RReLU descriptors and args: y = x * (x <= 0 ? r : 1) with the slope r ~ U(lower, upper)
drawn per element from the counter-based stream of backends/philox.py (training) or the fixed
mean slope (lower + upper) / 2 (eval); the gradient regenerates r instead of storing it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind
from .descriptors import FLOAT_ELEMENTS

E = ElementKind


@dataclass(frozen=True)
class RreluDescriptor(Descriptor):
    """RReLU over x (shape, element). `training`: slopes drawn from the stream (element i
    takes word i % 4 of Philox group i // 4), else the mean slope. `grad`: dx = dy * slope
    where x <= 0 (torch's rrelu_with_noise_backward), dy an extra operand."""

    shape: tuple[int, ...]
    element: ElementKind
    lower: float = 1.0 / 8
    upper: float = 1.0 / 3
    training: bool = True
    grad: bool = False

    def validate(self, who: str) -> None:
        V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", self.shape, 0)
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        V.check_bool(who, "training", self.training)
        V.check_bool(who, "grad", self.grad)
        V.check_finite(who, "lower", self.lower)
        V.check_finite(who, "upper", self.upper)
        if self.lower > self.upper:
            raise V.InvalidProblem(f"{who}: Lower bound should be less than or equal to the "
                                   f"upper bound, got lower={self.lower}, upper={self.upper}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _rng_shape(desc) -> tuple[int, ...]:
    return (2,)


@dataclass
class RreluArgs(Args):
    x: torch.Tensor = operand("shape", "element", strides="non_negative")
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")
    #: the upstream gradient (grad mode): y is then dx
    dy: torch.Tensor | None = operand("shape", "element", strides="non_negative",
                                      when=lambda d: d.grad)
    rng_state: torch.Tensor | None = operand(_rng_shape, E.I64, when=lambda d: d.training)
