"""Descriptors and args of the three-point stencil behind torch.gradient: y_i = (w_i0 x_{s_i} +
w_i1 x_{s_i+1} + w_i2 x_{s_i+2}) / h_i along one axis, the weights per position in a small
coefficient table, and its transpose (the gradient's backward)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

FLOAT_ELEMENTS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))
#: columns of a coefficient table row: the three tap weights and the divisor
TABLE_COLUMNS = 4


def table_element(element: ElementKind) -> ElementKind:
    """The coefficient table's dtype: the kernel's accumulator (f64 for f64, else f32)."""
    return ElementKind.F64 if element is ElementKind.F64 else ElementKind.F32


class _StencilAxis:
    @property
    def axis(self) -> int:
        return self.scan_axis % len(self.input_shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.input_shape

    @property
    def table_shape(self) -> tuple[int, int]:
        """One row per position along the axis: (w0, w1, w2, h)."""
        return (self.input_shape[self.axis], TABLE_COLUMNS)

    @property
    def table_element(self) -> ElementKind:
        return table_element(self.element)

    def validate(self, who: str) -> None:
        if not isinstance(self.element, ElementKind):
            raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {self.element!r}")
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape)
        V.check_axis(who, "scan_axis", self.scan_axis, len(shape))
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)


@dataclass(frozen=True)
class GradientDescriptor(_StencilAxis, Descriptor):
    """y_i = (w_i0 x_{s_i} + w_i1 x_{s_i+1} + w_i2 x_{s_i+2}) / h_i along `scan_axis`, with
    s_i = clamp(i - 1, 0, max(N - 3, 0)) (a centred stencil inside, one-sided at the ends) and
    the table row (w_i0, w_i1, w_i2, h_i) per position; a zero weight skips its tap (a NaN or
    an infinity there does not reach y_i). Floating elements; the table is f64 for f64, else
    f32."""

    input_shape: tuple[int, ...]
    scan_axis: int
    element: ElementKind


@dataclass(frozen=True)
class GradientBackwardDescriptor(_StencilAxis, Descriptor):
    """dx of a GradientDescriptor's stencil from dy: the transposed stencil, dx_j = the sum of
    (w_ik / h_i) dy_i over the (i, k) whose tap s_i + k is j."""

    input_shape: tuple[int, ...]
    scan_axis: int
    element: ElementKind


@dataclass
class GradientArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    y: torch.Tensor = operand("input_shape", "element", output=True, strides="non_negative")
    #: (N, 4) rows (w0, w1, w2, h), contiguous
    table: torch.Tensor = operand("table_shape", "table_element", strides="non_negative")


@dataclass
class GradientBackwardArgs(Args):
    dy: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    dx: torch.Tensor = operand("input_shape", "element", output=True, strides="non_negative")
    table: torch.Tensor = operand("table_shape", "table_element", strides="non_negative")
