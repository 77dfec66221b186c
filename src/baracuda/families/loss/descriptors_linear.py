"""Fused linear + cross-entropy descriptors and args: the projection x @ W^T (+ b), an optional
logit soft-cap, cross-entropy over class indices and an optional z-loss term, chunked over
tokens so the [tokens, classes] logits are never held whole."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from operator import attrgetter

import torch

from ...core import validate as V
from ...core.args import UNIT_LAST, Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind
from .descriptors import LossReduction, _reduction_of

#: What the family package re-exports from this module.
__all__ = [
    "LinearCrossEntropyArgs", "LinearCrossEntropyBackwardArgs",
    "LinearCrossEntropyBackwardDescriptor", "LinearCrossEntropyDescriptor",
]

_FLOATS = sorted(FLOAT_KINDS, key=lambda k: k.value)
_INDEX = sorted(INDEX_KINDS, key=lambda k: k.value)


@dataclass(frozen=True)
class LinearCrossEntropyDescriptor(Descriptor):
    """cross_entropy(softcap(input @ linear_weight^T + linear_bias), target) + z_loss * lse^2.

    input (tokens, hidden); linear_weight (classes, hidden); class-index target (tokens,);
    linear_bias and the class weight (classes,) when `has_bias` / `has_weight`. `softcap` 0
    means none, else logits = softcap * tanh(logits / softcap). `z_loss` >= 0 is the
    coefficient of lse^2 (Liger / PaLM). `chunk_rows` 0 picks the chunk from a memory budget.
    """

    tokens: int
    hidden: int
    classes: int
    element: ElementKind
    target_element: ElementKind = ElementKind.I64
    reduction: LossReduction = LossReduction.MEAN
    has_bias: bool = False
    has_weight: bool = False
    ignore_index: int = -100
    label_smoothing: float = 0.0
    softcap: float = 0.0
    z_loss: float = 0.0
    chunk_rows: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "reduction", _reduction_of(self.reduction))

    @property
    def loss_shape(self) -> tuple[int, ...]:
        return (self.tokens,) if self.reduction is LossReduction.NONE else ()

    @property
    def input_shape(self) -> tuple[int, int]:
        return (self.tokens, self.hidden)

    @property
    def weight_shape(self) -> tuple[int, int]:
        return (self.classes, self.hidden)

    def validate(self, who: str) -> None:
        for name in ("element", "target_element"):
            if not isinstance(getattr(self, name), ElementKind):
                raise V.InvalidProblem(
                    f"{who}: {name} must be an ElementKind, got {getattr(self, name)!r}")
        for name in ("tokens", "hidden", "classes", "chunk_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise V.InvalidProblem(
                    f"{who}: {name} must be a non-negative int, got {value!r}")
        if self.classes < 1:
            raise V.InvalidProblem(f"{who}: classes must be >= 1, got {self.classes}")
        V.check_element(who, "element", self.element, _FLOATS)
        V.check_element(who, "target_element", self.target_element, _INDEX)
        if not isinstance(self.reduction, LossReduction):
            raise V.InvalidProblem(
                f"{who}: {self.reduction!r} is not a valid value for reduction; expected one of "
                f"{[r.value for r in LossReduction]}")
        V.check_bool(who, "has_bias", self.has_bias)
        V.check_bool(who, "has_weight", self.has_weight)
        if isinstance(self.ignore_index, bool) or not isinstance(self.ignore_index, int):
            raise V.InvalidProblem(f"{who}: ignore_index must be an int, got {self.ignore_index!r}")
        for name in ("label_smoothing", "softcap", "z_loss"):
            V.check_finite(who, name, getattr(self, name))
        if not 0.0 <= self.label_smoothing <= 1.0:
            raise V.InvalidProblem(f"{who}: label_smoothing must be between 0.0 and 1.0, got "
                                   f"{self.label_smoothing}")
        if self.softcap < 0.0:
            raise V.InvalidProblem(f"{who}: softcap must be > 0 (or 0: none), got {self.softcap}")
        if self.z_loss < 0.0:
            raise V.InvalidProblem(f"{who}: z_loss must be >= 0, got {self.z_loss}")
        if math.prod((self.tokens, self.hidden)) >= 2**62:
            raise V.InvalidProblem(f"{who}: tokens * hidden must be < 2**62, got "
                                   f"{self.tokens} * {self.hidden}")


@dataclass(frozen=True)
class LinearCrossEntropyBackwardDescriptor(LinearCrossEntropyDescriptor):
    """The gradients from grad_loss, the logits recomputed chunk by chunk."""


def _classes(d) -> tuple[int]:
    return (d.classes,)


def _bias():
    """Present exactly when has_bias (positional, like the other fields)."""
    return operand(_classes, "element", when=attrgetter("has_bias"), default=dataclasses.MISSING)


def _class_weight():
    """The kernels index the class weights as a dense vector: a strided one is refused."""
    return operand(_classes, "element", when=attrgetter("has_weight"), strides=UNIT_LAST,
                   default=dataclasses.MISSING)


@dataclass
class LinearCrossEntropyArgs(Args):
    """Forward: loss (with the z-loss term added) and the z-loss term alone. The gradients, for
    a unit upstream gradient, are written when their outputs are given (reduction mean / sum:
    the fused training step)."""

    input: torch.Tensor = operand("input_shape", "element")
    linear_weight: torch.Tensor = operand("weight_shape", "element")
    target: torch.Tensor = operand(lambda d: (d.tokens,), "target_element")
    linear_bias: torch.Tensor | None = _bias()
    weight: torch.Tensor | None = _class_weight()
    loss: torch.Tensor = operand("loss_shape", "element", output=True)
    z_loss: torch.Tensor = operand("loss_shape", "element", output=True)
    grad_input: torch.Tensor | None = operand("input_shape", "element", output=True,
                                              optional=True)
    grad_linear_weight: torch.Tensor | None = operand("weight_shape", "element", output=True,
                                                      optional=True)
    grad_linear_bias: torch.Tensor | None = operand(_classes, "element", output=True,
                                                    optional=True)


@dataclass
class LinearCrossEntropyBackwardArgs(Args):
    """The gradients of the inputs given (None: not computed) from grad_loss."""

    grad_loss: torch.Tensor = operand("loss_shape", "element")
    input: torch.Tensor = operand("input_shape", "element")
    linear_weight: torch.Tensor = operand("weight_shape", "element")
    target: torch.Tensor = operand(lambda d: (d.tokens,), "target_element")
    linear_bias: torch.Tensor | None = _bias()
    weight: torch.Tensor | None = _class_weight()
    grad_input: torch.Tensor | None = operand("input_shape", "element", output=True,
                                              optional=True)
    grad_linear_weight: torch.Tensor | None = operand("weight_shape", "element", output=True,
                                                      optional=True)
    grad_linear_bias: torch.Tensor | None = operand(_classes, "element", output=True,
                                                    optional=True)
