"""Loss family descriptors and args: cross-entropy (class indices or probabilities) and NLL."""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from operator import attrgetter

import torch

from ...core import validate as V
from ...core.args import UNIT_LAST, Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind

#: What the family package re-exports from this module.
__all__ = [
    "CrossEntropyLossArgs", "CrossEntropyLossBackwardArgs", "CrossEntropyLossBackwardDescriptor",
    "CrossEntropyLossDescriptor", "CrossEntropyLossFusedArgs", "LossReduction", "NllLossArgs",
    "NllLossBackwardArgs", "NllLossBackwardDescriptor", "NllLossDescriptor",
]

_FLOATS = sorted(FLOAT_KINDS, key=lambda k: k.value)
#: Class-index target kinds: torch takes int64 and (for (C,) / (N, C) inputs) uint8; int32
#: is ours too (the kernels widen every index to int64 on load), and uint8 at every rank.
_INDEX = [*sorted(INDEX_KINDS, key=lambda k: k.value), ElementKind.U8]


class LossReduction(enum.Enum):
    NONE = "none"
    MEAN = "mean"
    SUM = "sum"


def _reduction_of(value) -> LossReduction | object:
    if isinstance(value, str):
        try:
            return LossReduction(value)
        except ValueError:
            return value
    return value


@dataclass(frozen=True)
class _LossDescriptor(Descriptor):
    """Shared fields. Input is (C,), (N, C) or (N, C, d1, ...): classes on axis 1 (0 for rank 1)."""

    input_shape: tuple[int, ...]
    element: ElementKind
    target_element: ElementKind = ElementKind.I64
    reduction: LossReduction = LossReduction.MEAN
    has_weight: bool = False
    ignore_index: int = -100

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "reduction", _reduction_of(self.reduction))

    @property
    def class_axis(self) -> int:
        return 1 if len(self.input_shape) >= 2 else 0

    @property
    def num_classes(self) -> int:
        return self.input_shape[self.class_axis]

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of the per-sample loss (reduction none) and of class-index targets."""
        return tuple(d for i, d in enumerate(self.input_shape) if i != self.class_axis)

    @property
    def rows(self) -> int:
        return math.prod(self.sample_shape)

    @property
    def probability_target(self) -> bool:
        return self.target_element in FLOAT_KINDS

    @property
    def loss_shape(self) -> tuple[int, ...]:
        return self.sample_shape if self.reduction is LossReduction.NONE else ()

    def _validate_common(self, who: str) -> None:
        if not isinstance(self.element, ElementKind):
            raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {self.element!r}")
        if not isinstance(self.target_element, ElementKind):
            raise V.InvalidProblem(
                f"{who}: target_element must be an ElementKind, got {self.target_element!r}")
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape)
        V.check_element(who, "element", self.element, _FLOATS)
        if not isinstance(self.reduction, LossReduction):
            raise V.InvalidProblem(
                f"{who}: {self.reduction!r} is not a valid value for reduction; expected one of "
                f"{[r.value for r in LossReduction]}")
        if not isinstance(self.has_weight, bool):
            raise V.InvalidProblem(f"{who}: has_weight must be a bool, got {self.has_weight!r}")
        if isinstance(self.ignore_index, bool) or not isinstance(self.ignore_index, int):
            raise V.InvalidProblem(f"{who}: ignore_index must be an int, got {self.ignore_index!r}")
        if shape[self.class_axis] < 1:
            raise V.InvalidProblem(
                f"{who}: the class axis {self.class_axis} of input_shape {shape} must have "
                f"extent >= 1, got {shape[self.class_axis]}")


@dataclass(frozen=True)
class CrossEntropyLossDescriptor(_LossDescriptor):
    """torch.nn.functional.cross_entropy. Class-index targets when `target_element` is i32/i64/u8
    (shape = input without the class axis), probability targets when it equals `element`
    (shape = input). `label_smoothing` in [0, 1]."""

    label_smoothing: float = 0.0

    def validate(self, who: str) -> None:
        self._validate_common(who)
        allowed = [*_INDEX, self.element]
        V.check_element(who, "target_element", self.target_element, allowed)
        ls = self.label_smoothing
        V.check_finite(who, "label_smoothing", ls)
        if not 0.0 <= ls <= 1.0:
            raise V.InvalidProblem(f"{who}: label_smoothing must be between 0.0 and 1.0, got {ls}")
        if self.probability_target and self.ignore_index >= 0:
            raise V.InvalidProblem(
                f"{who}: ignore_index is not supported for floating point (probability) targets; "
                f"expected a negative ignore_index, got {self.ignore_index}")


@dataclass(frozen=True)
class CrossEntropyLossBackwardDescriptor(CrossEntropyLossDescriptor):
    """grad_input from grad_loss, the logits and the targets (softmax recomputed)."""


@dataclass(frozen=True)
class NllLossDescriptor(_LossDescriptor):
    """torch.nn.functional.nll_loss on log-probabilities; class-index targets only."""

    def validate(self, who: str) -> None:
        self._validate_common(who)
        V.check_element(who, "target_element", self.target_element, _INDEX)


@dataclass(frozen=True)
class NllLossBackwardDescriptor(NllLossDescriptor):
    """grad_input (dense, one non-zero per sample) from grad_loss and the targets."""


def _target_shape(d) -> tuple[int, ...]:
    """Probability targets have the input's shape; class indices one per sample."""
    return d.input_shape if d.probability_target else d.sample_shape


def _input(output: bool = False):
    return operand("input_shape", "element", output=output)


def _target():
    return operand(_target_shape, "target_element")


def _loss(output: bool = False):
    """The loss, or its upstream gradient: per sample (reduction none) or a scalar."""
    return operand("loss_shape", "element", output=output)


def _weight():
    """Present exactly when has_weight; positional like the other fields (no default). The
    kernels index it by class as a dense vector: a strided weight is refused (typed)."""
    return operand(lambda d: (d.num_classes,), "element", when=attrgetter("has_weight"),
                   strides=UNIT_LAST, default=dataclasses.MISSING)


@dataclass
class CrossEntropyLossArgs(Args):
    input: torch.Tensor = _input()
    target: torch.Tensor = _target()
    weight: torch.Tensor | None = _weight()
    loss: torch.Tensor = _loss(output=True)


@dataclass
class CrossEntropyLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    input: torch.Tensor = _input()
    target: torch.Tensor = _target()
    weight: torch.Tensor | None = _weight()
    grad_input: torch.Tensor = _input(output=True)
    #: d(loss)/d(target) of probability targets, when wanted (None: not computed)
    grad_target: torch.Tensor | None = operand(_target_shape, "target_element", output=True,
                                               optional=True)


@dataclass
class CrossEntropyLossFusedArgs(Args):
    """Loss and d(loss)/d(input) for a unit upstream gradient, in one pass over the logits."""

    input: torch.Tensor = _input()
    target: torch.Tensor = _target()
    weight: torch.Tensor | None = _weight()
    loss: torch.Tensor = _loss(output=True)
    grad_input: torch.Tensor = _input(output=True)


@dataclass
class NllLossArgs(Args):
    input: torch.Tensor = _input()
    target: torch.Tensor = _target()
    weight: torch.Tensor | None = _weight()
    loss: torch.Tensor = _loss(output=True)


@dataclass
class NllLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    target: torch.Tensor = _target()
    weight: torch.Tensor | None = _weight()
    grad_input: torch.Tensor = _input(output=True)
