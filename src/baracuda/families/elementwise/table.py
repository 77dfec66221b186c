"""The kind tables: one row per kind.

A row holds the kind's op code (its branch in `ops.py`), how it treats integer and bool
inputs, whether it has a gradient, the float64 torch reference (the oracle) and the input
domain the tests draw from (domain notes). Forward and derivative formulas are the `tl` code
of the same op code in `ops.py`.

dtype rules (`ints`): "exact" integer kernels (result keeps the integer type), "promote"
(integers compute in and return float32, as torch), "float" (floating inputs only), "int"
(integer and, where `bool_ok`, bool inputs only). `bool_ok`: bool inputs are taken (an
"exact" kind keeps bool, a "promote" one returns float32), as torch; unary "promote" kinds take
them unless torch's composite formula rejects bool (tanhshrink subtracts it; softsign's
bool / (1 + |bool|) is taken as torch's CUDA does, its CPU abs has no bool). `native`: the kind
computes in its operands' own floating type, not f32 for halves (nextafter steps in its bits).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...core import validate as V
from ...core.vocab import ElementKind
from .descriptors import (
    BinaryKind,
    CompareKind,
    GatedKind,
    TernaryKind,
    UnaryKind,
    UnaryParamKind,
    check_out,
    promote,
)

FLOATS = (ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64)
INTS = (ElementKind.I8, ElementKind.I16, ElementKind.I32, ElementKind.I64, ElementKind.U8)
IDENTITY_CODE = 54


@dataclasses.dataclass(frozen=True)
class Row:
    code: int
    ints: str
    ref: Callable
    domain: tuple[float, float] = (-3.0, 3.0)
    diff: bool = True
    bool_ok: bool = False
    native: bool = False
    #: binary kinds: which operands torch's signature lets be a Python number ("both",
    #: "other": the second only, "none"), and which operands torch's derivative formula
    #: negates or subtracts (a bool one there makes torch's backward raise, so ours does too)
    numbers: str = "both"
    bool_in_grad: tuple[bool, bool] = (False, False)


def _cbrt(x):
    return torch.sign(x) * x.abs().pow(1.0 / 3.0)


def _u(code, ints, ref, lo=-3.0, hi=3.0, diff=True, bool_ok=None):
    return Row(code, ints, ref, (lo, hi), diff, ints == "promote" if bool_ok is None else bool_ok)


UNARY: dict[UnaryKind, Row] = {
    UnaryKind.NEG: _u(0, "exact", torch.neg),
    UnaryKind.ABS: _u(1, "exact", torch.abs),
    UnaryKind.SIGN: _u(2, "exact", torch.sign, bool_ok=True),
    UnaryKind.RECIPROCAL: _u(3, "promote", torch.reciprocal),
    UnaryKind.SQUARE: _u(4, "exact", torch.square),
    UnaryKind.SQRT: _u(5, "promote", torch.sqrt, -0.5, 4.0),
    UnaryKind.RSQRT: _u(6, "promote", torch.rsqrt, -0.5, 4.0),
    UnaryKind.CBRT: _u(7, "promote", _cbrt, -8.0, 8.0),
    UnaryKind.EXP: _u(8, "promote", torch.exp, -5.0, 5.0),
    UnaryKind.EXP2: _u(9, "promote", torch.exp2, -5.0, 5.0),
    UnaryKind.EXPM1: _u(10, "promote", torch.expm1, -5.0, 5.0),
    UnaryKind.LOG: _u(11, "promote", torch.log, -0.5, 5.0),
    UnaryKind.LOG2: _u(12, "promote", torch.log2, -0.5, 5.0),
    UnaryKind.LOG10: _u(13, "promote", torch.log10, -0.5, 5.0),
    UnaryKind.LOG1P: _u(14, "promote", torch.log1p, -1.5, 5.0),
    UnaryKind.SIN: _u(15, "promote", torch.sin, -6.0, 6.0),
    UnaryKind.COS: _u(16, "promote", torch.cos, -6.0, 6.0),
    UnaryKind.TAN: _u(17, "promote", torch.tan, -1.5, 1.5),
    UnaryKind.ASIN: _u(18, "promote", torch.asin, -1.1, 1.1),
    UnaryKind.ACOS: _u(19, "promote", torch.acos, -1.1, 1.1),
    UnaryKind.ATAN: _u(20, "promote", torch.atan, -5.0, 5.0),
    UnaryKind.SINH: _u(21, "promote", torch.sinh, -5.0, 5.0),
    UnaryKind.COSH: _u(22, "promote", torch.cosh, -5.0, 5.0),
    UnaryKind.TANH: _u(23, "promote", torch.tanh, -5.0, 5.0),
    UnaryKind.ASINH: _u(24, "promote", torch.asinh, -5.0, 5.0),
    UnaryKind.ACOSH: _u(25, "promote", torch.acosh, 0.9, 5.0),
    UnaryKind.ATANH: _u(26, "promote", torch.atanh, -1.1, 1.1),
    UnaryKind.FLOOR: _u(27, "exact", torch.floor, -5.0, 5.0),
    UnaryKind.CEIL: _u(28, "exact", torch.ceil, -5.0, 5.0),
    UnaryKind.ROUND: _u(29, "exact", torch.round, -5.0, 5.0),
    UnaryKind.TRUNC: _u(30, "exact", torch.trunc, -5.0, 5.0),
    UnaryKind.FRAC: _u(31, "float", torch.frac, -5.0, 5.0),
    UnaryKind.ERF: _u(32, "promote", torch.erf),
    UnaryKind.ERFC: _u(33, "promote", torch.erfc),
    UnaryKind.ERFINV: _u(34, "promote", torch.erfinv, -1.0, 1.0),
    UnaryKind.LGAMMA: _u(35, "promote", torch.lgamma, -4.5, 6.0),
    UnaryKind.DIGAMMA: _u(36, "promote", torch.digamma, -4.5, 6.0),
    UnaryKind.I0: _u(37, "promote", torch.i0, -6.0, 6.0),
    UnaryKind.SIGMOID: _u(38, "promote", torch.sigmoid, -8.0, 8.0),
    UnaryKind.LOGIT: _u(39, "promote", torch.logit, -0.1, 1.1),
    UnaryKind.SINC: _u(40, "promote", torch.sinc),
    UnaryKind.RELU: _u(41, "exact", torch.relu),
    UnaryKind.RELU6: _u(42, "float", F.relu6, -2.0, 8.0),
    UnaryKind.GELU: _u(43, "float", F.gelu, -5.0, 5.0),
    UnaryKind.GELU_TANH: _u(44, "float", lambda x: F.gelu(x, approximate="tanh"), -5.0, 5.0),
    UnaryKind.SILU: _u(45, "float", F.silu, -8.0, 8.0),
    UnaryKind.MISH: _u(46, "float", F.mish, -8.0, 8.0),
    UnaryKind.SOFTPLUS: _u(47, "float", F.softplus, -30.0, 30.0),
    UnaryKind.SOFTSIGN: _u(48, "promote", F.softsign),
    UnaryKind.HARDSWISH: _u(49, "float", F.hardswish, -5.0, 5.0),
    UnaryKind.HARDSIGMOID: _u(50, "float", F.hardsigmoid, -5.0, 5.0),
    UnaryKind.TANHSHRINK: _u(51, "promote", F.tanhshrink, bool_ok=False),
    UnaryKind.SELU: _u(52, "float", F.selu),
    UnaryKind.LOGSIGMOID: _u(53, "float", F.logsigmoid, -30.0, 30.0),
}


def _clamp_ref(x, lo, hi):
    return torch.clamp(x, None if lo == -math.inf else lo, None if hi == math.inf else hi)


#: Param rows: (code, int rule, reference(x, *params), default test params, domain).
UNARY_PARAM: dict[UnaryParamKind, tuple[Row, tuple[float, ...]]] = {
    UnaryParamKind.THRESHOLD: (Row(60, "float", F.threshold), (0.5, -2.0)),
    UnaryParamKind.LEAKY_RELU: (Row(61, "float", F.leaky_relu), (0.1,)),
    UnaryParamKind.ELU: (Row(62, "float", F.elu), (1.3,)),
    UnaryParamKind.CELU: (Row(63, "float", F.celu), (0.7,)),
    UnaryParamKind.HARDTANH: (Row(64, "float", F.hardtanh), (-1.5, 0.75)),
    UnaryParamKind.SOFTPLUS: (Row(65, "float", F.softplus, (-20.0, 20.0)), (2.0, 10.0)),
    UnaryParamKind.HARDSHRINK: (Row(66, "float", F.hardshrink), (0.6,)),
    UnaryParamKind.SOFTSHRINK: (Row(67, "float", F.softshrink), (0.6,)),
    UnaryParamKind.POW: (Row(68, "exact", torch.pow), (3.0,)),
    UnaryParamKind.CLAMP: (Row(69, "exact", _clamp_ref), (-1.0, 2.0)),
    UnaryParamKind.ADD: (Row(70, "exact", torch.add), (2.5,)),
    UnaryParamKind.MUL: (Row(71, "exact", torch.mul), (-1.5,)),
}
_PARAM_COUNT = {UnaryParamKind.THRESHOLD: 2, UnaryParamKind.HARDTANH: 2,
                UnaryParamKind.SOFTPLUS: 2, UnaryParamKind.CLAMP: 2}


def _b(code, ints, ref, a=(-3.0, 3.0), diff=True, bool_ok=False, native=False, numbers="both",
       bool_in_grad=(False, False)):
    return Row(code, ints, ref, a, diff, bool_ok, native, numbers, bool_in_grad)


def _floor_div(a, b):
    return torch.div(a, b, rounding_mode="floor")


def _trunc_div(a, b):
    return torch.div(a, b, rounding_mode="trunc")


BINARY: dict[BinaryKind, Row] = {
    BinaryKind.ADD: _b(0, "exact", torch.add, bool_ok=True),
    BinaryKind.SUB: _b(1, "exact", torch.sub),
    BinaryKind.MUL: _b(2, "exact", torch.mul, bool_ok=True),
    BinaryKind.DIV: _b(3, "promote", torch.div, bool_ok=True),
    BinaryKind.DIV_TRUNC: _b(4, "exact", _trunc_div),
    BinaryKind.DIV_FLOOR: _b(5, "exact", _floor_div),
    BinaryKind.POW: _b(6, "exact", torch.pow, (0.0, 3.0), bool_in_grad=(False, True)),
    BinaryKind.ATAN2: _b(7, "promote", torch.atan2, bool_ok=True, numbers="none",
                         bool_in_grad=(True, False)),
    BinaryKind.HYPOT: _b(8, "float", torch.hypot, numbers="none"),
    BinaryKind.COPYSIGN: _b(9, "promote", torch.copysign, bool_ok=True, numbers="other"),
    BinaryKind.MAXIMUM: _b(10, "exact", torch.maximum, bool_ok=True, numbers="none"),
    BinaryKind.MINIMUM: _b(11, "exact", torch.minimum, bool_ok=True, numbers="none"),
    BinaryKind.FMAX: _b(12, "exact", torch.fmax, bool_ok=True, numbers="none"),
    BinaryKind.FMIN: _b(13, "exact", torch.fmin, bool_ok=True, numbers="none"),
    BinaryKind.REMAINDER: _b(14, "exact", torch.remainder),
    BinaryKind.FMOD: _b(15, "exact", torch.fmod, numbers="other"),
    BinaryKind.XLOGY: _b(16, "promote", torch.xlogy, bool_ok=True),
    BinaryKind.LOGADDEXP: _b(17, "float", torch.logaddexp, numbers="none",
                             bool_in_grad=(True, True)),
    BinaryKind.LOGADDEXP2: _b(18, "float", torch.logaddexp2, numbers="none",
                              bool_in_grad=(True, True)),
    BinaryKind.NEXTAFTER: _b(19, "float", torch.nextafter, diff=False, native=True,
                             numbers="none"),
    BinaryKind.BITWISE_AND: _b(20, "int", torch.bitwise_and, diff=False, bool_ok=True),
    BinaryKind.BITWISE_OR: _b(21, "int", torch.bitwise_or, diff=False, bool_ok=True),
    BinaryKind.BITWISE_XOR: _b(22, "int", torch.bitwise_xor, diff=False, bool_ok=True),
    BinaryKind.BITWISE_LEFT_SHIFT: _b(23, "int", torch.bitwise_left_shift, diff=False),
    BinaryKind.BITWISE_RIGHT_SHIFT: _b(24, "int", torch.bitwise_right_shift, diff=False),
    BinaryKind.LOGICAL_AND: _b(25, "logical", torch.logical_and, diff=False, bool_ok=True,
                               numbers="none"),
    BinaryKind.LOGICAL_OR: _b(26, "logical", torch.logical_or, diff=False, bool_ok=True,
                              numbers="none"),
    BinaryKind.LOGICAL_XOR: _b(27, "logical", torch.logical_xor, diff=False, bool_ok=True,
                               numbers="none"),
    BinaryKind.LERP: _b(28, "float", torch.lerp),
}

GATED: dict[GatedKind, int] = {
    GatedKind.GLU: 30, GatedKind.SWIGLU: 31, GatedKind.GEGLU: 32, GatedKind.GEGLU_TANH: 33,
    GatedKind.REGLU: 34,
}

COMPARE: dict[CompareKind, Row] = {
    CompareKind.EQ: _b(40, "exact", torch.eq, diff=False, bool_ok=True),
    CompareKind.NE: _b(41, "exact", torch.ne, diff=False, bool_ok=True),
    CompareKind.LT: _b(42, "exact", torch.lt, diff=False, bool_ok=True),
    CompareKind.LE: _b(43, "exact", torch.le, diff=False, bool_ok=True),
    CompareKind.GT: _b(44, "exact", torch.gt, diff=False, bool_ok=True),
    CompareKind.GE: _b(45, "exact", torch.ge, diff=False, bool_ok=True),
    CompareKind.ISCLOSE: _b(46, "exact", torch.isclose, diff=False, bool_ok=True),
}

TERNARY: dict[TernaryKind, Row] = {
    TernaryKind.LERP: _b(0, "float", torch.lerp),
    TernaryKind.ADDCMUL: _b(1, "float", torch.addcmul),
    TernaryKind.ADDCDIV: _b(2, "float", torch.addcdiv),
    TernaryKind.CLAMP: _b(3, "exact", torch.clamp),
    TernaryKind.WHERE: _b(4, "exact", torch.where, bool_ok=True),
}


def _check_codes() -> None:
    # The enum order is the op-code order of ops.py; a reordered enum must fail loudly.
    for i, kind in enumerate(UnaryKind):
        assert UNARY[kind].code == i, kind  # noqa: S101 - import-time table invariant
    assert set(UNARY) == set(UnaryKind) and set(UNARY_PARAM) == set(UnaryParamKind)  # noqa: S101
    assert set(BINARY) == set(BinaryKind) and set(TERNARY) == set(TernaryKind)  # noqa: S101


_check_codes()


def _int_rule(who: str, rule: str, element: ElementKind, bool_ok: bool, what: str) -> ElementKind:
    """Result element of a unary-style rule for one input element."""
    if element.is_float:
        if rule == "int":
            raise V.Unsupported(f"{who}: {what} takes integer or bool elements, got "
                                f"{element.value}")
        return element
    if element is ElementKind.BOOL and not bool_ok:
        raise V.Unsupported(f"{who}: {what} does not take bool elements")
    if rule == "float":
        raise V.Unsupported(f"{who}: {what} takes floating elements (f32, f16, bf16, f64), "
                            f"got {element.value}")
    if rule == "promote":
        return ElementKind.F32
    if rule == "logical":
        return ElementKind.BOOL
    return element


@functools.lru_cache(maxsize=4096)
def unary_out_element(who: str, kind: UnaryKind, element: ElementKind) -> ElementKind:
    return _int_rule(who, UNARY[kind].ints, element, UNARY[kind].bool_ok, kind.value)


def check_unary_params(who: str, kind: UnaryParamKind, params) -> None:
    want = _PARAM_COUNT.get(kind, 1)
    if not isinstance(params, tuple) or len(params) != want:
        raise V.InvalidProblem(f"{who}: {kind.value} takes {want} params, got {params!r}")
    for i, p in enumerate(params):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p):
            raise V.InvalidProblem(f"{who}: params[{i}] must be a number, got {p!r}")
        if kind is not UnaryParamKind.CLAMP:
            V.check_finite(who, f"params[{i}]", p)
    if kind is UnaryParamKind.HARDTANH and params[0] > params[1]:
        raise V.InvalidProblem(f"{who}: hardtanh min_val {params[0]} > max_val {params[1]}")
    if kind is UnaryParamKind.CELU and params[0] == 0:
        raise V.InvalidProblem(f"{who}: celu alpha must be nonzero, got 0")
    if kind is UnaryParamKind.SOFTPLUS and params[0] == 0:
        raise V.InvalidProblem(f"{who}: softplus beta must be nonzero, got 0")
    if kind in (UnaryParamKind.HARDSHRINK, UnaryParamKind.SOFTSHRINK) and params[0] < 0:
        raise V.InvalidProblem(f"{who}: lambd must be >= 0, got {params[0]}")


@functools.lru_cache(maxsize=4096)
def unary_param_out_element(who: str, kind: UnaryParamKind, element: ElementKind,
                            params) -> ElementKind:
    row = UNARY_PARAM[kind][0]
    out = _int_rule(who, row.ints, element, False, kind.value)
    if out.is_float:
        return out
    integral = all(float(p).is_integer() or math.isinf(p) for p in params)
    if kind is UnaryParamKind.POW and integral and params[0] < 0:
        raise V.InvalidProblem(f"{who}: integers to negative integer powers are not allowed, "
                               f"got exponent {params[0]}")
    return out if integral else ElementKind.F32


@functools.lru_cache(maxsize=4096)
def binary_types(who: str, desc) -> tuple[ElementKind, ElementKind]:
    """(result element, compute element) of a BinaryDescriptor under torch's promotion."""
    row = BINARY[desc.kind]
    common = promote(desc.a_element, desc.b_element)
    what = desc.kind.value
    if row.ints == "int" and desc.kind in (BinaryKind.BITWISE_LEFT_SHIFT,
                                           BinaryKind.BITWISE_RIGHT_SHIFT):
        if common is ElementKind.BOOL:
            raise V.Unsupported(f"{who}: {what} does not take bool elements")
    result = _int_rule(who, row.ints, common, row.bool_ok, what)
    if desc.kind is BinaryKind.LERP:
        raise V.Unsupported(f"{who}: lerp runs in BinaryParamPlan (scalar weight) or "
                            "TernaryPlan (tensor weight)")
    if row.ints == "logical":
        compute = common.compute_kind if common.is_float else common
        return ElementKind.BOOL, compute
    if not result.is_float and not float(desc.alpha).is_integer():
        raise V.InvalidProblem(f"{who}: alpha must be an integer for integer elements, got "
                               f"{desc.alpha}")
    out = check_out(who, result, desc.out_element)
    if row.native:
        compute = result
    elif result.is_float:
        compute = promote(result, common).compute_kind if common.is_float else result.compute_kind
    else:
        compute = result
    return out, compute


@functools.lru_cache(maxsize=4096)
def ternary_types(who: str, desc) -> tuple[ElementKind, ElementKind]:
    row = TERNARY[desc.kind]
    what = desc.kind.value
    if desc.kind is TernaryKind.WHERE:
        if desc.a_element is not ElementKind.BOOL:
            raise V.Unsupported(f"{who}: where's condition must be bool, got "
                                f"{desc.a_element.value}")
        result = promote(desc.b_element, desc.c_element)
    else:
        result = promote(desc.a_element, desc.b_element, desc.c_element)
        if desc.kind is TernaryKind.LERP and len({desc.a_element, desc.b_element,
                                                  desc.c_element}) != 1:
            raise V.InvalidProblem(f"{who}: lerp needs one element for start, end and weight, "
                                   f"got {desc.a_element.value}, {desc.b_element.value}, "
                                   f"{desc.c_element.value}")
        result = _int_rule(who, row.ints, result, False, what)
    return result, result.compute_kind
