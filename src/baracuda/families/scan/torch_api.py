"""torch.cumsum / cumprod / cummax / cummin / logcumsumexp / diff / cumulative_trapezoid on
ScanPlan, differentiable through ScanBackwardPlan; their out= as torch's (one helper,
`_write_out`); torch.masked.cumsum / cumprod (masked-out elements as the identity, then the
scan); torch.gradient lives in torch_gradient.py (the stencil plans) and is collected here."""

from __future__ import annotations

import warnings

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from ...core.vocab import ElementKind
from .descriptors import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanDescriptor,
    ScanKind,
    scan_output_element,
    scan_output_shape,
)
from .plans import ScanBackwardPlan, ScanPlan
from .torch_gradient import gradient

# a dotted name is torch's namespaced function, defined here as masked_cumsum (baracuda.torch)
__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff", "cumulative_trapezoid",
           "gradient", "masked.cumsum", "masked.cumprod"]  # noqa: F822

_SAVES_VALUES = (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)


def _as_lines(t: torch.Tensor) -> torch.Tensor:
    """A 0-d tensor scans as one line of one element."""
    return t.reshape(1) if t.dim() == 0 else t


def _out_dtype(kind: ScanKind, dtype: torch.dtype) -> torch.dtype:
    return scan_output_element(kind, ElementKind.of(dtype)).torch_dtype


# -- cumsum / cumprod / logcumsumexp ----------------------------------------------------------
def _scan_impl(x: torch.Tensor, dim: int, kind: str, reverse: bool) -> torch.Tensor:
    k = ScanKind(kind)
    y = torch.empty_like(x, dtype=_out_dtype(k, x.dtype))
    xl, yl = _as_lines(x), _as_lines(y)
    desc = ScanDescriptor.cached(k, tuple(xl.shape), dim, x.dtype, reverse)
    run_plan(ScanPlan, desc, ScanArgs(x=xl, y=yl))
    return y


def _scan_fake(x: torch.Tensor, dim: int, kind: str, reverse: bool) -> torch.Tensor:
    return torch.empty_like(x, dtype=_out_dtype(ScanKind(kind), x.dtype))


def _backward_impl(dy: torch.Tensor, x: torch.Tensor, y: torch.Tensor, dim: int, kind: str,
                   reverse: bool) -> torch.Tensor:
    """dx from dy (x and y are read by cumprod and logcumsumexp only)."""
    k = ScanKind(kind)
    dx = torch.empty_like(x)
    saves = k in _SAVES_VALUES
    desc = ScanBackwardDescriptor.cached(k, tuple(_as_lines(x).shape), dim, x.dtype, reverse)
    args = ScanBackwardArgs(dy=_as_lines(dy), dx=_as_lines(dx),
                            x=_as_lines(x) if saves else None, y=_as_lines(y) if saves else None)
    run_plan(ScanBackwardPlan, desc, args)
    return dx


def _backward_fake(dy, x, y, dim: int, kind: str, reverse: bool) -> torch.Tensor:
    return torch.empty_like(x)


_scan_backward = define_op("scan_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output):
    x, dim, kind, reverse = inputs
    ctx.dim, ctx.kind, ctx.reverse = dim, kind, reverse
    if ScanKind(kind) in _SAVES_VALUES:
        ctx.save_for_backward(x, output)  # cumsum's gradient needs neither


def _autograd(ctx, grad):
    saved = ctx.saved_tensors
    x, y = saved if saved else (grad, grad)
    return _scan_backward(grad, x, y, ctx.dim, ctx.kind, ctx.reverse), None, None, None


_scan = define_op("scan", _scan_impl, _scan_fake, backward=_autograd, setup_context=_setup)


# -- cummax / cummin ----------------------------------------------------------------------------
def _indexed_impl(x: torch.Tensor, dim: int, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    k = ScanKind(kind)
    y = torch.empty_like(x)
    idx = torch.empty_like(x, dtype=torch.int64)
    desc = ScanDescriptor.cached(k, tuple(_as_lines(x).shape), dim, x.dtype)
    run_plan(ScanPlan, desc, ScanArgs(x=_as_lines(x), y=_as_lines(y), indices=_as_lines(idx)))
    return y, idx


def _indexed_fake(x: torch.Tensor, dim: int, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(x, dtype=torch.int64)


def _indexed_backward_impl(dy: torch.Tensor, indices: torch.Tensor, dim: int,
                           kind: str) -> torch.Tensor:
    """dx_j = the sum of dy_k over the k whose index is j (indices as the forward gave them:
    each position's index is itself or an earlier index)."""
    dx = torch.empty_like(dy)
    desc = ScanBackwardDescriptor.cached(ScanKind(kind), tuple(_as_lines(dy).shape), dim,
                                         dy.dtype)
    run_plan(ScanBackwardPlan, desc, ScanBackwardArgs(dy=_as_lines(dy), dx=_as_lines(dx),
                                                      indices=_as_lines(indices)))
    return dx


def _indexed_backward_fake(dy, indices, dim: int, kind: str) -> torch.Tensor:
    return torch.empty_like(dy)


_indexed_backward = define_op("scan_indexed_backward", _indexed_backward_impl,
                              _indexed_backward_fake)


def _indexed_setup(ctx, inputs, output):
    _, dim, kind = inputs
    ctx.dim, ctx.kind = dim, kind
    ctx.save_for_backward(output[1])
    ctx.mark_non_differentiable(output[1])


def _indexed_autograd(ctx, grad_values, grad_indices):
    (idx,) = ctx.saved_tensors
    if grad_values is None:
        return None, None, None
    return _indexed_backward(grad_values, idx, ctx.dim, ctx.kind), None, None


_scan_indexed = define_op("scan_indexed", _indexed_impl, _indexed_fake,
                          backward=_indexed_autograd, setup_context=_indexed_setup)


# -- diff ---------------------------------------------------------------------------------------
def _diff_impl(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The first-order forward difference along dim (one shorter there)."""
    desc = ScanDescriptor.cached(ScanKind.DIFF, tuple(x.shape), dim, x.dtype)
    y = x.new_empty(desc.output_shape)
    run_plan(ScanPlan, desc, ScanArgs(x=x, y=y))
    return y


def _diff_fake(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x.new_empty(scan_output_shape(ScanKind.DIFF, tuple(x.shape), dim))


def _diff_backward_impl(dy: torch.Tensor, dim: int) -> torch.Tensor:
    shape = list(dy.shape)
    shape[dim] += 1
    desc = ScanBackwardDescriptor.cached(ScanKind.DIFF, tuple(shape), dim, dy.dtype)
    dx = dy.new_empty(shape)
    run_plan(ScanBackwardPlan, desc, ScanBackwardArgs(dy=dy, dx=dx))
    return dx


def _diff_backward_fake(dy: torch.Tensor, dim: int) -> torch.Tensor:
    shape = list(dy.shape)
    shape[dim] += 1
    return dy.new_empty(shape)


_diff_backward = define_op("scan_diff_backward", _diff_backward_impl, _diff_backward_fake)


def _diff_setup(ctx, inputs, output):
    ctx.dim = inputs[1]


def _diff_autograd(ctx, grad):
    return _diff_backward(grad, ctx.dim), None


_diff = define_op("scan_diff", _diff_impl, _diff_fake, backward=_diff_autograd,
                  setup_context=_diff_setup)


# -- cumulative_trapezoid --------------------------------------------------------------------------
_TRAPEZOID = ScanKind.CUMULATIVE_TRAPEZOID


def _trapezoid_impl(y: torch.Tensor, spacing: torch.Tensor, dim: int) -> torch.Tensor:
    """spacing: one per neighbour pair, of the result's shape (any strides, 0 included)."""
    desc = ScanDescriptor.cached(_TRAPEZOID, tuple(y.shape), dim, y.dtype)
    out = y.new_empty(desc.output_shape)
    run_plan(ScanPlan, desc, ScanArgs(x=y, y=out, spacing=spacing))
    return out


def _trapezoid_fake(y: torch.Tensor, spacing: torch.Tensor, dim: int) -> torch.Tensor:
    return y.new_empty(scan_output_shape(_TRAPEZOID, tuple(y.shape), dim))


def _trapezoid_backward_impl(dy: torch.Tensor, y: torch.Tensor, spacing: torch.Tensor, dim: int,
                             spacing_grad: bool) -> torch.Tensor:
    desc = ScanBackwardDescriptor.cached(_TRAPEZOID, tuple(y.shape), dim, y.dtype, False,
                                         spacing_grad)
    dx = y.new_empty(desc.grad_shape)
    run_plan(ScanBackwardPlan, desc, ScanBackwardArgs(dy=dy, dx=dx, spacing=spacing,
                                                      x=y if spacing_grad else None))
    return dx


def _trapezoid_backward_fake(dy, y, spacing, dim: int, spacing_grad: bool) -> torch.Tensor:
    return y.new_empty(tuple(spacing.shape) if spacing_grad else tuple(y.shape))


_trapezoid_backward = define_op("scan_trapezoid_backward", _trapezoid_backward_impl,
                                _trapezoid_backward_fake)


def _trapezoid_setup(ctx, inputs, output):
    y, spacing, dim = inputs
    ctx.dim = dim
    ctx.save_for_backward(y, spacing)


def _trapezoid_autograd(ctx, grad):
    y, spacing = ctx.saved_tensors
    dy = dw = None
    if ctx.needs_input_grad[0]:
        dy = _trapezoid_backward(grad, y, spacing, ctx.dim, False)
    if ctx.needs_input_grad[1]:
        dw = _trapezoid_backward(grad, y, spacing, ctx.dim, True)
    return dy, dw, None


_trapezoid = define_op("scan_trapezoid", _trapezoid_impl, _trapezoid_fake,
                       backward=_trapezoid_autograd, setup_context=_trapezoid_setup)


# -- out= -----------------------------------------------------------------------------------------
#: torch's ScalarType names, as its out= messages spell them
_SCALAR_NAMES = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
                 torch.bfloat16: "BFloat16", torch.int64: "Long", torch.int32: "Int",
                 torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
                 torch.bool: "Bool"}


def _out_allowed(who: str, out, *inputs) -> None:
    """torch's rule: out= takes no part in autograd (refused while grad mode is on and an
    argument requires grad)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for t in outs:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{who}(): argument 'out' must be a Tensor (a tuple of two for "
                            f"cummax / cummin), got {type(t).__name__}")
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                       for t in (*inputs, *outs)):
        raise RuntimeError(f"{who}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def _same_dtype(out: torch.Tensor, want: torch.dtype) -> None:
    if out.dtype != want:
        raise RuntimeError(f"expected scalar_type {_SCALAR_NAMES.get(want, want)} but found "
                           f"{_SCALAR_NAMES.get(out.dtype, out.dtype)}")


def _write_out(result: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """result copied into out as torch's out= does: out resized to the result's shape (with
    torch's deprecation warning when it held elements), on the same device; the result's dtype
    cast to out's where torch's type promotion allows it."""
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    # torch.can_cast's rule (floats do not cast to integers, nothing but bool to bool), on
    # the dtypes' attributes: torch.compile traces those, not torch.can_cast
    src, dst = result.dtype, out.dtype
    if (src.is_floating_point and not dst.is_floating_point) or \
            (dst == torch.bool and src != torch.bool):
        raise RuntimeError(f"result type {_SCALAR_NAMES.get(result.dtype, result.dtype)} can't "
                           "be cast to the desired output type "
                           f"{_SCALAR_NAMES.get(out.dtype, out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(result.shape)
    return out.copy_(result)


# -- the torch functions ------------------------------------------------------------------------
def _accumulate(input: torch.Tensor, dim: int, dtype: torch.dtype | None, kind: ScanKind,
                who: str) -> torch.Tensor:
    d = normalize_dim(dim, input.dim(), who)
    if dtype is not None and input.dtype != dtype:
        input = input.to(dtype)
    out = _scan(input, d, kind.value, False)
    if dtype is not None and out.dtype != dtype:  # an integer dtype= narrows the int64 result
        out = out.to(dtype)
    return out


def _accumulate_out(input, dim, dtype, kind: ScanKind, who: str, out):
    """cumsum / cumprod: out's dtype is the accumulation's when dtype is not given (torch's
    `input.to(out.dtype)` semantics), and must equal dtype when it is."""
    if out is None:
        return _accumulate(input, dim, dtype, kind, who)
    _out_allowed(who, out, input)
    if dtype is not None and out.dtype != dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {dtype}, but got {out.dtype} "
                           "instead")
    return _write_out(_accumulate(input, dim, out.dtype, kind, who), out)


def cumsum(input: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cumsum on ScanPlan; differentiable through ScanBackwardPlan (not with out=)."""
    return _accumulate_out(input, dim, dtype, ScanKind.CUMSUM, "cumsum", out)


def cumprod(input: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cumprod on ScanPlan; its gradient is exact where the input has zeros."""
    return _accumulate_out(input, dim, dtype, ScanKind.CUMPROD, "cumprod", out)


def logcumsumexp(input: torch.Tensor, dim: int, *, out: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """torch.logcumsumexp on ScanPlan; differentiable (not with out=, whose dtype must be the
    input's)."""
    if not input.is_floating_point():
        raise NotImplementedError(f"logcumsumexp: not implemented for '{input.dtype}'; "
                                  "expected a floating dtype")
    if out is not None:
        _out_allowed("logcumsumexp", out, input)
        _same_dtype(out, input.dtype)
    result = _accumulate(input, dim, None, ScanKind.LOGCUMSUMEXP, "logcumsumexp")
    return result if out is None else _write_out(result, out)


def _extreme(input: torch.Tensor, dim: int, kind: ScanKind, result_type, who: str, out):
    """cummax / cummin; out=(values, indices): values of the input's dtype, int64 indices."""
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{who}(): argument 'out' must be a tuple of two tensors "
                            f"(values, indices), got {type(out).__name__}")
        _out_allowed(who, out, input)
        _same_dtype(out[0], input.dtype)
        _same_dtype(out[1], torch.int64)
    d = normalize_dim(dim, input.dim(), who)
    values, indices = _scan_indexed(input, d, kind.value)
    if out is not None:
        values, indices = _write_out(values, out[0]), _write_out(indices, out[1])
    return result_type((values, indices))


def cummax(input: torch.Tensor, dim: int, *, out=None):
    """torch.cummax: (values, indices) as torch.return_types.cummax; the index of equal maxima
    is the last one, NaN propagates; the gradient goes to the returned indices."""
    return _extreme(input, dim, ScanKind.CUMMAX, torch.return_types.cummax, "cummax", out)


def cummin(input: torch.Tensor, dim: int, *, out=None):
    """torch.cummin: (values, indices) as torch.return_types.cummin."""
    return _extreme(input, dim, ScanKind.CUMMIN, torch.return_types.cummin, "cummin", out)



def diff(input: torch.Tensor, n: int = 1, dim: int = -1, prepend: torch.Tensor | None = None,
         append: torch.Tensor | None = None, *, out: torch.Tensor | None = None
         ) -> torch.Tensor:
    """torch.diff: the n-th forward difference along dim (applied n times, as torch), after
    prepend / append are joined on (torch.cat, as torch does); differentiable (not with out=,
    which takes any dtype the result casts to)."""
    if out is not None:
        _out_allowed("diff", out, input, prepend, append)
        return _write_out(_diff_n(input, n, dim, prepend, append), out)
    return _diff_n(input, n, dim, prepend, append)


def _diff_n(input, n, dim, prepend, append) -> torch.Tensor:
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, input.dim(), "diff")
    for extra in (prepend, append):
        if extra is not None and extra.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n == 0:  # torch leaves prepend / append off then
        return input.clone()
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, input, append) if t is not None]
        input = torch.cat(parts, d)
    out = input
    for _ in range(n):
        if out.shape[d] == 0:
            break
        out = _diff(out, d)
    return out.clone() if out is input else out


def cumulative_trapezoid(y: torch.Tensor, x: torch.Tensor | None = None, *,
                         dx: float | None = None, dim: int = -1) -> torch.Tensor:
    """torch.cumulative_trapezoid: the running trapezoid rule along dim, with sample points x
    (their differences, from `diff`, are the spacings) or a constant spacing dx (default 1);
    differentiable in y and x."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid: pass the sample points x or the spacing dx, "
                        "not both")
    if y.dim() == 0:
        raise IndexError("cumulative_trapezoid: slice() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, y.dim(), "cumulative_trapezoid")
    if not y.is_floating_point():
        y = y.to(torch.get_default_dtype())
    out_shape = scan_output_shape(_TRAPEZOID, tuple(y.shape), d)
    if x is None:
        spacing = torch.full((), 1.0 if dx is None else dx, dtype=y.dtype, device=y.device)
    else:
        if x.dim() == 1:
            if x.shape[0] != y.shape[d]:
                raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                                   "sample point")
            x = x.view([-1 if i == d else 1 for i in range(y.dim())])
        elif x.dim() < y.dim():
            x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
        if x.shape[d] != y.shape[d]:
            raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                               "sample point")
        spacing = diff(x.to(y.dtype), dim=d)
    return _trapezoid(y, spacing.expand(out_shape), d)


# -- torch.masked --------------------------------------------------------------------------------
def _masked_scan(input, dim, dtype, mask, kind: ScanKind, identity: int, who: str):
    """torch.masked's scans: masked-out elements take the op's identity (in the input's
    dtype), the mask broadcast to the input and read as bool; the result has `dtype`, the
    input's by default (integers too: not torch.cumsum's int64)."""
    if dtype is None:
        dtype = input.dtype
    if mask is not None:
        if mask.dim() > input.dim():
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        if mask.shape != input.shape:
            mask = torch.broadcast_to(mask, input.shape)
        mask = mask.to(torch.bool)
        fill = torch.tensor(identity, dtype=input.dtype, device=input.device)
        input = torch.where(mask, input, fill)
    return _accumulate(input, dim, dtype, kind, who).to(dtype)


def masked_cumsum(input: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None,
                  mask: torch.Tensor | None = None) -> torch.Tensor:
    """torch.masked.cumsum: the cumsum with masked-out elements as zeros; differentiable
    (masked-out elements get no gradient)."""
    return _masked_scan(input, dim, dtype, mask, ScanKind.CUMSUM, 0, "masked.cumsum")


def masked_cumprod(input: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None,
                   mask: torch.Tensor | None = None) -> torch.Tensor:
    """torch.masked.cumprod: the cumprod with masked-out elements as ones; differentiable."""
    return _masked_scan(input, dim, dtype, mask, ScanKind.CUMPROD, 1, "masked.cumprod")
