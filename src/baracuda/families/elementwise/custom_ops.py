"""The torch custom ops of the elementwise plans, differentiable: one per plan (the kind is a
string argument), and the operand helpers `torch_api.py`'s torch-named functions share (Python
scalars into the scalar parameters or 0-d tensors torch would promote them as).
"""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import ArgumentTypeError, Unsupported
from ...core.vocab import ElementKind
from . import descriptors as D
from .plans import (
    BinaryBackwardPlan,
    BinaryCmpPlan,
    BinaryParamBackwardPlan,
    BinaryParamPlan,
    BinaryPlan,
    CastPlan,
    UnaryBackwardPlan,
    UnaryParamBackwardPlan,
    UnaryParamPlan,
    UnaryPlan,
)
from .plans_more import (
    GatedActivationBackwardPlan,
    GatedActivationPlan,
    TernaryBackwardPlan,
    TernaryPlan,
)
from .table import (
    BINARY,
    UNARY,
    binary_types,
    ternary_types,
    unary_out_element,
    unary_param_out_element,
)


def _none_if_empty(t, needed):
    return t if needed else None


# -- unary ----------------------------------------------------------------------------------------


def _define_x_op(name, fw, fake, bw, bw_fake):
    """A forward op whose backward reads only x (its first input) and the forward's trailing
    options (kind, params, dim), and the backward op it calls."""
    backward = define_op(f"{name}_backward", bw, bw_fake)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.options = tuple(inputs[1:])

    def grad(ctx, dy):
        (x,) = ctx.saved_tensors
        return (backward(dy, x, *ctx.options), *(None for _ in ctx.options))

    return define_op(name, fw, fake, backward=grad, setup_context=setup), backward


def _unary_fw(x: torch.Tensor, kind: str) -> torch.Tensor:
    k = D.UnaryKind(kind)
    # empty_like keeps a dense input's layout (a transposed view stays one flat pass), as torch
    y = torch.empty_like(x, dtype=unary_out_element("unary", k, _el(x)).torch_dtype)
    run_plan(UnaryPlan, D.UnaryDescriptor.cached(k, tuple(x.shape), x.dtype), D.UnaryArgs(x=x, y=y))
    return y


def _unary_fake(x: torch.Tensor, kind: str) -> torch.Tensor:
    out = unary_out_element("unary", D.UnaryKind(kind), _el(x)).torch_dtype
    return torch.empty_like(x, dtype=out)


def _unary_bw(dy: torch.Tensor, x: torch.Tensor, kind: str) -> torch.Tensor:
    dx = torch.empty_like(x)
    desc = D.UnaryBackwardDescriptor.cached(D.UnaryKind(kind), tuple(x.shape), x.dtype)
    run_plan(UnaryBackwardPlan, desc, D.UnaryBackwardArgs(dy=dy, x=x, dx=dx))
    return dx


def _unary_bw_fake(dy: torch.Tensor, x: torch.Tensor, kind: str) -> torch.Tensor:
    return torch.empty_like(x)


_unary, _unary_backward = _define_x_op("ew_unary", _unary_fw, _unary_fake, _unary_bw,
                                        _unary_bw_fake)


def _el(t: torch.Tensor) -> ElementKind:
    return ElementKind.of(t.dtype)


# -- unary with parameters ------------------------------------------------------------------------


def _uparam_fw(x: torch.Tensor, kind: str, params: list[float]) -> torch.Tensor:
    k, ps = D.UnaryParamKind(kind), tuple(float(p) for p in params)
    out = unary_param_out_element("unary", k, _el(x), ps).torch_dtype
    y = torch.empty_like(x, dtype=out)
    run_plan(UnaryParamPlan, D.UnaryParamDescriptor.cached(k, tuple(x.shape), x.dtype, ps),
             D.UnaryArgs(x=x, y=y))
    return y


def _uparam_fake(x: torch.Tensor, kind: str, params: list[float]) -> torch.Tensor:
    k, ps = D.UnaryParamKind(kind), tuple(float(p) for p in params)
    out = unary_param_out_element("unary", k, _el(x), ps).torch_dtype
    return torch.empty_like(x, dtype=out)


def _uparam_bw(dy: torch.Tensor, x: torch.Tensor, kind: str, params: list[float]) -> torch.Tensor:
    dx = torch.empty_like(x)
    desc = D.UnaryParamBackwardDescriptor.cached(D.UnaryParamKind(kind), tuple(x.shape), x.dtype,
                                        tuple(float(p) for p in params))
    run_plan(UnaryParamBackwardPlan, desc, D.UnaryBackwardArgs(dy=dy, x=x, dx=dx))
    return dx


def _uparam_bw_fake(dy, x, kind: str, params: list[float]) -> torch.Tensor:
    return torch.empty_like(x)


_uparam, _uparam_backward = _define_x_op("ew_unary_param", _uparam_fw, _uparam_fake,
                                         _uparam_bw, _uparam_bw_fake)


# -- binary ---------------------------------------------------------------------------------------


def _bdesc(a, b, kind, alpha, out_dtype):
    desc = D.BinaryDescriptor.cached(D.BinaryKind(kind), tuple(a.shape), tuple(b.shape), a.dtype,
                                   b.dtype, alpha=float(alpha), out_element=out_dtype)
    return desc.checked("BinaryPlan")  # typed errors before the output is shaped


def _binary_fw(a: torch.Tensor, b: torch.Tensor, kind: str, alpha: float,
               out_dtype: torch.dtype | None) -> torch.Tensor:
    desc = _bdesc(a, b, kind, alpha, out_dtype)
    y = torch.empty(desc.shape, dtype=desc.element.torch_dtype, device=a.device)
    run_plan(BinaryPlan, desc, D.BinaryArgs(a=a, b=b, y=y))
    return y


def _binary_fake(a, b, kind: str, alpha: float, out_dtype: torch.dtype | None) -> torch.Tensor:
    # shapes may be symbolic here: the dtype rule needs elements only
    desc = D.BinaryDescriptor(D.BinaryKind(kind), (), (), a.dtype, b.dtype, alpha=float(alpha),
                            out_element=out_dtype)
    out = binary_types("BinaryPlan", desc)[0]
    return a.new_empty(torch.broadcast_shapes(a.shape, b.shape), dtype=out.torch_dtype)


def _binary_bw(dy: torch.Tensor, a: torch.Tensor, b: torch.Tensor, kind: str, alpha: float,
               need_a: bool, need_b: bool) -> tuple[torch.Tensor, torch.Tensor]:
    desc = D.BinaryBackwardDescriptor.cached(
        D.BinaryKind(kind), tuple(a.shape), tuple(b.shape), a.dtype, b.dtype, alpha=float(alpha),
        out_element=dy.dtype, needs=(need_a, need_b))
    da = torch.empty(a.shape if need_a else (0,), dtype=a.dtype, device=a.device)
    db = torch.empty(b.shape if need_b else (0,), dtype=b.dtype, device=b.device)
    run_plan(BinaryBackwardPlan, desc, D.BinaryBackwardArgs(dy=dy, a=a, b=b,
                                                          da=_none_if_empty(da, need_a),
                                                          db=_none_if_empty(db, need_b)))
    return da, db


def _binary_bw_fake(dy, a, b, kind: str, alpha: float, need_a: bool, need_b: bool):
    return (torch.empty(a.shape if need_a else (0,), dtype=a.dtype, device=a.device),
            torch.empty(b.shape if need_b else (0,), dtype=b.dtype, device=b.device))


_binary_backward = define_op("ew_binary_backward", _binary_bw, _binary_bw_fake)


def _binary_setup(ctx, inputs, output):
    a, b, kind, alpha, _ = inputs
    ctx.save_for_backward(a, b)
    ctx.kind, ctx.alpha = kind, alpha
    ctx.out_dtype = output.dtype


def _binary_grad(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    if not (need_a or need_b):
        return None, None, None, None, None
    row = BINARY[D.BinaryKind(ctx.kind)]
    if not row.diff:
        raise RuntimeError(f"the derivative for '{ctx.kind}' is not implemented.")
    for t, quirk in zip((a, b), row.bool_in_grad):
        if quirk and t.dtype == torch.bool:
            raise RuntimeError(f"{ctx.kind} backward: torch's derivative formula subtracts or "
                               "negates the bool operand, which torch does not support "
                               "(expected a numeric tensor, got bool)")
    # an integer or bool operand takes no gradient, but the other's derivative reads its
    # values: the backward kernels take floating elements, so it is read as the gradient's
    # a derivative that is the incoming gradient itself (table: grad_passes) hands it on where
    # the operand has its shape and dtype (torch's formula: no allocation, no launch)
    pass_a = row.grad_passes[0] and need_a and a.shape == grad.shape and a.dtype == grad.dtype
    pass_b = (row.grad_passes[1] and need_b and ctx.alpha == 1.0 and b.shape == grad.shape
              and b.dtype == grad.dtype)
    da = db = None
    if (need_a and not pass_a) or (need_b and not pass_b):
        a = a if a.is_floating_point() else _cast(a, grad.dtype)
        b = b if b.is_floating_point() else _cast(b, grad.dtype)
        da, db = _binary_backward(grad, a, b, ctx.kind, ctx.alpha, need_a and not pass_a,
                                  need_b and not pass_b)
    da = grad if pass_a else da
    db = grad if pass_b else db
    return (da if need_a else None), (db if need_b else None), None, None, None


_binary = define_op("ew_binary", _binary_fw, _binary_fake, backward=_binary_grad,
                    setup_context=_binary_setup)


def _scalar_tensor(value, like: torch.Tensor, result: torch.dtype) -> torch.Tensor:
    """A Python number as the 0-d operand torch promotes it as; float results keep the scalar
    in the compute type (f32 for halves), as torch's kernels do."""
    dt = result
    if result in (torch.float16, torch.bfloat16):
        dt = torch.float32
    return torch.tensor(value, dtype=dt, device=like.device)


def scalar_result(dtype: torch.dtype, value) -> torch.dtype:
    """torch's result type of (tensor of `dtype`, Python number) without torch.result_type
    (which torch.compile can't trace)."""
    if isinstance(value, bool):
        return dtype
    if isinstance(value, int):
        return torch.int64 if dtype == torch.bool else dtype
    if isinstance(value, float):
        return dtype if dtype.is_floating_point else torch.get_default_dtype()
    if isinstance(value, complex):
        raise Unsupported(f"scalar operand: complex numbers are not supported (baracuda has no "
                          f"complex dtypes), got {value!r}")
    raise ArgumentTypeError("scalar operand: expected a Tensor or a Python number, got "
                            f"{type(value).__name__}")


def _category(dtype: torch.dtype) -> int:
    return 0 if dtype == torch.bool else (2 if dtype.is_floating_point else 1)


def torch_result(*tensors: torch.Tensor) -> torch.dtype:
    """torch.result_type of tensors, traceable: 0-d tensors take part only when of a higher
    category (bool < integer < floating) than every dimensioned one."""
    def promoted(ts):
        out = ts[0].dtype
        for t in ts[1:]:
            out = torch.promote_types(out, t.dtype)
        return out

    dims = [t for t in tensors if t.dim() > 0]
    zeros = [t for t in tensors if t.dim() == 0]
    if not dims or not zeros:
        return promoted(list(tensors))
    d, z = promoted(dims), promoted(zeros)
    return z if _category(z) > _category(d) else d


def _cpu_scalar(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dim() == 0 and t.device.type == "cpu"


def zero_dims_to_device(*tensors):
    """torch takes a 0-d CPU tensor beside tensors of one other device as a scalar: it moves
    there (a host-to-device copy of one element; its category rule is zero_dims_to_result's)."""
    devices = {t.device for t in tensors if isinstance(t, torch.Tensor) and not _cpu_scalar(t)}
    if len(devices) != 1 or next(iter(devices)).type == "cpu":
        return tensors
    device = devices.pop()
    return tuple(t.to(device) if _cpu_scalar(t) else t for t in tensors)


def zero_dims_to_result(*tensors):
    """The operands with each 0-d tensor cast to torch's result dtype: a 0-d tensor of the
    same category as the dimensioned ones does not widen the result (torch's rule), while the
    plans promote all operands alike. A bool one never widens it and stays bool (torch's
    derivative formulas see it as bool: table.Row.bool_in_grad)."""
    tensors = zero_dims_to_device(*tensors)
    ts = [t for t in tensors if isinstance(t, torch.Tensor)]
    if all(t.dim() == 0 for t in ts) or all(t.dim() > 0 for t in ts):
        return tensors
    want = torch_result(*ts)
    return tuple(_cast(t, want) if isinstance(t, torch.Tensor) and t.dim() == 0
                 and t.dtype not in (want, torch.bool) else t for t in tensors)


class _FailInBackward(torch.autograd.Function):
    """Identity whose backward raises: where torch's derivative formula rejects an operand
    (a bool one it subtracts), the forward succeeds and the backward raises, as torch's."""

    @staticmethod
    def forward(ctx, x, message: str, error: type[Exception]):
        ctx.message, ctx.error = message, error
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        raise ctx.error(ctx.message)


def fail_in_backward(t: torch.Tensor, message: str,
                     error: type[Exception] = RuntimeError) -> torch.Tensor:
    """t, whose gradient raises error(message) when a backward reaches it."""
    return _FailInBackward.apply(t, message, error) if t.requires_grad else t


def require_tensor(name: str, arg: str, position: int, value) -> None:
    """torch's TypeError (as ArgumentTypeError) for a non-tensor where its signature takes only
    a Tensor."""
    if not isinstance(value, torch.Tensor):
        raise ArgumentTypeError(f"{name}(): argument '{arg}' (position {position}) must be "
                                f"Tensor, not {type(value).__name__}")


def to_default_float(t: torch.Tensor) -> torch.Tensor:
    """An integer or bool operand of a kind that promotes it (table rule "promote"): torch's
    result is the default float dtype, which the plans know as f32 only."""
    dt = torch.get_default_dtype()
    return t if t.is_floating_point() or dt == torch.float32 else _cast(t, dt)


def unary_call(kind: D.UnaryKind, x: torch.Tensor) -> torch.Tensor:
    """A unary kind on x, an integer or bool x of a promoting kind in the default float."""
    if UNARY[kind].ints == "promote":
        x = to_default_float(x)
    return _unary(x, kind.value)


def _binary_call(kind: D.BinaryKind, input, other, alpha=1) -> torch.Tensor:
    name, numbers, promote = _BINARY_RULES[kind]
    if (isinstance(input, torch.Tensor) and isinstance(other, torch.Tensor) and input.dim()
            and other.dim()):
        # the common case first (host time): no number operand and no 0-d tensor rule
        if promote and not other.is_floating_point():
            input = to_default_float(input)
        return _binary(input, other, name, float(alpha), None)
    if numbers != "both":
        require_tensor(name, "input", 1, input)
        if numbers == "none":
            require_tensor(name, "other", 2, other)
    if not isinstance(input, torch.Tensor) and not isinstance(other, torch.Tensor):
        host = _TWO_NUMBERS.get(kind)
        if host is not None:
            # torch takes two Python numbers here and answers a 0-d CPU tensor: no device is
            # involved, so torch computes it on the host
            return host(input, other, alpha)
        raise ArgumentTypeError(f"{name}(): expected at least one tensor argument, got "
                                f"{type(input).__name__} and {type(other).__name__}")
    like = input if isinstance(input, torch.Tensor) else other
    out_dtype = None
    if isinstance(input, torch.Tensor) and isinstance(other, torch.Tensor):
        input, other = zero_dims_to_result(input, other)
    else:
        result = scalar_result(like.dtype, other if like is input else input)
        if not isinstance(input, torch.Tensor):
            input = _scalar_tensor(input, like, result)
        if not isinstance(other, torch.Tensor):
            other = _scalar_tensor(other, like, result)
        if result in (torch.float16, torch.bfloat16):
            out_dtype = result  # the scalar was kept in f32; the result stays a half
    if promote and not other.is_floating_point():
        input = to_default_float(input)
    return _binary(input, other, name, float(alpha), out_dtype)


#: the kinds torch computes for two Python numbers (its OpInfo `supports_two_python_scalars`)
_TWO_NUMBERS = {
    D.BinaryKind.ADD: lambda a, b, alpha: torch.add(a, b, alpha=alpha),
    D.BinaryKind.SUB: lambda a, b, alpha: torch.sub(a, b, alpha=alpha),
    D.BinaryKind.MUL: lambda a, b, alpha: torch.mul(a, b),
    D.BinaryKind.DIV: lambda a, b, alpha: torch.div(a, b),
    D.BinaryKind.DIV_TRUNC: lambda a, b, alpha: torch.div(a, b, rounding_mode="trunc"),
    D.BinaryKind.DIV_FLOOR: lambda a, b, alpha: torch.div(a, b, rounding_mode="floor"),
}
#: per binary kind: (op name, which operands may be numbers, promotes integers to float)
_BINARY_RULES = {k: (k.value, row.numbers, row.ints == "promote") for k, row in BINARY.items()}


# -- lerp with a scalar weight --------------------------------------------------------------------


def _lerp_fw(a: torch.Tensor, b: torch.Tensor, weight: float) -> torch.Tensor:
    y = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    desc = D.BinaryParamDescriptor.cached(D.BinaryKind.LERP, tuple(a.shape), a.dtype,
                                          float(weight))
    run_plan(BinaryParamPlan, desc, D.BinaryArgs(a=a, b=b, y=y))
    return y


def _lerp_fake(a, b, weight: float) -> torch.Tensor:
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


def _lerp_bw(dy: torch.Tensor, weight: float) -> tuple[torch.Tensor, torch.Tensor]:
    da, db = torch.empty_like(dy), torch.empty_like(dy)
    run_plan(BinaryParamBackwardPlan, D.BinaryParamBackwardDescriptor.cached(
        D.BinaryKind.LERP, tuple(dy.shape), dy.dtype, float(weight)),
        D.BinaryParamBackwardArgs(dy=dy, da=da, db=db))
    return da, db


def _lerp_bw_fake(dy, weight: float):
    return torch.empty_like(dy), torch.empty_like(dy)


_lerp_backward = define_op("ew_lerp_scalar_backward", _lerp_bw, _lerp_bw_fake)


def _lerp_setup(ctx, inputs, output):
    ctx.weight = inputs[2]


def _lerp_grad(ctx, grad):
    da, db = _lerp_backward(grad, ctx.weight)
    return da, db, None


_lerp_scalar = define_op("ew_lerp_scalar", _lerp_fw, _lerp_fake, backward=_lerp_grad,
                         setup_context=_lerp_setup)


# -- ternary --------------------------------------------------------------------------------------


def _tdesc(a, b, c, kind, value, cls=D.TernaryDescriptor, **kw):
    desc = cls.cached(D.TernaryKind(kind), tuple(a.shape), tuple(b.shape), tuple(c.shape),
                      a.dtype, b.dtype, c.dtype, value=float(value), **kw)
    desc = desc.checked(cls.__name__.replace("Descriptor", "Plan"))
    return desc


def _ternary_fw(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, kind: str,
                value: float) -> torch.Tensor:
    desc = _tdesc(a, b, c, kind, value)
    y = torch.empty(desc.shape, dtype=desc.element.torch_dtype, device=b.device)
    run_plan(TernaryPlan, desc, D.TernaryArgs(a=a, b=b, c=c, y=y))
    return y


def _ternary_fake(a, b, c, kind: str, value: float) -> torch.Tensor:
    desc = D.TernaryDescriptor(D.TernaryKind(kind), (), (), (), a.dtype, b.dtype, c.dtype,
                             value=float(value))
    out = ternary_types("TernaryPlan", desc)[0]
    return b.new_empty(torch.broadcast_shapes(a.shape, b.shape, c.shape), dtype=out.torch_dtype)


def _ternary_bw(dy: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, kind: str,
                value: float, need_a: bool, need_b: bool, need_c: bool) -> list[torch.Tensor]:
    needs = (need_a, need_b, need_c)
    desc = _tdesc(a, b, c, kind, value, D.TernaryBackwardDescriptor, needs=needs)
    grads = [torch.empty(t.shape if n else (0,), dtype=t.dtype, device=t.device)
             for t, n in zip((a, b, c), needs)]
    run_plan(TernaryBackwardPlan, desc, D.TernaryBackwardArgs(
        dy, a, b, c, *[_none_if_empty(g, n) for g, n in zip(grads, needs)]))
    return grads


def _ternary_bw_fake(dy, a, b, c, kind: str, value: float, need_a: bool, need_b: bool,
                     need_c: bool) -> list[torch.Tensor]:
    return [torch.empty(t.shape if n else (0,), dtype=t.dtype, device=t.device)
            for t, n in zip((a, b, c), (need_a, need_b, need_c))]


_ternary_backward = define_op("ew_ternary_backward", _ternary_bw, _ternary_bw_fake)


def _ternary_setup(ctx, inputs, output):
    a, b, c, kind, value = inputs
    ctx.save_for_backward(a, b, c)
    ctx.kind, ctx.value = kind, value


def _ternary_grad(ctx, grad):
    a, b, c = ctx.saved_tensors
    needs = list(ctx.needs_input_grad[:3])
    if ctx.kind == D.TernaryKind.WHERE.value:
        needs[0] = False
    if not any(needs):
        return None, None, None, None, None
    g = _ternary_backward(grad, a, b, c, ctx.kind, ctx.value, *needs)
    return (*[gi if n else None for gi, n in zip(g, needs)], None, None)


_ternary = define_op("ew_ternary", _ternary_fw, _ternary_fake, backward=_ternary_grad,
                     setup_context=_ternary_setup)


# -- comparison and cast --------------------------------------------------------------------------


def _compare_fw(a: torch.Tensor, b: torch.Tensor, kind: str, rtol: float, atol: float,
                equal_nan: bool) -> torch.Tensor:
    desc = D.CompareDescriptor.cached(D.CompareKind(kind), tuple(a.shape), tuple(b.shape), a.dtype,
                                    b.dtype, rtol=rtol, atol=atol, equal_nan=equal_nan)
    desc = desc.checked("BinaryCmpPlan")
    y = torch.empty(desc.shape, dtype=torch.bool, device=a.device)
    run_plan(BinaryCmpPlan, desc, D.BinaryArgs(a=a, b=b, y=y))
    return y


def _compare_fake(a, b, kind: str, rtol: float, atol: float, equal_nan: bool) -> torch.Tensor:
    return torch.empty(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool,
                       device=a.device)


_compare = define_op("ew_compare", _compare_fw, _compare_fake)


def _compare_call(kind: D.CompareKind, input, other, rtol=1e-5, atol=1e-8, equal_nan=False):
    require_tensor(kind.value, "input", 1, input)
    if not isinstance(other, torch.Tensor):
        other = torch.tensor(other, dtype=scalar_result(input.dtype, other), device=input.device)
    elif not (input.dim() and other.dim()):
        input, other = zero_dims_to_result(input, other)  # a 0-d CPU operand; torch's promotion
    return _compare(input, other, kind.value, float(rtol), float(atol), bool(equal_nan))


def _cast_fw(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    y = torch.empty(x.shape, dtype=dtype, device=x.device)
    run_plan(CastPlan, D.CastDescriptor.cached(tuple(x.shape), x.dtype, dtype),
             D.UnaryArgs(x=x, y=y))
    return y


def _cast_fake(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(x.shape, dtype=dtype, device=x.device)


def _cast_setup(ctx, inputs, output):
    ctx.src = inputs[0].dtype


def _cast_grad(ctx, grad):
    return _cast(grad, ctx.src), None


_cast = define_op("ew_cast", _cast_fw, _cast_fake, backward=_cast_grad, setup_context=_cast_setup)


# -- gated ----------------------------------------------------------------------------------------


def _gated_fw(x: torch.Tensor, kind: str, dim: int) -> torch.Tensor:
    desc = D.GatedDescriptor.cached(D.GatedKind(kind), tuple(x.shape), dim, x.dtype)
    y = torch.empty(desc.out_shape, dtype=x.dtype, device=x.device)
    run_plan(GatedActivationPlan, desc, D.GatedArgs(x=x, y=y))
    return y


def _gated_fake(x: torch.Tensor, kind: str, dim: int) -> torch.Tensor:
    shape = list(x.shape)
    shape[dim] //= 2
    return torch.empty(shape, dtype=x.dtype, device=x.device)


def _gated_bw(dy: torch.Tensor, x: torch.Tensor, kind: str, dim: int) -> torch.Tensor:
    dx = torch.empty_like(x)
    run_plan(GatedActivationBackwardPlan, D.GatedBackwardDescriptor.cached(
        D.GatedKind(kind), tuple(x.shape), dim, x.dtype), D.GatedBackwardArgs(dy=dy, x=x, dx=dx))
    return dx


def _gated_bw_fake(dy, x, kind: str, dim: int) -> torch.Tensor:
    return torch.empty_like(x)


_gated, _gated_backward = _define_x_op("ew_gated", _gated_fw, _gated_fake, _gated_bw,
                                       _gated_bw_fake)
