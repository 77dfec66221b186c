"""torch.take / put / index_fill / index_reduce / unravel_index and jnp.choose on baracuda
plans, differentiable (no float atomics: sums and reductions are sort-based and owned by the
destination).

Out-of-range indices raise as torch does on the CPU (read on the host, a device sync), except
take on a contiguous CUDA input, where the row gather's device-side assert fires instead.
In-place variants (`index_fill_`, `index_reduce_`, `put_`) compute the result out of place
and copy it into the input (torch's copy_, so autograd sees an ordinary in-place op).
"""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from ...core import validate as V
from . import descriptors as D
from .descriptors_region import (
    MAX_COPY_RANK,
    IndexReduceDescriptor,
    UnravelArgs,
    UnravelDescriptor,
)
from .plans import IndexSelectPlan
from .plans_region import IndexReducePlan, UnravelIndexPlan
from .torch_api import _index_select, _index_select_backward, _index_update, gather
from .torch_mask import masked_fill
from .torch_region import check_out, write_out

__all__ = ["take", "put", "put_", "index_fill", "index_fill_", "index_reduce", "index_reduce_",
           "unravel_index", "choose"]

_TORCH_NAME = {torch.int32: "Int", torch.int64: "Long", torch.int16: "Short",
               torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool",
               torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
               torch.bfloat16: "BFloat16"}


def _name(dtype: torch.dtype) -> str:
    return _TORCH_NAME.get(dtype, str(dtype))


def _wrap(index: torch.Tensor, n: int) -> torch.Tensor:
    """Negative indices + n, on the device."""
    return torch.where(index < 0, index + n, index)


# -- unravel_index ----------------------------------------------------------------------------
def _coords(flat: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """[N, len(dims)] int64 row-major coordinates of the 1-D `flat` (UnravelIndexPlan)."""
    out = torch.empty((flat.shape[0], len(dims)), dtype=torch.int64, device=flat.device)
    run_plan(UnravelIndexPlan, UnravelDescriptor(flat.shape[0], tuple(dims), flat.dtype),
             UnravelArgs(flat, out))
    return out


def _coords_fake(flat, dims):
    return torch.empty((flat.shape[0], len(dims)), dtype=torch.int64, device=flat.device)


_unravel = define_op("unravel_index", _coords, _coords_fake)


def unravel_index(indices: torch.Tensor, shape) -> tuple[torch.Tensor, ...]:
    """torch.unravel_index: a tuple of int64 coordinate tensors of indices' shape. As torch,
    each coordinate is floor(index / stride) mod extent: no range check, negatives wrap."""
    if indices.is_complex() or indices.is_floating_point() or indices.dtype == torch.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, (list, tuple, torch.Size)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for d in shape:
        if not isinstance(d, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(dims)}")
    if not dims:
        return ()
    if 0 in dims and indices.numel():
        raise RuntimeError("ZeroDivisionError")
    if len(dims) > MAX_COPY_RANK:
        raise NotImplementedError(f"unravel_index: at most {MAX_COPY_RANK} dims, got "
                                  f"{len(dims)}")
    if indices.dtype not in (torch.int32, torch.int64):
        indices = indices.to(torch.int64)
    flat = indices.reshape(-1)
    return tuple(_unravel(flat, dims).view(*indices.shape, len(dims)).unbind(-1))


# -- take -------------------------------------------------------------------------------------
def _storage_offsets(x: torch.Tensor, flat: torch.Tensor):
    """(1-D view of x's elements in storage order, element offsets of the row-major flat
    indices in it): no copy of x, only index arithmetic."""
    if x.is_contiguous():
        return x.reshape(-1), flat
    span = 1 + sum((e - 1) * s for e, s in zip(x.shape, x.stride()))
    strides = torch.tensor(list(x.stride()), dtype=torch.int64, device=x.device)
    offs = (_coords(flat, list(x.shape)) * strides).sum(-1) if x.dim() else flat
    return x.as_strided((span,), (1,), x.storage_offset()), offs


def _take_fwd(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    flat = _wrap(index.reshape(-1), x.numel())
    src, offs = _storage_offsets(x, flat)
    out = x.new_empty(offs.shape[0])
    desc = D.IndexSelectDescriptor((src.shape[0],), 0, offs.shape[0], x.dtype, offs.dtype)
    run_plan(IndexSelectPlan, desc, D.IndexSelectArgs(src, offs, out))
    return out.reshape(index.shape)


def _take_fake(x, index):
    return x.new_empty(index.shape)


def _take_setup(ctx, inputs, output):
    x, index = inputs
    ctx.save_for_backward(index)
    ctx.shape = list(x.shape)


def _take_autograd(ctx, grad):
    (index,) = ctx.saved_tensors
    n = math.prod(ctx.shape)
    flat = _wrap(index.reshape(-1), n)
    # a deterministic sorted-segment sum over the flat input (no atomics)
    g = _index_select_backward(grad.reshape(-1), 0, flat, [n])
    return g.reshape(ctx.shape), None


_take = define_op("take", _take_fwd, _take_fake, backward=_take_autograd,
                  setup_context=_take_setup)


def _flat_bounds(index: torch.Tensor, n: int) -> None:
    bad = V.first_out_of_range(index, n, wrap=True)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")


def take(input: torch.Tensor, index: torch.Tensor, *,
         out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.take: input as if 1-D (row-major, any strides: no copy), negative indices wrap;
    the backward is a deterministic sort-based scatter-add."""
    if out is not None:
        if out.dtype != input.dtype:
            raise RuntimeError(f"take(): self and out expected to have the same dtype, but got "
                               f"self.dtype = {_name(input.dtype)} and out.dtype = "
                               f"{_name(out.dtype)}")
        check_out("take", input.dtype, out, (input,))
        with torch.no_grad():
            return write_out("take", take(input, index), out)
    if index.dtype != torch.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{_name(index.dtype)}")
    if not (index.is_cuda and input.is_contiguous()):  # CUDA: the gather's device assert
        _flat_bounds(index, input.numel())
    return _take(input, index)


# -- put --------------------------------------------------------------------------------------
def put(input: torch.Tensor, index: torch.Tensor, source: torch.Tensor,
        accumulate: bool = False) -> torch.Tensor:
    """torch.put (out of place): input as if 1-D, negative indices wrap. accumulate=True sums
    duplicates deterministically (sorted, no atomics); otherwise the last duplicate wins
    (deterministic, where torch leaves it undefined)."""
    if index.dtype != torch.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_name(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_name(input.dtype)} and source.dtype = "
                           f"{_name(source.dtype)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    n = input.numel()
    _flat_bounds(index, n)
    flat = _wrap(index.reshape(-1), n)
    out = _index_update(input.reshape(-1), 0, flat, source.reshape(-1), 1.0,
                        not accumulate)
    return out.reshape(input.shape)


def put_(input: torch.Tensor, index: torch.Tensor, source: torch.Tensor,
         accumulate: bool = False) -> torch.Tensor:
    """Tensor.put_."""
    return input.copy_(put(input, index, source, accumulate))


# -- index_fill -------------------------------------------------------------------------------
def index_fill(input: torch.Tensor, dim: int, index: torch.Tensor, value) -> torch.Tensor:
    """torch.index_fill (out of place): a masked_fill through a [n] mask of the rows index
    names (negative indices wrap); value a number or a 0-d tensor (its gradient: the sum of
    the gradient over the filled positions, each position once)."""
    d = normalize_dim(dim, input.dim(), "index_fill")
    if index.dtype != torch.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, torch.Tensor) and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    n = input.shape[d] if input.dim() else 1
    bad = V.first_out_of_range(index, n, wrap=True)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    flat = _wrap(index.reshape(-1), n)
    zeros = torch.zeros(n, dtype=torch.float32, device=input.device)
    ones = torch.ones(flat.shape[0], dtype=torch.float32, device=input.device)
    hit = _index_update(zeros, 0, flat, ones, 1.0, True) != 0
    view = [1] * input.dim()
    if view:
        view[d] = n
    return masked_fill(input, hit.reshape(view), value)


def index_fill_(input: torch.Tensor, dim: int, index: torch.Tensor, value) -> torch.Tensor:
    """Tensor.index_fill_."""
    return input.copy_(index_fill(input, dim, index, value))


# -- index_reduce -----------------------------------------------------------------------------
def _ir_fwd(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, kind: str,
            include_self: bool) -> torch.Tensor:
    xl = x.reshape(1) if x.dim() == 0 else x
    sl = source.reshape(1) if source.dim() == 0 else source
    idx = index.reshape(-1)
    out = torch.empty_like(xl)
    desc = IndexReduceDescriptor(tuple(xl.shape), dim, idx.shape[0], x.dtype, idx.dtype,
                                 D.ScatterKind(kind), include_self)
    run_plan(IndexReducePlan, desc, D.IndexUpdateArgs(xl, idx, sl, out))
    return out.reshape(x.shape)


def _ir_fake(x, dim, index, source, kind, include_self):
    return torch.empty_like(x)


def _ir_setup(ctx, inputs, output):
    x, dim, index, source, kind, include_self = inputs
    ctx.save_for_backward(x, index, source, output)
    ctx.dim, ctx.kind, ctx.include_self = dim, kind, include_self


def _index_add(base: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor):
    return _index_update(base, dim, index, src, 1.0, False)


def _ir_autograd(ctx, grad):
    """torch's index_reduce_backward, on deterministic plans."""
    x, index, src, out = ctx.saved_tensors
    dim, kind, inc = ctx.dim, ctx.kind, ctx.include_self
    gl = grad.reshape(1) if grad.dim() == 0 else grad
    xl, ol = (t.reshape(1) if t.dim() == 0 else t for t in (x, out))
    sl = src.reshape(1) if src.dim() == 0 else src
    idx = index.reshape(-1)
    if kind == "prod":
        masked_self = xl.masked_fill(xl == 0, 1)
        res = _index_reduce(masked_self, dim, idx, sl, kind, inc)
        g_self = gl * res / masked_self
        src_zero = sl == 0
        zeros = _index_add(torch.zeros_like(gl), dim, idx, src_zero.to(gl.dtype))
        single = src_zero & (_index_select(zeros, dim, idx) == 1)
        res1 = _index_reduce(xl, dim, idx, sl.masked_fill(single, 1), kind, inc)
        g_src = torch.where(single, _index_select(gl * res1, dim, idx),
                            _index_select(gl * ol, dim, idx) / sl.masked_fill(src_zero, 1))
    elif kind == "mean":
        cnt = torch.ones_like(gl) if inc else torch.zeros_like(gl)
        cnt = _index_add(cnt, dim, idx, torch.ones_like(sl))
        cnt = cnt.masked_fill(cnt == 0, 1)
        g_self = gl / cnt
        g_src = _index_select(gl, dim, idx) / _index_select(cnt, dim, idx)
    else:  # amax / amin: shared evenly by every element equal to the result
        value = _index_select(ol, dim, idx)
        self_is = (xl == ol).to(gl.dtype)
        src_is = (sl == value).to(gl.dtype)
        n = _index_add(self_is, dim, idx, src_is)
        g = gl / n
        g_self = self_is * g
        g_src = src_is * _index_select(g, dim, idx)
    if not inc:
        g_self = index_fill(g_self, dim, idx.to(torch.int64), 0)
    return g_self.reshape(x.shape), None, None, g_src.reshape(src.shape), None, None


_index_reduce = define_op("index_reduce", _ir_fwd, _ir_fake, backward=_ir_autograd,
                          setup_context=_ir_setup)

_REDUCES = ("prod", "mean", "amax", "amin")


def index_reduce(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
                 reduce: str, *, include_self: bool = True,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.index_reduce (out of place) for prod, mean, amax, amin; deterministic (a stable
    sort of index, each destination row reduced by one program, no atomics)."""
    if out is not None:
        check_out("index_reduce", input.dtype, out, (input, source))
        with torch.no_grad():
            return write_out("index_reduce", index_reduce(input, dim, index, source, reduce,
                                                          include_self=include_self), out)
    if reduce not in _REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = normalize_dim(dim, input.dim(), "index_reduce")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (torch.int32, torch.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_name(input.dtype)}) and source "
                           f"({_name(source.dtype)}) must have the same scalar type")
    k = index.numel()
    src_k = source.shape[d] if source.dim() else 1
    if source.dim() > 1 or input.dim() > 1:
        if source.dim() != input.dim():
            raise IndexError(f"index_reduce_(): source ({source.dim()}D) and self "
                             f"({input.dim()}D) must have the same number of dimensions")
    if k != src_k:
        raise RuntimeError(f"index_reduce_(): Number of indices ({k}) should be equal to "
                           f"source.size(dim): ({src_k}), for dim: {d}")
    for j in range(input.dim()):
        if j != d and source.dim() == input.dim() and source.shape[j] != input.shape[j]:
            raise RuntimeError("index_reduce_(): Source/destination tensor must have same "
                               "slice shapes")
    n = input.shape[d] if input.dim() else 1
    if V.first_out_of_range(index, n) is not None:
        raise IndexError("index out of range in self")
    want = list(input.shape)
    if want:
        want[d] = k
    src = source.reshape(want) if want else source
    return _index_reduce(input, d, index, src, reduce, include_self)


def index_reduce_(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
                  reduce: str, *, include_self: bool = True) -> torch.Tensor:
    """Tensor.index_reduce_."""
    return input.copy_(index_reduce(input, dim, index, source, reduce,
                                    include_self=include_self))


# -- choose (jnp) -----------------------------------------------------------------------------
def choose(a: torch.Tensor, choices, mode: str = "raise") -> torch.Tensor:
    """jnp.choose(a, choices, mode): out = choices[a][...] after broadcasting a with every
    choice; mode 'raise' (ValueError for an entry outside [0, n)), 'wrap' (modulo n) or
    'clip'. A gather along a leading choice dim (a choices tensor broadcasts as a view; a
    sequence is stacked); the gradient flows to the choices."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"choose: a must be a tensor, got {type(a).__name__}")
    if a.is_floating_point() or a.is_complex() or a.dtype == torch.bool:
        raise TypeError(f"choose: a must hold integers, got {a.dtype}")
    if isinstance(choices, torch.Tensor):
        parts = list(choices.unbind(0)) if choices.dim() else None
    else:
        parts = list(choices)
    if not parts:
        raise ValueError("choose: choices must be a non-empty sequence of arrays")
    n = len(parts)
    shape = torch.broadcast_shapes(a.shape, *[p.shape for p in parts])
    if isinstance(choices, torch.Tensor):
        stacked = choices.expand(n, *shape)
    else:
        dtype = parts[0].dtype
        for p in parts[1:]:
            dtype = torch.promote_types(dtype, p.dtype)
        stacked = torch.stack([p.to(dtype).expand(shape) for p in parts])
    idx = a.to(torch.int64)
    if mode == "raise":
        if V.first_out_of_range(idx, n) is not None:
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = torch.remainder(idx, n)
    else:
        idx = idx.clamp(0, n - 1)
    idx = idx.expand(shape).unsqueeze(0)
    if not shape:
        return gather(stacked, 0, idx.reshape(1)).reshape(())
    return gather(stacked, 0, idx).squeeze(0)
