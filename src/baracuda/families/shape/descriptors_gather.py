"""Descriptors of the table gather (combinations): y[i] = x[idx[i]] for a host-built index
table, and its gradient as a gather-form sum over the inverse table (CSR)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind

FLOAT_ELEMENTS = (ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64)


def _check_count(who: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise V.InvalidProblem(f"{who}: {name} must be an int >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class GatherDescriptor(Descriptor):
    """y[i] = x[idx[i]] for i < m: x 1-D of n elements (any stride), idx an int64 table of m
    entries in [0, n) (the frontend builds it), y 1-D contiguous."""

    n: int
    m: int
    element: ElementKind

    def validate(self, who: str) -> None:
        _check_count(who, "n", self.n)
        _check_count(who, "m", self.m)
        if self.m and not self.n:
            raise V.InvalidProblem(f"{who}: a non-empty gather (m={self.m}) needs a non-empty "
                                   "source (n=0)")
        V.check_kind(who, "element", self.element)

    @property
    def output_shape(self) -> tuple[int]:
        return (self.m,)


@dataclass
class GatherArgs(Args):
    x: torch.Tensor = operand(lambda d: (d.n,), "element", strides="non_negative")
    idx: torch.Tensor = operand(lambda d: (d.m,), ElementKind.I64, strides="unit_last")
    y: torch.Tensor = operand("output_shape", "element", output=True, strides="unit_last")


@dataclass(frozen=True)
class GatherSumDescriptor(Descriptor):
    """dx[j] = sum of dy.flat[pos[k]] for k in [ptr[j], ptr[j + 1]), in order: the gather's
    gradient without atomics. dy is [rows, cols] (any strides; its flat index is
    row * cols + col), dx 1-D of n; `degree` bounds ptr[j + 1] - ptr[j]."""

    n: int
    rows: int
    cols: int
    degree: int
    element: ElementKind

    def validate(self, who: str) -> None:
        for name in ("n", "rows", "cols", "degree"):
            _check_count(who, name, getattr(self, name))
        V.check_kind(who, "element", self.element)
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        if self.n and self.degree > self.rows * self.cols:
            raise V.InvalidProblem(f"{who}: degree {self.degree} exceeds the {self.rows} x "
                                   f"{self.cols} positions of dy")

    @property
    def output_shape(self) -> tuple[int]:
        return (self.n,)


@dataclass
class GatherSumArgs(Args):
    dy: torch.Tensor = operand(lambda d: (d.rows, d.cols), "element", strides="non_negative")
    ptr: torch.Tensor = operand(lambda d: (d.n + 1,), ElementKind.I64, strides="unit_last")
    pos: torch.Tensor = operand(lambda d: (d.rows * d.cols,), ElementKind.I64,
                                strides="unit_last")
    dx: torch.Tensor = operand("output_shape", "element", output=True, strides="non_negative")
