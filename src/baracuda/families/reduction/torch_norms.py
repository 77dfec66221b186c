"""Vector norms (torch.linalg.vector_norm, torch.linalg.norm's and torch.norm's vector cases),
logmeanexp, ptp, the bitwise reductions and torch.hash_tensor on ReductionPlan: torch's (or
JAX's) names, signatures, dtypes and errors. Matrix norms belong to a linalg family: they are
refused with `Unsupported`."""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import normalize_dim
from ...core.errors import ArgumentTypeError, Unsupported
from ...core.vocab import ElementKind
from .custom_ops_ext import reduce_ext_any
from .descriptors import ReductionKind as K
from .descriptors import default_out_element

__all__ = ["linalg_vector_norm", "linalg_norm", "norm", "logmeanexp", "ptp", "reduce_xor",
           "reduce_and", "reduce_or", "hash_tensor"]

_INF = float("inf")
#: the orders torch.linalg.matrix_norm computes (beside 'fro')
_MATRIX_ORDERS = ("nuc", 1, -1, 2, -2, _INF, -_INF)


def dims_of(input: torch.Tensor, dim, who: str) -> list[int]:
    """torch's dim argument (None, an int, or a sequence; an empty one means every dim) as
    sorted non-negative dims, with torch's IndexError / RuntimeError."""
    rank = input.dim()
    if dim is None:
        return list(range(rank))
    if isinstance(dim, torch.Tensor) or isinstance(dim, bool):
        raise TypeError(f"{who}(): argument 'dim' must be an int or a tuple of ints, "
                        f"not {type(dim).__name__}")
    if isinstance(dim, int):
        return [normalize_dim(dim, rank, who)] if rank else []
    norm = [normalize_dim(d, rank, who) for d in dim]
    if len(set(norm)) != len(norm):
        first = next(d for d in norm if norm.count(d) > 1)
        raise RuntimeError(f"dim {first} appears multiple times in the list of dims")
    return sorted(norm) if norm else list(range(rank))


def check_nonempty(input: torch.Tensor, dims, who: str) -> None:
    """torch's IndexError for a reduction without an identity over an empty dim."""
    for d in dims:
        if input.dim() and input.shape[d] == 0:
            raise IndexError(f"{who}(): Expected reduction dim {d} to have non-zero size.")


def arg_reduction_dims(input: torch.Tensor, dim, who: str) -> list[int]:
    """The dims an argmax / argmin reduces, with torch's errors: every dim for None (refused on
    an empty input), else the one int `dim`, which must not be empty."""
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
        raise TypeError(f"{who}(): argument 'dim' must be int, not {type(dim).__name__}")
    if input.dtype == torch.bool:
        raise RuntimeError(f"{who}(): does not support bool input")
    if dim is None:
        if input.numel() == 0:
            raise IndexError(f"{who}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        return list(range(input.dim()))
    dims = dims_of(input, dim, who)
    check_nonempty(input, dims, who)
    return dims


def dtype_name(dtype: torch.dtype) -> str:
    """torch's scalar-type name (Float, Long, Half ...), as its error messages print it."""
    return {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
            torch.bfloat16: "BFloat16", torch.int64: "Long", torch.int32: "Int",
            torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
            torch.bool: "Bool"}.get(dtype, str(dtype).removeprefix("torch."))


def _empty_dims(input: torch.Tensor, dims: list[int]) -> list[int]:
    if not input.dim():
        return []
    return [d for d in dims if input.shape[d] == 0]


def vector_norm_out(input: torch.Tensor, ord, dims: list[int], keepdim: bool, dtype,
                    mask: torch.Tensor | None = None, who: str = "linalg.vector_norm"):
    """The vector norm of `input` over `dims` (masked-out elements read as the identity)."""
    if not input.is_floating_point():
        raise RuntimeError(f"{who}: Expected a floating point or complex tensor as input. "
                           f"Got {dtype_name(input.dtype)}")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {type(ord).__name__}")
    out = input.dtype if dtype is None else dtype
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{who}: dtype should be floating point or complex, but got "
                               f"{dtype_name(dtype)}")
        if dtype != torch.promote_types(input.dtype, dtype):
            raise RuntimeError(f"{who}: the dtype of the input ({dtype_name(input.dtype)}) "
                               f"should be convertible without narrowing to the specified "
                               f"dtype ({dtype_name(dtype)})")
    p = float(ord)
    if math.isnan(p):
        raise Unsupported(f"baracuda.torch.{who}: ord must be a number or +-inf, got nan")
    if p < 0 or p == _INF:
        for d in _empty_dims(input, dims):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the "
                               f"dimension {d}because this dimension is empty and the "
                               "operation does not have an identity")
    return reduce_ext_any(input, mask, K.NORM.value, dims, bool(keepdim), 0.0, p, out)


def linalg_vector_norm(x: torch.Tensor, ord=2, dim=None, keepdim: bool = False, *,
                       dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.linalg.vector_norm: (sum |x|^ord)^(1/ord) over `dim` (every dim when None);
    ord 0 counts nonzeros, +-inf takes the largest / smallest |x|; f16 / bf16 accumulate in
    f32; `dtype` widens the input before reducing."""
    return vector_norm_out(x, ord, dims_of(x, dim, "linalg.vector_norm"), keepdim, dtype)


def _matrix(who: str, ord, dim) -> Unsupported:
    return Unsupported(f"baracuda.torch.{who}: the matrix norm ord={ord!r} over dims {dim} "
                       "belongs to a linalg family (singular values, column / row sums), not "
                       "to the reductions; expected a vector norm: a number ord over one dim "
                       "(or every element), or ord=None / 'fro'")


def linalg_norm(x: torch.Tensor, ord=None, dim=None, keepdim: bool = False, *,
                dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.linalg.norm's vector cases: ord None over every element (or one dim) is the
    2-norm, a number ord over one dim (or a 1-D input) the vector norm, ord None / 'fro' over
    two dims the Frobenius norm; the other matrix norms raise Unsupported."""
    who = "linalg.norm"
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim[0]}")
            return vector_norm_out(x, 2 if ord is None else ord, dims_of(x, dim, who),
                                   keepdim, dtype)
        if len(dim) != 2:
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or "
                               f"2. Got {list(dim)}")
        if ord is None or ord == "fro":
            return vector_norm_out(x, 2, dims_of(x, dim, who), keepdim, dtype)
        if ord in _MATRIX_ORDERS:
            raise _matrix(who, ord, dim)
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord is None:
        return vector_norm_out(x, 2, dims_of(x, None, who), keepdim, dtype)
    if x.dim() == 1 and not isinstance(ord, str):
        return vector_norm_out(x, ord, [0], keepdim, dtype)
    if x.dim() == 2:
        if ord == "fro":
            return vector_norm_out(x, 2, [0, 1], keepdim, dtype)
        if ord in _MATRIX_ORDERS:
            raise _matrix(who, ord, (0, 1))
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                       f"1D or 2D. Got {x.dim()}D.")


def norm(input: torch.Tensor, p="fro", dim=None, keepdim: bool = False,
         dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch.norm's vector cases: a number p is the vector norm over `dim` (every element
    when None), 'fro' the 2-norm over up to two dims; 'nuc' and the other matrix norms raise
    Unsupported."""
    who = "norm"
    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return vector_norm_out(input, 2, dims_of(input, dims, who), keepdim, dtype)
        dims = list(range(input.dim())) if dims is None else list(dims)
        if len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(map(str, dims))}")
        if p == "nuc":
            raise _matrix(who, p, tuple(dims))
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm_out(input, 2.0 if p is None else p, dims_of(input, dims, who), keepdim,
                           dtype)


def logmeanexp(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """jax.nn.logmeanexp: logsumexp(x) - log N over `dim` (every dim when None); integers
    give the default float; an empty reduction gives NaN."""
    dims = dims_of(x, dim, "logmeanexp")
    out = default_out_element(K.LOGMEANEXP, ElementKind.of(x.dtype)).torch_dtype
    return reduce_ext_any(x, None, K.LOGMEANEXP.value, dims, bool(keepdim), 0.0, 0.0, out)


def ptp(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """jnp.ptp: max - min over `dim` (every dim when None), in the input's dtype (integers
    wrap as JAX's do); the gradient splits dy evenly among the max ties and -dy among the
    min ties."""
    if x.dtype == torch.bool:
        raise TypeError("ptp(): bool input has no subtraction; expected a numeric dtype, got "
                        "torch.bool")
    dims = dims_of(x, dim, "ptp")
    if _empty_dims(x, dims):
        raise ValueError(f"ptp(): zero-size array to reduction operation which has no "
                         f"identity: expected non-empty reduced dims, got shape "
                         f"{tuple(x.shape)} over dims {dims}")
    return reduce_ext_any(x, None, K.PTP.value, dims, bool(keepdim), 0.0, 0.0, x.dtype)


def _bitwise(kind: K, x: torch.Tensor, dim, keepdim: bool, who: str) -> torch.Tensor:
    if x.is_floating_point():
        raise ArgumentTypeError(f"{who}(): bitwise reductions take integer or bool tensors; "
                                f"expected an integer or bool dtype, got {x.dtype}")
    dims = dims_of(x, dim, who)
    return reduce_ext_any(x, None, kind.value, dims, bool(keepdim), 0.0, 0.0, x.dtype)


def reduce_xor(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """jax.lax.reduce_xor over `dim` (every dim when None), exact in the input's dtype."""
    return _bitwise(K.XOR, x, dim, keepdim, "reduce_xor")


def reduce_and(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """jax.lax.reduce_and over `dim`: every bit set in every element (all-ones when empty)."""
    return _bitwise(K.AND, x, dim, keepdim, "reduce_and")


def reduce_or(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """jax.lax.reduce_or over `dim`: every bit set in some element."""
    return _bitwise(K.OR, x, dim, keepdim, "reduce_or")


def hash_tensor(input: torch.Tensor, dim=None, *, keepdim: bool = False,
                mode: int = 0) -> torch.Tensor:
    """torch.hash_tensor: the xor of the elements' bits, each widened to 64 bits first
    (floats through float64), as uint64; mode 0 (xor) only, as torch."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    dims = dims_of(input, None if dim == () else dim, "hash_tensor")
    for d in _empty_dims(input, dims):
        raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    y = reduce_ext_any(input, None, K.HASH.value, dims, bool(keepdim), 0.0, 0.0, torch.int64)
    return y.view(torch.uint64)
