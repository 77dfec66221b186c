"""Segment-reduction descriptors and args (jax.ops.segment_* semantics).

data is [N, D...]; segment_ids is [N] (int32 / int64); the output is [num_segments, D...].
Rows whose id lies outside [0, num_segments) are dropped, as jax does; empty segments hold the
identity (0 for sum and mean, -inf / +inf for max / min, 1 for prod). The max / min gradient
is split evenly among the rows equal to the output, per column (torch.segment_reduce's rule;
for a NaN output, among the NaN rows).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from ...backends.grouping import MAX_ROWS
from ...backends.rows import GroupedRowsShape
from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind


class SegmentKind(enum.Enum):
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


def _by_value(kinds):
    return sorted(kinds, key=lambda k: k.value)


def validate_segment_desc(desc, who: str) -> None:
    """One rule set for forward and backward descriptors."""
    for name in ("element", "index_element"):
        if not isinstance(getattr(desc, name), ElementKind):
            raise V.InvalidProblem(f"{who}: {name} must be an ElementKind, "
                                   f"got {getattr(desc, name)!r}")
    shape = V.check_shape(who, "data_shape", desc.data_shape)
    V.check_rank(who, "data_shape", shape)
    if shape[0] > MAX_ROWS:
        raise V.Unsupported(f"{who}: data_shape[0] must be <= {MAX_ROWS}, got {shape[0]}")
    s = desc.num_segments
    if isinstance(s, bool) or not isinstance(s, int) or s < 0:
        raise V.InvalidProblem(f"{who}: num_segments must be an int >= 0, got {s!r}")
    if s > MAX_ROWS:
        raise V.Unsupported(f"{who}: num_segments must be <= {MAX_ROWS}, got {s}")
    V.check_element(who, "element", desc.element, _by_value(FLOAT_KINDS))
    V.check_element(who, "index_element", desc.index_element, _by_value(INDEX_KINDS))


@dataclass(frozen=True)
class SegmentDescriptor(GroupedRowsShape, Descriptor):
    """out[s] = reduce(data[i] for i with segment_ids[i] == s), s in [0, num_segments).

    The reduction (sum, mean, max, min, prod) and whether ids are sorted are the plan's.
    """

    data_shape: tuple[int, ...]
    num_segments: int
    element: ElementKind
    index_element: ElementKind = ElementKind.I64

    def validate(self, who: str) -> None:
        validate_segment_desc(self, who)


@dataclass(frozen=True)
class SegmentBackwardDescriptor(SegmentDescriptor):
    """d data from d out (and, per reduction, the forward's out and data)."""


@dataclass
class SegmentArgs(Args):
    """`argmax` (max / min plans only, optional): int64 [num_segments, D...], the row each
    output came from (the first of tied rows, the first NaN), -1 for an empty segment. It is
    an index output only: the gradient splits among all tied rows (see the backward)."""

    data: torch.Tensor = operand("data_shape", "element")
    segment_ids: torch.Tensor = operand(lambda d: (d.num_rows,), "index_element")
    out: torch.Tensor = operand("out_shape", "element", output=True)
    argmax: torch.Tensor | None = operand("out_shape", ElementKind.I64, output=True,
                                          optional=True)


@dataclass
class SegmentBackwardArgs(Args):
    """grad_out [num_segments, D...] -> grad_data [N, D...].

    max / min need the forward's `out` and `data` (the rows equal to out[s] share its
    gradient evenly); prod needs the forward's `data`.
    """

    grad_out: torch.Tensor = operand("out_shape", "element")
    segment_ids: torch.Tensor = operand(lambda d: (d.num_rows,), "index_element")
    grad_data: torch.Tensor = operand("data_shape", "element", output=True)
    out: torch.Tensor | None = operand("out_shape", "element", optional=True)
    data: torch.Tensor | None = operand("data_shape", "element", optional=True)
