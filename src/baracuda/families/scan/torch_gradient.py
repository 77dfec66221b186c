"""torch.gradient on GradientPlan (the three-point stencil), differentiable through
GradientBackwardPlan (its transpose).

Each requested dim is one stencil launch over a small coefficient table (one row per
position): uniform spacing gives torch's weights over h, coordinates give torch's non-uniform
weights (computed with torch ops from the coordinates, so a gradient reaches coordinates that
require one).
"""

from __future__ import annotations

import functools
import numbers

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.vocab import ElementKind
from .descriptors_gradient import (
    GradientArgs,
    GradientBackwardArgs,
    GradientBackwardDescriptor,
    GradientDescriptor,
    table_element,
)
from .plans_gradient import GradientBackwardPlan, GradientPlan

__all__ = ["gradient"]

_WHO = "torch.gradient"


# -- the stencil op -------------------------------------------------------------------------------
def _stencil_impl(x: torch.Tensor, table: torch.Tensor, dim: int) -> torch.Tensor:
    y = torch.empty_like(x)
    desc = GradientDescriptor.cached(tuple(x.shape), dim, x.dtype)
    run_plan(GradientPlan, desc, GradientArgs(x=x, y=y, table=table))
    return y


def _stencil_fake(x: torch.Tensor, table: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.empty_like(x)


def _stencil_backward_impl(dy: torch.Tensor, table: torch.Tensor, dim: int) -> torch.Tensor:
    dx = torch.empty_like(dy)
    desc = GradientBackwardDescriptor.cached(tuple(dy.shape), dim, dy.dtype)
    run_plan(GradientBackwardPlan, desc, GradientBackwardArgs(dy=dy, dx=dx, table=table))
    return dx


def _stencil_backward_fake(dy: torch.Tensor, table: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.empty_like(dy)


_stencil_backward = define_op("scan_gradient_backward", _stencil_backward_impl,
                              _stencil_backward_fake)


def _setup(ctx, inputs, output):
    x, table, dim = inputs
    ctx.dim = dim
    ctx.save_for_backward(x, table, output)


def _table_grad(grad, x, table, y, dim):
    """d table: per row i, sum over the lines of dy_i x_{s_i + k} / h_i (k = 0..2) and
    -dy_i y_i / h_i (torch ops: the table is small, the sums run over the lines)."""
    n = x.shape[dim]
    ct = table.dtype
    xm, gm, ym = (t.movedim(dim, -1).to(ct) for t in (x, grad, y))
    pos = torch.arange(n, device=x.device)
    s = (pos - 1).clamp(0, max(n - 3, 0))
    lead = tuple(range(xm.dim() - 1))
    h = table[:, 3]
    cols = []
    for k in range(3):
        idx = s + k
        xk = xm.index_select(-1, idx.clamp(max=n - 1)) * (idx < n).to(ct)
        cols.append((gm * xk).sum(lead) / h)
    cols.append(-(gm * ym).sum(lead) / h)
    return torch.stack(cols, 1)


def _autograd(ctx, grad):
    x, table, y = ctx.saved_tensors
    dx = dt = None
    if ctx.needs_input_grad[0]:
        dx = _stencil_backward(grad, table, ctx.dim)
    if ctx.needs_input_grad[1]:
        dt = _table_grad(grad, x, table, y, ctx.dim)
    return dx, dt, None


_stencil = define_op("scan_gradient", _stencil_impl, _stencil_fake, backward=_autograd,
                     setup_context=_setup)


# -- coefficient tables ---------------------------------------------------------------------------
def table_element_dtype(dtype: torch.dtype) -> torch.dtype:
    return table_element(ElementKind.of(dtype)).torch_dtype


@functools.lru_cache(maxsize=64)
def _uniform_table(n: int, h: float, edge_order: int, dtype, device) -> torch.Tensor:
    """Rows (w0, w1, w2, h): (x_{i+1} - x_{i-1}) / 2 / h inside; torch's one-sided
    differences at the ends. Cached (a read-only kernel input): an eager call does not pay
    its construction and copies to the device again."""
    table = torch.tensor([-0.5, 0.0, 0.5, h], dtype=dtype, device=device).repeat(n, 1)
    if edge_order == 1:
        first, end = [-1.0, 1.0, 0.0, h], [0.0, -1.0, 1.0, h]
        if n == 2:  # the last row's taps start at 0 too
            end = first
    else:
        first, end = [-1.5, 2.0, -0.5, h], [0.5, -2.0, 1.5, h]
    table[0] = torch.tensor(first, dtype=dtype, device=device)
    table[-1] = torch.tensor(end, dtype=dtype, device=device)
    return table


def _coordinate_table(coords: torch.Tensor, n: int, edge_order: int) -> torch.Tensor:
    """torch's non-uniform weights (with h = 1, or h = the end spacing for edge order 1), in
    the coordinates' floating dtype (the default dtype for integer coordinates), as torch
    computes them."""
    dx = coords.diff()
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    dt = a.dtype
    one = torch.ones((), dtype=dt, device=coords.device)
    zero = torch.zeros((), dtype=dt, device=coords.device)
    # (a coordinate list shorter than the line broadcasts, as torch's does, or fails)
    inner = torch.stack([a.expand(n - 2), b.expand(n - 2), c.expand(n - 2),
                         one.expand(n - 2)], 1)
    d0, d_1 = dx[0].to(dt), dx[-1].to(dt)
    if edge_order == 1:
        first = torch.stack([-one, one, zero, d0])
        # (two points: the last row's taps start at 0 too)
        end = torch.stack([-one, one, zero, d_1] if n == 2 else [zero, -one, one, d_1])
    else:
        d1, d_2 = dx[1].to(dt), dx[-2].to(dt)
        first = torch.stack([-(2.0 * d0 + d1) / (d0 * (d0 + d1)), (d0 + d1) / (d0 * d1),
                             -d0 / (d1 * (d0 + d1)), one])
        end = torch.stack([d_1 / (d_2 * (d_1 + d_2)), -(d_1 + d_2) / (d_1 * d_2),
                           (2 * d_1 + d_2) / (d_1 * (d_1 + d_2)), one])
    return torch.cat([first[None], inner, end[None]])


# -- argument handling, as torch's ----------------------------------------------------------------
def _dims(input: torch.Tensor, dim) -> list[int] | None:
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    rank = input.dim()
    if rank == 0 and dims:
        raise IndexError(f"{_WHO}: Dimension specified as {dims[0]} but tensor has no "
                         "dimensions")
    out = []
    for d in dims:
        if not -rank <= d < rank:
            raise IndexError(f"{_WHO}: Dimension out of range (expected to be in range of "
                             f"[{-rank}, {rank - 1}], but got {d})")
        d %= rank
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def _spacings(spacing, n_dims: int, dim_given: bool) -> list:
    """One spacing per dim (a number or a coordinate tensor); torch's length errors."""
    if spacing is None:  # (torch's "unspecified": unit spacing)
        spacing = 1
    if isinstance(spacing, torch.Tensor) and spacing.dim() == 0:
        spacing = spacing.item()
    if isinstance(spacing, numbers.Number):
        return [spacing] * n_dims
    if not isinstance(spacing, (list, tuple)):
        raise TypeError(f"{_WHO}: spacing must be a number, a list of numbers or a list of "
                        f"tensors, got {type(spacing).__name__}")
    if len(spacing) != n_dims:
        if dim_given:
            raise RuntimeError(
                "torch.gradient expected spacing to be unspecified, a scalar or it's spacing "
                f"and dim arguments to have the same length, but got a spacing argument of "
                f"length {len(spacing)} and a dim argument of length {n_dims}.")
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {n_dims}', since dim argument was not given, but got a "
            f"list of length {len(spacing)}")
    return list(spacing)


def _result_dtype(input: torch.Tensor, coeff_dtype: torch.dtype | None) -> torch.dtype:
    base = input.dtype if input.is_floating_point() else torch.get_default_dtype()
    if coeff_dtype is None:
        return base
    return coeff_dtype if not input.is_floating_point() else \
        torch.promote_types(base, coeff_dtype)


def gradient(input: torch.Tensor, *, spacing=1, dim=None, edge_order: int = 1):
    """torch.gradient: one tensor per dim, central differences inside and one-sided ones
    (edge_order 1 or 2) at the ends; spacing a number, one number per dim, or one coordinate
    tensor per dim. Integer inputs give the default float dtype. Differentiable (in the input,
    and in coordinate tensors). With coordinates of a wider dtype than the input, the end rows
    are computed in the result's dtype (torch computes them in the input's, then widens).
    Integer inputs with uniform spacing are differenced in float64, then rounded: exact where
    torch's are (it subtracts integers), and closer at edge order 2's ends, where torch scales
    the integers in their own type (int16 / int32 overflow near their limits) or in float32."""
    if input.dtype == torch.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if input.dtype == torch.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    dims = _dims(input, dim)
    dim_given = dims is not None
    if dims is None:
        dims = list(range(input.dim()))
    spacings = _spacings(spacing, len(dims), dim_given)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    out = []
    for d, sp in zip(dims, spacings):
        n = input.shape[d]
        if isinstance(sp, torch.Tensor):
            if sp.device != input.device:
                raise RuntimeError("torch.gradient expected each tensor to be on the same "
                                   f"device, but got devices {input.device} and {sp.device}!")
            if sp.dim() != 1:
                raise RuntimeError("torch.gradient expected each element of spacing to have "
                                   f"one dimension, but got an element with {sp.dim()} "
                                   "dimensions!")
            table = _coordinate_table(sp, n, edge_order)
            dtype = _result_dtype(input, table.dtype)
            table = table.to(table_element_dtype(dtype))
        else:
            dtype = _result_dtype(input, None)
            if not input.is_floating_point():
                # torch subtracts integers exactly before it converts; float64 keeps the
                # differences exact (to 2**53) where the result type would round the operands
                table = _uniform_table(n, float(sp), edge_order, torch.float64, input.device)
                out.append(_stencil(input.to(torch.float64), table, d).to(dtype))
                continue
            table = _uniform_table(n, float(sp), edge_order, table_element_dtype(dtype),
                                   input.device)
        x = input if input.dtype == dtype else input.to(dtype)
        out.append(_stencil(x, table, d))
    return tuple(out)
