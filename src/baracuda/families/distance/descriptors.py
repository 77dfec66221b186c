"""Distance family descriptors and args: cdist / pdist (pairs of rows of two matrices),
row distances (pairwise_distance, dist) and cosine similarity.

Every op reduces along rows of `cols` elements; the frontends hand the kernels 2-D (or, for
cdist, 3-D batched) strided views, broadcast dims as stride 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import NON_NEGATIVE, Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind

__all__ = [
    "CdistArgs", "CdistBackwardArgs", "CdistBackwardDescriptor", "CdistDescriptor",
    "CosineArgs", "CosineBackwardArgs", "CosineBackwardDescriptor", "CosineDescriptor",
    "EuclidCdistArgs", "EuclidCdistBackwardArgs", "EuclidCdistBackwardDescriptor",
    "EuclidCdistDescriptor", "RowDistArgs", "RowDistBackwardArgs", "RowDistBackwardDescriptor",
    "RowDistDescriptor",
]

#: torch's cdist / pdist direct kernels take f32 and f64 only ("not implemented for 'Half'");
#: the matmul form of cdist (p = 2) and the norm-based ops take every float.
DIRECT_FLOATS = (ElementKind.F32, ElementKind.F64)
ALL_FLOATS = (ElementKind.F32, ElementKind.F64, ElementKind.F16, ElementKind.BF16)

# p kinds: how one element |d| enters the accumulation, how accumulations combine, the root.
P_ZERO, P_ONE, P_TWO, P_INF, P_NEG_INF, P_GENERAL = 0, 1, 2, 3, 4, 5


def p_kind(p: float) -> int:
    """The kernel's constexpr for an order p (0, 1, 2, +-inf, anything else)."""
    if p == 0:
        return P_ZERO
    if p == 1:
        return P_ONE
    if p == 2:
        return P_TWO
    if p == math.inf:
        return P_INF
    if p == -math.inf:
        return P_NEG_INF
    return P_GENERAL


def no_identity(p: float) -> bool:
    """Orders whose norm of nothing is undefined (torch refuses them on empty reductions)."""
    return p < 0 or p == math.inf


def _check_p(who: str, p, allow_negative: bool) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p):
        raise V.InvalidProblem(f"{who}: p must be a number (inf allowed), got {p!r}")
    if p < 0 and not allow_negative:
        raise V.InvalidProblem(f"{who}: p must be >= 0, got {p!r}")


def _check_float(who: str, name: str, element, allowed) -> None:
    V.check_element(who, name, element, allowed)


@dataclass(frozen=True)
class CdistDescriptor(Descriptor):
    """out[b, i, j] = ||x[b, i] - y[b, j]||_p (direct form), x [batch, rows_x, cols], y
    [batch, rows_y, cols]; `condensed` (pdist): y is x, batch 1, out the upper triangle
    i < j in row-major order, [rows_x (rows_x - 1) / 2]."""

    batch: int
    rows_x: int
    rows_y: int
    cols: int
    p: float
    element: ElementKind
    condensed: bool = False

    def validate(self, who: str) -> None:
        V.check_shape(who, "(batch, rows_x, rows_y, cols)",
                      (self.batch, self.rows_x, self.rows_y, self.cols))
        _check_p(who, self.p, allow_negative=False)
        _check_float(who, "element", self.element, DIRECT_FLOATS)
        V.check_bool(who, "condensed", self.condensed)
        if self.condensed and (self.batch != 1 or self.rows_y != self.rows_x):
            raise V.InvalidProblem(f"{who}: a condensed (pdist) problem has batch 1 and "
                                   f"rows_y == rows_x, got batch {self.batch}, rows_x "
                                   f"{self.rows_x}, rows_y {self.rows_y}")

    @property
    def x_shape(self) -> tuple[int, ...]:
        return (self.rows_x, self.cols) if self.condensed else (self.batch, self.rows_x,
                                                                self.cols)

    @property
    def y_shape(self) -> tuple[int, ...]:
        return (self.batch, self.rows_y, self.cols)

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.condensed:
            return (self.rows_x * (self.rows_x - 1) // 2,)
        return (self.batch, self.rows_x, self.rows_y)


@dataclass(frozen=True)
class CdistBackwardDescriptor(CdistDescriptor):
    """gx (and gy unless condensed) from the upstream gradient and the forward's output."""


def _not_condensed(d) -> bool:
    return not d.condensed


@dataclass
class CdistArgs(Args):
    x: torch.Tensor = operand("x_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", output=True, strides=NON_NEGATIVE)
    y: torch.Tensor | None = operand("y_shape", "element", when=_not_condensed,
                                     strides=NON_NEGATIVE)


@dataclass
class CdistBackwardArgs(Args):
    grad: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    x: torch.Tensor = operand("x_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    gx: torch.Tensor = operand("x_shape", "element", output=True, strides=NON_NEGATIVE)
    y: torch.Tensor | None = operand("y_shape", "element", when=_not_condensed,
                                     strides=NON_NEGATIVE)
    gy: torch.Tensor | None = operand("y_shape", "element", output=True, when=_not_condensed,
                                      strides=NON_NEGATIVE)


@dataclass(frozen=True)
class EuclidCdistDescriptor(Descriptor):
    """out[b, i, j] = sqrt(max(|x_i|^2 + |y_j|^2 - 2 x_i . y_j, 0)): cdist's matmul form
    (p = 2), the Gram product on torch.matmul."""

    batch: int
    rows_x: int
    rows_y: int
    cols: int
    element: ElementKind

    def validate(self, who: str) -> None:
        V.check_shape(who, "(batch, rows_x, rows_y, cols)",
                      (self.batch, self.rows_x, self.rows_y, self.cols))
        _check_float(who, "element", self.element, ALL_FLOATS)

    @property
    def x_shape(self) -> tuple[int, ...]:
        return (self.batch, self.rows_x, self.cols)

    @property
    def y_shape(self) -> tuple[int, ...]:
        return (self.batch, self.rows_y, self.cols)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.batch, self.rows_x, self.rows_y)


@dataclass(frozen=True)
class EuclidCdistBackwardDescriptor(EuclidCdistDescriptor):
    """gx = x rowsum(r) - r y, gy = y colsum(r) - r^T x with r = grad / out (0 where out = 0)."""


@dataclass
class EuclidCdistArgs(Args):
    x: torch.Tensor = operand("x_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand("y_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", output=True, strides=NON_NEGATIVE)


@dataclass
class EuclidCdistBackwardArgs(Args):
    grad: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    x: torch.Tensor = operand("x_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand("y_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    gx: torch.Tensor = operand("x_shape", "element", output=True, strides=NON_NEGATIVE)
    gy: torch.Tensor = operand("y_shape", "element", output=True, strides=NON_NEGATIVE)


@dataclass(frozen=True)
class RowDistDescriptor(Descriptor):
    """out[r] = ||x[r] - y[r] + eps||_p over `cols` (pairwise_distance), or with `reduce_all`
    the norm of all rows together, a 0-d out (dist, eps 0). Any p, negative and +-inf too."""

    rows: int
    cols: int
    p: float
    eps: float
    element: ElementKind
    reduce_all: bool = False

    def validate(self, who: str) -> None:
        V.check_shape(who, "(rows, cols)", (self.rows, self.cols))
        _check_p(who, self.p, allow_negative=True)
        V.check_finite(who, "eps", self.eps)
        _check_float(who, "element", self.element, ALL_FLOATS)
        V.check_bool(who, "reduce_all", self.reduce_all)
        if no_identity(self.p) and self.rows * self.cols == 0 and (
                self.reduce_all or self.cols == 0):
            raise V.InvalidProblem(f"{who}: the {self.p} norm of nothing has no identity "
                                   f"(p < 0 or inf), got rows {self.rows}, cols {self.cols}")

    @property
    def row_shape(self) -> tuple[int, ...]:
        return (self.rows, self.cols)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return () if self.reduce_all else (self.rows,)


@dataclass(frozen=True)
class RowDistBackwardDescriptor(RowDistDescriptor):
    """gx = grad * d||v||_p / dv at v = x - y + eps, gy = -gx (+-inf: ties share the grad)."""


@dataclass
class RowDistArgs(Args):
    x: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", output=True, strides=NON_NEGATIVE)


@dataclass
class RowDistBackwardArgs(Args):
    grad: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    x: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    gx: torch.Tensor = operand("row_shape", "element", output=True, strides=NON_NEGATIVE)
    gy: torch.Tensor = operand("row_shape", "element", output=True, strides=NON_NEGATIVE)


@dataclass(frozen=True)
class CosineDescriptor(Descriptor):
    """out[r] = sum(x[r] / max(|x[r]|, eps) * y[r] / max(|y[r]|, eps)) (torch's formula)."""

    rows: int
    cols: int
    eps: float
    element: ElementKind

    def validate(self, who: str) -> None:
        V.check_shape(who, "(rows, cols)", (self.rows, self.cols))
        V.check_finite(who, "eps", self.eps)
        _check_float(who, "element", self.element, ALL_FLOATS)

    @property
    def row_shape(self) -> tuple[int, ...]:
        return (self.rows, self.cols)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.rows,)


@dataclass(frozen=True)
class CosineBackwardDescriptor(CosineDescriptor):
    """gx = g (y / (n1c n2c) - cos x / (n1c n1)), gy likewise; n = |row|, nc = max(n, eps)."""


@dataclass
class CosineArgs(Args):
    x: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    out: torch.Tensor = operand("out_shape", "element", output=True, strides=NON_NEGATIVE)


@dataclass
class CosineBackwardArgs(Args):
    grad: torch.Tensor = operand("out_shape", "element", strides=NON_NEGATIVE)
    x: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand("row_shape", "element", strides=NON_NEGATIVE)
    gx: torch.Tensor = operand("row_shape", "element", output=True, strides=NON_NEGATIVE)
    gy: torch.Tensor = operand("row_shape", "element", output=True, strides=NON_NEGATIVE)
