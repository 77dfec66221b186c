"""torch.index_select / gather / take_along_dim / scatter / scatter_add / scatter_reduce /
index_add on baracuda plans, differentiable, with deterministic backward passes.

Out-of-range indices raise as torch does on the CPU (IndexError for index_select, RuntimeError
for gather / scatter / index_add); the check reads the indices on the host inside the custom op
(a device sync, invisible to torch.compile).
"""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from ...core import validate as V
from . import descriptors as D
from .plans import (
    GatherPlan,
    IndexAddPlan,
    IndexCopyPlan,
    IndexSelectBackwardPlan,
    IndexSelectPlan,
    ScatterReducePlan,
)
from .torch_mask import masked_fill, masked_scatter, masked_select, nonzero, one_hot

__all__ = ["index_select", "gather", "take_along_dim", "scatter", "scatter_add",
           "scatter_reduce", "index_add", "index_copy", "index_put", "masked_fill",
           "masked_scatter", "masked_select", "nonzero", "one_hot"]
# the sibling frontends (they import this module's ops: re-exported at the end)
__all__ += ["take", "put", "put_", "index_fill", "index_fill_", "index_reduce", "index_reduce_",
            "unravel_index", "choose", "select", "narrow_copy", "slice_copy",
            "index_in_dim", "slice_in_dim", "select_scatter", "slice_scatter",
            "diagonal_scatter", "as_strided_scatter", "dynamic_slice", "dynamic_slice_in_dim",
            "dynamic_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
            "dynamic_update_index_in_dim"]

_REDUCE = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}


def _lines(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(1) if t.dim() == 0 else t


# -- index_select ---------------------------------------------------------------------------
def _is_fwd(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    xl = _lines(x)
    idx = index.reshape(-1)
    # on CUDA the gather kernel asserts on the device, as torch's does: no host sync
    if not idx.is_cuda and V.first_out_of_range(idx, xl.shape[dim]) is not None:
        raise IndexError("index out of range in self")
    desc = D.IndexSelectDescriptor(tuple(xl.shape), dim, idx.shape[0], x.dtype, idx.dtype)
    out = x.new_empty(desc.out_shape)
    run_plan(IndexSelectPlan, desc, D.IndexSelectArgs(xl, idx, out))
    return out.reshape(()) if x.dim() == 0 else out


def _is_fake(x, dim, index):
    shape = list(_lines(x).shape)
    shape[dim] = index.numel()
    return x.new_empty(shape if x.dim() else ())


def _is_bwd(grad: torch.Tensor, dim: int, index: torch.Tensor, shape: list[int]) -> torch.Tensor:
    gl = _lines(grad)
    full = list(shape) if shape else [1]
    idx = index.reshape(-1)
    gi = grad.new_empty(full)
    desc = D.IndexSelectBackwardDescriptor(tuple(full), dim, idx.shape[0], grad.dtype, idx.dtype)
    run_plan(IndexSelectBackwardPlan, desc, D.IndexSelectBackwardArgs(gl, idx, gi))
    return gi.reshape(shape)


def _is_bwd_fake(grad, dim, index, shape):
    return grad.new_empty(shape)


_index_select_backward = define_op("index_select_backward", _is_bwd, _is_bwd_fake)


def _save_index(ctx, inputs, output):
    """index_select and gather: the backward needs the index, dim and the input's shape."""
    x, dim, index = inputs
    ctx.save_for_backward(index)
    ctx.dim, ctx.shape = dim, list(x.shape)


def _is_autograd(ctx, grad):
    (index,) = ctx.saved_tensors
    return _index_select_backward(grad, ctx.dim, index, ctx.shape), None, None


_index_select = define_op("index_select", _is_fwd, _is_fake, backward=_is_autograd,
                          setup_context=_save_index)


def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """torch.index_select; the backward is a deterministic sort-based index_add."""
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (torch.int32, torch.int64):
        raise RuntimeError("index_select(): Expected dtype int32/int64 for index")
    d = normalize_dim(dim, input.dim(), "index_select")
    return _index_select(input, d, index)


# -- gather / scatter -----------------------------------------------------------------------
def _check_index(index: torch.Tensor, n: int, who: str, dim: int) -> None:
    if index.dtype not in (torch.int32, torch.int64):
        raise RuntimeError(f"{who}(): Expected dtype int64 for index")


def _check_bounds(index: torch.Tensor, n: int, dim: int) -> None:
    bad = V.first_out_of_range(index, n)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def _g_fwd(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    xl, il = _lines(x), _lines(index)
    _check_bounds(il, xl.shape[dim], dim)
    out = x.new_empty(il.shape)
    desc = D.GatherDescriptor(tuple(xl.shape), tuple(il.shape), dim, x.dtype, index.dtype)
    run_plan(GatherPlan, desc, D.GatherArgs(xl, il, out))
    return out.reshape(index.shape)


def _g_fake(x, dim, index):
    return x.new_empty(index.shape)


def _sc_fwd(self_: torch.Tensor | None, dim: int, index: torch.Tensor, src: torch.Tensor,
            shape: list[int], kind: str, include_self: bool, alpha: float) -> torch.Tensor:
    full = list(shape) if shape else [1]
    il, sl = _lines(index), _lines(src)
    _check_bounds(il, full[dim], dim)
    out = src.new_empty(full)
    desc = D.ScatterDescriptor(tuple(full), tuple(il.shape), dim, src.dtype, index.dtype,
                             D.ScatterKind(kind), include_self, self_ is not None)
    selfl = None if self_ is None else _lines(self_)
    run_plan(ScatterReducePlan, desc, D.ScatterArgs(selfl, il, sl, out, alpha))
    return out.reshape(shape)


def _sc_fake(self_, dim, index, src, shape, kind, include_self, alpha):
    return src.new_empty(shape)


_scatter_raw = define_op("scatter_reduce_raw", _sc_fwd, _sc_fake)


def _pad_to(t: torch.Tensor, shape) -> torch.Tensor:
    if tuple(t.shape) == tuple(shape):
        return t
    out = t.new_zeros(shape)
    out[tuple(slice(0, e) for e in t.shape)] = t
    return out


def _g_autograd(ctx, grad):
    (index,) = ctx.saved_tensors
    # scatter-add into zeros, owned per destination: deterministic
    gi = _scatter_raw(None, ctx.dim, index, grad, ctx.shape, "sum", False, 1.0)
    return gi, None, None


_gather = define_op("gather", _g_fwd, _g_fake, backward=_g_autograd, setup_context=_save_index)


def _check_gather_shapes(input, dim, index, who):
    if index.dim() != input.dim() and not (index.dim() <= 1 and input.dim() <= 1):
        raise RuntimeError(f"{who}(): Index tensor must have the same number of dimensions as "
                           "input tensor")
    if index.numel() == 0:  # torch skips the extent check for an empty index
        return
    for d in range(index.dim()):
        if d != dim and index.shape[d] > (input.shape[d] if input.dim() else 1):
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim}")


def gather(input: torch.Tensor, dim: int, index: torch.Tensor, *,
           sparse_grad: bool = False) -> torch.Tensor:
    """torch.gather; the backward is a deterministic scatter-add."""
    d = normalize_dim(dim, input.dim(), "gather")
    if index.numel() == 0:
        # torch accepts an empty index of any rank, extents and dtype: an empty result,
        # still in the graph so the input's gradient is zeros
        return input.reshape(-1)[:0].reshape(index.shape).clone()
    _check_gather_shapes(input, d, index, "gather")
    _check_index(index, input.shape[d] if input.dim() else 1, "gather", d)
    return _gather(input, d, index)


def take_along_dim(input: torch.Tensor, indices: torch.Tensor,
                   dim: int | None = None) -> torch.Tensor:
    """torch.take_along_dim: gather after broadcasting every dim but `dim` (views only)."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = normalize_dim(dim, input.dim(), "take_along_dim")
    if input.dim() != indices.dim():
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.dim()} dimensions for input, "
                           f"and {indices.dim()} dimensions for indices")
    shape_i, shape_x = list(indices.shape), list(input.shape)
    shape_i[d], shape_x[d] = 1, 1
    b = list(torch.broadcast_shapes(shape_i, shape_x))
    bi, bx = list(b), list(b)
    bi[d], bx[d] = indices.shape[d], input.shape[d]
    if indices.dtype in (torch.int32, torch.int64):
        # torch wraps negative indices along dim (not when dim is None); on the device,
        # no sync
        n = input.shape[d] if input.dim() else 1
        indices = torch.where(indices < 0, indices + n, indices)
    return gather(input.expand(bx), d, indices.expand(bi))


def _sr_setup(ctx, inputs, output):
    self_, dim, index, src, shape, kind, include_self, alpha = inputs
    ctx.save_for_backward(self_, index, src, output)
    ctx.dim, ctx.kind, ctx.include_self, ctx.alpha = dim, kind, include_self, alpha


def _sr_autograd(ctx, grad):
    self_, index, src, out = ctx.saved_tensors
    dim, kind = ctx.dim, ctx.kind
    shape = list(grad.shape)
    hit = _scatter_raw(None, dim, index, torch.ones_like(src), shape, "sum", False, 1.0)
    if kind == "assign" or not ctx.include_self:
        g_self = grad.masked_fill(hit > 0, 0)
    else:
        g_self = grad
    if kind == "assign":  # torch's formula: every source element, duplicates too
        g_src = _gather(grad, dim, index)
    elif kind == "sum":
        g_src = _gather(grad, dim, index) * ctx.alpha
    elif kind == "mean":
        n = hit + (1 if ctx.include_self else 0)
        g = grad / n.clamp_min(1)
        g_self = g if ctx.include_self else g_self
        g_src = _gather(g, dim, index)
    elif kind in ("amax", "amin"):
        # torch's rule: the gradient is shared evenly by every element equal to the result
        v = _gather(out, dim, index)
        src_hit = (src[tuple(slice(0, e) for e in index.shape)] == v).to(src.dtype)
        cnt = _scatter_raw(None, dim, index, src_hit, shape, "sum", False, 1.0)
        self_hit = (self_ == out) & ctx.include_self
        cnt = cnt + self_hit.to(cnt.dtype)
        g = grad / cnt.clamp_min(1)
        g_self = torch.where(hit > 0, torch.where(self_hit, g, 0), grad)
        g_src = _gather(g, dim, index) * src_hit
    else:  # prod, torch's formula: exclusive products, zeros handled without dividing by 0
        srcv = src[tuple(slice(0, e) for e in index.shape)]
        masked_self = self_.masked_fill(self_ == 0, 1)
        res = _scatter_raw(masked_self, dim, index, srcv, shape, "prod", ctx.include_self, 1.0)
        g_self = grad * res / masked_self
        if not ctx.include_self:
            g_self = g_self.masked_fill(hit > 0, 0)
        src_zero = srcv == 0
        zeros = _scatter_raw(None, dim, index, src_zero.to(src.dtype), shape, "sum", False, 1.0)
        single = src_zero & (_gather(zeros, dim, index) == 1)
        res1 = _scatter_raw(self_, dim, index, srcv.masked_fill(single, 1), shape, "prod",
                            ctx.include_self, 1.0)
        g_src = torch.where(single, _gather(grad * res1, dim, index),
                            _gather(grad * out, dim, index) / srcv.masked_fill(src_zero, 1))
    return g_self, None, None, _pad_to(g_src, src.shape), None, None, None, None


_scatter_reduce_op = define_op("scatter_reduce", _sc_fwd, _sc_fake, backward=_sr_autograd,
                               setup_context=_sr_setup)


def _scatter_call(who, input, dim, index, src, kind, include_self=True, alpha=1.0):
    d = normalize_dim(dim, input.dim(), who)
    if index.dim() != input.dim() or src.dim() != input.dim():
        raise RuntimeError(f"{who}(): Index tensor must have the same number of dimensions as "
                           "self tensor")
    if src.dtype == input.dtype and index.numel() == 0:
        # torch skips the extent checks for an empty index and returns self unchanged (the
        # plan would reject the extents); src stays in the graph for its zero gradient
        out = input.clone()
        return out + src.reshape(-1)[:0].sum() if src.requires_grad else out
    for k in range(index.dim()):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d} and to be no "
                               f"larger size than src {list(src.shape)}")
    if src.dtype != input.dtype:
        raise RuntimeError(f"{who}(): Expected self.dtype to be equal to src.dtype")
    _check_index(index, input.shape[d] if input.dim() else 1, who, d)
    return _scatter_reduce_op(input, d, index, src, list(input.shape), kind, include_self,
                              float(alpha))


def scatter(input: torch.Tensor, dim: int, index: torch.Tensor, src=None, *, value=None,
            reduce: str | None = None) -> torch.Tensor:
    """torch.scatter (src tensor or scalar value); duplicates: the last index wins
    (deterministic, where torch leaves it unspecified)."""
    kind = "assign"
    if reduce is not None:  # deprecated in torch, still computed: scatter_reduce's sum / prod
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        kind = "sum" if reduce == "add" else "prod"
    if src is None:
        src = value
    if not isinstance(src, torch.Tensor):
        src = torch.full(index.shape, src, dtype=input.dtype, device=input.device)
    return _scatter_call("scatter", input, dim, index, src, kind)


def scatter_add(input: torch.Tensor, dim: int, index: torch.Tensor,
                src: torch.Tensor) -> torch.Tensor:
    """torch.scatter_add, deterministic (destination-owned sums, no atomics)."""
    return _scatter_call("scatter_add", input, dim, index, src, "sum")


def scatter_reduce(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,
                   reduce: str, *, include_self: bool = True) -> torch.Tensor:
    """torch.scatter_reduce (sum, prod, mean, amax, amin), deterministic."""
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    return _scatter_call("scatter_reduce", input, dim, index, src, _REDUCE[reduce],
                         include_self)


def _iu_fwd(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
            alpha: float, copy: bool) -> torch.Tensor:
    xl, sl = _lines(x), _lines(source)
    idx = index.reshape(-1)
    n = xl.shape[dim]
    _check_bounds(idx, n, dim)
    out = torch.empty_like(xl)
    desc = D.IndexUpdateDescriptor(tuple(xl.shape), dim, idx.shape[0], x.dtype, idx.dtype)
    run_plan(IndexCopyPlan if copy else IndexAddPlan, desc,
             D.IndexUpdateArgs(xl, idx, sl, out, alpha))
    return out.reshape(x.shape)


def _iu_fake(x, dim, index, source, alpha, copy):
    return torch.empty_like(x)


def _iu_setup(ctx, inputs, output):
    x, dim, index, source, alpha, copy = inputs
    ctx.save_for_backward(index)
    ctx.dim, ctx.alpha, ctx.copy = dim, alpha, copy


def _iu_autograd(ctx, grad):
    (index,) = ctx.saved_tensors
    g_src = _index_select(grad, ctx.dim, index)
    if ctx.copy:
        # torch's formula: overwritten rows get none, and every source row (each duplicate
        # too) gets the gradient at its destination
        g_in = _index_update(grad, ctx.dim, index, torch.zeros_like(g_src), 1.0, True)
    else:
        g_in = grad
        g_src = g_src * ctx.alpha
    return g_in, None, None, g_src, None, None


_index_update = define_op("index_update", _iu_fwd, _iu_fake, backward=_iu_autograd,
                          setup_context=_iu_setup)


def _index_update_call(who, input, dim, index, source, alpha, copy):
    d = normalize_dim(dim, input.dim(), who)
    if index.dim() > 1:
        raise IndexError(f"{who}_(): Index is supposed to be a vector")
    if index.dtype not in (torch.int32, torch.int64):
        raise RuntimeError(f"{who}_(): Expected dtype int32/int64 for index")
    if copy and index.dtype != torch.int64:
        # torch's index_copy takes only int64 indices (index_add takes int32 too): match its
        # error rather than accept calls torch rejects
        raise RuntimeError(f"{who}_(): Expected a long tensor for index, but got {index.dtype}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"{who}_(): self ({input.dtype}) and source ({source.dtype}) must "
                           "have the same scalar type")
    want = list(input.shape)
    if want:
        want[d] = index.numel()
    if list(source.shape) != want and not (source.dim() == 0 and index.numel() == 1):
        raise RuntimeError(f"{who}_(): Source/destination tensor must have same slice shapes; "
                           f"expected {want}, got {list(source.shape)}")
    return _index_update(input, d, index, source.reshape(want) if want else source,
                         float(alpha), copy)


def index_add(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *,
              alpha: float = 1) -> torch.Tensor:
    """torch.index_add (out of place), deterministic (sort-based, no atomics)."""
    return _index_update_call("index_add", input, dim, index, source, alpha, False)


def index_copy(input: torch.Tensor, dim: int, index: torch.Tensor,
               source: torch.Tensor) -> torch.Tensor:
    """torch.index_copy (out of place); duplicates: the last one wins (deterministic)."""
    return _index_update_call("index_copy", input, dim, index, source, 1.0, True)


def _masks_to_positions(input: torch.Tensor, indices: tuple) -> tuple:
    """Each boolean (or uint8) index tensor replaced by its nonzero() positions, one integer
    index per mask dim; a mask on the CPU moves to input's device, as torch takes it."""
    out, dim = [], 0
    for i in indices:
        if isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8):
            shape = list(input.shape[dim:dim + i.dim()])
            if i.dim() > input.dim() - dim or list(i.shape) != shape:
                raise IndexError(f"The shape of the mask {list(i.shape)} at index {dim} does "
                                 f"not match the shape of the indexed tensor "
                                 f"{list(input.shape)} at index {dim}")
            if i.dim() == 0:
                raise NotImplementedError("baracuda index_put: a 0-d boolean index (a new "
                                          "dim) is not supported")
            out.extend(nonzero(i.to(device=input.device, dtype=torch.bool), as_tuple=True))
            dim += i.dim()
        else:
            out.append(i)
            dim += 1
    return tuple(out)


def _index_put_whole(input, selected: bool, values, accumulate: bool) -> torch.Tensor:
    """A lone 0-d boolean index: True writes every element (values broadcast to input's
    shape, as torch requires), False writes none."""
    try:
        full = values.to(input.dtype).expand(*input.shape)
    except RuntimeError as exc:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape "
                           f"{list(input.shape)}") from exc
    if not selected:
        out = input.clone()
        return out + values.reshape(-1)[:0].sum().to(out.dtype) if values.requires_grad \
            else out
    if accumulate:
        return input + full
    # every element replaced; where keeps input in the graph (a zero gradient) without
    # touching its values (input * 0 would turn inf into NaN)
    return torch.where(torch.ones((), dtype=torch.bool, device=input.device), full, input)


def index_put(input: torch.Tensor, indices, values: torch.Tensor,
              accumulate: bool = False) -> torch.Tensor:
    """torch.index_put (out of place) for integer index tensors over the leading dims (they
    broadcast together; negative indices wrap). accumulate=True sums duplicates
    deterministically; otherwise the last duplicate wins. A boolean mask over dims
    [j, j + mask.dim()) stands for its nonzero() positions, as in torch. None indices:
    TypeError, as torch.index_put."""
    indices = tuple(indices)
    for j, i in enumerate(indices):
        if not isinstance(i, torch.Tensor):
            raise TypeError(f"index_put(): expected Tensor as element {j} in argument 1, but "
                            f"got {type(i).__name__}")
    if len(indices) == 1 and indices[0].dim() == 0 and indices[0].dtype == torch.bool:
        return _index_put_whole(input, bool(indices[0]), values, accumulate)
    indices = _masks_to_positions(input, indices)
    if not indices:
        raise NotImplementedError("baracuda index_put: at least one index tensor is needed")
    k = len(indices)
    if k > input.dim():
        raise IndexError(f"too many indices for tensor of dimension {input.dim()} "
                         f"(got {k})")
    b = torch.broadcast_shapes(*[i.shape for i in indices])
    rest = list(input.shape[k:])
    if math.prod(b) * math.prod(rest) == 0:
        # nothing is written: torch checks no bounds then (they are checked per element
        # written) and returns self; values still must broadcast, and stay in the graph
        # for their zero gradient
        values.expand(*b, *rest)
        out = input.clone()
        return out + values.reshape(-1)[:0].sum().to(out.dtype) if values.requires_grad \
            else out
    lin = torch.zeros(b, dtype=torch.int64, device=input.device)
    for j, i in enumerate(indices):
        n = input.shape[j]
        bad = V.first_out_of_range(i, n, wrap=True)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension {j} with size {n}")
        lin = lin * n + torch.where(i < 0, i + n, i).to(torch.int64)
    lead = 1
    for e in input.shape[:k]:
        lead *= e
    flat = input.reshape(lead, *rest)
    # explicit row count: reshape(-1, *rest) is ambiguous when a trailing extent is 0
    rows = lin.numel()
    vals = values.to(input.dtype).expand(*b, *rest).reshape(rows, *rest)
    out = _index_update(flat, 0, lin.reshape(rows), vals, 1.0, not accumulate)
    return out.reshape(input.shape)


from .torch_flat import (  # noqa: E402  - they use this module's ops
    choose,
    index_fill,
    index_fill_,
    index_reduce,
    index_reduce_,
    put,
    put_,
    take,
    unravel_index,
)
from .torch_region import (  # noqa: E402
    as_strided_scatter,
    diagonal_scatter,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    index_in_dim,
    narrow_copy,
    select,
    select_scatter,
    slice_copy,
    slice_in_dim,
    slice_scatter,
)
