"""torch.* / torch.nn.functional elementwise functions on the elementwise plans, differentiable:
torch's names and signatures. A kind whose table row sets `api` gets its function generated
here; the others are written below."""

from __future__ import annotations

import math
import numbers

import torch

from ...backends.torch_ops import normalize_dim
from ...core.errors import ArgumentTypeError, InvalidProblem
from . import torch_api_more
from .custom_ops import (
    _binary_call,
    _cast,
    _compare_call,
    _gated,
    _lerp_scalar,
    _ternary,
    _unary,
    _uparam,
    fail_in_backward,
    require_tensor,
    scalar_result,
    torch_result,
    unary_call,
    zero_dims_to_result,
)
from .descriptors import BinaryKind, CompareKind, GatedKind, TernaryKind, UnaryKind
from .descriptors import UnaryParamKind as P
from .table import BINARY, COMPARE, GATED, UNARY


def _make_unary(kind: UnaryKind):
    name = kind.value

    def fn(input: torch.Tensor) -> torch.Tensor:
        return unary_call(kind, input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name} on UnaryPlan; differentiable through UnaryBackwardPlan."
    return fn


def _inplace(input: torch.Tensor, out: torch.Tensor, inplace: bool) -> torch.Tensor:
    return input.copy_(out) if inplace else out


def _make_unary_f(kind: UnaryKind):
    name = kind.value

    def fn(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
        return _inplace(input, unary_call(kind, input), inplace)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.nn.functional.{name} on UnaryPlan; differentiable."
    return fn


def _bin(kind: BinaryKind):
    def fn(input, other) -> torch.Tensor:
        return _binary_call(kind, input, other)

    fn.__name__ = fn.__qualname__ = kind.value
    fn.__doc__ = f"torch.{kind.value} on BinaryPlan (broadcasting, type promotion)."
    return fn


def _cmp(kind: CompareKind):
    def fn(input: torch.Tensor, other) -> torch.Tensor:
        return _compare_call(kind, input, other)

    fn.__name__ = fn.__qualname__ = kind.value
    fn.__doc__ = f"torch.{kind.value} on BinaryCmpPlan (bool result)."
    return fn


def _gated_fn(kind: GatedKind):
    def fn(input: torch.Tensor, dim: int = -1) -> torch.Tensor:
        d = normalize_dim(dim, input.dim(), kind.value)
        if input.dim() == 0:
            raise RuntimeError(f"{kind.value} does not support scalars because halving size "
                               "must be even")
        if input.shape[d] % 2:
            raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                               f"{input.shape[d]}")
        return _gated(input, kind.value, d)

    fn.__name__ = fn.__qualname__ = kind.value
    fn.__doc__ = (f"{kind.value}(input, dim=-1) on GatedActivationPlan: halves a, b of `dim`; "
                  "glu = a * sigmoid(b) (torch.nn.functional.glu), swiglu = silu(a) * b, "
                  "geglu = gelu(a) * b, reglu = relu(a) * b.")
    return fn


#: (table, {row.api: function maker}); "F" is a torch.nn.functional name without `inplace`
_MAKERS = ((UNARY, {"torch": _make_unary, "F": _make_unary, "F_inplace": _make_unary_f}),
           (BINARY, {"torch": _bin}), (COMPARE, {"torch": _cmp}), (GATED, {"torch": _gated_fn}))
_GENERATED = []
for _table, _makers in _MAKERS:
    for _kind, _row in _table.items():
        if _row.api:
            globals()[_kind.value] = _makers[_row.api](_kind)
            _GENERATED.append(_kind.value)
negative = globals()["neg"]
absolute = globals()["abs"]
arctan2 = globals()["atan2"]


def square(input: torch.Tensor) -> torch.Tensor:
    """torch.square: pow(input, 2), so a bool input squares as int64 (torch's promotion)."""
    if input.dtype == torch.bool:
        input = _cast(input, torch.int64)
    return _unary(input, UnaryKind.SQUARE.value)


def _int_scalar(who: str, value, dtype: torch.dtype) -> int:
    """A Python number as an integer tensor's scalar, as torch converts it (checked: a value
    outside the dtype's range raises; floats truncate toward zero)."""
    info = torch.iinfo(dtype)
    lo = info.min if isinstance(value, float) or info.min < 0 else -info.max  # ints wrap
    if math.isnan(value) or not lo <= value <= info.max:
        raise InvalidProblem(f"{who}: value {value} can't be converted to {dtype} without "
                             f"overflow (expected {info.min}..{info.max})")
    v = math.trunc(value)
    return v % (info.max + 1) if info.min == 0 else v


def _is_int(t: torch.Tensor) -> bool:
    return not t.is_floating_point() and t.dtype != torch.bool


def relu6(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """torch.nn.functional.relu6; an integer input is clamped to [0, 6] in its own dtype."""
    if _is_int(input):
        return _inplace(input, _param(P.CLAMP, input, 0, 6), inplace)
    return _inplace(input, _unary(input, UnaryKind.RELU6.value), inplace)


def round(input: torch.Tensor, *, decimals: int = 0) -> torch.Tensor:  # noqa: A001
    """torch.round (half to even); decimals != 0 scales by 10**decimals around it."""
    if decimals == 0:
        return _unary(input, UnaryKind.ROUND.value)
    scale = 10.0 ** decimals
    return mul(_unary(mul(input, scale), UnaryKind.ROUND.value), 1.0 / scale)


def relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return _inplace(input, _unary(input, UnaryKind.RELU.value), inplace)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")
    return _unary(input, (UnaryKind.GELU if approximate == "none" else UnaryKind.GELU_TANH).value)


def logit(input: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    if eps is not None:
        input = clamp(input, eps, 1.0 - eps)
    return unary_call(UnaryKind.LOGIT, input)


def cbrt(input: torch.Tensor) -> torch.Tensor:
    """Cube root (jax.lax.cbrt; torch has none)."""
    return unary_call(UnaryKind.CBRT, input)


def _param(kind: P, input, *params):
    return _uparam(input, kind.value, [float(p) for p in params])


def threshold(input: torch.Tensor, threshold: float, value: float,
              inplace: bool = False) -> torch.Tensor:
    if _is_int(input):
        # torch converts both to the input's integer type (truncated, range-checked)
        th = _int_scalar("threshold", threshold, input.dtype)
        v = torch.full((), _int_scalar("threshold", value, input.dtype), dtype=input.dtype,
                       device=input.device)
        out = _ternary(_compare_call(CompareKind.GT, input, th), input, v,
                       TernaryKind.WHERE.value, 1.0)
        return _inplace(input, out, inplace)
    return _inplace(input, _param(P.THRESHOLD, input, threshold, value), inplace)


def leaky_relu(input: torch.Tensor, negative_slope: float = 0.01,
               inplace: bool = False) -> torch.Tensor:
    return _inplace(input, _param(P.LEAKY_RELU, input, negative_slope), inplace)


def elu(input: torch.Tensor, alpha: float = 1.0, inplace: bool = False) -> torch.Tensor:
    return _inplace(input, _param(P.ELU, input, alpha), inplace)


def celu(input: torch.Tensor, alpha: float = 1.0, inplace: bool = False) -> torch.Tensor:
    return _inplace(input, _param(P.CELU, input, alpha), inplace)


def hardtanh(input: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> torch.Tensor:
    if _is_int(input):
        # torch clamps an integer input in its own type, the bounds converted to it
        if min_val > max_val:
            raise InvalidProblem(f"hardtanh: min_val {min_val} > max_val {max_val}")
        if input.dtype == torch.uint8 and min_val < 0:
            raise InvalidProblem(f"hardtanh: an unsigned input takes limits >= 0, got "
                                 f"min_val {min_val}")
        lo, hi = (_int_scalar("hardtanh", v, input.dtype) for v in (min_val, max_val))
        return _inplace(input, _param(P.CLAMP, input, lo, hi), inplace)
    return _inplace(input, _param(P.HARDTANH, input, min_val, max_val), inplace)


def softplus(input: torch.Tensor, beta: float = 1.0, threshold: float = 20.0) -> torch.Tensor:
    if beta == 1.0 and threshold == 20.0:
        return _unary(input, UnaryKind.SOFTPLUS.value)
    return _param(P.SOFTPLUS, input, beta, threshold)


def hardshrink(input: torch.Tensor, lambd: float = 0.5) -> torch.Tensor:
    return _param(P.HARDSHRINK, input, lambd)


def softshrink(input: torch.Tensor, lambd: float = 0.5) -> torch.Tensor:
    return _param(P.SOFTSHRINK, input, lambd)


def _is_num(v) -> bool:
    if isinstance(v, torch.Tensor):  # the common case, answered before the ABC check
        return False
    return isinstance(v, numbers.Real) and not isinstance(v, bool)  # complex: refused later


# -- binary ---------------------------------------------------------------------------------------


def add(input, other, *, alpha=1) -> torch.Tensor:
    if isinstance(input, torch.Tensor) and _is_num(other) and input.is_floating_point():
        return _param(P.ADD, input, alpha * other)
    return _binary_call(BinaryKind.ADD, input, other, alpha)


def _is_bool(v) -> bool:
    return isinstance(v, bool) or (isinstance(v, torch.Tensor) and v.dtype == torch.bool)


def sub(input, other, *, alpha=1) -> torch.Tensor:
    if _is_bool(input) or _is_bool(other):
        # torch rejects it (a bool difference is ambiguous): ours must not return a number
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")
    if isinstance(input, torch.Tensor) and _is_num(other) and input.is_floating_point():
        return _param(P.ADD, input, -alpha * other)
    return _binary_call(BinaryKind.SUB, input, other, alpha)


def mul(input, other) -> torch.Tensor:
    if isinstance(input, torch.Tensor) and _is_num(other) and input.is_floating_point():
        return _param(P.MUL, input, other)
    return _binary_call(BinaryKind.MUL, input, other)


def div(input, other, *, rounding_mode: str | None = None) -> torch.Tensor:
    kinds = {None: BinaryKind.DIV, "trunc": BinaryKind.DIV_TRUNC, "floor": BinaryKind.DIV_FLOOR}
    if rounding_mode not in kinds:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    return _binary_call(kinds[rounding_mode], input, other)


def true_divide(input, other) -> torch.Tensor:
    return div(input, other)


def floor_divide(input, other) -> torch.Tensor:
    return _binary_call(BinaryKind.DIV_FLOOR, input, other)


def pow(input, exponent) -> torch.Tensor:  # noqa: A001
    if isinstance(input, torch.Tensor) and _is_num(exponent):
        if not input.is_floating_point() and isinstance(exponent, float):
            return _param(P.POW, input.to(torch.get_default_dtype()), exponent)
        return _param(P.POW, input, exponent)
    return _binary_call(BinaryKind.POW, input, exponent)


# -- lerp, ternary --------------------------------------------------------------------------------


def _full(value, like: torch.Tensor) -> torch.Tensor:
    return torch.full((), value, dtype=like.dtype, device=like.device)


def _bound(value, dtype: torch.dtype, device, low: bool) -> torch.Tensor:
    """A clamp bound as a 0-d tensor of `dtype`; None is no bound (the dtype's extreme)."""
    if value is None:
        if dtype.is_floating_point:
            value = -math.inf if low else math.inf
        elif dtype == torch.bool:
            value = not low
        else:
            value = torch.iinfo(dtype).min if low else torch.iinfo(dtype).max
    return torch.full((), value, dtype=dtype, device=device)


def lerp(input: torch.Tensor, end: torch.Tensor, weight) -> torch.Tensor:
    """torch.lerp: `end` of input's dtype, and a weight tensor too unless it is 0-d (then it
    promotes as a 0-d operand: integer start and end with a 0-d float weight compute in
    float); a Python number weight keeps input's dtype."""
    require_tensor("lerp", "input", 1, input)
    require_tensor("lerp", "end", 2, end)
    if end.dtype != input.dtype:
        raise InvalidProblem(f"lerp: expected end of input's dtype {input.dtype}, got "
                             f"{end.dtype}")
    if isinstance(weight, numbers.Number):
        if input.shape == end.shape:
            return _lerp_scalar(input, end, float(weight))
        weight = _full(float(weight), input)
    else:
        require_tensor("lerp", "weight", 3, weight)
        if weight.dim() > 0 and weight.dtype != input.dtype:
            raise InvalidProblem(f"lerp: expected a weight of input's dtype {input.dtype} (or "
                                 f"a 0-d weight), got {weight.dtype} of shape "
                                 f"{tuple(weight.shape)}")
        if weight.dtype == torch.bool:
            # torch's derivative for input is grad * (1 - weight): it raises for a bool weight
            input = fail_in_backward(input, "lerp backward: the derivative for input subtracts "
                                     "the weight, which must not be bool, got a bool weight")
        want = torch_result(input, end, weight)
        input, end, weight = (t if t.dtype == want else _cast(t, want)
                              for t in (input, end, weight))
    return _ternary(input, end, weight, TernaryKind.LERP.value, 1.0)


def _require_tensors(name: str, *args) -> None:
    for i, (arg, value) in enumerate(zip(("input", "tensor1", "tensor2"), args)):
        require_tensor(name, arg, i + 1, value)


def addcmul(input: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor, *,
            value=1) -> torch.Tensor:
    _require_tensors("addcmul", input, tensor1, tensor2)
    input, tensor1, tensor2 = zero_dims_to_result(input, tensor1, tensor2)
    return _ternary(input, tensor1, tensor2, TernaryKind.ADDCMUL.value, float(value))


def _integer_or_bool(t: torch.Tensor) -> bool:
    return not (t.is_floating_point() or t.is_complex())


def addcdiv(input: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor, *,
            value=1) -> torch.Tensor:
    """torch.addcdiv. As torch's: tensor1 and tensor2 both integer or bool (whatever their
    dims) raise (no integer division); an integer or bool tensor2 beside a floating tensor1
    computes, but torch's derivative for tensor1, value / tensor2, is computed in tensor2's
    dtype and raises, so a backward reaching tensor1 raises (InvalidProblem both)."""
    _require_tensors("addcdiv", input, tensor1, tensor2)
    if _integer_or_bool(tensor1) and _integer_or_bool(tensor2):
        raise InvalidProblem("addcdiv: integer division is not supported (torch's rule: tensor1 "
                             "and tensor2 not both integer or bool); expected a floating "
                             f"tensor1 or tensor2, got {tensor1.dtype} and {tensor2.dtype}")
    if _integer_or_bool(tensor2):
        tensor1 = fail_in_backward(
            tensor1, "addcdiv backward: the derivative for tensor1, value / tensor2, is computed "
            "in tensor2's dtype (torch's rule), which fails for an integer or bool tensor2; "
            f"expected a floating tensor2, got {tensor2.dtype}", InvalidProblem)
    input, tensor1, tensor2 = zero_dims_to_result(input, tensor1, tensor2)
    return _ternary(input, tensor1, tensor2, TernaryKind.ADDCDIV.value, float(value))


def clamp(input: torch.Tensor, min=None, max=None) -> torch.Tensor:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    tensors = [v for v in (min, max) if isinstance(v, torch.Tensor)]
    if tensors and any(v is not None and not isinstance(v, torch.Tensor) for v in (min, max)):
        # torch's signatures take both bounds as tensors or both as numbers; a 0-d tensor
        # passes as a number (its value), one with dims or requiring a gradient can't
        if any(t.dim() > 0 or t.requires_grad for t in tensors):
            raise ArgumentTypeError("clamp(): expected min and max both tensors or both "
                                    f"numbers, got {type(min).__name__} and "
                                    f"{type(max).__name__}")
        min, max = (v.item() if isinstance(v, torch.Tensor) else v for v in (min, max))
    if not isinstance(min, torch.Tensor) and not isinstance(max, torch.Tensor):
        # torch's result type counts the bounds given (a float bound makes an integer input
        # float, an int bound a bool one int64); a missing bound is no bound, not a float inf
        res = input.dtype
        for v in (min, max):
            if v is not None:
                res = scalar_result(res, v)
        if res != input.dtype:
            input = _cast(input, res)
        lo = -math.inf if min is None else min
        hi = math.inf if max is None else max
        if not input.is_floating_point() and input.dtype != torch.bool:
            info = torch.iinfo(input.dtype)
            lo = info.min if min is None else lo
            hi = info.max if max is None else hi
            if input.dtype == torch.int64:
                # the scalar parameters carry ~48 bits: int64 bounds go as 0-d tensors
                lo, hi = (torch.full((), math.trunc(v), dtype=input.dtype, device=input.device)
                          for v in (lo, hi))
                return _ternary(input, lo, hi, TernaryKind.CLAMP.value, 1.0)
        return _param(P.CLAMP, input, lo, hi)
    # a missing bound beside a tensor one: a 0-d tensor of the result dtype (torch's over the
    # input and the bounds given) holding the dtype's widest value, no bound
    res = torch_result(input, *tensors)
    if res == torch.bool:
        # one bound (clamp of bool with two has no torch kernel): torch's clamp_min /
        # clamp_max, which are maximum / minimum for bool
        if max is None:
            return _binary_call(BinaryKind.MAXIMUM, input, min)
        if min is None:
            return _binary_call(BinaryKind.MINIMUM, input, max)
    lo, hi = (v if isinstance(v, torch.Tensor) else _bound(v, res, input.device, low)
              for v, low in ((min, True), (max, False)))
    input, lo, hi = zero_dims_to_result(input, lo, hi)
    return _ternary(input, lo, hi, TernaryKind.CLAMP.value, 1.0)


clip = clamp


def where(condition: torch.Tensor, input, other) -> torch.Tensor:
    if not isinstance(input, torch.Tensor) and not isinstance(other, torch.Tensor):
        # two numbers: torch's dtype of the pair alone (bool, int64 or the default float)
        dt = (torch.get_default_dtype() if any(isinstance(v, float) for v in (input, other))
              else torch.bool if all(isinstance(v, bool) for v in (input, other))
              else torch.int64)
        input = torch.tensor(input, dtype=dt, device=condition.device)
        other = torch.tensor(other, dtype=dt, device=condition.device)
    like = input if isinstance(input, torch.Tensor) else other
    if not isinstance(input, torch.Tensor):
        input = torch.tensor(input, dtype=scalar_result(like.dtype, input), device=like.device)
    if not isinstance(other, torch.Tensor):
        other = torch.tensor(other, dtype=scalar_result(like.dtype, other), device=like.device)
    input, other = zero_dims_to_result(input, other)
    return _ternary(condition, input, other, TernaryKind.WHERE.value, 1.0)


# -- comparison, cast, gated ----------------------------------------------------------------------


def isclose(input: torch.Tensor, other: torch.Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> torch.Tensor:
    require_tensor("isclose", "input", 1, input)
    require_tensor("isclose", "other", 2, other)
    if input.dtype != other.dtype:
        # torch does not promote here (a tolerance is only meaningful in one dtype)
        raise RuntimeError(f"isclose: expected input and other of one dtype, got "
                           f"{input.dtype} and {other.dtype}")
    return _compare_call(CompareKind.ISCLOSE, input, other, rtol, atol, equal_nan)


def cast(input: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Tensor.to(dtype) on CastPlan (a copy even when the dtype is unchanged); differentiable
    between floating types."""
    return _cast(input, dtype)


_MORE = ["positive", "deg2rad_", "rad2deg_", "modf", "frexp", "nan_to_num", "nan_to_num_",
         "spacing", "integer_pow", "reduce_precision", "divmod", "float_power", "float_power_",
         "heaviside", "shift_right_logical", "mulhi", "bitwise_not", "bitwise_not_",
         "logical_not_", "population_count", "clz", "clamp_min", "clamp_max", "clamp_min_",
         "clamp_max_", "piecewise", "isin", "allclose", "equal", "view_dtype",
         "bitcast_convert_type", "packbits", "unpackbits"]
globals().update({name: getattr(torch_api_more, name) for name in _MORE})

__all__ = sorted(
    _MORE + _GENERATED
    + ["negative", "absolute", "arctan2", "square", "round", "relu", "relu6", "gelu", "logit",
       "cbrt", "threshold", "leaky_relu", "elu", "celu", "hardtanh", "softplus", "hardshrink",
       "softshrink", "add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "lerp",
       "addcmul", "addcdiv", "clamp", "clip", "where", "isclose", "cast"]
)
