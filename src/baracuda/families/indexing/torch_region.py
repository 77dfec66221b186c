"""Static and dynamic slicing on baracuda plans: torch.select (a view; torch.narrow is the
shape family's), narrow_copy / slice_copy, select_scatter / slice_scatter / diagonal_scatter /
as_strided_scatter, and JAX's dynamic_slice / dynamic_update_slice (+ _in_dim / index
variants), differentiable.

Every copy is the one strided-copy kernel (StridedCopyPlan): a scatter is a copy of the input
and a copy of src into the region's view of the result. Dynamic start indices given as
tensors stay on the device: the clamped element offset is read by the kernel, no host sync.
"""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from .descriptors_region import MAX_COPY_RANK, StridedCopyArgs, StridedCopyDescriptor
from .plans_region import StridedCopyPlan

__all__ = ["select", "narrow_copy", "slice_copy", "index_in_dim", "slice_in_dim",
           "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter",
           "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
           "dynamic_update_slice", "dynamic_update_slice_in_dim",
           "dynamic_update_index_in_dim"]


def copy_into(src: torch.Tensor, out: torch.Tensor, src_offset: torch.Tensor | None = None,
              out_offset: torch.Tensor | None = None) -> None:
    """out[...] = src[...] (src cast to out's dtype first when they differ, as copy_)."""
    if out.dim() > MAX_COPY_RANK:
        raise NotImplementedError(f"baracuda strided copy: at most {MAX_COPY_RANK} dims, got "
                                  f"{out.dim()}")
    if src.dtype != out.dtype:
        src = src.to(out.dtype)
    desc = StridedCopyDescriptor(tuple(out.shape), out.dtype, src_offset is not None,
                                 out_offset is not None)
    run_plan(StridedCopyPlan, desc, StridedCopyArgs(src, out, src_offset, out_offset))


def check_out(who: str, dtype: torch.dtype, out: torch.Tensor, inputs=()) -> None:
    """torch's out= rules: out has the result's dtype, and nothing requires grad."""
    if out.dtype != dtype:
        raise RuntimeError(f"{who}(): expected out to have dtype {dtype}, but got {out.dtype}")
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                       for t in (out, *inputs)):
        raise RuntimeError(f"{who}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")


def write_out(who: str, result: torch.Tensor, out: torch.Tensor, inputs=()) -> torch.Tensor:
    """`result` copied into out (resized when its shape differs, as torch) by the
    strided-copy kernel: out may be strided."""
    check_out(who, result.dtype, out, inputs)
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    copy_into(result, out)
    return out


# -- a differentiable copy (narrow_copy, slice_copy, static dynamic_slice) -----------------
def _copy_fwd(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    copy_into(x, out)
    return out


def _copy_fake(x):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _copy_setup(ctx, inputs, output):
    pass


def _copy_autograd(ctx, grad):
    return grad


_copy = define_op("strided_copy", _copy_fwd, _copy_fake, backward=_copy_autograd,
                  setup_context=_copy_setup)


def select(input: torch.Tensor, dim: int, index: int) -> torch.Tensor:
    """torch.select: a view (no kernel)."""
    return input.select(dim, index)


def narrow_copy(input: torch.Tensor, dim: int, start: int, length: int, *,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.narrow_copy: the narrowed region copied by one strided-copy kernel."""
    view = input.narrow(dim, start, length)
    if out is not None:
        return write_out("narrow_copy", view, out, (input,))
    return _copy(view)


def slice_copy(input: torch.Tensor, dim: int = 0, start: int | None = None,
               end: int | None = None, step: int = 1, *,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.slice_copy: the slice copied by one strided-copy kernel."""
    view = torch.ops.aten.slice(input, dim, start, end, step)
    if out is not None:
        return write_out("slice_copy", view, out, (input,))
    return _copy(view)


def index_in_dim(operand: torch.Tensor, index: int, axis: int = 0,
                 keepdims: bool = True) -> torch.Tensor:
    """jax.lax.index_in_dim (a view; negative index wraps)."""
    a = normalize_dim(axis, operand.dim(), "index_in_dim")
    out = operand.select(a, index)
    return out.unsqueeze(a) if keepdims else out


def slice_in_dim(operand: torch.Tensor, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> torch.Tensor:
    """jax.lax.slice_in_dim (a view)."""
    a = normalize_dim(axis, operand.dim(), "slice_in_dim")
    return torch.ops.aten.slice(operand, a, start_index, limit_index, stride)


# -- region scatters ----------------------------------------------------------------------
def _region(t: torch.Tensor, kind: str, params: list[int]) -> torch.Tensor:
    """The view of `t` the scatter `kind` replaces (torch's own view ops: torch's errors)."""
    if kind == "select":
        return t.select(params[0], params[1])
    if kind == "slice":
        return torch.ops.aten.slice(t, *params)
    if kind == "diagonal":
        return t.diagonal(*params)
    rank = params[0]
    return t.as_strided(params[1:1 + rank], params[1 + rank:1 + 2 * rank], params[-1])


def _scatter_fwd(x: torch.Tensor, src: torch.Tensor, kind: str, params: list[int],
                 strides: list[int]) -> torch.Tensor:
    out = torch.empty_strided(x.shape, strides, dtype=x.dtype, device=x.device)
    copy_into(x, out)
    copy_into(src, _region(out, kind, params))
    return out


def _scatter_fake(x, src, kind, params, strides):
    return torch.empty_strided(x.shape, strides, dtype=x.dtype, device=x.device)


def _scatter_setup(ctx, inputs, output):
    x, src, kind, params, strides = inputs
    ctx.kind, ctx.params, ctx.strides = kind, params, strides
    ctx.src_shape, ctx.src_dtype = list(src.shape), src.dtype


def _scatter_autograd(ctx, grad):
    zeros = torch.zeros(ctx.src_shape, dtype=grad.dtype, device=grad.device)
    g_x = _region_scatter(grad, zeros, ctx.kind, ctx.params, ctx.strides)
    if ctx.kind == "as_strided" and tuple(grad.stride()) != tuple(ctx.strides):
        # an as_strided region is defined on the result's memory layout
        grad = torch.empty_strided(grad.shape, ctx.strides, dtype=grad.dtype,
                                   device=grad.device).copy_(grad)
    g_src = _copy(_region(grad, ctx.kind, ctx.params)).to(ctx.src_dtype)
    return g_x, g_src, None, None, None


_region_scatter = define_op("region_scatter", _scatter_fwd, _scatter_fake,
                            backward=_scatter_autograd, setup_context=_scatter_setup)


def _out_strides(x: torch.Tensor) -> list[int]:
    """The result's strides: the input's when it is dense (as torch's clone), else
    row-major."""
    return list(torch.empty_like(x).stride())


def _scatter(who: str, x: torch.Tensor, src: torch.Tensor, kind: str,
             params: list[int]) -> torch.Tensor:
    if not isinstance(src, torch.Tensor):
        raise TypeError(f"{who}(): argument 'src' must be Tensor, not {type(src).__name__}")
    strides = _out_strides(x)
    probe = torch.empty_strided(x.shape, strides, device="meta")
    region = _region(probe, kind, params)  # torch's own range errors
    if list(region.shape) != list(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(region.shape)}")
    if src.dtype != x.dtype:
        src = src.to(x.dtype)
    return _region_scatter(x, src, kind, params, strides)


def select_scatter(input: torch.Tensor, src: torch.Tensor, dim: int, index: int) -> torch.Tensor:
    """torch.select_scatter: input with input.select(dim, index) replaced by src."""
    d = normalize_dim(dim, input.dim(), "select_scatter")
    return _scatter("select_scatter", input, src, "select", [d, int(index)])


def slice_scatter(input: torch.Tensor, src: torch.Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1, *,
                  out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.slice_scatter: input with input[start:end:step] along dim replaced by src."""
    if out is not None:
        check_out("slice_scatter", input.dtype, out, (input, src))
        with torch.no_grad():
            return write_out("slice_scatter", slice_scatter(input, src, dim, start, end, step),
                             out)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = normalize_dim(dim, input.dim(), "slice_scatter")
    n = input.shape[d] if input.dim() else 1
    s = 0 if start is None else int(start)
    e = n if end is None else int(end)
    s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
    s, e = min(max(s, 0), n), min(max(e, 0), n)
    return _scatter("slice_scatter", input, src, "slice", [d, s, max(e, s), int(step)])


def diagonal_scatter(input: torch.Tensor, src: torch.Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> torch.Tensor:
    """torch.diagonal_scatter: input with input.diagonal(offset, dim1, dim2) replaced."""
    return _scatter("diagonal_scatter", input, src, "diagonal", [int(offset), dim1, dim2])


def as_strided_scatter(input: torch.Tensor, src: torch.Tensor, size, stride,
                       storage_offset: int | None = None) -> torch.Tensor:
    """torch.as_strided_scatter: input with its as_strided(size, stride, storage_offset)
    view (on the result's own storage, as torch's clone) replaced by src."""
    size, stride = [int(v) for v in size], [int(v) for v in stride]
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} vs "
                           f"{len(size)}")
    offset = 0 if storage_offset is None else int(storage_offset)
    return _scatter("as_strided_scatter", input, src, "as_strided",
                    [len(size), *size, *stride, offset])


# -- dynamic slices (JAX) ----------------------------------------------------------------------
def _starts(who: str, operand: torch.Tensor, start_indices, sizes) -> list | torch.Tensor:
    """The clamped start of each dim (JAX: a negative start wraps once, then every start is
    clamped into [0, extent - size]): Python ints, or an int64 tensor on the device when any
    start is a tensor."""
    if isinstance(start_indices, torch.Tensor) and start_indices.dim() == 1:
        start_indices = list(start_indices.unbind(0))
    starts = list(start_indices)
    if len(starts) != operand.dim():
        raise TypeError(f"{who}: length of start indices ({len(starts)}) must equal the rank "
                        f"of operand ({operand.dim()})")
    ext = list(operand.shape)
    if not any(isinstance(s, torch.Tensor) for s in starts):
        out = []
        for s, n, k in zip(starts, ext, sizes):
            s = int(s)
            s = s + n if s < 0 else s
            out.append(min(max(s, 0), n - k))
        return out
    for s in starts:
        if isinstance(s, torch.Tensor) and (s.dim() != 0 or s.is_floating_point()
                                            or s.dtype == torch.bool):
            raise TypeError(f"{who}: start indices must be integer scalars, got a tensor of "
                            f"shape {list(s.shape)} and dtype {s.dtype}")
    dev = operand.device
    st = torch.stack([s.to(device=dev, dtype=torch.int64) if isinstance(s, torch.Tensor)
                      else torch.tensor(int(s), dtype=torch.int64, device=dev) for s in starts])
    n = torch.tensor(ext, dtype=torch.int64, device=dev)
    hi = n - torch.tensor(list(sizes), dtype=torch.int64, device=dev)
    st = torch.where(st < 0, st + n, st)
    return torch.minimum(torch.clamp_min(st, 0), hi)


def _offset(t: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """The element offset of `starts` in t, as an int64 [1] tensor on the device."""
    strides = torch.tensor(list(t.stride()), dtype=torch.int64, device=t.device)
    return (starts * strides).sum().reshape(1)


def _dyn_slice_fwd(x: torch.Tensor, starts: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    out = torch.empty(sizes, dtype=x.dtype, device=x.device)
    base = x.as_strided(sizes, x.stride(), x.storage_offset())
    copy_into(base, out, src_offset=_offset(x, starts))
    return out


def _dyn_slice_fake(x, starts, sizes):
    return torch.empty(sizes, dtype=x.dtype, device=x.device)


def _dyn_update_fwd(x: torch.Tensor, update: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    copy_into(x, out)
    if update.numel():
        base = out.as_strided(update.shape, out.stride(), 0)
        copy_into(update, base, out_offset=_offset(out, starts))
    return out


def _dyn_update_fake(x, update, starts):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _dyn_slice_setup(ctx, inputs, output):
    x, starts, sizes = inputs
    ctx.save_for_backward(starts)
    ctx.shape = list(x.shape)


def _dyn_slice_autograd(ctx, grad):
    (starts,) = ctx.saved_tensors
    zeros = torch.zeros(ctx.shape, dtype=grad.dtype, device=grad.device)
    return _dyn_update(zeros, grad, starts), None, None


def _dyn_update_setup(ctx, inputs, output):
    x, update, starts = inputs
    ctx.save_for_backward(starts)
    ctx.update_shape, ctx.update_dtype = list(update.shape), update.dtype


def _dyn_update_autograd(ctx, grad):
    (starts,) = ctx.saved_tensors
    zeros = torch.zeros(ctx.update_shape, dtype=grad.dtype, device=grad.device)
    g_x = _dyn_update(grad, zeros, starts)
    g_u = _dyn_slice(grad, starts, ctx.update_shape).to(ctx.update_dtype)
    return g_x, g_u, None


_dyn_slice = define_op("dynamic_slice", _dyn_slice_fwd, _dyn_slice_fake,
                       backward=_dyn_slice_autograd, setup_context=_dyn_slice_setup)
_dyn_update = define_op("dynamic_update_slice", _dyn_update_fwd, _dyn_update_fake,
                        backward=_dyn_update_autograd, setup_context=_dyn_update_setup)


def _view_at(t: torch.Tensor, starts: list[int], sizes) -> torch.Tensor:
    for d, (s, k) in enumerate(zip(starts, sizes)):
        t = t.narrow(d, s, k)
    return t


def dynamic_slice(operand: torch.Tensor, start_indices, slice_sizes) -> torch.Tensor:
    """jax.lax.dynamic_slice: a copy of operand[start : start + size] per dim, starts wrapped
    once when negative and clamped into range (ints, 0-d tensors or a 1-D tensor)."""
    sizes = [int(k) for k in slice_sizes]
    if len(sizes) != operand.dim():
        raise TypeError(f"dynamic_slice: slice_sizes must have length {operand.dim()} (the "
                        f"rank of operand), got {len(sizes)}")
    for d, (k, n) in enumerate(zip(sizes, operand.shape)):
        if not 0 <= k <= n:
            raise TypeError(f"dynamic_slice: slice_sizes[{d}] = {k} must be in [0, {n}] (the "
                            f"operand's extent)")
    starts = _starts("dynamic_slice", operand, start_indices, sizes)
    if isinstance(starts, list):
        return _copy(_view_at(operand, starts, sizes))
    return _dyn_slice(operand, starts, sizes)


def dynamic_slice_in_dim(operand: torch.Tensor, start_index, slice_size: int,
                         axis: int = 0) -> torch.Tensor:
    """jax.lax.dynamic_slice_in_dim."""
    a = normalize_dim(axis, operand.dim(), "dynamic_slice_in_dim")
    starts = [0] * operand.dim()
    sizes = list(operand.shape)
    starts[a], sizes[a] = start_index, slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand: torch.Tensor, index, axis: int = 0,
                         keepdims: bool = True) -> torch.Tensor:
    """jax.lax.dynamic_index_in_dim."""
    a = normalize_dim(axis, operand.dim(), "dynamic_index_in_dim")
    out = dynamic_slice_in_dim(operand, index, 1, a)
    return out if keepdims else out.squeeze(a)


def dynamic_update_slice(operand: torch.Tensor, update: torch.Tensor,
                         start_indices) -> torch.Tensor:
    """jax.lax.dynamic_update_slice: operand with the block at start_indices (clamped as
    dynamic_slice's) replaced by update (cast to operand's dtype)."""
    if update.dim() != operand.dim():
        raise TypeError(f"dynamic_update_slice: update must have the rank of operand "
                        f"({operand.dim()}), got {update.dim()}")
    for d, (k, n) in enumerate(zip(update.shape, operand.shape)):
        if k > n:
            raise TypeError(f"dynamic_update_slice: update.shape[{d}] = {k} exceeds the "
                            f"operand's extent {n}")
    if operand.dim() > MAX_COPY_RANK:
        raise NotImplementedError(f"dynamic_update_slice: at most {MAX_COPY_RANK} dims")
    starts = _starts("dynamic_update_slice", operand, start_indices, list(update.shape))
    if isinstance(starts, list):
        starts = torch.tensor(starts, dtype=torch.int64, device=operand.device)
    if update.dtype != operand.dtype:
        update = update.to(operand.dtype)
    return _dyn_update(operand, update, starts)


def dynamic_update_slice_in_dim(operand: torch.Tensor, update: torch.Tensor, start_index,
                                axis: int) -> torch.Tensor:
    """jax.lax.dynamic_update_slice_in_dim."""
    a = normalize_dim(axis, operand.dim(), "dynamic_update_slice_in_dim")
    starts = [0] * operand.dim()
    starts[a] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand: torch.Tensor, update: torch.Tensor, index,
                                axis: int) -> torch.Tensor:
    """jax.lax.dynamic_update_index_in_dim (update may lack the axis dim)."""
    a = normalize_dim(axis, operand.dim(), "dynamic_update_index_in_dim")
    if update.dim() == operand.dim() - 1:
        update = update.unsqueeze(a)
    return dynamic_update_slice_in_dim(operand, update, index, a)
