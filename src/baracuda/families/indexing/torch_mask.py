"""torch.masked_fill / one_hot / nonzero / masked_select / masked_scatter on baracuda plans.

nonzero and masked_select have data-dependent sizes: the plans write capacity-sized outputs
and a count tensor; these wrappers read the count (one sync) and return a view of the first
`count` entries, as torch does. Under torch.compile their fake kernels return unbacked sizes.
"""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core import validate as V
from . import descriptors as D
from .plans_mask import MaskedFillPlan, MaskedScatterPlan, MaskedSelectPlan, NonzeroPlan, OneHotPlan

__all__ = ["masked_fill", "one_hot", "nonzero", "masked_select", "masked_scatter"]


def _mf_fwd(x: torch.Tensor, mask: torch.Tensor, value: float) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    run_plan(MaskedFillPlan, D.MaskedFillDescriptor(tuple(x.shape), x.dtype),
             D.MaskedFillArgs(x, mask, out, value))
    return out


def _mf_fake(x, mask, value):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _mf_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])


def _mf_autograd(ctx, grad):
    (mask,) = ctx.saved_tensors
    return _masked_fill(grad, mask, 0.0), None, None


_masked_fill = define_op("masked_fill", _mf_fwd, _mf_fake, backward=_mf_autograd,
                         setup_context=_mf_setup)


def _scalar(x: torch.Tensor, value):
    return float(value) if x.is_floating_point() else int(value)


def _mft_fwd(x: torch.Tensor, mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    # a 0-dim value is read on the host, as torch's masked_fill does
    return _mf_fwd(x, mask, _scalar(x, value.item()))


def _mft_fake(x, mask, value):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _mft_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])
    ctx.value_dtype = inputs[2].dtype


def _mft_autograd(ctx, grad):
    (mask,) = ctx.saved_tensors
    # the value's gradient: the upstream gradient summed over the masked positions
    g_value = _masked_fill(grad, mask.logical_not(), 0.0).sum().to(ctx.value_dtype)
    return _masked_fill(grad, mask, 0.0), None, g_value


_masked_fill_tensor = define_op("masked_fill_tensor", _mft_fwd, _mft_fake,
                                backward=_mft_autograd, setup_context=_mft_setup)


def masked_fill(input: torch.Tensor, mask: torch.Tensor, value) -> torch.Tensor:
    """torch.masked_fill (out of place); mask broadcasts (stride-0 views, no copies)."""
    if mask.dtype != torch.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.dim()} dimension(s).")
        return _masked_fill_tensor(input.expand(shape), mask.expand(shape), value)
    return _masked_fill(input.expand(shape), mask.expand(shape), _scalar(input, value))


def one_hot(tensor: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """torch.nn.functional.one_hot (int64 in, int64 out); not differentiable, as in torch."""
    if tensor.dtype != torch.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0 and num_classes <= 0:
        # torch raises for any num_classes <= 0 on an empty tensor (0 included)
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if num_classes == -1:
        num_classes = int(tensor.max()) + 1
    if tensor.numel():
        lo, hi = torch.aminmax(tensor)
        if int(lo) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(hi) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    flat = tensor.reshape(-1)
    out = torch.empty((flat.shape[0], num_classes), dtype=torch.int64, device=tensor.device)
    run_plan(OneHotPlan, D.OneHotDescriptor(flat.shape[0], num_classes), D.OneHotArgs(flat, out))
    return out.view(*tensor.shape, num_classes)


def _nz_fwd(x: torch.Tensor) -> torch.Tensor:
    shape = tuple(x.shape)
    n = x.numel()
    rank = max(x.dim(), 1)
    out = torch.empty((n, rank), dtype=torch.int64, device=x.device)
    count = torch.empty(1, dtype=torch.int64, device=x.device)
    run_plan(NonzeroPlan, D.CompactDescriptor(shape, x.dtype), D.NonzeroArgs(x, out, count))
    k = int(count)
    return out[:k].clone() if x.dim() else out[:k, :0].clone()


def _nz_fake(x):
    n = torch.library.get_ctx().new_dynamic_size()
    return x.new_empty((n, x.dim()), dtype=torch.int64)


_nonzero = define_op("nonzero", _nz_fwd, _nz_fake)


def nonzero(input: torch.Tensor, *, as_tuple: bool = False):
    """torch.nonzero: row-major coordinates of the nonzero elements (deterministic)."""
    out = _nonzero(input)
    if as_tuple:
        if input.dim() == 0:
            return (out.new_zeros(out.shape[0]),)
        return tuple(out.unbind(1))
    return out


def _ms_fwd(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    count = torch.empty(1, dtype=torch.int64, device=x.device)
    run_plan(MaskedSelectPlan, D.MaskedDataDescriptor(tuple(x.shape), x.dtype),
             D.MaskedSelectArgs(x, mask, out, count))
    return out[: int(count)].clone()


def _ms_fake(x, mask):
    return x.new_empty((torch.library.get_ctx().new_dynamic_size(),))


def _ms_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])
    ctx.shape = inputs[0].shape


def _ms_autograd(ctx, grad):
    (mask,) = ctx.saved_tensors
    zeros = grad.new_zeros(ctx.shape)
    return _masked_scatter(zeros, mask, grad), None


_masked_select = define_op("masked_select", _ms_fwd, _ms_fake, backward=_ms_autograd,
                           setup_context=_ms_setup)


def masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """torch.masked_select (row-major order; deterministic); mask and input broadcast."""
    if mask.dtype != torch.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    return _masked_select(input.expand(shape), mask.expand(shape))


def _msc_fwd(x: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    run_plan(MaskedScatterPlan, D.MaskedDataDescriptor(tuple(x.shape), x.dtype),
             D.MaskedScatterArgs(x, mask, source, out))
    return out


def _msc_fake(x, mask, source):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _msc_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])
    ctx.numel = inputs[2].numel()


def _msc_autograd(ctx, grad):
    (mask,) = ctx.saved_tensors
    g_src = _masked_select(grad, mask)
    # source elements past the mask's count get no gradient; cat keeps the traced graph free
    # of a guard on the count (a data-dependent size), which a slice assignment would need
    torch._check(g_src.shape[0] <= ctx.numel)
    pad = torch.cat((g_src, grad.new_zeros(ctx.numel - g_src.shape[0])))
    return _masked_fill(grad, mask, 0.0), None, pad


_masked_scatter = define_op("masked_scatter", _msc_fwd, _msc_fake, backward=_msc_autograd,
                            setup_context=_msc_setup)


def masked_scatter(input: torch.Tensor, mask: torch.Tensor,
                   source: torch.Tensor) -> torch.Tensor:
    """torch.masked_scatter (out of place): masked elements take source's values in row-major
    order."""
    if mask.dtype != torch.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype}")
    if source.dtype != input.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but "
                           f"got {input.dtype} and {source.dtype}")
    shape = torch.broadcast_shapes(input.shape, mask.shape)  # both broadcast, as in torch
    m = mask.expand(shape)
    V.host_check(m.sum() <= source.numel(), RuntimeError, "masked_scatter: expected source "
                 "to have at least as many elements as there are ones in mask")
    return _masked_scatter(input.expand(shape), m, source.reshape(-1))
