"""The issue-34 rows of the elementwise families with torch's (or, where torch has none,
jax's) names: predicates and whole-tensor comparisons, two-output ops, nan_to_num, clamp_min /
clamp_max, piecewise, the bit-level integer ops, dtype bitcasts and reduce_precision.
`torch_api.py` re-exports them. The predicate rows with `api="torch"` (isnan, signbit, ...)
are generated there."""

from __future__ import annotations

import math
import numbers

import torch

from ...backends.torch_ops import normalize_dim
from ...core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from .custom_ops import (
    _binary,
    _binary_call,
    _cast,
    _compare_call,
    _ternary,
    _unary,
    _uparam,
    require_tensor,
    scalar_result,
    to_default_float,
    torch_result,
    zero_dims_to_result,
)
from .descriptors import BinaryKind, CompareKind, TernaryKind, UnaryKind
from .descriptors import UnaryParamKind as P
from .isin import isin_op
from .packbits import as_outer_length_inner, packbits_op

_F32_MAX = torch.finfo(torch.float32).max


def _kind_rank(dtype: torch.dtype) -> int:
    return 0 if dtype == torch.bool else 2 if dtype.is_floating_point else 1


def _inplace_into(name: str, input: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """torch's in-place rule: the result must be castable to input's dtype, and input must
    not be a broadcast of out's shape."""
    if _kind_rank(out.dtype) > _kind_rank(input.dtype):  # torch.can_cast, traceable
        raise InvalidProblem(f"{name}: result type {out.dtype} can't be cast to the desired "
                             f"output type {input.dtype}")
    if out.shape != input.shape:
        raise InvalidProblem(f"{name}: output with shape {tuple(input.shape)} doesn't match the "
                             f"broadcast shape {tuple(out.shape)}")
    return input.copy_(out)


# -- unary ----------------------------------------------------------------------------------------


def positive(input: torch.Tensor) -> torch.Tensor:
    """torch.positive: input itself (no kernel); bool raises, as torch."""
    require_tensor("positive", "input", 1, input)
    if input.dtype == torch.bool:
        raise Unsupported("positive: the `+` operator on a bool tensor is not supported")
    return input


def deg2rad_(input: torch.Tensor) -> torch.Tensor:
    return _inplace_into("deg2rad_", input, _unary(to_default_float(input), "deg2rad"))


def rad2deg_(input: torch.Tensor) -> torch.Tensor:
    return _inplace_into("rad2deg_", input, _unary(to_default_float(input), "rad2deg"))


def _floating(name: str, x: torch.Tensor) -> torch.Tensor:
    """jnp's promotion to an inexact type: integers and bool compute in the default float."""
    require_tensor(name, "x", 1, x)
    return x if x.is_floating_point() else _cast(x, torch.get_default_dtype())


def modf(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """jnp.modf: (x - trunc(x), trunc(x)), integers promoted to the default float; +-inf give
    (NaN, +-inf) as jnp's x - trunc(x) does. Differentiable (1 and 0)."""
    x = _floating("modf", x)
    return _unary(x, UnaryKind.FRAC.value), _unary(x, UnaryKind.TRUNC.value)


def frexp(input: torch.Tensor):
    """torch.frexp: (mantissa in [0.5, 1) with input's sign and dtype, int32 exponent); +-0,
    +-inf and NaN give (input, 0). Floating inputs only."""
    require_tensor("frexp", "input", 1, input)
    if not input.is_floating_point():
        raise Unsupported(f"frexp: expected a floating input (torch.frexp() only supports "
                          f"floating-point dtypes), got {input.dtype}")
    mantissa = _unary(input, UnaryKind.FREXP_MANTISSA.value)
    exponent = _unary(input, UnaryKind.FREXP_EXPONENT.value)
    return torch.return_types.frexp((mantissa, exponent))


def nan_to_num(input: torch.Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> torch.Tensor:
    """torch.nan_to_num: NaN -> nan, +inf -> posinf, -inf -> neginf (defaults: 0 and the
    dtype's largest / lowest finite value); integer and bool inputs are returned as a copy.
    Gradient: the incoming one where the input is finite, 0 elsewhere (torch's)."""
    require_tensor("nan_to_num", "input", 1, input)
    if not input.is_floating_point():
        return _cast(input, input.dtype)
    info = torch.finfo(input.dtype)
    values = [float(nan), float(info.max if posinf is None else posinf),
              float(info.min if neginf is None else neginf)]
    if any(math.isfinite(v) and abs(v) > _F32_MAX for v in values):
        # the kernels take scalars as f32 pairs: float64 replacements beyond f32's range (the
        # defaults among them) are 0-d tensors selected by the predicates instead
        out = input
        for kind, v in ((UnaryKind.ISPOSINF, values[1]), (UnaryKind.ISNEGINF, values[2]),
                        (UnaryKind.ISNAN, values[0])):
            value = torch.full((), v, dtype=input.dtype, device=input.device)
            out = _ternary(_unary(input, kind.value), value, out, TernaryKind.WHERE.value, 1.0)
        return out
    return _uparam(input, P.NAN_TO_NUM.value, values)


def nan_to_num_(input: torch.Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> torch.Tensor:
    return _inplace_into("nan_to_num_", input, nan_to_num(input, nan, posinf, neginf))


def spacing(x: torch.Tensor) -> torch.Tensor:
    """jnp.spacing (numpy's definition): the distance from x to the next float of its type away
    from zero, negative for x < 0, the smallest subnormal for +-0, NaN for +-inf and NaN.
    Integers are promoted to the default float."""
    return _unary(_floating("spacing", x), UnaryKind.SPACING.value)


def integer_pow(x: torch.Tensor, y: int) -> torch.Tensor:
    """jax.lax.integer_pow(x, y): x ** y for a static Python int y (negative too), in x's
    dtype. Integers are exact (wrapping, as jax; a negative power is 1 / x**|y| in integer
    division: 0 except for +-1 bases); floats differentiable."""
    require_tensor("integer_pow", "x", 1, x)
    if isinstance(y, bool) or not isinstance(y, numbers.Integral):
        raise ArgumentTypeError(f"integer_pow: y must be a Python int, got {type(y).__name__}")
    if x.dtype == torch.bool:
        raise Unsupported("integer_pow: bool x is not supported (jax's integer_pow takes "
                          "numbers)")
    if x.is_floating_point():
        return _uparam(x, P.POW.value, [float(y)])
    exponent = torch.full((), int(y), dtype=x.dtype, device=x.device)
    return _binary(x, exponent, BinaryKind.POW.value, 1.0, None)


def reduce_precision(x: torch.Tensor, exponent_bits: int, mantissa_bits: int) -> torch.Tensor:
    """jax.lax.reduce_precision: x rounded (to nearest even) to a float format of
    `exponent_bits` / `mantissa_bits`, overflowing to +-inf and flushing below its smallest
    normal to +-0 (no subnormals, as XLA); NaN kept. A width at least x's own leaves that part
    alone. Linear: its gradient is the incoming one reduced alike (jax's)."""
    require_tensor("reduce_precision", "x", 1, x)
    if not x.is_floating_point():
        raise Unsupported(f"reduce_precision: x must be floating, got {x.dtype}")
    for name, v in (("exponent_bits", exponent_bits), ("mantissa_bits", mantissa_bits)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ArgumentTypeError(f"reduce_precision: {name} must be an int, got {v!r}")
    own_e, own_m = {torch.float16: (5, 10), torch.bfloat16: (8, 7), torch.float32: (8, 23),
                    torch.float64: (11, 52)}[x.dtype]
    # a part as wide as x's own is left alone: widths past the compute type's say so (a
    # half's exponent reduced in f32 would otherwise flush the half's subnormals)
    e = 99 if exponent_bits >= own_e else int(exponent_bits)
    m = 99 if mantissa_bits >= own_m else int(mantissa_bits)
    return _uparam(x, P.REDUCE_PRECISION.value, [float(e), float(m)])


# -- binary ---------------------------------------------------------------------------------------


def divmod(x1, x2) -> tuple[torch.Tensor, torch.Tensor]:  # noqa: A001
    """jnp.divmod: (floor_divide(x1, x2), remainder(x1, x2)), broadcasting and promoting as
    torch's ops; differentiable through remainder (floor division's gradient is 0)."""
    return (_binary_call(BinaryKind.DIV_FLOOR, x1, x2),
            _binary_call(BinaryKind.REMAINDER, x1, x2))


def _to_f64(v):
    if isinstance(v, torch.Tensor):
        return v if v.dtype == torch.float64 else _cast(v, torch.float64)
    return v


def float_power(input, exponent) -> torch.Tensor:
    """torch.float_power: pow computed and returned in float64."""
    if not isinstance(input, torch.Tensor) and not isinstance(exponent, torch.Tensor):
        raise ArgumentTypeError("float_power(): expected at least one tensor argument")
    if isinstance(input, torch.Tensor) and not isinstance(exponent, torch.Tensor):
        if isinstance(exponent, complex):
            raise Unsupported("float_power: complex exponents are not supported")
        return _uparam(_to_f64(input), P.POW.value, [float(exponent)])
    if not isinstance(input, torch.Tensor):
        input = torch.full((), float(input), dtype=torch.float64, device=exponent.device)
    return _binary_call(BinaryKind.POW, _to_f64(input), _to_f64(exponent))


def float_power_(input: torch.Tensor, exponent) -> torch.Tensor:
    if input.dtype != torch.float64:
        raise InvalidProblem(f"float_power_: the base given to float_power_ has dtype "
                             f"{input.dtype} but the operation's result requires dtype Double")
    return _inplace_into("float_power_", input, float_power(input, exponent))


def heaviside(input: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """torch.heaviside: values where input == 0, 1 where input > 0, 0 elsewhere (NaN too, as
    torch); input and values of one dtype, as torch requires."""
    require_tensor("heaviside", "input", 1, input)
    require_tensor("heaviside", "values", 2, values)
    if input.dtype != values.dtype:
        raise InvalidProblem(f"heaviside: expected input and values of one dtype (torch's "
                             f"rule), got {input.dtype} and {values.dtype}")
    return _binary_call(BinaryKind.HEAVISIDE, input, values)


def _int_pair(name: str, x, y):
    """jax's rule for its integer binary ops: one integer dtype for both (a Python int takes
    the tensor's)."""
    like = x if isinstance(x, torch.Tensor) else y
    if not isinstance(like, torch.Tensor):
        raise ArgumentTypeError(f"{name}: expected at least one tensor argument")
    x, y = (v if isinstance(v, torch.Tensor) else torch.full((), int(v), dtype=like.dtype,
                                                             device=like.device)
            for v in (x, y))
    if x.dtype != y.dtype:
        raise InvalidProblem(f"{name}: expected x and y of one dtype (jax's rule), got "
                             f"{x.dtype} and {y.dtype}")
    return x, y


def shift_right_logical(x, y) -> torch.Tensor:
    """jax.lax.shift_right_logical: x >> y filling zeros at x's width; shifts outside
    [0, width) give 0. Integer dtypes."""
    x, y = _int_pair("shift_right_logical", x, y)
    return _binary(x, y, BinaryKind.SHIFT_RIGHT_LOGICAL.value, 1.0, None)


def mulhi(x, y) -> torch.Tensor:
    """The high half of the double-width integer product x * y (signed for signed dtypes),
    in x's dtype (jax.lax.mul_hi's rule)."""
    x, y = _int_pair("mulhi", x, y)
    return _binary(x, y, BinaryKind.MULHI.value, 1.0, None)


# -- unary bit-level ------------------------------------------------------------------------------


def bitwise_not(input: torch.Tensor) -> torch.Tensor:
    """torch.bitwise_not: ~input for integers, logical not for bool."""
    require_tensor("bitwise_not", "input", 1, input)
    if input.dtype == torch.bool:
        return _unary(input, UnaryKind.LOGICAL_NOT.value)
    return _unary(input, UnaryKind.BITWISE_NOT.value)


def bitwise_not_(input: torch.Tensor) -> torch.Tensor:
    return _inplace_into("bitwise_not_", input, bitwise_not(input))


def logical_not_(input: torch.Tensor) -> torch.Tensor:
    return _inplace_into("logical_not_", input, _unary(input, UnaryKind.LOGICAL_NOT.value))


def population_count(x: torch.Tensor) -> torch.Tensor:
    """jax.lax.population_count: the set bits of each integer (two's complement), x's dtype."""
    require_tensor("population_count", "x", 1, x)
    return _unary(x, UnaryKind.POPULATION_COUNT.value)


def clz(x: torch.Tensor) -> torch.Tensor:
    """jax.lax.clz: leading zero bits at x's width (the width for 0), x's dtype."""
    require_tensor("clz", "x", 1, x)
    return _unary(x, UnaryKind.CLZ.value)


def packbits(a: torch.Tensor, axis: int | None = None, bitorder: str = "big") -> torch.Tensor:
    """jnp.packbits: a's truth values packed 8 to a uint8 along `axis` (the flattened a for
    None), the last byte zero-padded; bitorder "big" puts the first element in the highest
    bit. Integer and bool inputs (jnp's rule)."""
    require_tensor("packbits", "a", 1, a)
    if bitorder not in ("big", "little"):
        raise InvalidProblem(f"packbits: bitorder must be 'big' or 'little', got {bitorder!r}")
    if a.is_floating_point() or a.is_complex():
        raise Unsupported(f"packbits: expected an integer or bool input, got {a.dtype}")
    if axis is None:
        a = (a if a.is_contiguous() else _cast(a, a.dtype)).view(-1)
        axis = 0
    elif a.dim() == 0:
        raise InvalidProblem(f"packbits: axis {axis} is out of range for a 0-d input")
    else:
        axis = normalize_dim(axis, a.dim(), "packbits")
    x = as_outer_length_inner(a, axis)
    if x is None:
        x = as_outer_length_inner(_cast(a, a.dtype), axis)
    shape = list(a.shape)
    shape[axis] = (shape[axis] + 7) // 8
    return packbits_op(x, bitorder == "little").view(shape)


def unpackbits(a: torch.Tensor, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> torch.Tensor:
    """jnp.unpackbits: each uint8 of `a` as 8 uint8 bits along `axis` (the flattened a for
    None), "big" giving the highest bit first; `count` keeps the first count bits (a negative
    count drops -count from the end; padding past the bits is not supported)."""
    require_tensor("unpackbits", "a", 1, a)
    if a.dtype != torch.uint8:
        raise Unsupported(f"unpackbits: expected a uint8 input, got {a.dtype}")
    if bitorder not in ("big", "little"):
        raise InvalidProblem(f"unpackbits: bitorder must be 'big' or 'little', got "
                             f"{bitorder!r}")
    if axis is None:
        a = (a if a.is_contiguous() else _cast(a, a.dtype)).view(-1)
        axis = 0
    elif a.dim() == 0:
        raise InvalidProblem(f"unpackbits: axis {axis} is out of range for a 0-d input")
    else:
        axis = normalize_dim(axis, a.dim(), "unpackbits")
    order = range(7, -1, -1) if bitorder == "big" else range(8)
    shifts = torch.tensor(list(order), dtype=torch.uint8, device=a.device)
    shifts = shifts.view([8] + [1] * (a.dim() - axis - 1))
    bits = _binary(a.unsqueeze(axis + 1), shifts, BinaryKind.BIT_AT.value, 1.0, None)
    shape = list(a.shape)
    shape[axis] *= 8
    out = bits.view(shape)
    if count is None:
        return out
    keep = count if count >= 0 else shape[axis] + count
    if not 0 <= keep <= shape[axis]:
        raise Unsupported(f"unpackbits: count {count} outside 0..{shape[axis]} (padding past "
                          "the bits is not supported)")
    return out.narrow(axis, 0, keep)


# -- clamp_min / clamp_max, piecewise -------------------------------------------------------------


def _clamp_one(name: str, input, bound, low: bool) -> torch.Tensor:
    require_tensor(name, "input", 1, input)
    if bound is None:
        raise ArgumentTypeError(f"{name}(): argument '{'min' if low else 'max'}' must be a "
                                "Tensor or a number, not None")
    if isinstance(bound, torch.Tensor):
        res = torch_result(input, bound)
        if res == torch.bool:  # torch's clamp_min / clamp_max of bool: maximum / minimum
            return _binary_call(BinaryKind.MAXIMUM if low else BinaryKind.MINIMUM, input, bound)
        if res.is_floating_point:
            other = torch.full((), math.inf if low else -math.inf, dtype=res,
                               device=input.device)
        else:
            info = torch.iinfo(res)
            other = torch.full((), info.max if low else info.min, dtype=res,
                               device=input.device)
        lo, hi = (bound, other) if low else (other, bound)
        input, lo, hi = zero_dims_to_result(input, lo, hi)
        # parameter 0: one bound, torch's clamp_min gradient rule (ops_nary.grad_ternary)
        return _ternary(input, lo, hi, TernaryKind.CLAMP.value, 0.0 if low else 1.0)
    if isinstance(bound, complex):
        raise Unsupported(f"{name}: complex bounds are not supported")
    if input.dtype == torch.bool:
        raise Unsupported(f"{name}: a bool input with a number bound is not supported")
    res = scalar_result(input.dtype, bound)
    if res != input.dtype:  # a float bound makes an integer input float (torch's promotion)
        input = _cast(input, res)
    if not input.is_floating_point():
        # an integer bound as a 0-d tensor of the input's dtype (exact, int64 included)
        value = torch.full((), bound, dtype=input.dtype, device=input.device)
        return _clamp_one(name, input, value, low)
    lo, hi = (bound, math.inf) if low else (-math.inf, bound)
    return _uparam(input, P.CLAMP.value, [float(lo), float(hi)])


def clamp_min(input: torch.Tensor, min) -> torch.Tensor:  # noqa: A002
    """torch.clamp_min: max(input, min) with a tensor or number bound (NaN propagates);
    gradient to input where input >= min, to a tensor min where input < min (torch's)."""
    return _clamp_one("clamp_min", input, min, True)


def clamp_max(input: torch.Tensor, max) -> torch.Tensor:  # noqa: A002
    """torch.clamp_max: min(input, max); gradient to input where input <= max, to a tensor max
    where input > max (torch's)."""
    return _clamp_one("clamp_max", input, max, False)


def clamp_min_(input: torch.Tensor, min) -> torch.Tensor:  # noqa: A002
    return _inplace_into("clamp_min_", input, clamp_min(input, min))


def clamp_max_(input: torch.Tensor, max) -> torch.Tensor:  # noqa: A002
    return _inplace_into("clamp_max_", input, clamp_max(input, max))


def piecewise(x: torch.Tensor, condlist, funclist) -> torch.Tensor:
    """jnp.piecewise with constant pieces: funclist holds numbers (or 0-d tensors), one per
    condition plus an optional default (else 0); where several conditions hold the last one
    wins (numpy's order). The result has x's dtype; x itself only shapes it, so its gradient
    is 0. Callables in funclist are not supported (they need tracing of arbitrary code)."""
    require_tensor("piecewise", "x", 1, x)
    if isinstance(condlist, torch.Tensor) and condlist.dtype == torch.bool and (
            condlist.dim() == x.dim()):
        condlist = [condlist]
    condlist = list(condlist)
    funclist = list(funclist)
    n = len(condlist)
    if len(funclist) not in (n, n + 1):
        raise InvalidProblem(f"piecewise: expected {n} or {n + 1} functions for {n} "
                             f"conditions, got {len(funclist)}")
    for f in funclist:
        if callable(f):
            raise Unsupported("piecewise: callables in funclist are not supported (constant "
                              "pieces only: numbers or 0-d tensors)")
    default = funclist[n] if len(funclist) == n + 1 else 0
    out = torch.full((), _piece(default, x), dtype=x.dtype, device=x.device).expand(x.shape)
    for cond, value in zip(condlist, funclist):
        require_tensor("piecewise", "condlist", 2, cond)
        if cond.dtype != torch.bool:
            raise InvalidProblem(f"piecewise: conditions must be bool, got {cond.dtype}")
        v = torch.full((), _piece(value, x), dtype=x.dtype, device=x.device)
        out = _ternary(cond, v, out, TernaryKind.WHERE.value, 1.0)
    if out.shape != x.shape:
        raise InvalidProblem(f"piecewise: conditions of shape {tuple(out.shape)} don't match x "
                             f"of shape {tuple(x.shape)}")
    return out if n else _cast(out, x.dtype)


def _piece(value, x):
    if isinstance(value, torch.Tensor):
        if value.dim():
            raise Unsupported("piecewise: pieces must be numbers or 0-d tensors")
        value = value.item()
    if isinstance(value, complex):
        raise Unsupported("piecewise: complex pieces are not supported")
    return value if x.is_floating_point() else int(value)


# -- set membership, whole-tensor comparisons -----------------------------------------------------


def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> torch.Tensor:
    """torch.isin: whether each element is in test_elements (either may be a number), compared
    in the promoted dtype; `invert` negates. Every element is compared with every test element
    (`isin.py`): meant for small test sets (up to ~100 elements); a large set wants the sort
    and search form, which this function does not switch to. `assume_unique` changes nothing
    here (no sorting to skip). Bool inputs raise, as torch."""
    if not isinstance(elements, torch.Tensor) and not isinstance(test_elements, torch.Tensor):
        raise ArgumentTypeError("isin(): expected elements or test_elements to be a Tensor")
    if not isinstance(elements, torch.Tensor):
        elements = torch.tensor(elements, dtype=scalar_result(test_elements.dtype, elements),
                                device=test_elements.device)
    if not isinstance(test_elements, torch.Tensor):
        test_elements = torch.tensor([test_elements], device=elements.device,
                                     dtype=scalar_result(elements.dtype, test_elements))
    for t in (elements, test_elements):
        if t.dtype == torch.bool:
            raise Unsupported("isin: bool inputs are not supported (torch's rule)")
    test = test_elements
    if test.dim() != 1:
        # one flat set: a dense tensor is viewed, another layout copied once
        test = (test if test.is_contiguous() else _cast(test, test.dtype)).view(-1)
    return isin_op(elements, test, bool(invert))


def allclose(input: torch.Tensor, other: torch.Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """torch.allclose: isclose over the broadcast shapes, all true (a Python bool; the final
    all-reduction is torch's, and reading it synchronizes)."""
    require_tensor("allclose", "input", 1, input)
    require_tensor("allclose", "other", 2, other)
    if input.dtype != other.dtype:
        raise InvalidProblem(f"allclose: expected input and other of one dtype, got "
                             f"{input.dtype} and {other.dtype}")
    close = _compare_call(CompareKind.ISCLOSE, input, other, rtol, atol, equal_nan)
    return bool(close.all())


def equal(input: torch.Tensor, other: torch.Tensor) -> bool:
    """torch.equal: same shape and every element equal after promotion (NaN is not equal); a
    shape mismatch is False, not an error."""
    require_tensor("equal", "input", 1, input)
    require_tensor("equal", "other", 2, other)
    if input.shape != other.shape:
        return False
    if input.numel() == 0:
        return True
    return bool(_compare_call(CompareKind.EQ, input, other).all())


# -- dtype bitcasts -------------------------------------------------------------------------------


def view_dtype(input: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Tensor.view(dtype): the same bytes read as `dtype`, a view (no kernel, shared storage);
    a different element size scales the last dim, which must have stride 1 (torch's rules and
    errors)."""
    require_tensor("view_dtype", "input", 1, input)
    return input.view(dtype)


def bitcast_convert_type(x: torch.Tensor, new_dtype: torch.dtype) -> torch.Tensor:
    """jax.lax.bitcast_convert_type as a view: same size keeps the shape; a narrower type adds
    a trailing dim of the size ratio; a wider one takes a trailing dim of the ratio away (it
    must equal the ratio, as jax; the view needs that dim at stride 1)."""
    require_tensor("bitcast_convert_type", "x", 1, x)
    src, dst = x.element_size(), torch.empty((), dtype=new_dtype).element_size()
    if src == dst:
        return x.view(new_dtype)
    if src > dst:
        return x.unsqueeze(-1).view(new_dtype)
    ratio = dst // src
    if x.dim() == 0 or x.shape[-1] != ratio:
        raise InvalidProblem(f"bitcast_convert_type: converting {x.dtype} to {new_dtype} needs "
                             f"a last dim of {ratio}, got shape {tuple(x.shape)}")
    if x.stride(-1) != 1:
        raise InvalidProblem(f"bitcast_convert_type: the last dim must have stride 1 to be "
                             f"read as {new_dtype}, got strides {x.stride()}")
    return x.view(new_dtype).squeeze(-1)
