"""torch.masked's reductions of strided tensors on ReductionPlan, one pass each: the mask is an
operand of the kernel (broadcast by strides), masked-out elements read as the reduction's
identity (sum 0, prod 1, amax / argmax / logsumexp the dtype's lowest, amin / argmin its
highest, norm 0, or inf for ord=-inf), or are left out of the count (mean, var, std: a fully
masked line gives NaN). Gradients are zero at masked-out elements."""

from __future__ import annotations

import torch

from .custom_ops_ext import reduce_ext_any
from .descriptors import ReductionKind as K
from .torch_norms import arg_reduction_dims, check_nonempty, dims_of, vector_norm_out

__all__ = ["masked_sum", "masked_prod", "masked_mean", "masked_amax", "masked_amin",
           "masked_argmax", "masked_argmin", "masked_var", "masked_std", "masked_logsumexp",
           "masked_norm"]

_PROMOTED = (torch.uint8, torch.bool, torch.int8, torch.int16, torch.int32)


def _mask(input: torch.Tensor, mask) -> torch.Tensor | None:
    """torch.masked's canonical mask: bool, broadcast to the input's shape (a view: stride 0
    along broadcast dims)."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"masked: mask must be a Tensor or None, got {type(mask).__name__}")
    if input.layout != torch.strided or mask.layout != torch.strided:
        raise ValueError(f"masked: expected strided tensors, got input {input.layout} and "
                         f"mask {mask.layout}")
    if mask.dim() > input.dim():
        raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                         "higher than of the input)")
    if mask.dtype != torch.bool:
        mask = mask.to(torch.bool)
    if mask.shape != input.shape:
        mask = torch.broadcast_to(mask, input.shape)
    return mask


def _dims(input: torch.Tensor, dim, who: str) -> list[int]:
    # dim=() reduces every dim in torch.masked (its _canonical_dim)
    return dims_of(input, None if dim == () else dim, who)


def _reduce(kind: K, input, dims, keepdim, mask, dtype, correction: float = 0.0):
    return reduce_ext_any(input, _mask(input, mask), kind.value, dims, bool(keepdim),
                         float(correction), 0.0, dtype)


def _summed(kind: K, input, dim, keepdim, dtype, mask, who):
    if dtype is None:
        dtype = torch.int64 if input.dtype in _PROMOTED else input.dtype
    return _reduce(kind, input, _dims(input, dim, who), keepdim, mask, dtype)


def masked_sum(input: torch.Tensor, dim=None, *, keepdim: bool = False,
               dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.sum: masked-out elements count as 0; integers and bool sum in int64."""
    return _summed(K.SUM, input, dim, keepdim, dtype, mask, "sum")


def masked_prod(input: torch.Tensor, dim=None, *, keepdim: bool = False,
                dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.prod: masked-out elements count as 1."""
    return _summed(K.PROD, input, dim, keepdim, dtype, mask, "prod")


def masked_mean(input: torch.Tensor, dim=None, *, keepdim: bool = False,
                dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.mean: the sum of the kept elements over their count (NaN for a fully
    masked line)."""
    source = "Input" if dtype is None else "Optional"
    dtype = input.dtype if dtype is None else dtype
    if not dtype.is_floating_point:
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    return _reduce(K.MEAN, input, _dims(input, dim, "mean"), keepdim, mask, dtype)


def _extreme(kind: K, input, dim, keepdim, dtype, mask, who):
    dims = _dims(input, dim, who)
    check_nonempty(input, dims, who)
    y = _reduce(kind, input, dims, keepdim, mask, input.dtype)
    return y if dtype is None or dtype == y.dtype else y.to(dtype)


def masked_amax(input: torch.Tensor, dim=None, *, keepdim: bool = False,
                dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.amax: masked-out elements read as -inf (an integer dtype's lowest)."""
    return _extreme(K.AMAX, input, dim, keepdim, dtype, mask, "amax")


def masked_amin(input: torch.Tensor, dim=None, *, keepdim: bool = False,
                dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.amin: masked-out elements read as inf (an integer dtype's highest)."""
    return _extreme(K.AMIN, input, dim, keepdim, dtype, mask, "amin")


def _arg(kind: K, input, dim, keepdim, dtype, mask, who):
    dims = arg_reduction_dims(input, dim, who)
    y = _reduce(kind, input, dims, keepdim, mask, torch.int64)
    # torch.masked returns the indices in `dtype`, the input's when None
    return y.to(input.dtype if dtype is None else dtype)


def masked_argmax(input: torch.Tensor, dim: int | None = None, *, keepdim: bool = False,
                  dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.argmax: the first index of the largest kept element, in `dtype` (the
    input's by default, as torch.masked)."""
    return _arg(K.ARGMAX, input, dim, keepdim, dtype, mask, "argmax")


def masked_argmin(input: torch.Tensor, dim: int | None = None, *, keepdim: bool = False,
                  dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.argmin."""
    return _arg(K.ARGMIN, input, dim, keepdim, dtype, mask, "argmin")


def _moment(kind: K, input, dim, unbiased, correction, keepdim, dtype, mask, who):
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{who}: Only one of unbiased and correction may be given")
    corr = 1.0
    if unbiased is not None:
        corr = 1.0 if unbiased else 0.0
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point else torch.float32
    if not dtype.is_floating_point:
        raise RuntimeError(f"{who}: expected a floating point dtype, got {dtype}")
    if input.dtype != dtype:
        input = input.to(dtype)
    return _reduce(kind, input, _dims(input, dim, who), keepdim, mask, dtype, corr)


def masked_var(input: torch.Tensor, dim=None, unbiased: bool | None = None, *,
               correction: float | None = None, keepdim: bool = False,
               dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.var: over the kept elements, divided by max(count - correction, 0)."""
    return _moment(K.VAR, input, dim, unbiased, correction, keepdim, dtype, mask, "var")


def masked_std(input: torch.Tensor, dim=None, unbiased: bool | None = None, *,
               correction: float | None = None, keepdim: bool = False,
               dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.std: sqrt of masked.var."""
    return _moment(K.STD, input, dim, unbiased, correction, keepdim, dtype, mask, "std")


def masked_logsumexp(input: torch.Tensor, dim=None, *, keepdim: bool = False,
                     dtype: torch.dtype | None = None, mask: torch.Tensor | None = None):
    """torch.masked.logsumexp: masked-out elements read as -inf (a fully masked line gives
    -inf)."""
    out = input.dtype if input.is_floating_point() else torch.get_default_dtype()
    y = _reduce(K.LOGSUMEXP, input, _dims(input, dim, "logsumexp"), keepdim, mask, out)
    dtype = input.dtype if dtype is None else dtype  # (torch.masked casts to it, ints too)
    return y if dtype == y.dtype else y.to(dtype)


def masked_norm(input: torch.Tensor, ord: float | None = 2.0, dim=None, *,
                keepdim: bool = False, dtype: torch.dtype | None = None,
                mask: torch.Tensor | None = None):
    """torch.masked.norm: the vector norm with masked-out elements read as 0 (inf for
    ord=-inf)."""
    return vector_norm_out(input, ord, _dims(input, dim, "norm"), keepdim, dtype,
                           _mask(input, mask))
