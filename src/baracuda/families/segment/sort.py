"""Host side of the workspace sort: layout of the scratch buffers and the launch sequence.

Shared helper: the embedding and indexing families reuse it (embedding backward is an unsorted
segment sum of gradient rows keyed by token id).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...backends.triton_support import INTERPRET
from .kernels_sort import (
    exclusive_scan_kernel,
    histogram_kernel,
    lower_bound_kernel,
    radix_hist_kernel,
    radix_scatter_kernel,
)

DIGIT_BITS = 4
RADIX = 1 << DIGIT_BITS
CHUNK = 512  # rows per radix program: [CHUNK, RADIX] one-hot tile in registers
ALIGN = 256
SEARCH_BLOCK = 128


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


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
        out = {}
        for name, off, count, dtype in self.sections:
            nb = count * dtype.itemsize
            out[name] = ws[off:off + nb].view(dtype)
        return out


def sort_sections(n_rows: int, n_seg: int, unsorted: bool) -> list[tuple[str, int, torch.dtype]]:
    """Sections for segment offsets (and, for unsorted ids, the radix sort's buffers)."""
    items = [("offsets", n_seg + 2, torch.int32)]
    if unsorted:
        n_chunks = cdiv(n_rows, CHUNK)
        items += [("keys_a", n_rows, torch.int32), ("vals_a", n_rows, torch.int32),
                  ("keys_b", n_rows, torch.int32), ("vals_b", n_rows, torch.int32),
                  ("hist", max(RADIX * n_chunks, 1), torch.int32)]
    return items


def _steps(n: int) -> int:
    return max(1, (n + 1).bit_length())


def segment_offsets(ids: torch.Tensor, n_seg: int, views: dict[str, torch.Tensor],
                    unsorted: bool, drop: int = -1) -> torch.Tensor | None:
    """Fill views["offsets"][s] = first sorted position of segment s (s in [0, n_seg + 1]).

    Unsorted ids are stable-sorted first; the permutation (row of each sorted position) is
    returned. Sorted ids need no permutation (None): segment s is rows [off[s], off[s+1]).
    `drop` (unsorted only): rows with this id are dropped too (an embedding's padding_idx).
    """
    n = ids.shape[0]
    offsets = views["offsets"]
    grid = (cdiv(n_seg + 2, SEARCH_BLOCK),)
    if not unsorted or n == 0:
        lower_bound_kernel[grid](ids, n, ids.stride(0) if n else 1, offsets, n_seg + 2,
                                 _steps(n), BLOCK=SEARCH_BLOCK)
        return None if not unsorted else views["vals_a"]
    n_chunks = cdiv(n, CHUNK)
    bits = max(1, n_seg.bit_length())  # keys lie in [0, n_seg]
    src_k, src_v = views["keys_a"], views["vals_a"]
    dst_k, dst_v = views["keys_b"], views["vals_b"]
    hist = views["hist"]
    warps = 4 if not INTERPRET else 1
    for p in range(cdiv(bits, DIGIT_BITS)):
        first = p == 0
        common = dict(FIRST=first, R=RADIX, C=CHUNK, num_warps=warps)
        radix_hist_kernel[(n_chunks,)](src_k, ids, hist, n, n_seg, ids.stride(0),
                                       p * DIGIT_BITS, drop, n_chunks, **common)
        exclusive_scan_kernel[(1,)](hist, RADIX * n_chunks, BLOCK=1024 if INTERPRET else 8192,
                                     num_warps=warps if INTERPRET else 16)
        radix_scatter_kernel[(n_chunks,)](src_k, src_v, ids, dst_k, dst_v, hist, n, n_seg,
                                          ids.stride(0), p * DIGIT_BITS, drop, n_chunks,
                                          **common)
        src_k, src_v, dst_k, dst_v = dst_k, dst_v, src_k, src_v
    lower_bound_kernel[grid](src_k, n, 1, offsets, n_seg + 2, _steps(n), BLOCK=SEARCH_BLOCK)
    return src_v


def segment_counts(ids: torch.Tensor, n_seg: int, counts: torch.Tensor) -> None:
    """counts[s] = number of rows with id s (exact integer atomics)."""
    counts.zero_()
    n = ids.shape[0]
    if n:
        histogram_kernel[(cdiv(n, 1024),)](ids, n, n_seg, ids.stride(0), counts, BLOCK=1024)
