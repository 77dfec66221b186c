"""MatrixPatternPlan and its Triton candidate (kernels_matrix.matrix_kernel).

**Formulas**: over batched [M, N] matrices, y = x where j - i <= offset (LOWER, tril) or
>= offset (UPPER, triu), else 0; EMBED: y[..., i, j] = the diagonal's element where
j - i == offset, else 0 (diag of a vector, diag_embed, diagflat, the gradient of a diagonal);
DIAGONAL: y[..., t] = x[..., t + max(-offset, 0), t + max(offset, 0)]; BAND: y[i, j] =
x[i, j - offset] for offset <= j < offset + x's columns, else 0 (block_diag's row bands).

**Dtypes / shape**: every element kind (BAND converts to `output_element`); any batch dims
(at most 3 after collapsing), any non-negative strides; one pass writes values and zeros.

**Workspace**: none.

**Precision**: exact copies (BAND's conversion is torch's).
"""

from __future__ import annotations

import math

from ...backends.triton_support import RecipeCache, next_pow2
from ...core import validate as V
from ...core.layout import collapse_dims
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels_matrix as KM
from .descriptors_matrix import (
    PATTERN_CODES,
    MatrixPattern,
    MatrixPatternArgs,
    MatrixPatternDescriptor,
)
from .plans import check_int32

#: elements of one [BLOCK_M, BLOCK_N] tile by output element size: 8-16 KB per program
#: (4096 keeps the int64 offsets of 2-byte tiles within registers)
TILE_ELEMS = {1: 4096, 2: 4096, 4: 4096, 8: 2048}
MAX_BLOCK_N = 256
WARPS = 4
BATCH_DIMS = 3


@register_plan
class MatrixPatternPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = MatrixPatternDescriptor
    args_type = MatrixPatternArgs


def matrix_tile(m: int, n: int, itemsize: int) -> tuple[int, int]:
    bn = min(next_pow2(n), MAX_BLOCK_N)
    return max(1, min(TILE_ELEMS[itemsize] // bn, next_pow2(m))), bn


def _roles(desc, xs, ys):
    """(kernel M, N, batch shape, x batch strides, y batch strides, x shift, xm, xn, ym, yn,
    k, k2, pattern code)."""
    p, k = desc.pattern, desc.offset
    if p is MatrixPattern.DIAGONAL:
        m, n = desc.input_shape[-2:]
        nb = len(desc.input_shape) - 2
        shift = max(-k, 0) * xs[-2] + max(k, 0) * xs[-1]
        return (desc.output_shape[-1], 1, desc.output_shape[:-1], xs[:nb], ys[:nb], shift,
                xs[-2] + xs[-1], 0, ys[-1], 0, 0, 0, PATTERN_CODES[p])
    m, n = desc.output_shape[-2:]
    nb = len(desc.output_shape) - 2
    if p is MatrixPattern.EMBED:
        xm, xn = (xs[-1], 0) if k >= 0 else (0, xs[-1])
        xb = xs[:nb]
    else:
        xm, xn = xs[-2], xs[-1]
        xb = xs[:nb]
    k2 = k + desc.input_shape[-1] if p is MatrixPattern.BAND else 0
    return (m, n, desc.output_shape[:nb], xb, ys[:nb], 0, xm, xn, ys[-2], ys[-1], k, k2,
            PATTERN_CODES[p])


def _recipe(desc, xs, ys):
    m, n, batch, xb, yb, shift, xm, xn, ym, yn, k, k2, code = _roles(desc, xs, ys)
    if batch:
        batch, (xb, yb) = collapse_dims(batch, [xb, yb])
    if len(batch) > BATCH_DIMS:
        raise V.Unsupported(f"MatrixPatternPlan: at most {BATCH_DIMS} batch dims after "
                            f"collapsing, got {len(batch)} (strides {xs}, {ys})")
    pad = BATCH_DIMS - len(batch)
    batch = (1,) * pad + tuple(batch)
    xb, yb = (0,) * pad + tuple(xb), (0,) * pad + tuple(yb)
    bm, bn = matrix_tile(m, n, desc.output_element.itemsize)
    tiles_m, tiles_n = cdiv(m, bm), cdiv(n, bn)
    grid = (math.prod(batch) * tiles_m * tiles_n,)
    check_int32("MatrixPatternPlan", grid[0], m + bm, n + bn)
    ints = [shift, m, n, k, k2, batch[1], batch[2], tiles_m, tiles_n, *xb, xm, xn, *yb, ym, yn]
    return grid, ints, dict(PATTERN=code, BLOCK_M=bm, BLOCK_N=bn, num_warps=WARPS)


_RECIPES = RecipeCache()


@register_candidate(MatrixPatternPlan)
class TritonMatrixPattern(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_matrix_pattern"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee(MathPrecision.EXACT, desc.output_element)

    def launch(self, desc, args, workspace) -> None:
        xs, ys = args.x.stride(), args.y.stride()
        grid, ints, const = _RECIPES.get((desc, xs, ys), lambda: _recipe(desc, xs, ys))
        KM.matrix_kernel[grid](args.x, args.y, *ints, **const)
