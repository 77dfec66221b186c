"""Matrix-pattern descriptors and args: triangles (tril / triu), diagonal embeddings (diag,
diag_embed, diagflat), diagonal copies (diag of a matrix) and block-diagonal bands."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind
from .descriptors import ALL_ELEMENTS


class MatrixPattern(enum.Enum):
    #: y = x where j - i <= offset, else 0 (tril)
    LOWER = "lower"
    #: y = x where j - i >= offset, else 0 (triu)
    UPPER = "upper"
    #: y[..., i, j] = x[..., min(i, j) index along the diagonal] where j - i == offset, else 0
    EMBED = "embed"
    #: y[..., t] = x[..., i, i + offset] (the diagonal's t-th element)
    DIAGONAL = "diagonal"
    #: y[i, j] = x[i, j - offset] for offset <= j < offset + x's columns, else 0 (one row band
    #: of a block-diagonal matrix)
    BAND = "band"


#: the kernel's code of each pattern (kernels_matrix)
PATTERN_CODES = {MatrixPattern.LOWER: 0, MatrixPattern.UPPER: 1, MatrixPattern.EMBED: 2,
                 MatrixPattern.BAND: 3, MatrixPattern.DIAGONAL: 4}


def diagonal_length(m: int, n: int, offset: int) -> int:
    """Elements on the offset diagonal of an [m, n] matrix."""
    return max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))


@dataclass(frozen=True)
class MatrixPatternDescriptor(Descriptor):
    """A one-pass patterned copy between [..., M, N] matrices and their diagonals (see
    MatrixPattern); `output_element` may differ from `element` for BAND (block_diag's
    promotion): the copy converts as torch's `.to`."""

    pattern: MatrixPattern
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    offset: int
    element: ElementKind
    output_element: ElementKind | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.output_element is None:
            object.__setattr__(self, "output_element", self.element)

    def validate(self, who: str) -> None:
        V.check_in(who, "pattern", self.pattern, tuple(MatrixPattern))
        shape = V.check_shape(who, "input_shape", self.input_shape)
        out = V.check_shape(who, "output_shape", self.output_shape)
        V.check_element(who, "element", self.element, ALL_ELEMENTS)
        V.check_element(who, "output_element", self.output_element, ALL_ELEMENTS)
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise V.InvalidProblem(f"{who}: offset must be an int, got {self.offset!r}")
        p = self.pattern
        if p is not MatrixPattern.BAND and self.output_element is not self.element:
            raise V.InvalidProblem(f"{who}: only BAND converts elements, got "
                                   f"{self.element.value} -> {self.output_element.value}")
        matrix, other = (out, shape) if p is MatrixPattern.EMBED else (shape, out)
        V.check_rank(who, "the matrix shape", matrix, 2)
        if p in (MatrixPattern.LOWER, MatrixPattern.UPPER):
            want = matrix
        elif p is MatrixPattern.BAND:
            V.check_rank(who, "input_shape", shape, 2, 2)
            if self.offset < 0 or len(out) != 2 or out[0] != shape[0] or \
                    self.offset + shape[1] > out[1]:
                raise V.InvalidProblem(f"{who}: a band of {shape} at column {self.offset} does "
                                       f"not fit the output {out}")
            return
        else:
            want = matrix[:-2] + (diagonal_length(*matrix[-2:], self.offset),)
        if other != want:
            raise V.InvalidProblem(f"{who}: {p.value} of {self.input_shape} at offset "
                                   f"{self.offset} gives {want}, got output {self.output_shape}"
                                   if p is not MatrixPattern.EMBED else
                                   f"{who}: embedding into {out} at offset {self.offset} takes "
                                   f"input {want}, got {shape}")


@dataclass
class MatrixPatternArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    y: torch.Tensor = operand("output_shape", "output_element", output=True,
                              strides="non_negative")
