"""Elementwise kind enums, descriptors and args.

Kinds are enums whose rows (op code, dtype rule, reference) live in `table.py`. Binary,
comparison and ternary descriptors take one shape and element per operand and follow torch's
broadcasting and type promotion; the result element is derived (or given, as torch's `out=`).
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import ClassVar

import torch

from ...core import validate as V
from ...core.layout import broadcast_shapes as broadcast_shapes_
from ...core.plan import Args, Descriptor
from ...core.vocab import ElementKind


class UnaryKind(enum.Enum):
    NEG = "neg"
    ABS = "abs"
    SIGN = "sign"
    RECIPROCAL = "reciprocal"
    SQUARE = "square"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    CBRT = "cbrt"
    EXP = "exp"
    EXP2 = "exp2"
    EXPM1 = "expm1"
    LOG = "log"
    LOG2 = "log2"
    LOG10 = "log10"
    LOG1P = "log1p"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    TANH = "tanh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"
    TRUNC = "trunc"
    FRAC = "frac"
    ERF = "erf"
    ERFC = "erfc"
    ERFINV = "erfinv"
    LGAMMA = "lgamma"
    DIGAMMA = "digamma"
    I0 = "i0"
    SIGMOID = "sigmoid"
    LOGIT = "logit"
    SINC = "sinc"
    RELU = "relu"
    RELU6 = "relu6"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SILU = "silu"
    MISH = "mish"
    SOFTPLUS = "softplus"
    SOFTSIGN = "softsign"
    HARDSWISH = "hardswish"
    HARDSIGMOID = "hardsigmoid"
    TANHSHRINK = "tanhshrink"
    SELU = "selu"
    LOGSIGMOID = "logsigmoid"


class UnaryParamKind(enum.Enum):
    THRESHOLD = "threshold"  # (threshold, value)
    LEAKY_RELU = "leaky_relu"  # (negative_slope,)
    ELU = "elu"  # (alpha,)
    CELU = "celu"  # (alpha,)
    HARDTANH = "hardtanh"  # (min_val, max_val)
    SOFTPLUS = "softplus"  # (beta, threshold)
    HARDSHRINK = "hardshrink"  # (lambd,)
    SOFTSHRINK = "softshrink"  # (lambd,)
    POW = "pow"  # (exponent,)
    CLAMP = "clamp"  # (min or -inf, max or +inf)
    ADD = "add_scalar"  # (other,)
    MUL = "mul_scalar"  # (other,)


class BinaryKind(enum.Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    DIV_TRUNC = "div_trunc"
    DIV_FLOOR = "div_floor"  # also floor_divide
    POW = "pow"
    ATAN2 = "atan2"
    HYPOT = "hypot"
    COPYSIGN = "copysign"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    FMAX = "fmax"
    FMIN = "fmin"
    REMAINDER = "remainder"
    FMOD = "fmod"
    XLOGY = "xlogy"
    LOGADDEXP = "logaddexp"
    LOGADDEXP2 = "logaddexp2"
    NEXTAFTER = "nextafter"
    BITWISE_AND = "bitwise_and"
    BITWISE_OR = "bitwise_or"
    BITWISE_XOR = "bitwise_xor"
    BITWISE_LEFT_SHIFT = "bitwise_left_shift"
    BITWISE_RIGHT_SHIFT = "bitwise_right_shift"
    LOGICAL_AND = "logical_and"
    LOGICAL_OR = "logical_or"
    LOGICAL_XOR = "logical_xor"
    LERP = "lerp"  # BinaryParamPlan only: lerp with a scalar weight


class TernaryKind(enum.Enum):
    LERP = "lerp"  # lerp(a, b, weight=c)
    ADDCMUL = "addcmul"  # a + value * b * c
    ADDCDIV = "addcdiv"  # a + value * b / c
    CLAMP = "clamp"  # clamp(a, min=b, max=c)
    WHERE = "where"  # where(condition=a, b, c)


class CompareKind(enum.Enum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    ISCLOSE = "isclose"


class GatedKind(enum.Enum):
    GLU = "glu"  # first half * sigmoid(second half)
    SWIGLU = "swiglu"  # silu(first half) * second half
    GEGLU = "geglu"  # gelu(first half) * second half
    GEGLU_TANH = "geglu_tanh"  # gelu_tanh(first half) * second half
    REGLU = "reglu"  # relu(first half) * second half


def check_kind(who: str, kind, enum_type) -> None:
    if not isinstance(kind, enum_type):
        raise V.InvalidProblem(f"{who}: kind must be a {enum_type.__name__}, got {kind!r}")


def check_elem(who: str, name: str, element) -> None:
    if not isinstance(element, ElementKind):
        raise V.InvalidProblem(f"{who}: {name} must be an ElementKind, got {element!r}")


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


def promote(*elements: ElementKind) -> ElementKind:
    dt = elements[0].torch_dtype
    for e in elements[1:]:
        dt = torch.promote_types(dt, e.torch_dtype)
    return ElementKind.of(dt)


def check_out(who: str, result: ElementKind, out: ElementKind | None) -> ElementKind:
    """torch's out= rule: the computed result must be castable to the requested element."""
    if out is None:
        return result
    check_elem(who, "out_element", out)
    if not torch.can_cast(result.torch_dtype, out.torch_dtype):
        raise V.InvalidProblem(
            f"{who}: result type {result.value} can't be cast to out_element {out.value}"
        )
    return out


@dataclass(frozen=True)
class UnaryDescriptor(Descriptor):
    """y = f(x) for a UnaryKind; y's element is x's, or f32 for float kinds of integer x."""

    kind: UnaryKind
    shape: tuple[int, ...]
    element: ElementKind

    def validate(self, who: str) -> None:
        from .table import unary_out_element

        check_kind(who, self.kind, UnaryKind)
        check_elem(who, "element", self.element)
        check_shape(who, "shape", self.shape)
        unary_out_element(who, self.kind, self.element)


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
        from .table import check_unary_params, unary_param_out_element

        check_kind(who, self.kind, UnaryParamKind)
        check_elem(who, "element", self.element)
        check_shape(who, "shape", self.shape)
        check_unary_params(who, self.kind, self.params)
        unary_param_out_element(who, self.kind, self.element, self.params)


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
        from .table import binary_types

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
        from .table import binary_types

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
        from .table import FLOATS

        check_kind(who, self.kind, BinaryKind)
        if self.kind is not BinaryKind.LERP:
            raise V.Unsupported(f"{who}: kind must be BinaryKind.LERP, got {self.kind}")
        check_elem(who, "element", self.element)
        check_shape(who, "shape", self.shape)
        V.check_element(who, "element", self.element, FLOATS)
        V.check_finite(who, "param", self.param)


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
        from .table import ternary_types

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
        from .table import ternary_types

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
        from .table import FLOATS

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


@dataclass
class UnaryArgs(Args):
    x: torch.Tensor
    y: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("y",)


@dataclass
class UnaryBackwardArgs(Args):
    dy: torch.Tensor
    x: torch.Tensor
    dx: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("dx",)


@dataclass
class BinaryArgs(Args):
    a: torch.Tensor
    b: torch.Tensor
    y: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("y",)


@dataclass
class BinaryBackwardArgs(Args):
    dy: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    da: torch.Tensor | None
    db: torch.Tensor | None
    OUTPUTS: ClassVar[tuple[str, ...]] = ("da", "db")


@dataclass
class BinaryParamBackwardArgs(Args):
    dy: torch.Tensor
    da: torch.Tensor
    db: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("da", "db")


@dataclass
class TernaryArgs(Args):
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    y: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("y",)


@dataclass
class TernaryBackwardArgs(Args):
    dy: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    da: torch.Tensor | None
    db: torch.Tensor | None
    dc: torch.Tensor | None
    OUTPUTS: ClassVar[tuple[str, ...]] = ("da", "db", "dc")


@dataclass
class GatedArgs(Args):
    x: torch.Tensor
    y: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("y",)


@dataclass
class GatedBackwardArgs(Args):
    dy: torch.Tensor
    x: torch.Tensor
    dx: torch.Tensor
    OUTPUTS: ClassVar[tuple[str, ...]] = ("dx",)
