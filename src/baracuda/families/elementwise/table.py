"""The kind tables: one row per elementwise kind, and the dtype rules that read them.

A row names the kind (its enum member and value, generated from the row), its op code (the
row's position, published to the kernels as a `tl.constexpr` named `<prefix>_<MEMBER>` by
`codes.py`), how it treats integer and bool inputs, whether it has a gradient, its float64
torch reference (the oracle), the input domain the tests draw from and how `torch_api.py`
exposes it. Forward and derivative formulas are the `tl` code of that constant's branch in
`ops.py` / `ops_nary.py`.

dtype rules (`ints`): "exact" integer kernels (result keeps the integer type), "promote"
(integers compute in and return float32, as torch), "float" (floating inputs only), "int"
(integer and, where `bool_ok`, bool inputs only), "logical" (bool result), "predicate" (any
input, bool result: isnan, signbit), "exponent" (floating inputs, int32 result: frexp's).
`bool_ok`: bool inputs are taken (an "exact" kind keeps bool, a "promote" one returns
float32), as torch; unary "promote" kinds take them unless torch's composite formula rejects
bool (tanhshrink subtracts it; softsign's bool / (1 + |bool|) is taken as torch's CUDA does,
its CPU abs has no bool). `native`: the kind computes in its operands' own floating type,
not f32 for halves (nextafter and spacing step in its bits).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...core import validate as V
from ...core.vocab import ElementKind
from . import bitrefs

FLOATS = (ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64)
INTS = (ElementKind.I8, ElementKind.I16, ElementKind.I32, ElementKind.I64, ElementKind.U8)


@dataclasses.dataclass(frozen=True)
class Row:
    name: str  # the enum value: the kind's name (torch's, where torch has the op)
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
    #: parameter kinds: default test parameters (their count is the kind's parameter count)
    params: tuple[float, ...] = ()
    #: how torch_api.py exposes the kind: "torch" fn(input) (or fn(input, other)), "F" the
    #: same for a torch.nn.functional name, "F_inplace" fn(input, inplace=False), "" written
    #: by hand there (or internal only)
    api: str = ""
    #: long formulas: half the elements per thread so their backward fits the register file
    heavy: bool = False
    #: binary kinds: the gradient reads the inputs (add, sub, the rounding divisions and lerp
    #: do not)
    grad_reads: bool = True
    #: binary kinds: which operand's derivative is the incoming gradient itself (b's only
    #: at alpha 1), so the backward hands it on without a kernel, as torch's formula does
    grad_passes: tuple[bool, bool] = (False, False)
    member: str = ""  # the enum member name when it is not name.upper()
    code: int = -1  # set from the row's position by _table


def _kinds(cls_name: str, rows: list[Row], doc: str) -> type[enum.Enum]:
    kinds = enum.Enum(cls_name, [(r.member or r.name.upper(), r.name) for r in rows],
                      module=__name__, qualname=cls_name)
    kinds.__doc__ = doc
    return kinds


def _table(kinds, rows: list[Row], base: int) -> dict:
    """{kind: row}, each row's op code its position after `base`."""
    return {k: dataclasses.replace(r, code=base + i) for i, (k, r) in enumerate(zip(kinds, rows))}


def _cbrt(x):
    return torch.sign(x) * x.abs().pow(1.0 / 3.0)


def _u(name, ints, ref, lo=-3.0, hi=3.0, diff=True, bool_ok=None, api="", heavy=False,
       native=False):
    return Row(name, ints, ref, (lo, hi), diff,
               ints == "promote" if bool_ok is None else bool_ok, native, api=api, heavy=heavy)


def _b(name, ints, ref, a=(-3.0, 3.0), diff=True, bool_ok=False, native=False, numbers="both",
       bool_in_grad=(False, False), api="", grad_reads=True, heavy=False,
       grad_passes=(False, False)):
    return Row(name, ints, ref, a, diff, bool_ok, native, numbers, bool_in_grad, api=api,
               grad_reads=grad_reads, heavy=heavy, grad_passes=grad_passes)


def _torch_differentiates(fn: Callable) -> bool:
    """Whether the installed torch has a derivative for binary `fn` (torch 2.13 added
    nextafter's): asked of torch on one CPU element, once, at import."""
    a = torch.zeros(1, requires_grad=True)
    try:
        with torch.enable_grad():
            torch.autograd.grad(fn(a, torch.ones(1)), a, torch.ones(1))
    except RuntimeError:
        return False
    return True


def _p(name, ints, ref, params, domain=(-3.0, 3.0), member=""):
    return Row(name, ints, ref, domain, params=params, member=member)


def _clamp_ref(x, lo, hi):
    return torch.clamp(x, None if lo == -math.inf else lo, None if hi == math.inf else hi)


def _floor_div(a, b):
    return torch.div(a, b, rounding_mode="floor")


def _trunc_div(a, b):
    return torch.div(a, b, rounding_mode="trunc")


def _glu(a, b):
    return a * torch.sigmoid(b)


def _gated(act):
    return lambda a, b: act(a) * b


_UNARY_ROWS = [
    _u("neg", "exact", torch.neg, api="torch"),
    _u("abs", "exact", torch.abs, api="torch"),
    _u("sign", "exact", torch.sign, bool_ok=True, api="torch"),
    _u("reciprocal", "promote", torch.reciprocal, api="torch"),
    _u("square", "exact", torch.square),
    _u("sqrt", "promote", torch.sqrt, -0.5, 4.0, api="torch"),
    _u("rsqrt", "promote", torch.rsqrt, -0.5, 4.0, api="torch"),
    _u("cbrt", "promote", _cbrt, -8.0, 8.0),
    _u("exp", "promote", torch.exp, -5.0, 5.0, api="torch"),
    _u("exp2", "promote", torch.exp2, -5.0, 5.0, api="torch"),
    _u("expm1", "promote", torch.expm1, -5.0, 5.0, api="torch"),
    _u("log", "promote", torch.log, -0.5, 5.0, api="torch"),
    _u("log2", "promote", torch.log2, -0.5, 5.0, api="torch"),
    _u("log10", "promote", torch.log10, -0.5, 5.0, api="torch"),
    _u("log1p", "promote", torch.log1p, -1.5, 5.0, api="torch"),
    _u("sin", "promote", torch.sin, -6.0, 6.0, api="torch"),
    _u("cos", "promote", torch.cos, -6.0, 6.0, api="torch"),
    _u("tan", "promote", torch.tan, -1.5, 1.5, api="torch"),
    _u("asin", "promote", torch.asin, -1.1, 1.1, api="torch"),
    _u("acos", "promote", torch.acos, -1.1, 1.1, api="torch"),
    _u("atan", "promote", torch.atan, -5.0, 5.0, api="torch"),
    _u("sinh", "promote", torch.sinh, -5.0, 5.0, api="torch"),
    _u("cosh", "promote", torch.cosh, -5.0, 5.0, api="torch"),
    _u("tanh", "promote", torch.tanh, -5.0, 5.0, api="torch"),
    _u("asinh", "promote", torch.asinh, -5.0, 5.0, api="torch"),
    _u("acosh", "promote", torch.acosh, 0.9, 5.0, api="torch"),
    _u("atanh", "promote", torch.atanh, -1.1, 1.1, api="torch"),
    _u("floor", "exact", torch.floor, -5.0, 5.0, api="torch"),
    _u("ceil", "exact", torch.ceil, -5.0, 5.0, api="torch"),
    _u("round", "exact", torch.round, -5.0, 5.0),
    _u("trunc", "exact", torch.trunc, -5.0, 5.0, api="torch"),
    _u("frac", "float", torch.frac, -5.0, 5.0, api="torch"),
    _u("erf", "promote", torch.erf, api="torch"),
    _u("erfc", "promote", torch.erfc, api="torch"),
    _u("erfinv", "promote", torch.erfinv, -1.0, 1.0, api="torch", heavy=True),
    _u("lgamma", "promote", torch.lgamma, -4.5, 6.0, api="torch", heavy=True),
    _u("digamma", "promote", torch.digamma, -4.5, 6.0, api="torch", heavy=True),
    _u("i0", "promote", torch.i0, -6.0, 6.0, api="torch", heavy=True),
    _u("sigmoid", "promote", torch.sigmoid, -8.0, 8.0, api="torch"),
    _u("logit", "promote", torch.logit, -0.1, 1.1),
    _u("sinc", "promote", torch.sinc, api="torch"),
    _u("relu", "exact", torch.relu),
    _u("relu6", "float", F.relu6, -2.0, 8.0),
    _u("gelu", "float", F.gelu, -5.0, 5.0),
    _u("gelu_tanh", "float", lambda x: F.gelu(x, approximate="tanh"), -5.0, 5.0),
    _u("silu", "float", F.silu, -8.0, 8.0, api="F_inplace"),
    _u("mish", "float", F.mish, -8.0, 8.0, api="F_inplace"),
    _u("softplus", "float", F.softplus, -30.0, 30.0),
    _u("softsign", "promote", F.softsign, api="F"),
    _u("hardswish", "float", F.hardswish, -5.0, 5.0, api="F_inplace"),
    _u("hardsigmoid", "float", F.hardsigmoid, -5.0, 5.0, api="F_inplace"),
    _u("tanhshrink", "promote", F.tanhshrink, bool_ok=False, api="F"),
    _u("selu", "float", F.selu, api="F_inplace"),
    _u("logsigmoid", "float", F.logsigmoid, -30.0, 30.0, api="F"),
    _u("deg2rad", "promote", torch.deg2rad, -400.0, 400.0, api="torch"),
    _u("rad2deg", "promote", torch.rad2deg, -7.0, 7.0, api="torch"),
    _u("isfinite", "predicate", torch.isfinite, diff=False, bool_ok=True, api="torch"),
    _u("isinf", "predicate", torch.isinf, diff=False, bool_ok=True, api="torch"),
    _u("isnan", "predicate", torch.isnan, diff=False, bool_ok=True, api="torch"),
    _u("isposinf", "predicate", torch.isposinf, diff=False, bool_ok=True, api="torch"),
    _u("isneginf", "predicate", torch.isneginf, diff=False, bool_ok=True, api="torch"),
    _u("isreal", "predicate", torch.isreal, diff=False, bool_ok=True, api="torch"),
    _u("signbit", "predicate", torch.signbit, diff=False, bool_ok=True, api="torch"),
    _u("logical_not", "predicate", torch.logical_not, diff=False, bool_ok=True, api="torch"),
    _u("bitwise_not", "int", torch.bitwise_not, diff=False, bool_ok=False),
    _u("population_count", "int", bitrefs.popcount, diff=False),
    _u("clz", "int", bitrefs.clz, diff=False),
    _u("frexp_mantissa", "float", lambda x: torch.frexp(x)[0]),
    _u("frexp_exponent", "exponent", lambda x: torch.frexp(x)[1], diff=False),
    _u("spacing", "float", bitrefs.spacing, diff=False, native=True),
]
UnaryKind = _kinds("UnaryKind", _UNARY_ROWS, "y = f(x): one member per row of UNARY.")
UNARY: dict = _table(UnaryKind, _UNARY_ROWS, 0)

_UNARY_PARAM_ROWS = [  # the parameters, in order, after the row
    _p("threshold", "float", F.threshold, (0.5, -2.0)),  # (threshold, value)
    _p("leaky_relu", "float", F.leaky_relu, (0.1,)),  # (negative_slope,)
    _p("elu", "float", F.elu, (1.3,)),  # (alpha,)
    _p("celu", "float", F.celu, (0.7,)),  # (alpha,)
    _p("hardtanh", "float", F.hardtanh, (-1.5, 0.75)),  # (min_val, max_val)
    _p("softplus", "float", F.softplus, (2.0, 10.0), (-20.0, 20.0)),  # (beta, threshold)
    _p("hardshrink", "float", F.hardshrink, (0.6,)),  # (lambd,)
    _p("softshrink", "float", F.softshrink, (0.6,)),  # (lambd,)
    _p("pow", "exact", torch.pow, (3.0,)),  # (exponent,)
    _p("clamp", "exact", _clamp_ref, (-1.0, 2.0)),  # (min or -inf, max or +inf)
    _p("add_scalar", "exact", torch.add, (2.5,), member="ADD"),  # (other,)
    _p("mul_scalar", "exact", torch.mul, (-1.5,), member="MUL"),  # (other,)
    _p("nan_to_num", "exact", torch.nan_to_num, (0.5, 7.0, -9.0)),  # (nan, posinf, neginf)
    # (exponent_bits, mantissa_bits): jax.lax.reduce_precision
    _p("reduce_precision", "float", bitrefs.reduce_precision, (4.0, 3.0), (-300.0, 300.0)),
]
UnaryParamKind = _kinds("UnaryParamKind", _UNARY_PARAM_ROWS,
                        "y = f(x; params): one member per row of UNARY_PARAM.")
#: Unary op codes continue past the kinds with the identity (casts); parameter kinds follow.
IDENTITY_CODE = len(UNARY)
UNARY_PARAM: dict = _table(UnaryParamKind, _UNARY_PARAM_ROWS, 100)

_BINARY_ROWS = [
    _b("add", "exact", torch.add, bool_ok=True, grad_reads=False, grad_passes=(True, True)),
    _b("sub", "exact", torch.sub, grad_reads=False, grad_passes=(True, False)),
    _b("mul", "exact", torch.mul, bool_ok=True),
    _b("div", "promote", torch.div, bool_ok=True),
    _b("div_trunc", "exact", _trunc_div, grad_reads=False),
    _b("div_floor", "exact", _floor_div, grad_reads=False),
    _b("pow", "exact", torch.pow, (0.0, 3.0), bool_in_grad=(False, True)),
    _b("atan2", "promote", torch.atan2, bool_ok=True, numbers="none", bool_in_grad=(True, False),
       api="torch"),
    _b("hypot", "float", torch.hypot, numbers="none", api="torch"),
    _b("copysign", "promote", torch.copysign, bool_ok=True, numbers="other", api="torch"),
    _b("maximum", "exact", torch.maximum, bool_ok=True, numbers="none", api="torch"),
    _b("minimum", "exact", torch.minimum, bool_ok=True, numbers="none", api="torch"),
    _b("fmax", "exact", torch.fmax, bool_ok=True, numbers="none", api="torch"),
    _b("fmin", "exact", torch.fmin, bool_ok=True, numbers="none", api="torch"),
    _b("remainder", "exact", torch.remainder, api="torch"),
    _b("fmod", "exact", torch.fmod, numbers="other", api="torch"),
    _b("xlogy", "promote", torch.xlogy, bool_ok=True, api="torch"),
    _b("logaddexp", "float", torch.logaddexp, numbers="none", bool_in_grad=(True, True),
       api="torch"),
    _b("logaddexp2", "float", torch.logaddexp2, numbers="none", bool_in_grad=(True, True),
       api="torch"),
    _b("nextafter", "float", torch.nextafter, diff=_torch_differentiates(torch.nextafter),
       native=True, numbers="none", api="torch"),
    _b("bitwise_and", "int", torch.bitwise_and, diff=False, bool_ok=True, api="torch"),
    _b("bitwise_or", "int", torch.bitwise_or, diff=False, bool_ok=True, api="torch"),
    _b("bitwise_xor", "int", torch.bitwise_xor, diff=False, bool_ok=True, api="torch"),
    _b("bitwise_left_shift", "int", torch.bitwise_left_shift, diff=False, api="torch"),
    _b("bitwise_right_shift", "int", torch.bitwise_right_shift, diff=False, api="torch"),
    _b("logical_and", "logical", torch.logical_and, diff=False, bool_ok=True, numbers="none",
       api="torch"),
    _b("logical_or", "logical", torch.logical_or, diff=False, bool_ok=True, numbers="none",
       api="torch"),
    _b("logical_xor", "logical", torch.logical_xor, diff=False, bool_ok=True, numbers="none",
       api="torch"),
    _b("lerp", "float", torch.lerp, grad_reads=False),
    _b("heaviside", "exact", torch.heaviside, diff=False, bool_ok=True, numbers="none"),
    _b("ldexp", "promote", torch.ldexp, (-3.0, 3.0), numbers="none", api="torch"),
    _b("gcd", "int", torch.gcd, diff=False, numbers="none", api="torch"),
    _b("lcm", "int", torch.lcm, diff=False, numbers="none", api="torch"),
    _b("shift_right_logical", "int", bitrefs.shift_right_logical, diff=False),
    _b("mulhi", "int", bitrefs.mulhi, diff=False),
    _b("bit_at", "int", lambda a, b: (a >> b) & 1, diff=False),  # jnp.unpackbits: bit b of a
]
BinaryKind = _kinds("BinaryKind", _BINARY_ROWS,
                    "y = f(a, b); DIV_FLOOR is also floor_divide; LERP runs in BinaryParamPlan "
                    "only (a scalar weight).")
BINARY: dict = _table(BinaryKind, _BINARY_ROWS, 0)

_GATED_ROWS = [  # y = act(first half) * second half (glu: first * sigmoid(second))
    _b("glu", "float", _glu, api="torch"),
    _b("swiglu", "float", _gated(F.silu), api="torch"),
    _b("geglu", "float", _gated(F.gelu), api="torch"),
    _b("geglu_tanh", "float", _gated(lambda t: F.gelu(t, approximate="tanh")), api="torch"),
    # heavy: reglu's launches keep the half block size they were measured with
    _b("reglu", "float", _gated(torch.relu), api="torch", heavy=True),
]
GatedKind = _kinds("GatedKind", _GATED_ROWS, "y = act(first half) * second half.")
GATED: dict = _table(GatedKind, _GATED_ROWS, 100)

_COMPARE_ROWS = [
    _b("eq", "exact", torch.eq, diff=False, bool_ok=True, api="torch"),
    _b("ne", "exact", torch.ne, diff=False, bool_ok=True, api="torch"),
    _b("lt", "exact", torch.lt, diff=False, bool_ok=True, api="torch"),
    _b("le", "exact", torch.le, diff=False, bool_ok=True, api="torch"),
    _b("gt", "exact", torch.gt, diff=False, bool_ok=True, api="torch"),
    _b("ge", "exact", torch.ge, diff=False, bool_ok=True, api="torch"),
    _b("isclose", "exact", torch.isclose, diff=False, bool_ok=True),
]
CompareKind = _kinds("CompareKind", _COMPARE_ROWS, "Boolean y = a <op> b (or isclose).")
COMPARE: dict = _table(CompareKind, _COMPARE_ROWS, 120)
#: isclose with equal_nan runs the op code after isclose's.
ISCLOSE_NAN_CODE = COMPARE[CompareKind.ISCLOSE].code + 1

_TERNARY_ROWS = [  # lerp(a, b, weight=c), a + value * b * c, a + value * b / c,
    # clamp(a, min=b, max=c), where(condition=a, b, c)
    _b("lerp", "float", torch.lerp),
    _b("addcmul", "float", torch.addcmul),
    _b("addcdiv", "float", torch.addcdiv),
    _b("clamp", "exact", torch.clamp),
    _b("where", "exact", torch.where, bool_ok=True),
]
TernaryKind = _kinds("TernaryKind", _TERNARY_ROWS, "y = f(a, b, c): one member per row.")
TERNARY: dict = _table(TernaryKind, _TERNARY_ROWS, 0)


def op_codes() -> dict[str, int]:
    """Every op code by its kernel-side name: U_/P_/B_/G_/C_/T_ + the enum member, plus
    U_IDENTITY and C_ISCLOSE_NAN."""
    out = {"U_IDENTITY": IDENTITY_CODE, "C_ISCLOSE_NAN": ISCLOSE_NAN_CODE}
    for prefix, table in (("U", UNARY), ("P", UNARY_PARAM), ("B", BINARY), ("G", GATED),
                          ("C", COMPARE), ("T", TERNARY)):
        out.update({f"{prefix}_{kind.name}": row.code for kind, row in table.items()})
    return out


def check_elem(who: str, name: str, element) -> None:
    if not isinstance(element, ElementKind):
        raise V.InvalidProblem(f"{who}: {name} must be an ElementKind, got {element!r}")


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


def _int_rule(who: str, rule: str, element: ElementKind, bool_ok: bool, what: str) -> ElementKind:
    """Result element of a unary-style rule for one input element."""
    if rule == "predicate":
        return ElementKind.BOOL
    if rule == "exponent":
        if not element.is_float:
            raise V.Unsupported(f"{who}: {what} takes floating elements (f32, f16, bf16, f64), "
                                f"got {element.value}")
        return ElementKind.I32
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
    want = len(UNARY_PARAM[kind].params)
    if not isinstance(params, tuple) or len(params) != want:
        raise V.InvalidProblem(f"{who}: {kind.value} takes {want} params, got {params!r}")
    for i, p in enumerate(params):
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise V.InvalidProblem(f"{who}: params[{i}] must be a number, got {p!r}")
        if kind is UnaryParamKind.NAN_TO_NUM:  # any replacement, NaN and +-inf included
            continue
        if math.isnan(p):
            raise V.InvalidProblem(f"{who}: params[{i}] must be a number, got {p!r}")
        if kind is not UnaryParamKind.CLAMP:
            V.check_finite(who, f"params[{i}]", p)
    if kind is UnaryParamKind.REDUCE_PRECISION:
        e, m = params
        if not (float(e).is_integer() and float(m).is_integer() and e >= 1 and m >= 0):
            raise V.InvalidProblem(f"{who}: reduce_precision takes integer exponent_bits >= 1 "
                                   f"and mantissa_bits >= 0, got {e}, {m}")
    if kind is UnaryParamKind.HARDTANH and params[0] > params[1]:
        raise V.InvalidProblem(f"{who}: hardtanh min_val {params[0]} > max_val {params[1]}")
    if kind is UnaryParamKind.CELU and params[0] == 0:
        raise V.InvalidProblem(f"{who}: celu alpha must be nonzero, got 0")
    if kind is UnaryParamKind.SOFTPLUS and params[0] == 0:
        raise V.InvalidProblem(f"{who}: softplus beta must be nonzero, got 0")
    # torch: hardshrink takes any lambd (a negative one shrinks nothing), softshrink needs >= 0
    if kind is UnaryParamKind.SOFTSHRINK and params[0] < 0:
        raise V.InvalidProblem(f"{who}: lambd must be >= 0, got {params[0]}")


@functools.lru_cache(maxsize=4096)
def unary_param_out_element(who: str, kind: UnaryParamKind, element: ElementKind,
                            params) -> ElementKind:
    row = UNARY_PARAM[kind]
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
