"""Host-side row layout for the row-norm kernels and their launch tables.

A row-norm problem is `rows` independent rows of M = prod(normalized_shape) elements. Outer dims
(those before the normalized suffix) are collapsed jointly over every row-shaped operand and
the statistics; the normalized suffix is collapsed jointly over the row-shaped operands and the
per-feature parameters (gamma, beta, dgamma, dbeta). A launch addresses three outer dims (more
leading dims become more launches) and three inner dims (more is refused as Unsupported).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ...backends.triton_exchange import SPIN_LIMIT, chunk_length
from ...backends.triton_support import INTERPRET, next_pow2, pad_outer, shifted_view, sm_count
from ...core.errors import Unsupported
from ...core.layout import collapse_dims
from ...core.vocab import ElementKind
from .kernels_colsplit import launch_shape as colsplit_shape

MAX_OUTER = 3  # outer dims one launch addresses; more leading dims become more launches
MAX_INNER = 3


@dataclass(frozen=True)
class RowLayout:
    outer_shape: tuple[int, ...]  # collapsed outer dims (any number)
    outer: tuple[tuple[int, ...], ...]  # per row/stat operand: strides of the outer dims
    in1: int
    in2: int
    ni: int
    inner: tuple[tuple[int, int, int], ...]  # per row/param operand: strides (a, b, c)
    col64: bool  # some row's element offsets reach 2**31: int64 column math

    @functools.cached_property
    def _single(self):
        """(rows, o1, o2, strides) of the one launch of <= MAX_OUTER outer dims, indexed by
        pad_last: the unit dims padded first ([1, 1, rows]) or last ([rows, 1, 1])."""
        out = []
        for last in (False, True):
            rest, strides = pad_outer(self.outer_shape, self.outer, MAX_OUTER, last)
            out.append((math.prod(rest), rest[1], rest[2], tuple(map(tuple, strides))))
        return tuple(out)

    def launches(self, tensors, pad_last: bool = False):
        """Yield (views, rows, o1, o2, per-operand 3 outer strides): one per index of the
        leading outer dims beyond MAX_OUTER (views shifted there); `tensors` are the row and
        stat operands in layout order (None allowed). `pad_last` (layout.pads_last) puts the
        unit dims of fewer than MAX_OUTER outer dims after the real ones: O1 = O2 = 1 for one
        outer dim, the JIT's constants, so `_row_off` folds to row * stride; padded first,
        O2 = rows and the offset divides by it at run time. More outer dims pad nothing."""
        shape = list(self.outer_shape)
        if len(shape) <= MAX_OUTER:  # the common case: one launch, no shifted views
            yield tensors, *self._single[pad_last]
            return
        extra = len(shape) - MAX_OUTER
        lead, rest = shape[:extra], shape[extra:]
        rest_strides = [tuple(st[extra:]) for st in self.outer]
        rows = rest[0] * rest[1] * rest[2]
        for idx in itertools.product(*[range(d) for d in lead]):
            offs = [sum(i * s for i, s in zip(idx, st)) for st in self.outer]
            views = [t if t is None or not off else shifted_view(t, off)
                     for t, off in zip(tensors, offs)]
            yield views, rows, rest[1], rest[2], rest_strides


def row_layout(who: str, shape: Sequence[int], n_norm: int,
               rows_ops: Sequence[torch.Tensor | None],
               stat_ops: Sequence[torch.Tensor | None],
               param_ops: Sequence[torch.Tensor | None]) -> RowLayout:
    """Strides of rows_ops (outer and inner), stat_ops (outer) and param_ops (inner)."""
    strides = tuple(None if t is None else t.stride()
                    for t in (*rows_ops, *stat_ops, *param_ops))
    return _row_layout(who, tuple(shape), n_norm, len(rows_ops), len(stat_ops), strides)


@functools.lru_cache(maxsize=1024)
def _row_layout(who, shape, n_norm, n_rows, n_stats, strides) -> RowLayout:
    # Cached on (shape, strides): the host-side cost of a launch matters at these sizes.
    k = len(shape) - n_norm
    rows_st, stat_st, param_st = (strides[:n_rows], strides[n_rows:n_rows + n_stats],
                                  strides[n_rows + n_stats:])
    outer_st = [[0] * k if s is None else list(s[:k]) for s in rows_st + stat_st]
    if k:
        oshape, ostr = collapse_dims(shape[:k], outer_st)
    else:
        oshape, ostr = (1,), tuple((0,) for _ in outer_st)
    inner_st = [[0] * n_norm if s is None else list(s[len(s) - n_norm:])
                for s in rows_st + param_st]
    ishape, istr = collapse_dims(shape[k:], inner_st)
    if len(ishape) > MAX_INNER:
        raise Unsupported(
            f"{who}: the normalized dims collapse to {len(ishape)} strided dims {ishape}; "
            f"the kernel addresses at most {MAX_INNER}; make them more contiguous"
        )
    pad = MAX_INNER - len(ishape)
    full = (1,) * pad + tuple(ishape)
    inner = tuple(tuple([0] * pad + list(s)) for s in istr)
    span = max((sum((d - 1) * abs(x) for d, x in zip(ishape, st)) for st in istr), default=0)
    col64 = span + max(ishape) >= 2**31 - 1
    return RowLayout(tuple(oshape), tuple(tuple(s) for s in ostr), full[1], full[2],
                     len(ishape), inner, col64)


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


#: L2 eviction hints of the two-pass loops: the first read asks to keep the row for the
#: second; the second read and the stores need not stay.
LOOP_HINTS = {"KEEP": "evict_last", "STREAM": "evict_first"}


def _is_half(element: ElementKind) -> bool:
    return element in (ElementKind.F16, ElementKind.BF16)


def _register_tile(block_n: int, element: ElementKind) -> int:
    """Elements of one register-resident tile (BLOCK_R rows of BLOCK_N): halves take 4K
    (several short rows) or 8K, other types 4K; a longer row is its own tile."""
    if _is_half(element):
        return max(block_n, 4096 if block_n <= 1024 else 8192)
    return max(block_n, 4096)


#: Row lengths (exclusive, inclusive) whose forward takes the plain one-row grid.
PLAIN_ROWS = (512, 4096)


def _gamma_first(element: ElementKind, layer: bool, block_n: int) -> bool:
    """W_FIRST of a register tile that loads its parameters per row (not PIPE): gamma's load
    issued with the row's, not after its reductions: faster for most tiles, but not for
    layer_norm halves (beta's registers) nor for rms_norm's 16K halves tile."""
    return not (_is_half(element) and (layer or block_n >= 16384))


@functools.lru_cache(maxsize=1024)
def _fwd_config(m: int, rows: int, element: ElementKind, layer: bool = False) -> dict:
    """Tile table for the forward: the row in registers up to 16K elements (8K in f64):
    rows of 513..4096 elements one per program on a plain grid (PLAIN_ROWS), shorter rows
    several per program, prefetching the next row group on a persistent grid when the tile
    leaves room (PIPE); longer rows: f32 by chunk exchange (one DRAM read, EXCHANGE_BLOCK),
    other types stream twice through a persistent grid, so that the rows in flight stay
    inside L2 for the second pass. Halves: 32 elements per thread, 4 programs per SM (2 for
    8K tiles); other types: 16 elements per thread, 8 programs per SM (no spills on sm_90a).
    Rows of 16K take the plain grid (one row per program, no prefetch): layer_norm's
    prefetch would spill, and rms_norm halves run faster there with the offsets folded
    (`pads_last`). `layer`: layer_norm."""
    single_max = 8192 if element is ElementKind.F64 else 16384
    if PLAIN_ROWS[0] < m <= PLAIN_ROWS[1] and element is not ElementKind.F64:
        # One row per program on a plain grid, 16 elements per thread: many small programs
        # in flight hide DRAM latency better than the persistent prefetching tile here;
        # layer_norm halves at 4096 do best with 32 per thread (4 warps).
        block_n = next_pow2(m)
        per_thread = 32 if (layer and _is_half(element) and block_n == 4096) else 16
        return dict(BLOCK_R=1, BLOCK_N=block_n, SINGLE=True,
                    num_warps=block_n // (32 * per_thread), PIPE=False, G=rows,
                    W_FIRST=_gamma_first(element, layer, block_n))
    if m <= single_max:
        block_n = next_pow2(m)
        block_r = _clamp(_register_tile(block_n, element) // block_n, 1, 32)
        per_thread = 32 if _is_half(element) else 16
        warps = _clamp(block_r * block_n // (32 * per_thread), 1, 16)
        pipe = block_r * block_n <= per_thread * 32 * warps and block_n < 16384
        per_sm = (2 if block_r * block_n == 8192 else 4) if _is_half(element) else 8
        groups = -(-rows // block_r)
        return dict(BLOCK_R=block_r, BLOCK_N=block_n, SINGLE=True, num_warps=warps,
                    PIPE=pipe, G=min(groups, per_sm * sm_count()) if pipe else groups,
                    W_FIRST=not pipe and _gamma_first(element, layer, block_n))
    # 16 KB of input per loop step (f64: 2048 elements); two programs per SM (rms_norm
    # halves: 4, on 32 warps) and L2 hints keep the rows in flight inside L2 for the second
    # read. f32 rows exchange chunks instead (below).
    if element is ElementKind.F32:
        return _exchange_config(m, rows)
    if _is_half(element):
        block_n, warps, per_sm = (8192, 16, 2) if layer else (8192, 32, 4)
    else:
        block_n, warps, per_sm = 2048, 16, 2
    return dict(BLOCK_R=1, BLOCK_N=block_n, SINGLE=False, num_warps=warps,
                PIPE=False, G=min(rows, per_sm * sm_count()), **LOOP_HINTS)


def pads_last(cfg: dict, element: ElementKind, layer: bool, backward: bool) -> bool:
    """Whether the launch of a tile (a `_fwd_config` / `_bwd_config` dict) pads its outer
    dims last (RowLayout.launches): O1 = O2 = 1 are then the JIT's constants and `_row_off`
    folds to row * stride; padded first it divides the row index by O2 = rows (64-bit, at
    run time) before the first load. The one rule of the launches (plans.py) and the AOT
    variants (spec.py). Padding last pays only for the backward register tiles of
    layer_norm halves and the forward 16K tile of rms_norm halves; elsewhere it is neutral
    or slower. Exchange and column-split configs are not SINGLE: they pad first."""
    if not (_is_half(element) and cfg.get("SINGLE")):
        return False
    return layer if backward else not layer and cfg["BLOCK_N"] == 16384


#: f32 rows longer than a tile: chunk exchange (kernels_exchange.py), chunks of this many
#: columns, 32 per thread: one DRAM read beats the two-pass loop for f32; halves keep the
#: loop, which the exchange does not beat for them.
EXCHANGE_BLOCK = 8192


def _exchange_config(m: int, rows: int) -> dict:
    block_n = chunk_length(EXCHANGE_BLOCK, m)
    n_chunks = -(-m // block_n)
    return dict(EXCHANGE=True, BLOCK_N=block_n, num_warps=max(1, block_n // 1024),
                PARTS=next_pow2(n_chunks), N_CHUNKS=n_chunks, G=rows * n_chunks,
                SPIN=SPIN_LIMIT)


#: Exceptions to the backward rule below for f16 / bf16 rows, keyed by (layer_norm,
#: BLOCK_N): (rows per tile, warps, next-row prefetch, programs per SM): rms at 1024 takes
#: 64 elements per thread (layer_norm's dbeta partial needs the rule's registers); layer at
#: 4096 one prefetched row per tile (the rule's 2-row tile stays rms's best).
_HALF_BWD_TILES = {
    (False, 1024): (4, 2, True, 4),
    (True, 4096): (1, 4, True, 2),
}


@functools.lru_cache(maxsize=1024)
def _bwd_config(m: int, rows: int, element: ElementKind, layer: bool = False) -> dict:
    """Tile table for the backward: a persistent grid G (one or two programs per SM); each
    program's dgamma/dbeta partial covers many rows, so the second stage reads only G * M
    floats. Rows up to 16K elements stay in registers (LayerNorm: 8K, in f32 4K; f64 2K), 32
    elements per thread (f32 rows past 4K: 16), in tiles of 4K elements (several short rows)
    or 8K; longer rows exchange chunk partials (kernels_exchange.py, BWD_EXCHANGE_TILE; G is
    the number of row groups), rows of more than 64 chunks take the column split
    (kernels_colsplit.py: row statistics, then column blocks over row chunks; G is the number
    of chunks). `layer`: layer_norm, whose second partial (dbeta) makes a 16K row spill: it
    exchanges."""
    halves = 8192 if layer else 16384
    f32_max = 4096 if layer else 16384
    single_max = {ElementKind.F64: 2048, ElementKind.F32: f32_max}.get(element, halves)
    if m <= single_max:
        block_n = next_pow2(m)
        block_r = _clamp(_register_tile(block_n, ElementKind.BF16) // block_n, 1, 64)
        # f64 values take two registers; f32 rows past 4K take 16 per thread (more warps
        # beat both fewer and the column split there)
        wide_f32 = element is ElementKind.F32 and block_n > 4096
        per_thread = 16 if element is ElementKind.F64 or wide_f32 else 32
        warps = _clamp(block_r * block_n // (32 * per_thread), 1, 32)
        per_sm = 1 if block_n >= 16384 else 2
        pipe = block_r * block_n <= 4096
        if _is_half(element) and block_n > PLAIN_ROWS[0]:
            block_r, warps, pipe, per_sm = _HALF_BWD_TILES.get(
                (layer, block_n), (block_r, warps, pipe, per_sm))
    else:
        exchange = _bwd_exchange_config(m, rows, element, layer)
        if exchange is not None:
            return exchange
        # Rows of more chunks than the exchange takes: the column-split backward
        # (kernels_colsplit.py); G = row chunks.
        block_c, chunk_rows, chunks = colsplit_shape(m, rows, sm_count())
        return dict(SINGLE=False, BLOCK_N=2048 if element is ElementKind.F64 else 4096,
                    num_warps=8, BLOCK_C=block_c, G=chunks)
    groups = -(-rows // block_r)
    return dict(BLOCK_R=block_r, BLOCK_N=block_n, SINGLE=True, num_warps=warps, PIPE=pipe,
                G=min(groups, per_sm * sm_count()), HOLD_W=block_n < 16384)


#: Long rows' backward by chunk exchange (kernels_exchange.row_norm_bwd_exchange_kernel),
#: keyed by (element bytes, layer_norm): chunk columns, warps, programs per SM, rows published
#: ahead of the one finished, register cap. The caps let layer_norm fit its programs per SM
#: (a small spill costs less than the lost residency); halves run one more program per SM
#: than f32 (one more straddles residency). f64 (not timed) takes 1024 columns: the
#: registers of f32's 2048.
BWD_EXCHANGE_TILE = {
    (2, False): (2048, 4, 5, 1, None), (2, True): (2048, 4, 5, 1, 96),
    (4, False): (2048, 4, 4, 1, None), (4, True): (2048, 4, 4, 1, 128),
    (8, False): (1024, 4, 4, 1, None), (8, True): (1024, 4, 4, 1, None),
}
#: A row of more chunks takes the column split: a group's chunks must all be resident at once.
BWD_EXCHANGE_MAX_CHUNKS = 64


def _bwd_exchange_config(m: int, rows: int, element: ElementKind, layer: bool) -> dict | None:
    """Groups of rows, each walked by one program per chunk; G = groups, so that about
    `per_sm` programs per SM run at once (their dgamma partials are G rows of M floats)."""
    block_n, warps, per_sm, ahead, maxnreg = BWD_EXCHANGE_TILE[element.itemsize, layer]
    block_n = chunk_length(block_n, m)
    n_chunks = -(-m // block_n)
    if n_chunks > BWD_EXCHANGE_MAX_CHUNKS:
        return None
    groups = max(1, min(rows, per_sm * sm_count() // n_chunks))
    return dict(SINGLE=False, EXCHANGE=True, BLOCK_N=block_n, num_warps=warps,
                N_CHUNKS=n_chunks, PARTS=next_pow2(n_chunks), G=groups, AHEAD=ahead,
                SPIN=SPIN_LIMIT, maxnreg=maxnreg)


@functools.lru_cache(maxsize=1024)
def _partial_config(m: int, g: int) -> dict:
    block_c = min(next_pow2(m), 256 if m >= 32768 else 64)
    if INTERPRET:  # programs are slow there; wide blocks cost little
        block_c = min(next_pow2(m), 4096)
    block_g = _clamp(next_pow2(max(g, 1)), 1, max(1, 4096 // block_c))
    return dict(BLOCK_C=block_c, BLOCK_G=block_g, num_warps=4)


def fwd_config(m: int, rows: int, element: ElementKind, layer: bool = False) -> dict:
    return dict(_fwd_config(m, rows, element, layer))


def bwd_config(m: int, rows: int, element: ElementKind, layer: bool = False) -> dict:
    return dict(_bwd_config(m, rows, element, layer))


def partial_config(m: int, g: int) -> dict:
    return dict(_partial_config(m, g))
