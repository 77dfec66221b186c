"""Indexing descriptors and args: index_select (+ backward), gather, scatter / scatter_reduce.

Conventions: `dim` is normalized by the frontend; data dims other than `dim` may be strided.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind

#: Data kinds the copy-style plans move (exact); reductions take floats only.
COPY_KINDS = sorted(FLOAT_KINDS | INDEX_KINDS | {ElementKind.I16, ElementKind.I8, ElementKind.U8},
                    key=lambda k: k.value)
FLOATS = sorted(FLOAT_KINDS, key=lambda k: k.value)
BOOL, I64 = ElementKind.BOOL, ElementKind.I64


def _indices(d) -> tuple[int, ...]:
    return (d.num_indices,)


def _one(d) -> tuple[int, ...]:
    return (1,)


def check_number(who: str, name: str, value) -> None:
    """A Python int or float scalar argument (alpha, a fill value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise V.InvalidProblem(f"{who}: {name} must be a number, got {value!r}")


class ScatterKind(enum.Enum):
    ASSIGN = "assign"  # torch.scatter: on duplicate indices the last source element wins
    SUM = "sum"
    PROD = "prod"
    MEAN = "mean"
    AMAX = "amax"
    AMIN = "amin"


def _kinds(who, desc, allowed):
    for name in ("element", "index_element"):
        if not isinstance(getattr(desc, name), ElementKind):
            raise V.InvalidProblem(f"{who}: {name} must be an ElementKind, "
                                   f"got {getattr(desc, name)!r}")
    V.check_element(who, "element", desc.element, allowed)
    V.check_element(who, "index_element", desc.index_element,
                    sorted(INDEX_KINDS, key=lambda k: k.value))


class _AlongDim:
    """Shared by the descriptors of ops along one `dim` of `input_shape`."""

    def allowed(self):
        """Data kinds the op takes: copies move every kind, reductions (overrides) floats."""
        return COPY_KINDS

    @property
    def axis(self) -> int:
        return self.dim % len(self.input_shape)


@dataclass(frozen=True)
class IndexSelectDescriptor(_AlongDim, Descriptor):
    """out = input.index_select(dim, index): input_shape with extent num_indices at dim."""

    input_shape: tuple[int, ...]
    dim: int
    num_indices: int
    element: ElementKind
    index_element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape)
        V.check_axis(who, "dim", self.dim, len(shape))
        if isinstance(self.num_indices, bool) or not isinstance(self.num_indices, int) or \
                self.num_indices < 0:
            raise V.InvalidProblem(f"{who}: num_indices must be an int >= 0, "
                                   f"got {self.num_indices!r}")
        _kinds(who, self, self.allowed())

    @property
    def out_shape(self) -> tuple[int, ...]:
        s = list(self.input_shape)
        s[self.axis] = self.num_indices
        return tuple(s)


@dataclass(frozen=True)
class IndexSelectBackwardDescriptor(IndexSelectDescriptor):
    """grad_input[.., i, ..] = sum of grad_out[.., k, ..] over index[k] == i (deterministic)."""

    def allowed(self):
        return FLOATS


@dataclass
class IndexSelectArgs(Args):
    input: torch.Tensor = operand("input_shape", "element")
    index: torch.Tensor = operand(_indices, "index_element")
    out: torch.Tensor = operand("out_shape", "element", output=True)


@dataclass
class IndexSelectBackwardArgs(Args):
    grad_out: torch.Tensor = operand("out_shape", "element")
    index: torch.Tensor = operand(_indices, "index_element")
    grad_input: torch.Tensor = operand("input_shape", "element", output=True)


@dataclass(frozen=True)
class GatherDescriptor(_AlongDim, Descriptor):
    """out = torch.gather(input, dim, index): out and index share index_shape; input_shape may
    be larger than index_shape in every dim."""

    input_shape: tuple[int, ...]
    index_shape: tuple[int, ...]
    dim: int
    element: ElementKind
    index_element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        shape = V.check_shape(who, "input_shape", self.input_shape)
        ishape = V.check_shape(who, "index_shape", self.index_shape)
        V.check_rank(who, "input_shape", shape)
        if len(ishape) != len(shape):
            raise V.InvalidProblem(f"{who}: index_shape {ishape} must have the rank of "
                                   f"input_shape {shape}")
        axis = V.check_axis(who, "dim", self.dim, len(shape))
        for d, (a, b) in enumerate(zip(shape, ishape)):
            if d != axis and b > a:
                raise V.InvalidProblem(f"{who}: index_shape[{d}] = {b} exceeds "
                                       f"input_shape[{d}] = {a}")
        _kinds(who, self, self.allowed())


@dataclass(frozen=True)
class ScatterDescriptor(GatherDescriptor):
    """out = self.scatter_reduce(dim, index, src, reduce, include_self) (ASSIGN: scatter).

    input_shape is self's (and out's) shape; src holds at least index_shape. Positions no index
    names keep self's value (0 when has_self is False: the gather backward).
    """

    kind: ScatterKind = ScatterKind.SUM
    include_self: bool = True
    has_self: bool = True

    def validate(self, who: str) -> None:
        if not isinstance(self.kind, ScatterKind):
            raise V.InvalidProblem(f"{who}: kind must be a ScatterKind, got {self.kind!r}")
        for name in ("include_self", "has_self"):
            if not isinstance(getattr(self, name), bool):
                raise V.InvalidProblem(f"{who}: {name} must be a bool, "
                                       f"got {getattr(self, name)!r}")
        super().validate(who)

    def allowed(self):
        return FLOATS


@dataclass
class GatherArgs(Args):
    input: torch.Tensor = operand("input_shape", "element")
    index: torch.Tensor = operand("index_shape", "index_element")
    out: torch.Tensor = operand("index_shape", "element", output=True)


@dataclass
class ScatterArgs(Args):
    """`self_` is None when the descriptor's has_self is False; `alpha` scales src (index_add)."""

    self_: torch.Tensor | None = operand("input_shape", "element", when=lambda d: d.has_self,
                                         default=dataclasses.MISSING)
    index: torch.Tensor = operand("index_shape", "index_element")
    src: torch.Tensor = operand(None, "element")  # at least index_shape (the plan checks)
    out: torch.Tensor = operand("input_shape", "element", output=True)
    alpha: float = 1.0


@dataclass(frozen=True)
class IndexUpdateDescriptor(IndexSelectDescriptor):
    """out = input.index_add(dim, index, source, alpha) or input.index_copy(dim, index, source):
    source has input_shape with num_indices at dim (out_shape)."""

    def allowed(self):
        return FLOATS


@dataclass
class IndexUpdateArgs(Args):
    input: torch.Tensor = operand("input_shape", "element")
    index: torch.Tensor = operand(_indices, "index_element")
    source: torch.Tensor = operand("out_shape", "element")
    out: torch.Tensor = operand("input_shape", "element", output=True)
    alpha: float = 1.0


def _shape(who, name, shape, lo=0):
    s = V.check_shape(who, name, shape)
    V.check_rank(who, name, s, lo=lo)
    return s


@dataclass(frozen=True)
class MaskedFillDescriptor(Descriptor):
    """out = input.masked_fill(mask, value); mask is bool of `shape` (broadcast views are
    fine: stride 0)."""

    shape: tuple[int, ...]
    element: ElementKind

    def validate(self, who: str) -> None:
        _shape(who, "shape", self.shape)
        V.check_element(who, "element", self.element, COPY_KINDS)


@dataclass
class MaskedFillArgs(Args):
    input: torch.Tensor = operand("shape", "element")
    mask: torch.Tensor = operand("shape", BOOL)
    out: torch.Tensor = operand("shape", "element", output=True)
    value: float = 0.0


@dataclass(frozen=True)
class OneHotDescriptor(Descriptor):
    """out[i, c] = (input[i] == c) as int64: input [num_rows] int32/int64."""

    num_rows: int
    num_classes: int
    element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        for name in ("num_rows", "num_classes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise V.InvalidProblem(f"{who}: {name} must be an int >= 0, got {v!r}")
        V.check_element(who, "element", self.element, sorted(INDEX_KINDS, key=lambda k: k.value))


@dataclass
class OneHotArgs(Args):
    input: torch.Tensor = operand(lambda d: (d.num_rows,), "element")
    out: torch.Tensor = operand(lambda d: (d.num_rows, d.num_classes), I64, output=True)


@dataclass(frozen=True)
class CompactDescriptor(Descriptor):
    """Stream compaction over `shape` (rank 0..8) in row-major order: nonzero, masked_select,
    masked_scatter. `element` is the data's kind (nonzero: the input's)."""

    shape: tuple[int, ...]
    element: ElementKind

    def validate(self, who: str) -> None:
        _shape(who, "shape", self.shape, lo=0)
        V.check_element(who, "element", self.element,
                        COPY_KINDS + [ElementKind.BOOL] if self.allow_bool() else COPY_KINDS)

    def allow_bool(self) -> bool:
        return True

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class MaskedDataDescriptor(CompactDescriptor):
    """masked_select / masked_scatter over data of `element` (bool data is not supported)."""

    def allow_bool(self) -> bool:
        return False


@dataclass
class NonzeroArgs(Args):
    """out: int64 [numel, rank] (capacity: the first `count` rows are written); count: int64
    [1], the number of nonzero elements."""

    input: torch.Tensor = operand("shape", "element")
    out: torch.Tensor = operand(lambda d: (d.numel, max(len(d.shape), 1)), I64, output=True)
    count: torch.Tensor = operand(_one, I64, output=True)


@dataclass
class MaskedSelectArgs(Args):
    """out: [numel] capacity, the first `count` written; count: int64 [1]."""

    input: torch.Tensor = operand("shape", "element")
    mask: torch.Tensor = operand("shape", BOOL)
    out: torch.Tensor = operand(lambda d: (d.numel,), "element", output=True)
    count: torch.Tensor = operand(_one, I64, output=True)


@dataclass
class MaskedScatterArgs(Args):
    """out = input with its masked elements replaced, in row-major order, by source[0..];
    source is 1-D with at least count(mask) elements."""

    input: torch.Tensor = operand("shape", "element")
    mask: torch.Tensor = operand("shape", BOOL)
    source: torch.Tensor = operand(None, "element")  # 1-D (the plan checks)
    out: torch.Tensor = operand("shape", "element", output=True)
