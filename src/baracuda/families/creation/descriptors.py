"""Creation family descriptors and args: constant fills, ranges (arange / linspace /
logspace), band matrices (eye / tri) and the triangle index lists (tril / triu_indices)."""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

INTEGER_KINDS = frozenset({ElementKind.I8, ElementKind.I16, ElementKind.I32, ElementKind.I64,
                           ElementKind.U8, ElementKind.BOOL})
ALL_ELEMENTS = tuple(sorted(FLOAT_KINDS | INTEGER_KINDS, key=lambda k: k.value))
#: the dtypes torch's range factories and eye compute (bool has no arange / linspace)
RANGE_ELEMENTS = tuple(k for k in ALL_ELEMENTS if k is not ElementKind.BOOL)
INDEX_ELEMENTS = (ElementKind.I32, ElementKind.I64)
_SCALARS = (bool, int, float)
#: the signed integer type of each element width: a fill stores a value's bit pattern
INT_VIEW = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@functools.lru_cache(maxsize=1024)
def _bits(kind: type, value, sign: float, element: ElementKind) -> int:
    exact_int = kind is not float and -(1 << 63) <= value < (1 << 63)
    src = torch.tensor(value, dtype=torch.int64 if exact_int else torch.float64)
    return int(src.to(element.torch_dtype).view(INT_VIEW[element.itemsize]).item())


def fill_bits(value, element: ElementKind) -> int:
    """The bit pattern of `value` converted to `element` as torch converts a fill scalar (from
    int64 or float64: a half takes an out-of-range float as inf), read as the signed integer
    of the same width (-0.0 and 0.0 differ here, as do NaN payloads)."""
    sign = math.copysign(1.0, value) if isinstance(value, float) else 1.0
    return _bits(type(value), value, sign, element)


class RangeKind(enum.Enum):
    #: y_i = start + step * i
    ARANGE = "arange"
    #: start + step * i for i < n // 2, end - step * (n - 1 - i) after: both endpoints exact
    LINSPACE = "linspace"
    #: base ** (the linspace value)
    LOGSPACE = "logspace"


class TriangleKind(enum.Enum):
    TRIL = "tril"
    TRIU = "triu"


def _check_scalar(who: str, name: str, value) -> None:
    if not isinstance(value, _SCALARS):
        raise V.InvalidProblem(f"{who}: {name} must be a bool, int or float, got {value!r}")


@dataclass(frozen=True)
class FillDescriptor(Descriptor):
    """y[...] = value for every element of y (any non-negative strides). `value` None: the
    value is the 0-d tensor `args.value` of `value_element`, converted to y's dtype in the
    kernel (no host read of device data)."""

    shape: tuple[int, ...]
    element: ElementKind
    value: bool | int | float | None = 0
    value_element: ElementKind | None = None
    #: the scalar value's bits in the element (derived when None): what the kernel stores,
    #: and what tells -0.0 from 0.0 apart in the descriptor caches
    bits: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bits is None and isinstance(self.value, _SCALARS) and \
                isinstance(self.element, ElementKind):
            try:
                object.__setattr__(self, "bits", fill_bits(self.value, self.element))
            except (OverflowError, RuntimeError):
                pass  # validate reports the value

    def validate(self, who: str) -> None:
        V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", self.shape, 0)
        V.check_element(who, "element", self.element, ALL_ELEMENTS)
        if self.value is None:
            if not isinstance(self.value_element, ElementKind):
                raise V.InvalidProblem(f"{who}: value_element must be an ElementKind when the "
                                       f"value is a tensor, got {self.value_element!r}")
        else:
            _check_scalar(who, "value", self.value)
            if self.bits is None or self.bits != fill_bits(self.value, self.element):
                raise V.InvalidProblem(f"{who}: bits must be the value's bit pattern in "
                                       f"{self.element.value}, got {self.bits!r}")
            if self.value_element is not None:
                raise V.InvalidProblem(f"{who}: value_element is for a tensor value, got "
                                       f"{self.value_element!r} with value {self.value!r}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _tensor_value(desc) -> bool:
    return desc.value is None


@dataclass
class FillArgs(Args):
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")
    value: torch.Tensor | None = operand(lambda d: (), "value_element", when=_tensor_value)


@dataclass(frozen=True)
class RangeDescriptor(Descriptor):
    """A 1-D range of `n` elements: arange (start, step), linspace (start, end) or logspace
    (start, end, base), computed as torch's CUDA kernels do (see plans.py)."""

    kind: RangeKind
    n: int
    element: ElementKind
    start: bool | int | float = 0
    #: arange: the step; linspace / logspace: the end
    stop_or_step: bool | int | float = 1
    base: float = 10.0

    def validate(self, who: str) -> None:
        if not isinstance(self.kind, RangeKind):
            raise V.InvalidProblem(f"{who}: kind must be a RangeKind, got {self.kind!r}")
        V.check_shape(who, "n", (self.n,) if isinstance(self.n, int) else self.n)
        V.check_element(who, "element", self.element, RANGE_ELEMENTS)
        for name in ("start", "stop_or_step", "base"):
            _check_scalar(who, name, getattr(self, name))
        if self.kind is RangeKind.ARANGE and self.stop_or_step == 0:
            raise V.InvalidProblem(f"{who}: arange's step must be nonzero, got 0")

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n,)


@dataclass
class RangeArgs(Args):
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")


@dataclass(frozen=True)
class BandDescriptor(Descriptor):
    """y[r, c] = 1 where lower <= c - r <= upper, else 0, for a (rows, cols) matrix:
    eye is the band (0, 0), jnp.tri(k) the band (-rows, k)."""

    rows: int
    cols: int
    element: ElementKind
    lower: int = 0
    upper: int = 0

    def validate(self, who: str) -> None:
        V.check_shape(who, "shape", (self.rows, self.cols))
        V.check_element(who, "element", self.element, ALL_ELEMENTS)
        for name in ("lower", "upper"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise V.InvalidProblem(f"{who}: {name} must be an int, got {value!r}")

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.rows, self.cols)


@dataclass
class BandArgs(Args):
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")


@dataclass(frozen=True)
class TriIndicesDescriptor(Descriptor):
    """torch.tril_indices / triu_indices: the 2 x count (row, col) pairs of the triangle
    j - i <= offset (tril) or j - i >= offset (triu), in row-major order."""

    kind: TriangleKind
    rows: int
    cols: int
    offset: int
    element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        if not isinstance(self.kind, TriangleKind):
            raise V.InvalidProblem(f"{who}: kind must be a TriangleKind, got {self.kind!r}")
        V.check_shape(who, "(rows, cols)", (self.rows, self.cols))
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise V.InvalidProblem(f"{who}: offset must be an int, got {self.offset!r}")
        V.check_element(who, "element", self.element, INDEX_ELEMENTS)

    @property
    def count(self) -> int:
        return triangle_closed_count(self.kind, self.rows, self.cols, self.offset)

    @property
    def shape(self) -> tuple[int, ...]:
        return (2, self.count)


def triangle_parts(kind: TriangleKind, rows: int, cols: int,
                   offset: int) -> tuple[int, int, int, int]:
    """The triangle as a rectangle and a trapezoid of rows whose lengths change by one:
    (first row of the trapezoid, its rows, its first row's length, elements before it).
    tril: rows before `first` are empty, the trapezoid grows, full rows follow; triu: full
    rows come first (`before` elements), then the trapezoid shrinks."""
    if rows <= 0 or cols <= 0:
        return 0, 0, 0, 0
    if kind is TriangleKind.TRIL:
        first = min(max(-offset, 0), rows)
        length = min(first + offset + 1, cols) if first < rows else 0
        trap = min(max(cols - length, 0), rows - first)
        return first, trap, length, 0
    full = min(max(1 - offset, 0), rows)
    length = min(max(cols - max(full + offset, 0), 0), cols)
    trap = min(length, rows - full)
    return full, trap, length, full * cols


def triangle_closed_count(kind: TriangleKind, rows: int, cols: int, offset: int) -> int:
    first, trap, length, before = triangle_parts(kind, rows, cols, offset)
    if kind is TriangleKind.TRIL:
        area = trap * length + trap * (trap - 1) // 2
        return area + max(rows - first - trap, 0) * cols
    return before + trap * length - trap * (trap - 1) // 2


@dataclass
class TriIndicesArgs(Args):
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")
