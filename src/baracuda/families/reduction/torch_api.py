"""torch's reductions on ReductionPlan, differentiable through ReductionBackwardPlan: torch's
names, signatures, dtype promotion and errors."""

from __future__ import annotations

import builtins

import torch

from ...core.errors import Unsupported
from ...core.vocab import ElementKind
from .custom_ops import reduce2_any, reduce_any
from .descriptors import NO_IDENTITY, default_out_element
from .descriptors import ReductionKind as K
from .torch_integrate import trapezoid, trapz
from .torch_masked import (  # noqa: F401
    masked_amax,
    masked_amin,
    masked_argmax,
    masked_argmin,
    masked_logsumexp,
    masked_mean,
    masked_norm,
    masked_prod,
    masked_std,
    masked_sum,
    masked_var,
)
from .torch_norms import (  # noqa: F401
    arg_reduction_dims,
    check_nonempty,
    dims_of,
    hash_tensor,
    linalg_norm,
    linalg_vector_norm,
    logmeanexp,
    norm,
    ptp,
    reduce_and,
    reduce_or,
    reduce_xor,
)
from .torch_out import copy_into, reduce_into

__all__ = ["sum", "mean", "prod", "nansum", "nanmean", "amax", "amin", "max", "min", "argmax",
           "argmin", "all", "any", "count_nonzero", "var", "std", "var_mean", "std_mean",
           "logsumexp", "aminmax", "trapezoid", "trapz"]
__all__ += ["linalg.vector_norm", "linalg.norm", "norm", "logmeanexp", "ptp",  # noqa: F822
            "reduce_xor", "reduce_and", "reduce_or", "hash_tensor", "masked.sum",  # noqa: F822
            "masked.prod", "masked.mean", "masked.amax", "masked.amin",  # noqa: F822
            "masked.argmax", "masked.argmin", "masked.var", "masked.std",  # noqa: F822
            "masked.logsumexp", "masked.norm"]  # noqa: F822

_FLOAT_ONLY = {
    K.MEAN: "mean(): could not infer output dtype. Input dtype must be either a floating point "
            "or complex dtype. Got: {}",
    K.NANMEAN: "nanmean(): expected input to have floating point or complex dtype but got {}",
    K.VAR: "std and var only support floating point and complex dtypes",
}


def _check_dtype(kind: K, input: torch.Tensor) -> None:
    if kind in _FLOAT_ONLY and not input.is_floating_point():
        name = str(input.dtype).removeprefix("torch.").capitalize()
        name = {"Int32": "Int", "Int64": "Long", "Int16": "Short", "Int8": "Char",
                "Uint8": "Byte", "Bool": "Bool"}.get(name, name)
        raise RuntimeError(_FLOAT_ONLY[kind].format(name))


def _check_nonempty(kind: K, input: torch.Tensor, dims: list[int], who: str) -> None:
    if kind in NO_IDENTITY:
        check_nonempty(input, dims, who)


def _reduce(kind: K, input: torch.Tensor, dims: list[int], keepdim: bool,
            dtype: torch.dtype | None = None, correction: float = 0.0, out=None,
            who: str = "") -> torch.Tensor:
    if out is not None:  # torch's out= variant (torch_out.py); dtype= is the explicit one
        return reduce_into(kind, input, dims, keepdim, dtype, correction, out, who)
    if dtype is None:
        dtype = default_out_element(kind, ElementKind.of(input.dtype)).torch_dtype
    elif input.is_floating_point() and not dtype.is_floating_point:
        input = input.to(dtype)  # torch casts each element, then reduces (no float sum)
    return reduce_any(input, kind.value, dims, bool(keepdim), float(correction), dtype)


def sum(input: torch.Tensor, dim=None, keepdim: bool = False, *,
        dtype: torch.dtype | None = None, out=None) -> torch.Tensor:
    """torch.sum on ReductionPlan: integers and bool sum in int64 (with out=, in out's
    dtype, as torch)."""
    return _reduce(K.SUM, input, dims_of(input, dim, "sum"), keepdim, dtype, out=out, who="sum")


def nansum(input: torch.Tensor, dim=None, keepdim: bool = False, *,
           dtype: torch.dtype | None = None, out=None) -> torch.Tensor:
    """torch.nansum: NaNs count as zero."""
    return _reduce(K.NANSUM, input, dims_of(input, dim, "nansum"), keepdim, dtype, out=out,
                   who="nansum")


def mean(input: torch.Tensor, dim=None, keepdim: bool = False, *,
         dtype: torch.dtype | None = None, out=None) -> torch.Tensor:
    """torch.mean: floats only (or a float dtype=); an empty reduction gives NaN."""
    if dtype is None:
        _check_dtype(K.MEAN, input)
    elif not dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {dtype}")
    return _reduce(K.MEAN, input, dims_of(input, dim, "mean"), keepdim, dtype, out=out,
                   who="mean")


def nanmean(input: torch.Tensor, dim=None, keepdim: bool = False, *,
            dtype: torch.dtype | None = None, out=None) -> torch.Tensor:
    """torch.nanmean: the mean of the non-NaN elements."""
    _check_dtype(K.NANMEAN, input)
    if dtype is not None and dtype != input.dtype:
        input = input.to(dtype)
    return _reduce(K.NANMEAN, input, dims_of(input, dim, "nanmean"), keepdim, dtype, out=out,
                   who="nanmean")


def prod(input: torch.Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: torch.dtype | None = None, out=None) -> torch.Tensor:
    """torch.prod over every element or one dim; integers and bool multiply in int64."""
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return _reduce(K.PROD, input, dims_of(input, dim, "prod"), keepdim, dtype, out=out,
                   who="prod")


def _extreme(kind: K, input: torch.Tensor, dim, keepdim: bool, who: str,
             out=None) -> torch.Tensor:
    dims = dims_of(input, None if dim == () or dim == [] else dim, who)
    _check_nonempty(kind, input, dims, who)
    return _reduce(kind, input, dims, keepdim, out=out, who=who)


def amax(input: torch.Tensor, dim=(), keepdim: bool = False, *, out=None) -> torch.Tensor:
    """torch.amax: NaN propagates; the gradient splits evenly among ties."""
    return _extreme(K.AMAX, input, dim, keepdim, "amax", out)


def amin(input: torch.Tensor, dim=(), keepdim: bool = False, *, out=None) -> torch.Tensor:
    """torch.amin."""
    return _extreme(K.AMIN, input, dim, keepdim, "amin", out)


def _elementwise(input: torch.Tensor, other: torch.Tensor, who: str) -> torch.Tensor:
    """torch's binary form max(input, other): the elementwise maximum / minimum, through the
    registered operator of the family that owns it (families don't import each other)."""
    op = getattr(torch.ops.baracuda, "ew_binary", None)
    if op is None:
        raise Unsupported(f"baracuda.torch.{who}(input, other): the elementwise "
                          f"{'maximum' if who == 'max' else 'minimum'} needs the elementwise "
                          "family, which is not loaded")
    return op(input, other, "maximum" if who == "max" else "minimum", 1.0, None)


def _max_min(kind_all: K, kind_dim: K, input: torch.Tensor, dim, keepdim, who: str,
             other: torch.Tensor | None = None, out=None):
    if other is not None or isinstance(dim, torch.Tensor):
        other = dim if other is None else other
        if out is not None:
            return copy_into(_elementwise(input, other, who), out, (input, other), who)
        return _elementwise(input, other, who)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{who}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return _reduce(kind_all, input, list(range(input.dim())), False, out=out, who=who)
    d = dims_of(input, int(dim), who)
    _check_nonempty(kind_dim, input, d, who)
    if out is not None:
        return reduce_into(kind_dim, input, d, bool(keepdim), None, 0.0, out, who)
    values, indices = reduce2_any(input, kind_dim.value, d, bool(keepdim), 0.0)
    types = torch.return_types.max if kind_dim is K.MAX else torch.return_types.min
    return types((values, indices))


def max(input: torch.Tensor, dim=None, keepdim: bool = False, *, other=None, out=None):
    """torch.max: the largest element, or (values, indices) along `dim` (the first maximal
    index; a NaN's where the line holds NaN), or with a tensor `other` the elementwise
    maximum."""
    return _max_min(K.MAX_ALL, K.MAX, input, dim, keepdim, "max", other, out)


def min(input: torch.Tensor, dim=None, keepdim: bool = False, *, other=None, out=None):
    """torch.min: the smallest element, or (values, indices) along `dim`, or with a tensor
    `other` the elementwise minimum."""
    return _max_min(K.MIN_ALL, K.MIN, input, dim, keepdim, "min", other, out)


def _arg(kind: K, input: torch.Tensor, dim, keepdim: bool, who: str,
         out=None) -> torch.Tensor:
    dims = arg_reduction_dims(input, None if dim is None else int(dim), who)
    return _reduce(kind, input, dims, keepdim, out=out, who=who)


def argmax(input: torch.Tensor, dim: int | None = None, keepdim: bool = False, *,
           out=None) -> torch.Tensor:
    """torch.argmax: the first maximal index (a NaN's); over every element when dim is None."""
    return _arg(K.ARGMAX, input, dim, keepdim, "argmax", out)


def argmin(input: torch.Tensor, dim: int | None = None, keepdim: bool = False, *,
           out=None) -> torch.Tensor:
    """torch.argmin."""
    return _arg(K.ARGMIN, input, dim, keepdim, "argmin", out)


def _logical(kind: K, input: torch.Tensor, dim, keepdim: bool, who: str,
             out=None) -> torch.Tensor:
    if isinstance(dim, (tuple, list)) and not dim:
        # torch reduces no dim here (each element's truth): a reduction over a unit axis
        return _reduce(kind, input.unsqueeze(-1), [input.dim()], False, out=out, who=who)
    return _reduce(kind, input, dims_of(input, dim, who), keepdim, out=out, who=who)


def all(input: torch.Tensor, dim=None, keepdim: bool = False, *, out=None) -> torch.Tensor:
    """torch.all: bool (uint8 for uint8 input); dim=() tests each element."""
    return _logical(K.ALL, input, dim, keepdim, "all", out)


def any(input: torch.Tensor, dim=None, keepdim: bool = False, *, out=None) -> torch.Tensor:
    """torch.any: bool (uint8 for uint8 input); dim=() tests each element."""
    return _logical(K.ANY, input, dim, keepdim, "any", out)


def count_nonzero(input: torch.Tensor, dim=None) -> torch.Tensor:
    """torch.count_nonzero: int64."""
    return _reduce(K.COUNT_NONZERO, input, dims_of(input, dim, "count_nonzero"), False)


def _correction(dim, unbiased, correction, who: str):
    """torch's var/std overloads: (dim, unbiased, keepdim), (unbiased), (dim, *, correction)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{who}: can't specify both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, float(correction)


def _moments(kind: K, input: torch.Tensor, dim, unbiased, keepdim, correction, who: str,
             out=None):
    _check_dtype(K.VAR, input)
    dim, corr = _correction(dim, unbiased, correction, who)
    dims = dims_of(input, dim, who)
    if kind in (K.VAR_MEAN, K.STD_MEAN):
        return reduce2_any(input, kind.value, dims, bool(keepdim), corr)
    return _reduce(kind, input, dims, keepdim, correction=corr, out=out, who=who)


def var(input: torch.Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, out=None) -> torch.Tensor:
    """torch.var: M2 / max(N - correction, 0) (correction 1 unless unbiased=False)."""
    return _moments(K.VAR, input, dim, unbiased, keepdim, correction, "var", out)


def std(input: torch.Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, out=None) -> torch.Tensor:
    """torch.std: sqrt(var)."""
    return _moments(K.STD, input, dim, unbiased, keepdim, correction, "std", out)


def var_mean(input: torch.Tensor, dim=None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None):
    """torch.var_mean: (var, mean) in one pass."""
    return _moments(K.VAR_MEAN, input, dim, unbiased, keepdim, correction, "var_mean")


def std_mean(input: torch.Tensor, dim=None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None):
    """torch.std_mean: (std, mean) in one pass."""
    return _moments(K.STD_MEAN, input, dim, unbiased, keepdim, correction, "std_mean")


def logsumexp(input: torch.Tensor, dim, keepdim: bool = False, *, out=None) -> torch.Tensor:
    """torch.logsumexp: max + log(sum(exp(x - max))); integers give the default float."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not "
                        "NoneType")
    return _reduce(K.LOGSUMEXP, input, dims_of(input, dim, "logsumexp"), keepdim, out=out,
                   who="logsumexp")


def aminmax(input: torch.Tensor, *, dim: int | None = None, keepdim: bool = False, out=None):
    """torch.aminmax: (min, max) in one pass."""
    dims = dims_of(input, dim, "aminmax")
    empty = input.numel() == 0 if dim is None else (
        input.dim() > 0 and builtins.any(input.shape[d] == 0 for d in dims))
    if empty:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if out is not None:
        return reduce_into(K.AMINMAX, input, dims, bool(keepdim), None, 0.0, out, "aminmax")
    lo, hi = reduce2_any(input, K.AMINMAX.value, dims, bool(keepdim), 0.0)
    return torch.return_types.aminmax((lo, hi))
