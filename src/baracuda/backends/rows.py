"""Host side of the row kernels (`triton_rows`): collapsing the inner dims of [rows, D...]
tensors, the row gather's tile, and the launch of the grouped reduction over the groups that
`grouping` builds."""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass

from ..core.errors import Unsupported
from ..core.layout import collapse_dims
from ..core.runtime import cdiv
from ..core.vocab import ElementKind
from .triton_rows import grouped_reduce_kernel
from .triton_support import INTERPRET, RecipeCache, acc_type, next_pow2

MAX_INNER_DIMS = 4
WARPS = 1 if INTERPRET else 4


@functools.lru_cache(maxsize=4096)
def _collapsed(row_shape: tuple, strides: tuple):
    shape, st = collapse_dims(list(row_shape), [list(x) for x in strides])
    if len(shape) > MAX_INNER_DIMS:
        return len(shape)
    pad = MAX_INNER_DIMS - len(shape)
    return tuple([1] * pad + list(shape)), tuple(tuple([0] * pad + list(x)) for x in st)


def inner_layout(who: str, row_shape, tensors) -> tuple[list[int], list[list[int]]]:
    """Collapse the inner dims [D...] shared by `tensors` (each [rows, D...]) to 4 dims
    (cached per layout: eager calls repeat a few)."""
    got = _collapsed(tuple(row_shape), tuple(tuple(t.stride()[1:]) for t in tensors))
    if isinstance(got, int):
        raise Unsupported(f"{who}: inner dims {tuple(row_shape)} collapse to {got} "
                          f"strided dims; at most {MAX_INNER_DIMS} are supported")
    return list(got[0]), [list(x) for x in got[1]]


def collapses(row_shape, tensors) -> bool:
    """Whether the inner dims [D...] of `tensors` (each [rows, D...]), together with those of
    a dense output, collapse to at most MAX_INNER_DIMS strided dims (the kernels' limit)."""
    dense, n = [], 1
    for d in reversed(tuple(row_shape)):
        dense.append(n)
        n *= d
    strides = tuple(tuple(t.stride()[1:]) for t in tensors) + (tuple(reversed(dense)),)
    return not isinstance(_collapsed(tuple(row_shape), strides), int)


def is_flat(shape) -> bool:
    """One collapsed inner dim: kernels index columns without div/mod."""
    return list(shape[:3]) == [1, 1, 1]


# -- row gather ---------------------------------------------------------------------------------

#: On CUDA the gather checks indices with a device-side assert, as torch's CUDA kernels do
#: (no host sync per call); `debug` compiles the assert in, and only the assert: integer
#: overflow sanitizing stays off. The interpreter never fires asserts: the frontend checks
#: CPU tensors on the host instead.
ASSERT_LAUNCH = ({"CHECK": False} if INTERPRET else
                 {"CHECK": True, "debug": True, "sanitize_overflow": False})

#: (bytes per program, bytes per row chunk, warps) of a row gather, unless the caller has its own
GATHER_TILE = (8192, 2048, 4)


def gather_tile(d: int, itemsize: int, tile: tuple[int, int, int] | None = None
                ) -> tuple[int, int, int]:
    """(rows, columns, warps) per program of a row gather of rows with d elements."""
    if INTERPRET:
        return 16, min(next_pow2(d), 512), 1
    tile_bytes, chunk_bytes, warps = tile or GATHER_TILE
    block_d = min(next_pow2(d), max(1, chunk_bytes // itemsize))
    return max(1, tile_bytes // (block_d * itemsize)), block_d, warps


# -- grouped reduction --------------------------------------------------------------------------


class ReduceKind(enum.IntEnum):
    """What `grouped_reduce_kernel` computes per group (its KIND constexpr)."""

    SUM = 0
    MEAN = 1
    MAX = 2
    MIN = 3
    PROD = 4
    PROD_STATS = 5  # product of the non-zeros and the zero count, dense in the compute type
    LAST = 6  # the group's last row (kept from `base` when the group is empty)


EXTREMAL = (ReduceKind.MAX, ReduceKind.MIN)


class GroupedRowsShape:
    """Shapes of data [num_rows, D...] (`data_shape`) reduced into `num_segments` groups."""

    @property
    def num_rows(self) -> int:
        return self.data_shape[0]

    @property
    def row_shape(self) -> tuple[int, ...]:
        return self.data_shape[1:]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.num_segments, *self.data_shape[1:])

    @property
    def row_numel(self) -> int:
        return math.prod(self.data_shape[1:])


@dataclass(frozen=True)
class RowGroups(GroupedRowsShape):
    """The problem `run_reduce` needs: data [num_rows, D...] into num_segments groups."""

    data_shape: tuple[int, ...]
    num_segments: int
    element: ElementKind


#: (groups, rows, columns) per program of the grouped reduction: long groups, and short ones
#: (< 4 rows on average, e.g. a gradient keyed by token id: most groups empty, written as 0)
REDUCE_TILE = (1, 16, 128)
REDUCE_TILE_SHORT = (8, 4, 1024)
#: max / min carry value + row lanes: 8 rows (16 spill), and 64 columns keep more programs in
#: flight for the gathered rows
REDUCE_TILE_EXTREMAL = (1, 8, 64)


def run_reduce(desc, kind: ReduceKind, data, perm, offsets, out, arg,
               dense_stats: bool = False, base=None, alpha: float = 1.0) -> None:
    """Launch the group-owned reduction of `data`'s rows: group s is sorted positions
    [offsets[s], offsets[s+1]), the rows `perm` names there (None: the positions are the rows).
    `arg` (max / min) receives the winning row; `base` rows are added to (alpha * sum) or kept
    (LAST, empty group). `desc` needs num_rows, num_segments, row_shape, row_numel, element
    (a `RowGroups` or a descriptor with those fields)."""
    key = (desc, kind, perm is None, dense_stats, arg is not None, base is not None,
           data.shape[0] > 1, *(t.stride() for t in (data, out, arg, base) if t is not None))
    grid, ints, b_ints, const = _REDUCE_RECIPES.get(key, lambda: _reduce_recipe(
        desc, kind, data, perm, out, arg, dense_stats, base))
    grouped_reduce_kernel[grid](
        data, perm if perm is not None else offsets, offsets, out,
        arg if arg is not None else out, *ints,
        base if base is not None else out, *b_ints, float(alpha), **const)


_REDUCE_RECIPES = RecipeCache()


def _reduce_recipe(desc, kind, data, perm, out, arg, dense_stats, base):
    """(grid, integer arguments, base's integer arguments, constexprs) of `run_reduce`."""
    tensors = [data] if dense_stats else [data, out] + ([arg] if arg is not None else [])
    if base is not None:
        tensors.append(base)
    shape, strides = inner_layout("grouped_reduce", desc.row_shape, tensors)
    zero = [0] * MAX_INNER_DIMS
    it = iter(strides)
    x_st = next(it)
    o_st = zero if dense_stats else next(it)
    a_st = next(it) if (arg is not None and not dense_stats) else zero
    b_st = next(it) if base is not None else zero
    d = desc.row_numel
    n_seg = desc.num_segments
    # short groups (< 4 rows on average): several groups per program, fewer rows and more
    # columns per tile
    short = desc.num_rows < 4 * n_seg
    segs, block_r, block_d = REDUCE_TILE_SHORT if short else REDUCE_TILE
    if kind in EXTREMAL:
        segs, block_r, block_d = (segs, min(block_r, 8), block_d) if short else \
            REDUCE_TILE_EXTREMAL
    if INTERPRET:
        segs, block_d = min(segs, 4), min(block_d, 512)
    block_d = min(next_pow2(d), block_d // (2 if desc.element is ElementKind.F64 else 1))
    grid = (cdiv(n_seg, segs), cdiv(d, block_d))
    x_r = data.stride(0) if data.shape[0] > 1 else d
    o_r = 0 if dense_stats else out.stride(0)
    a_r = arg.stride(0) if (arg is not None and not dense_stats) else 0
    b_r = base.stride(0) if base is not None else 0
    ints = (d, n_seg, *shape[1:], x_r, *x_st, o_r, *o_st, a_r, *a_st)
    const = dict(KIND=int(kind), SORTED=perm is None,
                 STORE_ARG=arg is not None and not dense_stats, ACC=acc_type(desc.element),
                 BLOCK_R=block_r, BLOCK_D=block_d, SEGS=segs, FLAT=is_flat(shape),
                 HAS_BASE=base is not None, num_warps=WARPS)
    return grid, ints, (b_r, *b_st), const
