"""Structured-loss descriptors and args: multi_margin, multilabel_margin, cosine_embedding,
triplet_margin and the margin hinge of triplet_margin_with_distance.

Every problem is a batch of N rows (N >= 0) of D (or C) elements: `shape` is (N, D). The torch
functions map torch's 1-D (unbatched) forms onto N = 1 and its >2-D triplet inputs onto
(prod(leading), D). The loss is (N,) for reduction none, else a scalar.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from operator import attrgetter

import torch

from ...core import validate as V
from ...core.args import NON_NEGATIVE, UNIT_LAST, Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind
from .descriptors import LossReduction

#: What the family package re-exports from this module.
__all__ = [
    "CosineEmbeddingLossArgs", "CosineEmbeddingLossBackwardArgs",
    "CosineEmbeddingLossBackwardDescriptor", "CosineEmbeddingLossDescriptor",
    "MarginHingeLossArgs", "MarginHingeLossBackwardArgs", "MarginHingeLossBackwardDescriptor",
    "MarginHingeLossDescriptor", "MultiMarginLossArgs", "MultiMarginLossBackwardArgs",
    "MultiMarginLossBackwardDescriptor", "MultiMarginLossDescriptor",
    "MultilabelMarginLossArgs", "MultilabelMarginLossBackwardArgs",
    "MultilabelMarginLossBackwardDescriptor", "MultilabelMarginLossDescriptor",
    "TripletMarginLossArgs", "TripletMarginLossBackwardArgs",
    "TripletMarginLossBackwardDescriptor", "TripletMarginLossDescriptor",
]

FLOATS = sorted(FLOAT_KINDS, key=lambda k: k.value)
INDEX = sorted(INDEX_KINDS, key=lambda k: k.value)
#: cosine_embedding_loss compares its target with 1 and -1: any integer or float kind.
ANY_TARGET = [*INDEX, *FLOATS]


@dataclass(frozen=True)
class _RowsDescriptor(Descriptor):
    shape: tuple[int, ...]
    element: ElementKind
    reduction: LossReduction = LossReduction.MEAN

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def width(self) -> int:
        return self.shape[1]

    @property
    def loss_shape(self) -> tuple[int, ...]:
        return (self.rows,) if self.reduction is LossReduction.NONE else ()

    @property
    def row_shape(self) -> tuple[int, ...]:
        return (self.rows,)

    def _common(self, who: str, min_width: int = 1) -> None:
        shape = V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", shape, 2, 2)
        V.check_element(who, "element", self.element, FLOATS)
        if not isinstance(self.reduction, LossReduction):
            raise V.InvalidProblem(
                f"{who}: {self.reduction!r} is not a valid value for reduction; expected one of "
                f"{[r.value for r in LossReduction]}")
        if shape[1] < min_width:
            raise V.InvalidProblem(f"{who}: shape[1] (the row width) must be >= {min_width}, "
                                   f"got {shape[1]}")

    def validate(self, who: str) -> None:
        self._common(who)


def _check_margin(who: str, margin) -> None:
    V.check_finite(who, "margin", margin)


@dataclass(frozen=True)
class MultiMarginLossDescriptor(_RowsDescriptor):
    """torch.nn.functional.multi_margin_loss: shape (N, C), class-index targets (N,),
    p in {1, 2}, margin, optional class weights (C,)."""

    target_element: ElementKind = ElementKind.I64
    p: int = 1
    margin: float = 1.0
    has_weight: bool = False

    def validate(self, who: str) -> None:
        self._common(who)
        V.check_element(who, "target_element", self.target_element, INDEX)
        if isinstance(self.p, bool) or self.p not in (1, 2):
            raise V.Unsupported(f"{who}: only p == 1 and p == 2 supported, got p={self.p!r}")
        _check_margin(who, self.margin)
        V.check_bool(who, "has_weight", self.has_weight)


@dataclass(frozen=True)
class MultiMarginLossBackwardDescriptor(MultiMarginLossDescriptor):
    """grad_input from grad_loss, input and targets."""


@dataclass(frozen=True)
class MultilabelMarginLossDescriptor(_RowsDescriptor):
    """torch.nn.functional.multilabel_margin_loss: shape (N, C); targets (N, C) of class
    indices, read up to the first -1 of each row."""

    target_element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        self._common(who)
        V.check_element(who, "target_element", self.target_element, INDEX)


@dataclass(frozen=True)
class MultilabelMarginLossBackwardDescriptor(MultilabelMarginLossDescriptor):
    """grad_input from grad_loss, input and targets."""


@dataclass(frozen=True)
class CosineEmbeddingLossDescriptor(_RowsDescriptor):
    """torch.nn.functional.cosine_embedding_loss: two (N, D) inputs, targets (N,) compared
    with 1 and -1 (any other value contributes 0, as in torch)."""

    target_element: ElementKind = ElementKind.I64
    margin: float = 0.0

    def validate(self, who: str) -> None:
        self._common(who, 0)
        V.check_element(who, "target_element", self.target_element, ANY_TARGET)
        _check_margin(who, self.margin)


@dataclass(frozen=True)
class CosineEmbeddingLossBackwardDescriptor(CosineEmbeddingLossDescriptor):
    """grad_input1 and grad_input2 from grad_loss, the inputs and targets."""


@dataclass(frozen=True)
class TripletMarginLossDescriptor(_RowsDescriptor):
    """torch.nn.functional.triplet_margin_loss: anchor, positive, negative (N, D);
    d(x, y) = ||x - y + eps||_p over the row; loss = max(margin + d(a, p) - d(a, n), 0),
    with swap d(a, n) -> min(d(a, n), d(p, n)). p > 0 finite."""

    margin: float = 1.0
    p: float = 2.0
    eps: float = 1e-6
    swap: bool = False

    def validate(self, who: str) -> None:
        self._common(who, 0)
        _check_margin(who, self.margin)
        if isinstance(self.p, bool) or not isinstance(self.p, (int, float)):
            raise V.InvalidProblem(f"{who}: p must be a number, got {self.p!r}")
        V.check_finite(who, "eps", self.eps)
        V.check_bool(who, "swap", self.swap)
        if not (math.isfinite(self.p) and self.p > 0):
            raise V.Unsupported(f"{who}: p must be finite and > 0, got {self.p!r}")


@dataclass(frozen=True)
class TripletMarginLossBackwardDescriptor(TripletMarginLossDescriptor):
    """Gradients of anchor, positive and negative from grad_loss and the inputs."""


@dataclass(frozen=True)
class MarginHingeLossDescriptor(_RowsDescriptor):
    """The hinge of triplet_margin_with_distance_loss on precomputed distances (N,):
    loss = max(margin + d_pos - d_neg, 0), with swap d_neg -> min(d_neg, d_swap).
    shape is (N, 1)."""

    margin: float = 1.0
    swap: bool = False

    def validate(self, who: str) -> None:
        self._common(who)
        if self.width != 1:
            raise V.InvalidProblem(f"{who}: shape must be (N, 1), got {self.shape}")
        _check_margin(who, self.margin)
        V.check_bool(who, "swap", self.swap)


@dataclass(frozen=True)
class MarginHingeLossBackwardDescriptor(MarginHingeLossDescriptor):
    """Gradients of the distances from grad_loss."""


# -- args ------------------------------------------------------------------------------------
def _x(output: bool = False):
    return operand("shape", "element", output=output, strides=NON_NEGATIVE)


def _loss(output: bool = False):
    return operand("loss_shape", "element", output=output, strides=NON_NEGATIVE)


def _rowvec(element="element", output: bool = False, when=None):
    return operand("row_shape", element, output=output, strides=NON_NEGATIVE, when=when,
                   default=dataclasses.MISSING if when is not None else None)


def _class_weight():
    return operand(lambda d: (d.width,), "element", when=attrgetter("has_weight"),
                   strides=UNIT_LAST, default=dataclasses.MISSING)


@dataclass
class MultiMarginLossArgs(Args):
    input: torch.Tensor = _x()
    target: torch.Tensor = _rowvec("target_element")
    weight: torch.Tensor | None = _class_weight()
    loss: torch.Tensor = _loss(output=True)


@dataclass
class MultiMarginLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    input: torch.Tensor = _x()
    target: torch.Tensor = _rowvec("target_element")
    weight: torch.Tensor | None = _class_weight()
    grad_input: torch.Tensor = _x(output=True)


@dataclass
class MultilabelMarginLossArgs(Args):
    input: torch.Tensor = _x()
    target: torch.Tensor = operand("shape", "target_element", strides=NON_NEGATIVE)
    loss: torch.Tensor = _loss(output=True)


@dataclass
class MultilabelMarginLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    input: torch.Tensor = _x()
    target: torch.Tensor = operand("shape", "target_element", strides=NON_NEGATIVE)
    grad_input: torch.Tensor = _x(output=True)


@dataclass
class CosineEmbeddingLossArgs(Args):
    input1: torch.Tensor = _x()
    input2: torch.Tensor = _x()
    target: torch.Tensor = _rowvec("target_element")
    loss: torch.Tensor = _loss(output=True)


@dataclass
class CosineEmbeddingLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    input1: torch.Tensor = _x()
    input2: torch.Tensor = _x()
    target: torch.Tensor = _rowvec("target_element")
    grad_input1: torch.Tensor = _x(output=True)
    grad_input2: torch.Tensor = _x(output=True)


@dataclass
class TripletMarginLossArgs(Args):
    anchor: torch.Tensor = _x()
    positive: torch.Tensor = _x()
    negative: torch.Tensor = _x()
    loss: torch.Tensor = _loss(output=True)


@dataclass
class TripletMarginLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    anchor: torch.Tensor = _x()
    positive: torch.Tensor = _x()
    negative: torch.Tensor = _x()
    grad_anchor: torch.Tensor = _x(output=True)
    grad_positive: torch.Tensor = _x(output=True)
    grad_negative: torch.Tensor = _x(output=True)


_swap = attrgetter("swap")


@dataclass
class MarginHingeLossArgs(Args):
    dist_pos: torch.Tensor = _rowvec()
    dist_neg: torch.Tensor = _rowvec()
    dist_swap: torch.Tensor | None = _rowvec(when=_swap)
    loss: torch.Tensor = _loss(output=True)


@dataclass
class MarginHingeLossBackwardArgs(Args):
    grad_loss: torch.Tensor = _loss()
    dist_pos: torch.Tensor = _rowvec()
    dist_neg: torch.Tensor = _rowvec()
    dist_swap: torch.Tensor | None = _rowvec(when=_swap)
    grad_pos: torch.Tensor = _rowvec(output=True)
    grad_neg: torch.Tensor = _rowvec(output=True)
    grad_swap: torch.Tensor | None = _rowvec(output=True, when=_swap)
