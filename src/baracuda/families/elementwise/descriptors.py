"""Elementwise descriptors and args.

Kinds are the enums `table.py` generates from its rows (op code, dtype rule, reference).
Binary, comparison and ternary descriptors take one shape and element per operand and follow
torch's broadcasting and type promotion; the result element is derived (or given, as torch's
`out=`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import operand
from ...core.layout import broadcast_shapes as broadcast_shapes_
from ...core.plan import Args, Descriptor
from ...core.vocab import ElementKind
from .table import (
    FLOATS,
    BinaryKind,
    CompareKind,
    GatedKind,
    TernaryKind,
    UnaryKind,
    UnaryParamKind,
    binary_types,
    check_elem,
    check_unary_params,
    ternary_types,
    unary_out_element,
    unary_param_out_element,
)


def check_kind(who: str, kind, enum_type) -> None:
    if not isinstance(kind, enum_type):
        raise V.InvalidProblem(f"{who}: kind must be a {enum_type.__name__}, got {kind!r}")


def check_shape(who: str, name: str, shape) -> tuple[int, ...]:
    shape = V.check_shape(who, name, shape)
    V.check_rank(who, name, shape, lo=0)
    return shape


def broadcast_shapes(who: str, shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """torch's broadcasting; InvalidProblem naming the operands that disagree."""
    try:
        return broadcast_shapes_(*shapes.values())
    except RuntimeError:
        listing = ", ".join(f"{k}{tuple(v)}" for k, v in shapes.items())
        raise V.InvalidProblem(
            f"{who}: shapes are not broadcastable: {listing}; expected each dim equal or 1"
        ) from None


@dataclass(frozen=True)
class UnaryDescriptor(Descriptor):
    """y = f(x) for a UnaryKind; y's element is x's, or f32 for float kinds of integer x."""

    kind: UnaryKind
    shape: tuple[int, ...]
    element: ElementKind

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, UnaryKind)
        check_elem(who, "element", self.element)
        check_shape(who, "shape", self.shape)
        unary_out_element(who, self.kind, self.element)

    @property
    def out_element(self) -> ElementKind:
        return unary_out_element(type(self).__name__, self.kind, self.element)


@dataclass(frozen=True)
class UnaryBackwardDescriptor(UnaryDescriptor):
    """dx = dy * f'(x) from the saved forward input x (floating elements only)."""


@dataclass(frozen=True)
class UnaryParamDescriptor(Descriptor):
    """y = f(x; params) for a UnaryParamKind; params as listed beside each kind."""

    kind: UnaryParamKind
    shape: tuple[int, ...]
    element: ElementKind
    params: tuple[float, ...]

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, UnaryParamKind)
        check_elem(who, "element", self.element)
        check_shape(who, "shape", self.shape)
        check_unary_params(who, self.kind, self.params)
        unary_param_out_element(who, self.kind, self.element, self.params)

    @property
    def out_element(self) -> ElementKind:
        return unary_param_out_element(type(self).__name__, self.kind, self.element,
                                       self.params)


@dataclass(frozen=True)
class UnaryParamBackwardDescriptor(UnaryParamDescriptor):
    """dx = dy * df/dx(x; params)."""


@dataclass(frozen=True)
class BinaryDescriptor(Descriptor):
    """y = f(a, b) with torch broadcasting and type promotion (`alpha` scales b in add/sub)."""

    kind: BinaryKind
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    a_element: ElementKind
    b_element: ElementKind
    alpha: float = 1.0
    out_element: ElementKind | None = None

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, BinaryKind)
        check_elem(who, "a_element", self.a_element)
        check_elem(who, "b_element", self.b_element)
        broadcast_shapes(who, {"a": check_shape(who, "a_shape", self.a_shape),
                               "b": check_shape(who, "b_shape", self.b_shape)})
        V.check_finite(who, "alpha", self.alpha)
        binary_types(who, self)

    @functools.cached_property
    def shape(self) -> tuple[int, ...]:
        return broadcast_shapes_(self.a_shape, self.b_shape)

    @property
    def element(self) -> ElementKind:
        return binary_types(type(self).__name__, self)[0]


@dataclass(frozen=True)
class BinaryBackwardDescriptor(BinaryDescriptor):
    """(da, db) from dy and the saved inputs; `needs` says which gradients to write.
    Gradients of broadcast inputs are reduced over the broadcast dims deterministically."""

    needs: tuple[bool, bool] = (True, True)


@dataclass(frozen=True)
class BinaryParamDescriptor(Descriptor):
    """y = lerp(a, b, weight) with a scalar weight (the seed's BinaryParamPlan); a, b, y share
    `shape` and `element`."""

    kind: BinaryKind
    shape: tuple[int, ...]
    element: ElementKind
    param: float

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, BinaryKind)
        if self.kind is not BinaryKind.LERP:
            raise V.Unsupported(f"{who}: kind must be BinaryKind.LERP, got {self.kind}")
        check_elem(who, "element", self.element)
        check_shape(who, "shape", self.shape)
        V.check_element(who, "element", self.element, FLOATS)
        V.check_finite(who, "param", self.param)

    # a, b and y share one shape and element (BinaryArgs reads them per operand)
    a_shape = b_shape = property(lambda self: self.shape)
    a_element = b_element = property(lambda self: self.element)


@dataclass(frozen=True)
class BinaryParamBackwardDescriptor(BinaryParamDescriptor):
    """da = (1 - weight) dy, db = weight dy: no saved tensors."""


@dataclass(frozen=True)
class TernaryDescriptor(Descriptor):
    """y = f(a, b, c) with broadcasting; `value` scales addcmul/addcdiv."""

    kind: TernaryKind
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    c_shape: tuple[int, ...]
    a_element: ElementKind
    b_element: ElementKind
    c_element: ElementKind
    value: float = 1.0

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, TernaryKind)
        for n in ("a", "b", "c"):
            check_elem(who, f"{n}_element", getattr(self, f"{n}_element"))
        broadcast_shapes(who, {n: check_shape(who, f"{n}_shape", getattr(self, f"{n}_shape"))
                               for n in ("a", "b", "c")})
        V.check_finite(who, "value", self.value)
        ternary_types(who, self)

    @functools.cached_property
    def shape(self) -> tuple[int, ...]:
        return broadcast_shapes_(self.a_shape, self.b_shape, self.c_shape)

    @property
    def element(self) -> ElementKind:
        return ternary_types(type(self).__name__, self)[0]


@dataclass(frozen=True)
class TernaryBackwardDescriptor(TernaryDescriptor):
    needs: tuple[bool, bool, bool] = (True, True, True)


@dataclass(frozen=True)
class CompareDescriptor(Descriptor):
    """Boolean y = a <op> b (or isclose(a, b, rtol, atol, equal_nan)), broadcasting, compared
    in the promoted type."""

    kind: CompareKind
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    a_element: ElementKind
    b_element: ElementKind
    rtol: float = 1e-5
    atol: float = 1e-8
    equal_nan: bool = False

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, CompareKind)
        check_elem(who, "a_element", self.a_element)
        check_elem(who, "b_element", self.b_element)
        broadcast_shapes(who, {"a": check_shape(who, "a_shape", self.a_shape),
                               "b": check_shape(who, "b_shape", self.b_shape)})
        V.check_finite(who, "rtol", self.rtol)
        V.check_finite(who, "atol", self.atol)
        if self.rtol < 0 or self.atol < 0:
            raise V.InvalidProblem(f"{who}: rtol and atol must be >= 0, got {self.rtol}, "
                                   f"{self.atol}")

    @functools.cached_property
    def shape(self) -> tuple[int, ...]:
        return broadcast_shapes_(self.a_shape, self.b_shape)

    @property
    def element(self) -> ElementKind:
        return ElementKind.BOOL


@dataclass(frozen=True)
class CastDescriptor(Descriptor):
    """y = x converted to out_element (floats to integers truncate; nonzero to bool is True)."""

    shape: tuple[int, ...]
    element: ElementKind
    out_element: ElementKind

    def validate(self, who: str) -> None:
        check_elem(who, "element", self.element)
        check_elem(who, "out_element", self.out_element)
        check_shape(who, "shape", self.shape)


@dataclass(frozen=True)
class GatedDescriptor(Descriptor):
    """y = act(first half) * second half along `axis` (glu: first * sigmoid(second))."""

    kind: GatedKind
    shape: tuple[int, ...]
    axis: int
    element: ElementKind

    def validate(self, who: str) -> None:
        check_kind(who, self.kind, GatedKind)
        check_elem(who, "element", self.element)
        shape = V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", shape)
        ax = V.check_axis(who, "axis", self.axis, len(shape))
        if shape[ax] % 2:
            raise V.InvalidProblem(
                f"{who}: extent of axis {self.axis} must be even to halve, got {shape[ax]}"
            )
        V.check_element(who, "element", self.element, FLOATS)

    @property
    def out_shape(self) -> tuple[int, ...]:
        ax = self.axis % len(self.shape)
        return tuple(d // 2 if i == ax else d for i, d in enumerate(self.shape))


@dataclass(frozen=True)
class GatedBackwardDescriptor(GatedDescriptor):
    """dx (both halves) from dy and the saved input x."""


def _needs(i: int):
    return lambda d: d.needs[i]


@dataclass
class UnaryArgs(Args):
    x: torch.Tensor = operand("shape", "element")
    y: torch.Tensor = operand("shape", "out_element", output=True)


@dataclass
class UnaryBackwardArgs(Args):
    dy: torch.Tensor = operand("shape", "element")
    x: torch.Tensor = operand("shape", "element")
    dx: torch.Tensor = operand("shape", "element", output=True)


@dataclass
class BinaryArgs(Args):
    a: torch.Tensor = operand("a_shape", "a_element")
    b: torch.Tensor = operand("b_shape", "b_element")
    y: torch.Tensor = operand("shape", "element", output=True)


@dataclass
class BinaryBackwardArgs(Args):
    dy: torch.Tensor = operand("shape", "element")
    a: torch.Tensor = operand("a_shape", "a_element")
    b: torch.Tensor = operand("b_shape", "b_element")
    da: torch.Tensor | None = operand("a_shape", "a_element", output=True, when=_needs(0))
    db: torch.Tensor | None = operand("b_shape", "b_element", output=True, when=_needs(1))


@dataclass
class BinaryParamBackwardArgs(Args):
    dy: torch.Tensor = operand("shape", "element")
    da: torch.Tensor = operand("shape", "element", output=True)
    db: torch.Tensor = operand("shape", "element", output=True)


@dataclass
class TernaryArgs(Args):
    a: torch.Tensor = operand("a_shape", "a_element")
    b: torch.Tensor = operand("b_shape", "b_element")
    c: torch.Tensor = operand("c_shape", "c_element")
    y: torch.Tensor = operand("shape", "element", output=True)


@dataclass
class TernaryBackwardArgs(Args):
    dy: torch.Tensor = operand("shape", "element")
    a: torch.Tensor = operand("a_shape", "a_element")
    b: torch.Tensor = operand("b_shape", "b_element")
    c: torch.Tensor = operand("c_shape", "c_element")
    da: torch.Tensor | None = operand("a_shape", "a_element", output=True, when=_needs(0))
    db: torch.Tensor | None = operand("b_shape", "b_element", output=True, when=_needs(1))
    dc: torch.Tensor | None = operand("c_shape", "c_element", output=True, when=_needs(2))


@dataclass
class GatedArgs(Args):
    x: torch.Tensor = operand("shape", "element")
    y: torch.Tensor = operand("out_shape", "element", output=True)


@dataclass
class GatedBackwardArgs(Args):
    dy: torch.Tensor = operand("out_shape", "element")
    x: torch.Tensor = operand("shape", "element")
    dx: torch.Tensor = operand("shape", "element", output=True)
