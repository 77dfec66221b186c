"""repeat_interleave descriptors and args: rows of an [outer, rows, inner] view repeated a
constant number of times or by a tensor of counts; the counts -> indices overload; the
segment-sum backward."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind
from .descriptors import ALL_ELEMENTS, FLOAT_ELEMENTS

COUNT_ELEMENTS = (ElementKind.I32, ElementKind.I64)


def _validate(desc, who: str, elements) -> None:
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape, 3, 3)
    V.check_element(who, "element", desc.element, elements)
    rep = desc.repeats
    if rep is not None and (isinstance(rep, bool) or not isinstance(rep, int) or rep < 0):
        raise V.InvalidProblem(f"{who}: repeats must be an int >= 0 or None (a tensor of "
                               f"counts), got {rep!r}")
    out = desc.output_rows
    if isinstance(out, bool) or not isinstance(out, int) or out < 0:
        raise V.InvalidProblem(f"{who}: output_rows must be an int >= 0, got {out!r}")
    if rep is not None and out != rep * shape[1]:
        raise V.InvalidProblem(f"{who}: {shape[1]} rows repeated {rep} times give "
                               f"{rep * shape[1]} rows, got output_rows {out}")
    if rep is None:
        V.check_element(who, "counts_element", desc.counts_element, COUNT_ELEMENTS)


@dataclass(frozen=True)
class RepeatDescriptor(Descriptor):
    """y[b, o, i] = x[b, src(o), i] for x of `input_shape` [outer, rows, inner]: src(o) =
    o // repeats, or (repeats None) the row whose band of counts holds o; `output_rows` is
    the sum of the counts. `index`: the counts -> indices overload, y[o] = src(o) (int64;
    x absent, input_shape (1, rows, 1)). Workspace: the running total of the counts."""

    input_shape: tuple[int, int, int]
    repeats: int | None
    output_rows: int
    element: ElementKind
    counts_element: ElementKind = ElementKind.I64
    index: bool = False

    def validate(self, who: str) -> None:
        _validate(self, who, ALL_ELEMENTS)
        if not isinstance(self.index, bool):
            raise V.InvalidProblem(f"{who}: index must be a bool, got {self.index!r}")
        if self.index and (self.repeats is not None or self.element is not ElementKind.I64):
            raise V.InvalidProblem(f"{who}: the indices overload takes counts and writes int64")

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return (self.input_shape[0], self.output_rows, self.input_shape[2])


@dataclass(frozen=True)
class RepeatBackwardDescriptor(Descriptor):
    """dx[b, s, i] = the sum of dy[b, o, i] over the band of output rows row s was repeated
    into, in row order. Floating elements."""

    input_shape: tuple[int, int, int]
    repeats: int | None
    output_rows: int
    element: ElementKind
    counts_element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        _validate(self, who, FLOAT_ELEMENTS)

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return (self.input_shape[0], self.output_rows, self.input_shape[2])


def _counted(desc) -> bool:
    return desc.repeats is None


def _gathers(desc) -> bool:
    return not desc.index


@dataclass
class RepeatArgs(Args):
    y: torch.Tensor = operand("output_shape", "element", output=True, strides="non_negative")
    x: torch.Tensor | None = operand("input_shape", "element", when=_gathers,
                                     strides="non_negative")
    counts: torch.Tensor | None = operand(lambda d: (d.input_shape[1],), "counts_element",
                                          when=_counted, strides="non_negative")


@dataclass
class RepeatBackwardArgs(Args):
    dy: torch.Tensor = operand("output_shape", "element", strides="non_negative")
    dx: torch.Tensor = operand("input_shape", "element", output=True, strides="non_negative")
    counts: torch.Tensor | None = operand(lambda d: (d.input_shape[1],), "counts_element",
                                          when=_counted, strides="non_negative")
