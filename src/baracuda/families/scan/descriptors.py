"""Scan family descriptors and args: cumulative sum, product, max, min and logsumexp."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind


class ScanKind(enum.Enum):
    CUMSUM = "cumsum"
    CUMPROD = "cumprod"
    CUMMAX = "cummax"
    CUMMIN = "cummin"
    LOGCUMSUMEXP = "logcumsumexp"
    #: first-order forward difference y_i = x_{i+1} - x_i: the scan axis shrinks by one
    DIFF = "diff"
    #: y_i = sum_{k <= i} w_k (x_k + x_{k+1}) / 2 for spacings w (one shorter along the axis)
    CUMULATIVE_TRAPEZOID = "cumulative_trapezoid"


#: kinds that also return the int64 position of the running extreme
INDEXED_KINDS = frozenset({ScanKind.CUMMAX, ScanKind.CUMMIN})
#: kinds defined only on floating inputs (torch refuses integers there)
FLOAT_ONLY_KINDS = frozenset({ScanKind.LOGCUMSUMEXP, ScanKind.CUMULATIVE_TRAPEZOID})
#: kinds whose result is one shorter along the axis (pairs of neighbours), without direction
PAIRWISE_KINDS = frozenset({ScanKind.DIFF, ScanKind.CUMULATIVE_TRAPEZOID})
INTEGER_KINDS = frozenset({ElementKind.I8, ElementKind.I16, ElementKind.I32, ElementKind.I64,
                           ElementKind.U8, ElementKind.BOOL})
ALL_ELEMENTS = tuple(sorted(FLOAT_KINDS | INTEGER_KINDS, key=lambda k: k.value))
FLOAT_ELEMENTS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))


def scan_output_element(kind: ScanKind, element: ElementKind) -> ElementKind:
    """torch's result dtype: sums and products of integers (and bools) are int64; every other
    result keeps the input's dtype."""
    if kind in (ScanKind.CUMSUM, ScanKind.CUMPROD) and element in INTEGER_KINDS:
        return ElementKind.I64
    return element


def scan_output_shape(kind: ScanKind, shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """The result's shape: the input's, one shorter along the axis for pairwise kinds."""
    if kind not in PAIRWISE_KINDS:
        return shape
    axis %= len(shape)
    return shape[:axis] + (max(shape[axis] - 1, 0),) + shape[axis + 1:]


def _validate_common(desc, who: str, elements) -> tuple[int, ...]:
    if not isinstance(desc.kind, ScanKind):
        raise V.InvalidProblem(f"{who}: kind must be a ScanKind, got {desc.kind!r}")
    if not isinstance(desc.element, ElementKind):
        raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {desc.element!r}")
    if not isinstance(desc.reverse, bool):
        raise V.InvalidProblem(f"{who}: reverse must be a bool, got {desc.reverse!r}")
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape)
    V.check_axis(who, "scan_axis", desc.scan_axis, len(shape))
    V.check_element(who, "element", desc.element, elements)
    if desc.kind in PAIRWISE_KINDS and desc.reverse:
        raise V.InvalidProblem(f"{who}: {desc.kind.value} has no reverse direction, "
                               "got reverse=True")
    return shape


class _ScanAxis:
    """The scanned axis (non-negative) and the forward result's shape (dy's, backward)."""

    @property
    def axis(self) -> int:
        return self.scan_axis % len(self.input_shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return scan_output_shape(self.kind, self.input_shape, self.scan_axis)


@dataclass(frozen=True)
class ScanDescriptor(_ScanAxis, Descriptor):
    """y[..., i, ...] = x[..., 0, ...] op ... op x[..., i, ...] along `scan_axis` (from the
    end when `reverse`); cummax / cummin also give the position of the running extreme.
    `output_element` None means torch's result dtype (`scan_output_element`)."""

    kind: ScanKind
    input_shape: tuple[int, ...]
    scan_axis: int
    element: ElementKind
    reverse: bool = False
    output_element: ElementKind | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.output_element is None and isinstance(self.kind, ScanKind) and \
                isinstance(self.element, ElementKind):
            object.__setattr__(self, "output_element",
                               scan_output_element(self.kind, self.element))

    def validate(self, who: str) -> None:
        elements = FLOAT_ELEMENTS if self.kind in FLOAT_ONLY_KINDS else ALL_ELEMENTS
        _validate_common(self, who, elements)
        want = scan_output_element(self.kind, self.element)
        if self.output_element is not want:
            got = getattr(self.output_element, "value", self.output_element)
            raise V.Unsupported(f"{who}: output_element of {self.kind.value} on "
                                f"{self.element.value} must be {want.value}, got {got}")



@dataclass(frozen=True)
class ScanBackwardDescriptor(_ScanAxis, Descriptor):
    """dx of a ScanDescriptor's op from dy (and what its formula saves: x and y for cumprod and
    logcumsumexp, the indices for cummax / cummin); floating elements only."""

    kind: ScanKind
    input_shape: tuple[int, ...]
    scan_axis: int
    element: ElementKind
    reverse: bool = False
    #: cumulative_trapezoid: the gradient for the spacings (else for the values)
    spacing_grad: bool = False

    def validate(self, who: str) -> None:
        _validate_common(self, who, FLOAT_ELEMENTS)
        if not isinstance(self.spacing_grad, bool):
            raise V.InvalidProblem(f"{who}: spacing_grad must be a bool, "
                                   f"got {self.spacing_grad!r}")
        if self.spacing_grad and self.kind is not ScanKind.CUMULATIVE_TRAPEZOID:
            raise V.InvalidProblem(f"{who}: spacing_grad is for cumulative_trapezoid, "
                                   f"got it with {self.kind.value}")

    @property
    def grad_shape(self) -> tuple[int, ...]:
        """dx's shape: the input's, or the spacings' for `spacing_grad`."""
        return self.output_shape if self.spacing_grad else self.input_shape



def _indexed(desc) -> bool:
    return desc.kind in INDEXED_KINDS


def _saves_values(desc) -> bool:
    return desc.kind in (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)


def _reads_input(desc) -> bool:
    return _saves_values(desc) or getattr(desc, "spacing_grad", False)


def _spaced(desc) -> bool:
    return desc.kind is ScanKind.CUMULATIVE_TRAPEZOID


@dataclass
class ScanArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    y: torch.Tensor = operand("output_shape", "output_element", output=True,
                              strides="non_negative")
    indices: torch.Tensor | None = operand("input_shape", ElementKind.I64, output=True,
                                           when=_indexed, strides="non_negative")
    #: cumulative_trapezoid's spacings, one per neighbour pair (stride 0 for a constant)
    spacing: torch.Tensor | None = operand("output_shape", "element", when=_spaced,
                                           strides="non_negative")


@dataclass
class ScanBackwardArgs(Args):
    dy: torch.Tensor = operand("output_shape", "element", strides="non_negative")
    dx: torch.Tensor = operand("grad_shape", "element", output=True, strides="non_negative")
    x: torch.Tensor | None = operand("input_shape", "element", when=_reads_input,
                                     strides="non_negative")
    y: torch.Tensor | None = operand("input_shape", "element", when=_saves_values,
                                     strides="non_negative")
    indices: torch.Tensor | None = operand("input_shape", ElementKind.I64, when=_indexed,
                                           strides="non_negative")
    spacing: torch.Tensor | None = operand("output_shape", "element", when=_spaced,
                                           strides="non_negative")
