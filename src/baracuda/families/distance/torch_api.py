"""torch.cdist, nn.functional.pdist / pairwise_distance / cosine_similarity and torch.dist on
the distance plans, differentiable.

The frontends broadcast and lay the operands out as rows ([batch, rows, cols] for cdist,
[rows, cols] otherwise; broadcast dims stay stride-0 views where they can), so the ops'
gradients come back through torch's own view and expand rules (expand's backward sums over
the broadcast dims).
"""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from .descriptors import (
    DIRECT_FLOATS,
    CdistArgs,
    CdistBackwardArgs,
    CdistBackwardDescriptor,
    CdistDescriptor,
    CosineArgs,
    CosineBackwardArgs,
    CosineBackwardDescriptor,
    CosineDescriptor,
    EuclidCdistArgs,
    EuclidCdistBackwardArgs,
    EuclidCdistBackwardDescriptor,
    EuclidCdistDescriptor,
    RowDistArgs,
    RowDistBackwardArgs,
    RowDistBackwardDescriptor,
    RowDistDescriptor,
    no_identity,
)
from .plans import (
    CdistBackwardPlan,
    CdistPlan,
    CosineBackwardPlan,
    CosinePlan,
    EuclidCdistBackwardPlan,
    EuclidCdistPlan,
    RowDistBackwardPlan,
    RowDistPlan,
)

__all__ = ["cdist", "pdist", "pairwise_distance", "cosine_similarity", "dist"]

#: torch.cdist's compute modes (torch's integer codes)
COMPUTE_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                 "donot_use_mm_for_euclid_dist": 2}
#: torch uses the matmul form in mode 0 past this many rows on either side
MM_MIN_ROWS = 25
_DIRECT_DTYPES = tuple(k.torch_dtype for k in DIRECT_FLOATS)
_SCALAR_NAMES = {torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float32: "Float",
                 torch.float64: "Double", torch.int64: "Long", torch.int32: "Int",
                 torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
                 torch.bool: "Bool"}


def _scalar_name(dtype: torch.dtype) -> str:
    return _SCALAR_NAMES.get(dtype, str(dtype).removeprefix("torch."))


# -- direct cdist / pdist -------------------------------------------------------------------------

def _cdist_direct_impl(x: torch.Tensor, y: torch.Tensor, p: float) -> torch.Tensor:
    out = torch.empty(x.shape[0], x.shape[1], y.shape[1], dtype=x.dtype, device=x.device)
    desc = CdistDescriptor.cached(x.shape[0], x.shape[1], y.shape[1], x.shape[2], p, x.dtype)
    run_plan(CdistPlan, desc, CdistArgs(x=x, y=y, out=out))
    return out


def _cdist_direct_fake(x: torch.Tensor, y: torch.Tensor, p: float) -> torch.Tensor:
    return x.new_empty(x.shape[0], x.shape[1], y.shape[1])


def _cdist_direct_bwd_impl(grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                           out: torch.Tensor, p: float) -> tuple[torch.Tensor, torch.Tensor]:
    gx, gy = torch.empty_like(x, memory_format=torch.contiguous_format), torch.empty_like(
        y, memory_format=torch.contiguous_format)
    desc = CdistBackwardDescriptor.cached(x.shape[0], x.shape[1], y.shape[1], x.shape[2], p,
                                          x.dtype)
    run_plan(CdistBackwardPlan, desc, CdistBackwardArgs(grad=grad, x=x, out=out, gx=gx, y=y,
                                                        gy=gy))
    return gx, gy


def _cdist_direct_bwd_fake(grad, x, y, out, p):
    return x.new_empty(x.shape), y.new_empty(y.shape)


_cdist_direct_backward = define_op("cdist_direct_backward", _cdist_direct_bwd_impl,
                                   _cdist_direct_bwd_fake)


def _save_xy(ctx, inputs, output):
    x, y, *rest = inputs
    ctx.save_for_backward(x, y, output)
    ctx.rest = rest


def _cdist_direct_autograd(ctx, grad):
    x, y, out = ctx.saved_tensors
    gx, gy = _cdist_direct_backward(grad, x, y, out, *ctx.rest)
    return gx, gy, None


_cdist_direct = define_op("cdist_direct", _cdist_direct_impl, _cdist_direct_fake,
                          backward=_cdist_direct_autograd, setup_context=_save_xy)


def _pdist_impl(x: torch.Tensor, p: float) -> torch.Tensor:
    n = x.shape[0]
    out = torch.empty(n * (n - 1) // 2, dtype=x.dtype, device=x.device)
    desc = CdistDescriptor.cached(1, n, n, x.shape[1], p, x.dtype, True)
    run_plan(CdistPlan, desc, CdistArgs(x=x, out=out))
    return out


def _pdist_fake(x: torch.Tensor, p: float) -> torch.Tensor:
    n = x.shape[0]
    return x.new_empty(n * (n - 1) // 2)


def _pdist_bwd_impl(grad: torch.Tensor, x: torch.Tensor, out: torch.Tensor,
                    p: float) -> torch.Tensor:
    gx = torch.empty_like(x, memory_format=torch.contiguous_format)
    n = x.shape[0]
    desc = CdistBackwardDescriptor.cached(1, n, n, x.shape[1], p, x.dtype, True)
    run_plan(CdistBackwardPlan, desc, CdistBackwardArgs(grad=grad, x=x, out=out, gx=gx))
    return gx


def _pdist_bwd_fake(grad, x, out, p):
    return x.new_empty(x.shape)


_pdist_backward = define_op("pdist_backward", _pdist_bwd_impl, _pdist_bwd_fake)


def _pdist_setup(ctx, inputs, output):
    x, p = inputs
    ctx.save_for_backward(x, output)
    ctx.p = p


def _pdist_autograd(ctx, grad):
    x, out = ctx.saved_tensors
    return _pdist_backward(grad, x, out, ctx.p), None


_pdist = define_op("pdist", _pdist_impl, _pdist_fake, backward=_pdist_autograd,
                   setup_context=_pdist_setup)


# -- cdist's matmul form -----------------------------------------------------------------------

def _cdist_mm_impl(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], x.shape[1], y.shape[1], dtype=x.dtype, device=x.device)
    desc = EuclidCdistDescriptor.cached(x.shape[0], x.shape[1], y.shape[1], x.shape[2],
                                        x.dtype)
    run_plan(EuclidCdistPlan, desc, EuclidCdistArgs(x=x, y=y, out=out))
    return out


def _cdist_mm_fake(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0], x.shape[1], y.shape[1])


def _cdist_mm_bwd_impl(grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                       out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    gx, gy = torch.empty_like(x, memory_format=torch.contiguous_format), torch.empty_like(
        y, memory_format=torch.contiguous_format)
    desc = EuclidCdistBackwardDescriptor.cached(x.shape[0], x.shape[1], y.shape[1],
                                                x.shape[2], x.dtype)
    run_plan(EuclidCdistBackwardPlan, desc,
             EuclidCdistBackwardArgs(grad=grad, x=x, y=y, out=out, gx=gx, gy=gy))
    return gx, gy


def _cdist_mm_bwd_fake(grad, x, y, out):
    return x.new_empty(x.shape), y.new_empty(y.shape)


_cdist_mm_backward = define_op("cdist_mm_backward", _cdist_mm_bwd_impl, _cdist_mm_bwd_fake)


def _cdist_mm_autograd(ctx, grad):
    x, y, out = ctx.saved_tensors
    return _cdist_mm_backward(grad, x, y, out)


_cdist_mm = define_op("cdist_mm", _cdist_mm_impl, _cdist_mm_fake, backward=_cdist_mm_autograd,
                      setup_context=_save_xy)


# -- row distances and cosine -----------------------------------------------------------------

def _rowdist_impl(x: torch.Tensor, y: torch.Tensor, p: float, eps: float,
                  reduce_all: bool) -> torch.Tensor:
    shape = () if reduce_all else (x.shape[0],)
    out = torch.empty(shape, dtype=x.dtype, device=x.device)
    desc = RowDistDescriptor.cached(x.shape[0], x.shape[1], p, eps, x.dtype, reduce_all)
    run_plan(RowDistPlan, desc, RowDistArgs(x=x, y=y, out=out))
    return out


def _rowdist_fake(x, y, p: float, eps: float, reduce_all: bool):
    return x.new_empty(() if reduce_all else (x.shape[0],))


def _rowdist_bwd_impl(grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor,
                      p: float, eps: float,
                      reduce_all: bool) -> tuple[torch.Tensor, torch.Tensor]:
    gx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gy = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    desc = RowDistBackwardDescriptor.cached(x.shape[0], x.shape[1], p, eps, x.dtype,
                                            reduce_all)
    run_plan(RowDistBackwardPlan, desc,
             RowDistBackwardArgs(grad=grad, x=x, y=y, out=out, gx=gx, gy=gy))
    return gx, gy


def _rowdist_bwd_fake(grad, x, y, out, p, eps, reduce_all):
    return x.new_empty(x.shape), x.new_empty(x.shape)


_rowdist_backward = define_op("row_distance_backward", _rowdist_bwd_impl, _rowdist_bwd_fake)


def _rowdist_autograd(ctx, grad):
    x, y, out = ctx.saved_tensors
    gx, gy = _rowdist_backward(grad, x, y, out, *ctx.rest)
    return gx, gy, None, None, None


_rowdist = define_op("row_distance", _rowdist_impl, _rowdist_fake, backward=_rowdist_autograd,
                     setup_context=_save_xy)


def _cosine_impl(x: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    desc = CosineDescriptor.cached(x.shape[0], x.shape[1], eps, x.dtype)
    run_plan(CosinePlan, desc, CosineArgs(x=x, y=y, out=out))
    return out


def _cosine_fake(x, y, eps: float):
    return x.new_empty(x.shape[0])


def _cosine_bwd_impl(grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                     eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    gx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gy = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    desc = CosineBackwardDescriptor.cached(x.shape[0], x.shape[1], eps, x.dtype)
    run_plan(CosineBackwardPlan, desc, CosineBackwardArgs(grad=grad, x=x, y=y, gx=gx, gy=gy))
    return gx, gy


def _cosine_bwd_fake(grad, x, y, eps):
    return x.new_empty(x.shape), x.new_empty(x.shape)


_cosine_backward = define_op("cosine_similarity_backward", _cosine_bwd_impl, _cosine_bwd_fake)


def _cosine_setup(ctx, inputs, output):
    x, y, eps = inputs
    ctx.save_for_backward(x, y)
    ctx.eps = eps


def _cosine_autograd(ctx, grad):
    x, y = ctx.saved_tensors
    gx, gy = _cosine_backward(grad, x, y, ctx.eps)
    return gx, gy, None


_cosine = define_op("cosine_similarity", _cosine_impl, _cosine_fake, backward=_cosine_autograd,
                    setup_context=_cosine_setup)


# -- frontends ------------------------------------------------------------------------------------

def _as_rows(t: torch.Tensor, shape: tuple[int, ...], dim: int) -> torch.Tensor:
    """t broadcast to `shape`, `dim` moved last, as [rows, cols] (a view where strides allow;
    reshape copies otherwise)."""
    t = t.expand(shape)
    if len(shape) == 0:
        return t.reshape(1, 1)
    dim %= len(shape)
    rows = math.prod(shape[:dim] + shape[dim + 1:])
    return t.movedim(dim, -1).reshape(rows, shape[dim])


_CATEGORY = {torch.bool: 0}


def _category(dtype: torch.dtype) -> int:
    return _CATEGORY.get(dtype, 2 if dtype.is_floating_point else 1)


def _result_type(a: torch.Tensor, b: torch.Tensor) -> torch.dtype:
    """torch.result_type of two tensors (which torch.compile cannot trace): a 0-d operand
    decides the dtype only when its category (bool < int < float) is higher."""
    if (a.dim() == 0) == (b.dim() == 0):
        return torch.promote_types(a.dtype, b.dtype)
    big, small = (a, b) if a.dim() else (b, a)
    return small.dtype if _category(small.dtype) > _category(big.dtype) else big.dtype


def _broadcast(a: torch.Size, b: torch.Size) -> tuple[int, ...]:
    """torch's broadcast shape of two operands, with torch's message for a mismatch."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                               f"({pb[i]}) at non-singleton dimension {i}")
        out.append(pb[i] if pa[i] == 1 else pa[i])
    return tuple(reversed(out))


def _check_p_number(p, who: str) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{who}(): argument 'p' must be a number, got {type(p).__name__}")
    return float(p)


def cdist(x1: torch.Tensor, x2: torch.Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> torch.Tensor:
    """torch.cdist: p-norm distances between the rows of x1 [*, P, M] and x2 [*, R, M] (batch
    dims broadcast); p = 2 takes the matmul form where torch does (compute_mode, more than 25
    rows on either side), the direct tiled form otherwise. Differentiable in both inputs."""
    if compute_mode not in COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = COMPUTE_MODES[compute_mode]
    p = _check_p_number(p, "cdist")
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_scalar_name(t.dtype)}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(x1.dtype)} but found "
                           f"{_scalar_name(x2.dtype)}")
    if math.isnan(p) or p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    (P, M), R = x1.shape[-2:], x2.shape[-2]
    B = math.prod(batch)
    x = x1.expand(*batch, P, M).reshape(B, P, M)
    y = x2.expand(*batch, R, M).reshape(B, R, M)
    empty = x1.numel() == 0 or x2.numel() == 0
    use_mm = (not empty and p == 2
              and (mode == 1 or (mode == 0 and (P > MM_MIN_ROWS or R > MM_MIN_ROWS))))
    if use_mm:
        out = _cdist_mm(x, y)
    else:
        if x1.dtype not in _DIRECT_DTYPES:
            raise NotImplementedError(f'"{_kernel_name("cdist", x1)}" not implemented for '
                                      f"'{_scalar_name(x1.dtype)}'")
        out = _cdist_direct(x, y, p)
    return out.reshape(*batch, P, R)


def _kernel_name(op: str, t: torch.Tensor) -> str:
    """torch's name for its kernel in a dtype error: "cdist" on the CPU, "cdist_cuda" there."""
    return f"{op}_cuda" if t.is_cuda else op


def pdist(input: torch.Tensor, p: float = 2) -> torch.Tensor:
    """nn.functional.pdist: p-norm distances between the rows of input [N, M], pairs i < j in
    row-major order ([N (N - 1) / 2]). Differentiable."""
    p = _check_p_number(p, "pdist")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if math.isnan(p) or p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype not in _DIRECT_DTYPES:
        raise NotImplementedError(f'"{_kernel_name("pdist", input)}" not implemented for '
                                  f"'{_scalar_name(input.dtype)}'")
    return _pdist(input, p)


def _no_identity_error(p: float, where: str) -> RuntimeError:
    return RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on {where} because "
                        "the operation does not have an identity")


def _norm_operands(x1, x2, who: str):
    """x1 - x2's dtype (a float; ints promote to the default float dtype, as `+ eps` does)."""
    if x1.dtype == torch.bool and x2.dtype == torch.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    return _result_type(x1, x2)


def pairwise_distance(x1: torch.Tensor, x2: torch.Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> torch.Tensor:
    """nn.functional.pairwise_distance: ||x1 - x2 + eps||_p over the last dim of the
    broadcast operands. Differentiable in both."""
    p = _check_p_number(p, "pairwise_distance")
    dtype = _norm_operands(x1, x2, "pairwise_distance")
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()  # (int - int) + eps
    shape = _broadcast(x1.shape, x2.shape)
    cols = shape[-1] if shape else 1
    if cols == 0 and no_identity(p):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the dimension "
                           "-1because this dimension is empty and the operation does not "
                           "have an identity")
    x = _as_rows(x1.to(dtype), shape, -1)
    y = _as_rows(x2.to(dtype), shape, -1)
    out = _rowdist(x, y, p, float(eps), False)
    lead = shape[:-1]
    if keepdim and shape:
        lead = (*lead, 1)
    return out.reshape(lead)


def dist(input: torch.Tensor, other: torch.Tensor, p: float = 2) -> torch.Tensor:
    """torch.dist: ||input - other||_p over every element of the broadcast operands (0-d)."""
    p = _check_p_number(p, "dist")
    dtype = _norm_operands(input, other, "dist")
    if not dtype.is_floating_point:
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {_scalar_name(dtype)} instead.")
    shape = _broadcast(input.shape, other.shape)
    if math.prod(shape) == 0 and no_identity(p):
        raise _no_identity_error(p, "an empty tensor")
    x = _as_rows(input.to(dtype), shape, -1)
    y = _as_rows(other.to(dtype), shape, -1)
    return _rowdist(x, y, p, 0.0, True)


def cosine_similarity(x1: torch.Tensor, x2: torch.Tensor, dim: int = 1,
                      eps: float = 1e-8) -> torch.Tensor:
    """nn.functional.cosine_similarity with torch's formula: sum(x1 / max(|x1|, eps) *
    x2 / max(|x2|, eps)) along `dim` of the broadcast operands. Differentiable in both."""
    dtype = _result_type(x1, x2)
    if not dtype.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{_scalar_name(dtype)}")
    shape = _broadcast(x1.shape, x2.shape)
    d = normalize_dim(dim, len(shape), "cosine_similarity")
    x = _as_rows(x1.to(dtype), shape, d)
    y = _as_rows(x2.to(dtype), shape, d)
    out = _cosine(x, y, float(eps))
    return out.reshape(shape[:d] + shape[d + 1:])
