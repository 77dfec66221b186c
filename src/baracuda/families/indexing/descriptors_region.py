"""Descriptors and args of the region copies (select / slice / diagonal / as_strided scatter,
dynamic slices), index_reduce and unravel_index.

Conventions: `dim` is normalized by the frontend; tensors may be strided (non-negative).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import INDEX_KINDS, ElementKind
from .descriptors import COPY_KINDS, FLOATS, I64, IndexUpdateDescriptor, ScatterKind

#: torch.index_reduce's reductions
INDEX_REDUCE_KINDS = (ScatterKind.PROD, ScatterKind.MEAN, ScatterKind.AMAX, ScatterKind.AMIN)
#: the most dims a strided copy takes (torch's tensors here have at most 8)
MAX_COPY_RANK = 8


@dataclass(frozen=True)
class StridedCopyDescriptor(Descriptor):
    """out[...] = src[...] over `shape` (rank 0..8), both strided. `dynamic_src` /
    `dynamic_out`: an int64 element offset read on the device (a dynamic slice's clamped
    start) is added to src's / out's addresses."""

    shape: tuple[int, ...]
    element: ElementKind
    dynamic_src: bool = False
    dynamic_out: bool = False

    def validate(self, who: str) -> None:
        shape = V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", shape, lo=0, hi=MAX_COPY_RANK)
        V.check_element(who, "element", self.element, COPY_KINDS + [ElementKind.BOOL])
        V.check_bool(who, "dynamic_src", self.dynamic_src)
        V.check_bool(who, "dynamic_out", self.dynamic_out)


def _one(d) -> tuple[int, ...]:
    return (1,)


@dataclass
class StridedCopyArgs(Args):
    """`out` is usually a view into a larger tensor (the region a scatter replaces)."""

    src: torch.Tensor = operand("shape", "element")
    out: torch.Tensor = operand("shape", "element", output=True)
    src_offset: torch.Tensor | None = operand(_one, I64, when=lambda d: d.dynamic_src)
    out_offset: torch.Tensor | None = operand(_one, I64, when=lambda d: d.dynamic_out)


@dataclass(frozen=True)
class IndexReduceDescriptor(IndexUpdateDescriptor):
    """out = input.index_reduce(dim, index, source, kind, include_self=include_self) for kind
    in prod, mean, amax, amin; rows no index names keep input's values."""

    kind: ScatterKind = ScatterKind.AMAX
    include_self: bool = True

    def validate(self, who: str) -> None:
        if self.kind not in INDEX_REDUCE_KINDS:
            raise V.InvalidProblem(f"{who}: kind must be one of "
                                   f"{[k.value for k in INDEX_REDUCE_KINDS]}, got {self.kind!r}")
        V.check_bool(who, "include_self", self.include_self)
        super().validate(who)

    def allowed(self):
        return FLOATS


@dataclass(frozen=True)
class UnravelDescriptor(Descriptor):
    """out[i, d] = the d-th coordinate of index[i] in a tensor of `dims` (row-major), each
    coordinate taken modulo its extent with floor semantics, as torch.unravel_index."""

    num_indices: int
    dims: tuple[int, ...]
    index_element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        if isinstance(self.num_indices, bool) or not isinstance(self.num_indices, int) or \
                self.num_indices < 0:
            raise V.InvalidProblem(f"{who}: num_indices must be an int >= 0, "
                                   f"got {self.num_indices!r}")
        dims = V.check_shape(who, "dims", self.dims)
        V.check_rank(who, "dims", dims, lo=1, hi=MAX_COPY_RANK)
        if 0 in dims and self.num_indices:
            raise V.InvalidProblem(f"{who}: dims {dims} has a zero extent: no index fits")
        V.check_element(who, "index_element", self.index_element,
                        sorted(INDEX_KINDS, key=lambda k: k.value))

    @property
    def element(self) -> ElementKind:
        """The output's kind (int64 coordinates)."""
        return I64


@dataclass
class UnravelArgs(Args):
    index: torch.Tensor = operand(lambda d: (d.num_indices,), "index_element")
    out: torch.Tensor = operand(lambda d: (d.num_indices, len(d.dims)), I64, output=True)
