"""Host side of grouping rows by an integer key: layout of the workspace buffers and the
launch sequences of the stable sorts (counting, radix) and the unordered bucketing.

A "segment" here is the run of sorted positions holding one key: `segment_offsets` gives each
key's first position, and the permutation gives the row at each position.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from ..core.runtime import cdiv
from .triton_exchange import zero
from .triton_grouping import (
    bucket_place_kernel,
    count_place_kernel,
    count_scan_kernel,
    count_sort_chunk_kernel,
    exclusive_scan_kernel,
    histogram_kernel,
    lower_bound_kernel,
    radix_hist_kernel,
    radix_scatter_kernel,
)
from .triton_support import INTERPRET, next_pow2

#: Row positions and permutations are int32 in the workspace.
MAX_ROWS = 2**31 - 2

DIGIT_BITS = 4
CHUNK = 512  # rows per radix program: [CHUNK, 2**DIGIT_BITS] one-hot tile in registers
ALIGN = 256
SEARCH_BLOCK = 128


def _align(n: int) -> int:
    return cdiv(n, ALIGN) * ALIGN


@dataclass(frozen=True)
class Layout:
    """Byte offsets of named int32 / float sections inside one workspace buffer."""

    sections: tuple[tuple[str, int, int, torch.dtype], ...]  # (name, offset, count, dtype)

    @classmethod
    def build(cls, items: list[tuple[str, int, torch.dtype]]) -> Layout:
        out, off = [], 0
        for name, count, dtype in items:
            out.append((name, off, count, dtype))
            off += _align(count * dtype.itemsize)
        return cls(tuple(out))

    @property
    def nbytes(self) -> int:
        if not self.sections:
            return 0
        _, off, count, dtype = self.sections[-1]
        return off + _align(count * dtype.itemsize)

    def views(self, ws: torch.Tensor | None) -> dict[str, torch.Tensor]:
        # one reinterpretation per dtype, then slices: fewer tensor ops per call (host time)
        out, whole = {}, {}
        for name, off, count, dtype in self.sections:
            w = whole.get(dtype)
            if w is None:
                w = whole[dtype] = ws[:self.nbytes].view(dtype)
            start = off // dtype.itemsize  # sections start ALIGN-aligned
            out[name] = w[start:start + count]
        return out


#: the scatter scans the histogram itself when it has at most this many counts
FUSED_SCAN_MAX = 8192


def radix_shape(n_rows: int) -> tuple[int, int]:
    """(digit bits, rows per chunk) of the radix sort. Few rows: wider digits (fewer passes,
    each pass a launch or two) on smaller chunks, keeping the [chunk, radix] one-hot tile at
    8K elements and radix x chunks within FUSED_SCAN_MAX."""
    if n_rows <= 16384:
        return 6, 128
    if n_rows <= 65536:
        return 5, 256
    return DIGIT_BITS, CHUNK


#: counting sort (one pass, 3 launches) instead of the radix sort while keys x chunks stay
#: small: rows per chunk (sorted in registers by step 1), elements of step 2's [chunks, keys]
#: tile, most keys (num_segments + 1) and most histogram counts
COUNT_CHUNK = 128 if INTERPRET else 2048
COUNT_TILE = 64 if INTERPRET else 4096  # 8192 spills in step 2 (512 x 16 tile)
COUNT_MAX_KEYS = 1 << 18
COUNT_MAX_HIST = 1 << 23
COUNT_WARPS = 1 if INTERPRET else 8  # 8 warps beat 4 on the unsorted sum


@dataclass(frozen=True)
class CountShape:
    chunk: int  # rows per chunk (power of two)
    chunks: int
    keys_per_block: int  # step 2: keys per program (tile [next_pow2(chunks), keys_per_block])
    blocks: int

    @property
    def log_chunk(self) -> int:
        return self.chunk.bit_length() - 1


@functools.lru_cache(maxsize=1024)
def count_shape(n_rows: int, n_seg: int) -> CountShape | None:
    """The counting sort's shape, or None where the radix sort is used (no rows, too many
    keys or chunks for the [chunks, keys] counts, packed (key, row) beyond int32)."""
    keys = n_seg + 1
    chunk = min(COUNT_CHUNK, max(next_pow2(n_rows), 16))
    chunks = cdiv(n_rows, chunk)
    if (n_rows == 0 or keys > COUNT_MAX_KEYS or next_pow2(chunks) > COUNT_TILE
            or chunks * keys > COUNT_MAX_HIST or (keys + 1) * chunk >= 1 << 31):
        return None
    per_block = COUNT_TILE // next_pow2(chunks)
    blocks = cdiv(keys, per_block)
    if next_pow2(blocks) > COUNT_TILE:
        return None
    return CountShape(chunk, chunks, per_block, blocks)


def sort_sections(n_rows: int, n_seg: int, unsorted: bool) -> list[tuple[str, int, torch.dtype]]:
    """Sections for segment offsets (and, for unsorted ids, the sort's buffers)."""
    items = [("offsets", n_seg + 2, torch.int32)]
    if not unsorted:
        return items
    cs = count_shape(n_rows, n_seg)
    if cs is not None:
        return items + [("perm", n_rows, torch.int32),
                        ("sorted", cs.chunks * cs.chunk, torch.int32),
                        ("hist", cs.chunks * (n_seg + 1), torch.int32),
                        ("part", n_seg + 1, torch.int32), ("btot", cs.blocks, torch.int32)]
    return items + radix_sections(n_rows)


def radix_sections(n_rows: int) -> list[tuple[str, int, torch.dtype]]:
    """The radix sort's buffers (keys and row numbers, twice; per-chunk digit counts)."""
    bits, chunk = radix_shape(n_rows)
    n_chunks = cdiv(n_rows, chunk)
    return [("keys_a", n_rows, torch.int32), ("vals_a", n_rows, torch.int32),
            ("keys_b", n_rows, torch.int32), ("vals_b", n_rows, torch.int32),
            ("hist", max((1 << bits) * n_chunks, 1), torch.int32)]


@functools.lru_cache(maxsize=1024)
def sort_layout(n_rows: int, n_seg: int, unsorted: bool) -> Layout:
    """Layout of `sort_sections` (cached: built on every eager call otherwise)."""
    return Layout.build(sort_sections(n_rows, n_seg, unsorted))


@functools.lru_cache(maxsize=1024)
def _count_recipe(cs: CountShape, keys: int) -> tuple[dict, dict, dict]:
    """Constexprs of the counting sort's three launches."""
    c, lc, kb = cs.chunk, cs.log_chunk, cs.keys_per_block
    return (dict(C=c, LOGC=lc, ZB=min(1024, next_pow2(keys)), num_warps=COUNT_WARPS),
            dict(PP=next_pow2(cs.chunks), KB=kb, num_warps=1 if INTERPRET else 8),
            dict(C=c, LOGC=lc, KB=kb, NBP=next_pow2(cs.blocks),
                 OB=min(1024, next_pow2(keys + 1)), num_warps=COUNT_WARPS))


def count_sort(ids: torch.Tensor, n_seg: int, views: dict[str, torch.Tensor], drop: int,
               cs: CountShape) -> torch.Tensor:
    """Stable counting sort of the ids (see triton_grouping): fills views["offsets"], returns the
    permutation."""
    n, keys = ids.shape[0], n_seg + 1
    k1, k2, k3 = _count_recipe(cs, keys)
    hist, srt, part, btot = views["hist"], views["sorted"], views["part"], views["btot"]
    count_sort_chunk_kernel[(cs.chunks,)](ids, srt, hist, n, n_seg, keys, ids.stride(0), drop,
                                          **k1)
    count_scan_kernel[(cs.blocks,)](hist, part, btot, cs.chunks, keys, **k2)
    count_place_kernel[(cs.chunks,)](srt, hist, part, btot, views["perm"], views["offsets"], n,
                                     keys, cs.blocks, cdiv(keys + 1, cs.chunks), **k3)
    return views["perm"]


def _steps(n: int) -> int:
    return max(1, (n + 1).bit_length())


def segment_offsets(ids: torch.Tensor, n_seg: int, views: dict[str, torch.Tensor],
                    unsorted: bool, drop: int = -1) -> torch.Tensor | None:
    """Fill views["offsets"][s] = first sorted position of segment s (s in [0, n_seg + 1]).

    Unsorted ids are stable-sorted first; the permutation (row of each sorted position) is
    returned. Sorted ids need no permutation (None): segment s is rows [off[s], off[s+1]).
    `drop` (unsorted only): rows with this id are dropped too (a padding id).
    """
    n = ids.shape[0]
    offsets = views["offsets"]
    grid = (cdiv(n_seg + 2, SEARCH_BLOCK),)
    if not unsorted or n == 0:
        lower_bound_kernel[grid](ids, n, ids.stride(0) if n else 1, offsets, n_seg + 2,
                                 _steps(n), BLOCK=SEARCH_BLOCK)
        return None if not unsorted else views["vals_a"]
    cs = count_shape(n, n_seg)
    if cs is not None:  # sort_sections made the counting sort's sections
        return count_sort(ids, n_seg, views, drop, cs)
    return radix_sort(ids, n_seg, views, drop)


def radix_sort(ids: torch.Tensor, n_seg: int, views: dict[str, torch.Tensor],
               drop: int = -1) -> torch.Tensor:
    """LSD radix sort of the ids (sections: offsets + `radix_sections`; at least one row):
    fills views["offsets"], returns the permutation."""
    n = ids.shape[0]
    offsets = views["offsets"]
    grid = (cdiv(n_seg + 2, SEARCH_BLOCK),)
    digit_bits, chunk = radix_shape(n)
    radix = 1 << digit_bits
    n_chunks = cdiv(n, chunk)
    fused = radix * n_chunks <= FUSED_SCAN_MAX
    bits = max(1, n_seg.bit_length())  # keys lie in [0, n_seg]
    src_k, src_v = views["keys_a"], views["vals_a"]
    dst_k, dst_v = views["keys_b"], views["vals_b"]
    hist = views["hist"]
    warps = 4 if not INTERPRET else 1
    for p in range(cdiv(bits, digit_bits)):
        first = p == 0
        common = dict(FIRST=first, R=radix, C=chunk, num_warps=warps)
        radix_hist_kernel[(n_chunks,)](src_k, ids, hist, n, n_seg, ids.stride(0),
                                       p * digit_bits, drop, n_chunks, **common)
        if not fused:
            exclusive_scan_kernel[(1,)](hist, hist, radix * n_chunks,
                                        BLOCK=1024 if INTERPRET else 8192,
                                        num_warps=warps if INTERPRET else 16)
        radix_scatter_kernel[(n_chunks,)](src_k, src_v, ids, dst_k, dst_v, hist, n, n_seg,
                                          ids.stride(0), p * digit_bits, drop, n_chunks,
                                          FUSED=fused, NCH=next_pow2(n_chunks), **common)
        src_k, src_v, dst_k, dst_v = dst_k, dst_v, src_k, src_v
    lower_bound_kernel[grid](src_k, n, 1, offsets, n_seg + 2, _steps(n), BLOCK=SEARCH_BLOCK)
    return src_v


def segment_counts(ids: torch.Tensor, n_seg: int, counts: torch.Tensor) -> None:
    """counts[s] = number of rows with id s (exact integer atomics)."""
    zero(counts)
    n = ids.shape[0]
    if n:
        histogram_kernel[(cdiv(n, 1024),)](ids, n, n_seg, ids.stride(0), counts, BLOCK=1024)


def bucket_sections(n_rows: int, n_seg: int) -> list[tuple[str, int, torch.dtype]]:
    """Sections of `bucket_offsets`: offsets, per-bucket counts / cursors, the permutation."""
    return [("offsets", n_seg + 2, torch.int32), ("counts", max(n_seg, 1), torch.int32),
            ("perm", max(n_rows, 1), torch.int32)]


def bucket_offsets(ids: torch.Tensor, n_seg: int, views: dict[str, torch.Tensor]) -> torch.Tensor:
    """Group rows by id without ordering them inside a group (4 launches instead of the radix
    sort's 3 per digit): exact integer counts, one scan, then each row takes the next slot of
    its bucket with an integer atomic. The set of rows per segment is fixed, their order is
    not: only for order-independent reductions (max / min with row-number tie-breaks)."""
    n = ids.shape[0]
    counts, offsets, perm = views["counts"], views["offsets"], views["perm"]
    zero(counts)
    if n:
        histogram_kernel[(cdiv(n, 1024),)](ids, n, n_seg, ids.stride(0), counts, BLOCK=1024)
    exclusive_scan_kernel[(1,)](counts, offsets, n_seg, BLOCK=1024 if INTERPRET else 4096,
                                TOTAL=True, CURSOR=True, num_warps=1 if INTERPRET else 8)
    if n:
        bucket_place_kernel[(cdiv(n, 1024),)](ids, counts, perm, n, n_seg, ids.stride(0),
                                              BLOCK=1024)
    return perm
