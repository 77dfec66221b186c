"""torch.tril / triu (with out=), diag, diagflat, diag_embed and block_diag on
MatrixPatternPlan, differentiable: a triangle's gradient is the same triangle of the gradient,
an embedding's the diagonal copy of the gradient and the reverse, block_diag's the diagonal
blocks of the gradient (views)."""

from __future__ import annotations

import warnings

import torch

from ...backends.torch_ops import define_op, normalize_dim, run_plan
from ...core.errors import ArgumentTypeError, InvalidProblem
from ...core.vocab import ElementKind
from .descriptors_matrix import (
    MatrixPattern,
    MatrixPatternArgs,
    MatrixPatternDescriptor,
    diagonal_length,
)
from .plans_matrix import MatrixPatternPlan

__all__ = ["tril", "triu", "diag", "diagflat", "diag_embed", "block_diag"]

_P = MatrixPattern


def _embed_shape(x_shape, offset: int, dim1: int, dim2: int) -> list[int]:
    n = (x_shape[-1] if x_shape else 1) + abs(offset)
    out = list(x_shape[:-1])
    for d in sorted((dim1, dim2)):
        out.insert(d, n)
    return out


def _diagonal_shape(x_shape, offset: int, dim1: int, dim2: int) -> list[int]:
    rest = [s for i, s in enumerate(x_shape) if i not in (dim1, dim2)]
    return rest + [diagonal_length(x_shape[dim1], x_shape[dim2], offset)]


def _out_shape(x: torch.Tensor, pattern: str, offset: int, dim1: int, dim2: int,
               shape: list[int]) -> list[int]:
    if pattern in ("lower", "upper"):
        return list(x.shape)
    if pattern == "embed":
        return list(shape) if shape else _embed_shape(tuple(x.shape), offset, dim1, dim2)
    return _diagonal_shape(tuple(x.shape), offset, dim1, dim2)


def _launch(x: torch.Tensor, y: torch.Tensor, pattern: MatrixPattern, offset: int,
            dim1: int, dim2: int) -> None:
    """Run the plan from x into y (both in their natural layouts; the matrix dims of the
    embedded / read side move last as views)."""
    if pattern is _P.EMBED:
        y = y.movedim((dim1, dim2), (-2, -1))
    elif pattern is _P.DIAGONAL:
        x = x.movedim((dim1, dim2), (-2, -1))
    e = ElementKind.of(x.dtype)
    desc = MatrixPatternDescriptor.cached(pattern, tuple(x.shape), tuple(y.shape), offset, e)
    run_plan(MatrixPatternPlan, desc, MatrixPatternArgs(x=x, y=y))


def _matrix_impl(x: torch.Tensor, pattern: str, offset: int, dim1: int, dim2: int,
                 shape: list[int]) -> torch.Tensor:
    """pattern: lower / upper (x [..., M, N]), embed (x's last dim onto the offset diagonal
    of dims dim1, dim2 of a result of `shape`, or square by default), diagonal (the offset
    diagonal of x's dims dim1, dim2, last)."""
    y = x.new_empty(_out_shape(x, pattern, offset, dim1, dim2, shape))
    _launch(x, y, _P(pattern), offset, dim1, dim2)
    return y


def _matrix_fake(x: torch.Tensor, pattern: str, offset: int, dim1: int, dim2: int,
                 shape: list[int]) -> torch.Tensor:
    return x.new_empty(_out_shape(x, pattern, offset, dim1, dim2, shape))


def _setup(ctx, inputs, output):
    x, ctx.pattern, ctx.offset, ctx.dim1, ctx.dim2, _ = inputs
    ctx.shape = list(x.shape)


def _autograd(ctx, grad):
    if ctx.pattern in ("lower", "upper"):
        dx = _matrix(grad, ctx.pattern, ctx.offset, ctx.dim1, ctx.dim2, [])
    elif ctx.pattern == "embed":
        dx = _matrix(grad, "diagonal", ctx.offset, ctx.dim1, ctx.dim2, [])
    else:
        dx = _matrix(grad, "embed", ctx.offset, ctx.dim1, ctx.dim2, ctx.shape)
    return dx, None, None, None, None, None


_matrix = define_op("matrix_pattern", _matrix_impl, _matrix_fake, backward=_autograd,
                    setup_context=_setup)


def _tensor(x, who: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise ArgumentTypeError(f"{who}: input must be a Tensor, got {type(x).__name__}")


def _int(v, who: str, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError(f"{who}: {name} must be an int, got {v!r}")
    return v


# -- tril / triu ----------------------------------------------------------------------------------
def _triangle(input, diagonal, out, lower: bool):
    who = "tril" if lower else "triu"
    _tensor(input, who)
    diagonal = _int(diagonal, who, "diagonal")
    if input.dim() < 2:
        raise InvalidProblem(f"{who}: input tensor must have at least 2 dimensions, got "
                             f"{input.dim()}")
    pattern = "lower" if lower else "upper"
    if out is None:
        return _matrix(input, pattern, diagonal, -2, -1, [])
    if not isinstance(out, torch.Tensor):
        raise ArgumentTypeError(f"{who}: out must be a Tensor, got {type(out).__name__}")
    if out.dtype != input.dtype or out.device != input.device:
        raise InvalidProblem(f"{who}: out must be {input.dtype} on {input.device}, got "
                             f"{out.dtype} on {out.device}")
    if torch.is_grad_enabled() and (input.requires_grad or out.requires_grad):
        raise InvalidProblem(f"{who}(): functions with out=... arguments don't support "
                             "automatic differentiation, but one of the arguments requires grad")
    same = out.data_ptr() == input.data_ptr() and out.stride() == input.stride() and \
        out.shape == input.shape
    if out.shape != input.shape:
        if out.numel():
            warnings.warn(f"{who}: an output with one or more elements was resized since it "
                          f"had shape {list(out.shape)}, which does not match the required "
                          f"output shape {list(input.shape)}", UserWarning, stacklevel=3)
        out.resize_(input.shape)
    if not same and out.numel() and input.numel() and \
            out.untyped_storage().data_ptr() == input.untyped_storage().data_ptr():
        raise InvalidProblem(f"{who}: out overlaps input other than exactly (in place)")
    # (in place is safe: every element is read and written by the same program)
    _launch(input, out, _P(pattern), diagonal, -2, -1)
    return out


def tril(input, diagonal=0, *, out=None):
    """torch.tril: the lower triangle (j - i <= diagonal) of the last two dims, zeros above."""
    return _triangle(input, diagonal, out, True)


def triu(input, diagonal=0, *, out=None):
    """torch.triu: the upper triangle (j - i >= diagonal) of the last two dims, zeros below."""
    return _triangle(input, diagonal, out, False)


# -- diagonals -----------------------------------------------------------------------------------
def diag(input, diagonal=0):
    """torch.diag: a vector onto the `diagonal`-th diagonal of a square matrix (zeros
    elsewhere), or a matrix's `diagonal`-th diagonal as a vector (a copy)."""
    _tensor(input, "diag")
    diagonal = _int(diagonal, "diag", "diagonal")
    if input.dim() == 1:
        return _matrix(input, "embed", diagonal, 0, 1, [])
    if input.dim() == 2:
        return _matrix(input, "diagonal", diagonal, 0, 1, [])
    raise InvalidProblem(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diagflat(input, offset=0):
    """torch.diagflat: the flattened input onto the `offset`-th diagonal of a square matrix."""
    _tensor(input, "diagflat")
    offset = _int(offset, "diagflat", "offset")
    # (a view for contiguous inputs; reshape copies only a layout that cannot flatten)
    return _matrix(input.reshape(-1), "embed", offset, 0, 1, [])


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: input's last dim onto the `offset`-th diagonal of the planes given by
    dims dim1, dim2 of a result one rank higher (zeros elsewhere)."""
    _tensor(input, "diag_embed")
    offset = _int(offset, "diag_embed", "offset")
    rank = input.dim() + 1
    d1 = normalize_dim(_int(dim1, "diag_embed", "dim1"), rank, "diag_embed")
    d2 = normalize_dim(_int(dim2, "diag_embed", "dim2"), rank, "diag_embed")
    if d1 == d2:
        raise InvalidProblem(f"diag_embed: diagonal dimensions cannot be identical {dim1}, "
                             f"{dim2}")
    x = input.reshape(1) if input.dim() == 0 else input
    return _matrix(x, "embed", offset, d1, d2, [])


# -- block_diag ----------------------------------------------------------------------------------
def _as_matrix(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t


def _block_impl(tensors: list[torch.Tensor]) -> torch.Tensor:
    mats = [_as_matrix(t) for t in tensors]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    y = tensors[0].new_empty((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)),
                             dtype=dtype)
    r = c = 0
    out_e = ElementKind.of(dtype)
    for m in mats:
        rows, cols = m.shape
        if rows:
            band = y[r:r + rows]
            desc = MatrixPatternDescriptor.cached(_P.BAND, tuple(m.shape), tuple(band.shape), c,
                                                  ElementKind.of(m.dtype), out_e)
            run_plan(MatrixPatternPlan, desc, MatrixPatternArgs(x=m, y=band))
        r, c = r + rows, c + cols
    return y


def _block_fake(tensors: list[torch.Tensor]) -> torch.Tensor:
    mats = [_as_matrix(t) for t in tensors]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return tensors[0].new_empty((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)),
                                dtype=dtype)


def _block_setup(ctx, inputs, output):
    (tensors,) = inputs
    ctx.shapes = [tuple(t.shape) for t in tensors]
    ctx.dtypes = [t.dtype for t in tensors]


def _block_autograd(ctx, grad):
    out, r, c = [], 0, 0
    for shape, dtype in zip(ctx.shapes, ctx.dtypes):
        m = (1, 1) if len(shape) == 0 else (1, shape[0]) if len(shape) == 1 else shape
        g = grad[r:r + m[0], c:c + m[1]].reshape(shape)
        out.append(g if g.dtype == dtype or not dtype.is_floating_point else g.to(dtype))
        r, c = r + m[0], c + m[1]
    return (out,)


_block = define_op("block_diag", _block_impl, _block_fake, backward=_block_autograd,
                   setup_context=_block_setup)


def block_diag(*tensors):
    """torch.block_diag: the inputs (0-D, 1-D as one row, 2-D) on the diagonal of one matrix,
    zeros elsewhere, in their promoted dtype."""
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise ArgumentTypeError(f"block_diag: inputs must be Tensors, got "
                                    f"{type(t).__name__} at {i}")
        if t.dim() > 2:
            raise InvalidProblem(f"torch.block_diag: Input tensors must have 2 or fewer "
                                 f"dimensions. Input {i} has {t.dim()} dimensions")
    if not tensors:
        return torch.empty(1, 0)
    if len({t.device for t in tensors}) > 1:
        raise InvalidProblem("torch.block_diag: input tensors must all be on the same device")
    return _block(list(tensors))
