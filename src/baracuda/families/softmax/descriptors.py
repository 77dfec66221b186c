"""Softmax family descriptors and args."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind


class SoftmaxKind(enum.Enum):
    SOFTMAX = "softmax"
    LOG_SOFTMAX = "log_softmax"


def _validate_softmax_desc(desc, who: str) -> None:
    """One rule set for forward and backward descriptors."""
    if not isinstance(desc.kind, SoftmaxKind):
        raise V.InvalidProblem(f"{who}: kind must be a SoftmaxKind, got {desc.kind!r}")
    if not isinstance(desc.element, ElementKind):
        raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {desc.element!r}")
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape)
    V.check_axis(who, "softmax_axis", desc.softmax_axis, len(shape))
    V.check_element(who, "element", desc.element, sorted(FLOAT_KINDS, key=lambda k: k.value))


@dataclass(frozen=True)
class SoftmaxDescriptor(Descriptor):
    """y = softmax(x) or log_softmax(x) along `softmax_axis` (negative axes count from the end)."""

    kind: SoftmaxKind
    input_shape: tuple[int, ...]
    softmax_axis: int
    element: ElementKind

    def validate(self, who: str) -> None:
        _validate_softmax_desc(self, who)

    @property
    def axis(self) -> int:
        return self.softmax_axis % len(self.input_shape)


@dataclass(frozen=True)
class SoftmaxBackwardDescriptor(SoftmaxDescriptor):
    """dx from dy and the saved forward output y (never the forward input)."""


@dataclass
class SoftmaxArgs(Args):
    x: torch.Tensor = operand("input_shape", "element")
    y: torch.Tensor = operand("input_shape", "element", output=True)


@dataclass
class SoftmaxBackwardArgs(Args):
    dy: torch.Tensor = operand("input_shape", "element")
    y: torch.Tensor = operand("input_shape", "element")
    dx: torch.Tensor = operand("input_shape", "element", output=True)
