"""torch.arange / linspace / logspace on RangePlan (with jax.lax.iota / broadcasted_iota),
torch.eye and jnp.tri on BandPlan, torch.tril_indices / triu_indices on TriIndicesPlan: sizes,
dtypes and errors as torch's, values from one kernel each."""

from __future__ import annotations

import functools
import math
import numbers

import torch

from ...core.errors import InvalidProblem, Unsupported
from .descriptors import TriangleKind, triangle_closed_count
from .torch_common import (
    band_op,
    check_options,
    device_of,
    element_of,
    finish,
    on_host,
    range_op,
    result,
    split_scalar,
    tri_indices_op,
)


def _number(who: str, name: str, value):
    """A Python number, or a 0-d tensor's (torch reads it on the host too)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise InvalidProblem(f"{who}: {who} only supports 0-dimensional start and end "
                                 f"tensors, but got {name} with {value.dim()} dimension(s).")
        return value.item()
    if isinstance(value, complex):
        raise Unsupported(f"{who}: complex {name} is not supported, got {value!r}")
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{who}: {name} must be a number, got {type(value).__name__}")
    return value


def _is_float(*values) -> bool:
    return any(isinstance(v, float) or (isinstance(v, torch.Tensor) and v.is_floating_point())
               for v in values)


def _run_range(who: str, kind: str, n: int, start, stop_or_step, base, out, dtype, layout,
               device, requires_grad, host):
    check_options(who, layout)
    element_of(who, dtype)
    if dtype == torch.bool:
        raise Unsupported(f"{who}: not implemented for 'Bool'")
    dev = out.device if out is not None and device is None else device_of(device)
    y = result(who, (n,), dtype, dev, out, requires_grad)
    if on_host(y.device):
        return finish(host(out=y, dtype=dtype), requires_grad)
    if n:
        range_op(y, kind, *split_scalar(start), *split_scalar(stop_or_step), float(base))
    return finish(y, requires_grad)


def _arange_size(start, end, step, dtype: torch.dtype) -> int:
    """torch's element count and its checks, in its arithmetic (int64 for int64 results)."""
    if dtype == torch.int64 or not dtype.is_floating_point:
        xs, xe, xt = int(start), int(end), int(step)
    else:
        xs, xe, xt = float(start), float(end), float(step)
    if xt == 0:
        raise InvalidProblem("arange: step must be nonzero")
    if not (math.isfinite(xs) and math.isfinite(xe)):
        raise InvalidProblem(f"arange: unsupported range: {xs} -> {xe}")
    if not ((xt > 0 and xe >= xs) or (xt < 0 and xe <= xs)):
        raise InvalidProblem("arange: upper bound and larger bound inconsistent with step sign")
    if dtype == torch.int64:
        sgn = 1 if xt > 0 else -1
        size = abs(xe - xs + xt - sgn) // abs(xt)  # C++'s truncating division (same signs)
    else:
        size = math.ceil((float(end) - float(start)) / float(step))
    if size < 0 or size > 2 ** 63 - 1:
        raise InvalidProblem("arange: invalid size, possible overflow?")
    return int(size)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> torch.Tensor:
    """torch.arange: int64 for integer arguments, the default float dtype if any is a float;
    y_i = start + step i in the result's compute type (torch's CUDA arithmetic)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = out.dtype if out is not None else (
            torch.get_default_dtype() if _is_float(start, end, step) else torch.int64)
    start, end, step = (_number("arange", n, v) for n, v in
                        (("start", start), ("end", end), ("step", step)))
    n = _arange_size(start, end, step, dtype)
    if not dtype.is_floating_point:
        start, step = int(start), int(step)
    host = functools.partial(torch.arange, start, end, step)
    return _run_range("arange", "arange", n, start, step, 10.0, out, dtype, layout, device,
                      requires_grad, host)


def _steps(who: str, steps) -> int:
    steps = _number(who, "steps", steps)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"{who}: steps must be an int, got {steps!r}")
    if steps < 0:
        raise InvalidProblem(f"{who}: number of steps must be non-negative")
    return int(steps)


def _endpoints(who: str, start, end, dtype):
    start, end = _number(who, "start", start), _number(who, "end", end)
    if not dtype.is_floating_point:
        return start, end
    return float(start), float(end)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> torch.Tensor:
    """torch.linspace: the first half counted from start, the second from end (both ends
    exact), as torch's kernel; start / end may be 0-d tensors."""
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    n = _steps("linspace", steps)
    start, end = _endpoints("linspace", start, end, dtype)
    host = functools.partial(torch.linspace, start, end, n)
    return _run_range("linspace", "linspace", n, start, end, 10.0, out, dtype, layout, device,
                      requires_grad, host)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> torch.Tensor:
    """torch.logspace: base ** (linspace(start, end, steps))."""
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    n = _steps("logspace", steps)
    start, end = _endpoints("logspace", start, end, dtype)
    base = float(_number("logspace", "base", base))
    host = functools.partial(torch.logspace, start, end, n, base)
    return _run_range("logspace", "logspace", n, start, end, base, out, dtype, layout, device,
                      requires_grad, host)


def iota(dtype, size, device=None) -> torch.Tensor:
    """jax.lax.iota: [0, 1, ..., size - 1] of `dtype`."""
    return arange(int(size), dtype=dtype, device=device)


def broadcasted_iota(dtype, shape, dimension, device=None) -> torch.Tensor:
    """jax.lax.broadcasted_iota: the index along `dimension` at every position of `shape`,
    as a broadcast view of one iota (stride 0 along the other dims; JAX arrays are
    immutable, and torch refuses writes into a broadcast view)."""
    shape = tuple(int(d) for d in shape)
    if not -len(shape) <= dimension < len(shape):
        raise InvalidProblem(f"broadcasted_iota: dimension must be in [{-len(shape)}, "
                             f"{len(shape)}), got {dimension}")
    dim = dimension % len(shape)
    line = arange(shape[dim], dtype=dtype, device=device)
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return line.view(view).expand(shape)


def _band(who: str, rows: int, cols: int, lower: int, upper: int, out, dtype, layout, device,
          requires_grad, pin_memory=False):
    check_options(who, layout, pin_memory)
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    element_of(who, dtype)
    dev = out.device if out is not None and device is None else device_of(device)
    y = result(who, (rows, cols), dtype, dev, out, requires_grad)
    if y.numel():
        if on_host(y.device):  # torch's own CPU ops: tril of ones keeps the band's lower edge
            ones = torch.ones((rows, cols), dtype=dtype)
            y.copy_(ones.tril(upper).triu(lower) if lower > -rows else ones.tril(upper))
        else:
            band_op(y, lower, upper)
    return finish(y, requires_grad)


def _extent(who: str, name: str, value) -> int:
    value = _number(who, name, value)
    if value < 0:
        raise InvalidProblem(f"{who}: {name} must be greater or equal to 0, got {value}")
    return int(value)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False) -> torch.Tensor:
    """torch.eye: ones on the diagonal of an n x m matrix (m = n when not given)."""
    n = _extent("eye", "n", n)
    m = n if m is None else _extent("eye", "m", m)
    return _band("eye", n, m, 0, 0, out, dtype, layout, device, requires_grad, pin_memory)


def tri(N, M=None, k=0, dtype=None, device=None) -> torch.Tensor:
    """jnp.tri: y[i, j] = 1 where j <= i + k, an N x M matrix (M = N when not given)."""
    n = _extent("tri", "N", N)
    m = n if M is None else _extent("tri", "M", M)
    return _band("tri", n, m, -max(n, 1), int(k), None, dtype, None, device, False)


def _tri_indices(who: str, kind: TriangleKind, row, col, offset, dtype, device, layout):
    check_options(who, layout)
    row, col, offset = (int(_number(who, n, v)) for n, v in
                        (("row", row), ("col", col), ("offset", offset)))
    if row < 0:
        raise InvalidProblem(f"{who}: row must be non-negative, got{row}")
    if col < 0:
        raise InvalidProblem(f"{who}: col must be non-negative, got{col}")
    if dtype not in (torch.int32, torch.int64):
        raise Unsupported(f"{who}: \"{who}\" not implemented for '{dtype}' (int32 or int64)")
    dev = device_of("cpu" if device is None else device)
    if on_host(dev):
        return getattr(torch, who)(row, col, offset, dtype=dtype, device=dev)
    n = triangle_closed_count(kind, row, col, offset)
    y = torch.empty((2, n), dtype=dtype, device=dev)
    if n:
        tri_indices_op(y, kind.value, row, col, offset)
    return y


def tril_indices(row, col, offset=0, *, dtype=torch.long, device=None,
                 layout=torch.strided) -> torch.Tensor:
    """torch.tril_indices: the 2 x N (row, col) pairs with col - row <= offset, row-major."""
    return _tri_indices("tril_indices", TriangleKind.TRIL, row, col, offset, dtype, device,
                        layout)


def triu_indices(row, col, offset=0, *, dtype=torch.long, device=None,
                 layout=torch.strided) -> torch.Tensor:
    """torch.triu_indices: the 2 x N (row, col) pairs with col - row >= offset, row-major."""
    return _tri_indices("triu_indices", TriangleKind.TRIU, row, col, offset, dtype, device,
                        layout)
