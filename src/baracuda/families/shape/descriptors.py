"""Shape family descriptors and args: the strided copy (with flips and rolls), the sum over
broadcast dims (the copies' gradients) and the concatenation."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind

ALL_ELEMENTS = tuple(ElementKind)
FLOAT_ELEMENTS = (ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64)
#: inputs one concatenation launch takes (kernels.MAX_CAT_INPUTS)
MAX_CAT_INPUTS = 8


@dataclass(frozen=True)
class CopyDescriptor(Descriptor):
    """y[i] = x[src(i)] for y and x of `shape` (any strides each, rank 0..8), where src
    reverses the dims in `flips` and rolls the others: along dim d the source index is
    (i + rolls[d]) mod shape[d] (0 <= rolls[d] < shape[d]; `rolls` empty: none). The value is
    cast to `output_element` (None: the input's)."""

    shape: tuple[int, ...]
    element: ElementKind
    output_element: ElementKind | None = None
    flips: tuple[int, ...] = ()
    rolls: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.output_element is None:
            object.__setattr__(self, "output_element", self.element)

    def validate(self, who: str) -> None:
        shape = V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", shape, lo=0)
        V.check_kind(who, "element", self.element)
        V.check_kind(who, "output_element", self.output_element)
        if not isinstance(self.flips, tuple) or \
                sorted(set(self.flips)) != list(self.flips) or \
                any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < len(shape)
                    for d in self.flips):
            raise V.InvalidProblem(f"{who}: flips must be sorted distinct dims in "
                                   f"[0, {len(shape)}), got {self.flips!r}")
        if self.rolls:
            if len(self.rolls) != len(shape):
                raise V.InvalidProblem(f"{who}: rolls must have one entry per dim "
                                       f"({len(shape)}), got {self.rolls!r}")
            for d, (r, n) in enumerate(zip(self.rolls, shape)):
                if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < max(n, 1):
                    raise V.InvalidProblem(f"{who}: rolls[{d}] must be in [0, {max(n, 1)}), "
                                           f"got {r!r}")
            if set(self.flips) & {d for d, r in enumerate(self.rolls) if r}:
                raise V.InvalidProblem(f"{who}: a dim is flipped or rolled, not both; got "
                                       f"flips {self.flips} and rolls {self.rolls}")

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.shape


@dataclass
class CopyArgs(Args):
    x: torch.Tensor = operand("shape", "element", strides="non_negative")
    y: torch.Tensor = operand("shape", "output_element", output=True, strides="non_negative")


@dataclass(frozen=True)
class SumDimsDescriptor(Descriptor):
    """y = x summed over `dims` (kept as extent 1): the gradient of a broadcast (expand,
    repeat, tile). Each output element is one program's sum in a fixed order."""

    input_shape: tuple[int, ...]
    dims: tuple[int, ...]
    element: ElementKind

    def validate(self, who: str) -> None:
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape, lo=0)
        V.check_kind(who, "element", self.element)
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        if not isinstance(self.dims, tuple) or sorted(set(self.dims)) != list(self.dims) or \
                any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < len(shape)
                    for d in self.dims):
            raise V.InvalidProblem(f"{who}: dims must be sorted distinct dims in "
                                   f"[0, {len(shape)}), got {self.dims!r}")

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(1 if i in self.dims else n for i, n in enumerate(self.input_shape))


@dataclass
class SumDimsArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    y: torch.Tensor = operand("output_shape", "element", output=True, strides="non_negative")


@dataclass(frozen=True)
class CatDescriptor(Descriptor):
    """y[:, c_i : c_i + w_i] = x_i for inputs x_i of [rows, widths[i]] (each with its own
    element, unit column stride, any row stride), c_i the running sum of the widths; the
    values cast to `output_element`. One launch for up to eight inputs."""

    rows: int
    widths: tuple[int, ...]
    elements: tuple[ElementKind, ...]
    output_element: ElementKind

    @property
    def element(self) -> ElementKind:
        """The element the plan is listed by (`baracuda ops`): the output's."""
        return self.output_element

    def validate(self, who: str) -> None:
        if isinstance(self.rows, bool) or not isinstance(self.rows, int) or self.rows < 0:
            raise V.InvalidProblem(f"{who}: rows must be an int >= 0, got {self.rows!r}")
        widths = V.check_shape(who, "widths", self.widths)
        if not 1 <= len(widths) <= MAX_CAT_INPUTS:
            raise V.Unsupported(f"{who}: 1..{MAX_CAT_INPUTS} inputs per launch, got "
                                f"{len(widths)}")
        if not isinstance(self.elements, tuple) or len(self.elements) != len(widths):
            raise V.InvalidProblem(f"{who}: elements must hold one ElementKind per input "
                                   f"({len(widths)}), got {self.elements!r}")
        for i, e in enumerate(self.elements):
            V.check_kind(who, f"elements[{i}]", e)
        V.check_kind(who, "output_element", self.output_element)

    @property
    def output_shape(self) -> tuple[int, int]:
        return (self.rows, sum(self.widths))


def _cat_operand(k: int):
    return operand(lambda d, k=k: (d.rows, d.widths[k]), lambda d, k=k: d.elements[k],
                   when=lambda d, k=k: len(d.widths) > k, strides="unit_last")


@dataclass
class CatArgs(Args):
    y: torch.Tensor = operand("output_shape", "output_element", output=True,
                              strides="unit_last")
    x0: torch.Tensor | None = _cat_operand(0)
    x1: torch.Tensor | None = _cat_operand(1)
    x2: torch.Tensor | None = _cat_operand(2)
    x3: torch.Tensor | None = _cat_operand(3)
    x4: torch.Tensor | None = _cat_operand(4)
    x5: torch.Tensor | None = _cat_operand(5)
    x6: torch.Tensor | None = _cat_operand(6)
    x7: torch.Tensor | None = _cat_operand(7)

    def inputs(self) -> list[torch.Tensor]:
        return [t for t in (self.x0, self.x1, self.x2, self.x3, self.x4, self.x5, self.x6,
                            self.x7) if t is not None]
