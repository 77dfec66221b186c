"""Data helpers shared by family specs, tests, `baracuda check` and benches.

Inputs are fresh random numbers (never zeros); outputs are poisoned (NaN for floats, a sentinel
for integers) so an unwritten element can't pass; canaries around an output catch stray writes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

INT_POISON = -0x5A5A


def poison_value(dtype: torch.dtype):
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return True
    if not dtype.is_signed:
        return 0xA5
    return max(INT_POISON, torch.iinfo(dtype).min)  # int8 can't hold INT_POISON


def poisoned(shape: Sequence[int], dtype: torch.dtype, device) -> torch.Tensor:
    """An output buffer filled with poison."""
    return torch.full(tuple(shape), poison_value(dtype), dtype=dtype, device=device)


def rand(shape: Sequence[int], dtype: torch.dtype, device, gen: torch.Generator,
         low: float = -3.0, high: float = 3.0) -> torch.Tensor:
    """Uniform random in [low, high), drawn in f64 on the CPU for reproducibility."""
    t = torch.rand(tuple(shape), generator=gen, dtype=torch.float64) * (high - low) + low
    return t.to(device=device, dtype=dtype)


def randn(shape: Sequence[int], dtype: torch.dtype, device, gen: torch.Generator,
          std: float = 1.0) -> torch.Tensor:
    t = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) * std
    return t.to(device=device, dtype=dtype)


def with_layout(t: torch.Tensor, layout: str, gen: torch.Generator | None = None) -> torch.Tensor:
    """The same values under another memory layout (a view into a fresh, larger buffer).

    - ``contiguous``: as is.
    - ``strided``: every dim's stride padded (a slice of a bigger buffer).
    - ``transposed``: stored with the last two dims swapped (a permuted view).
    - ``broadcast``: dim 0 expanded from extent 1 (stride 0) when the tensor allows it.
    - ``channels_last``: dim 1 stored innermost ([N, C, *spatial] as torch's channels_last
      formats store it).
    """
    if layout == "contiguous" or t.dim() == 0:
        return t
    if layout == "strided":
        big = torch.full([d * 2 + 1 for d in t.shape], float("nan") if t.is_floating_point() else 0,
                         dtype=t.dtype, device=t.device)
        view = big[tuple(slice(1, 1 + 2 * d, 2) if d > 0 else slice(0, 0) for d in t.shape)]
        view.copy_(t)
        return view
    if layout == "transposed":
        if t.dim() < 2:
            return with_layout(t, "strided")
        perm = list(range(t.dim() - 2)) + [t.dim() - 1, t.dim() - 2]
        return t.permute(perm).contiguous().permute(perm)
    if layout == "broadcast":
        return t[:1].expand_as(t) if t.shape[0] > 0 else t
    if layout == "channels_last":
        if t.dim() < 3:
            return with_layout(t, "transposed")
        perm = [0] + list(range(2, t.dim())) + [1]
        inverse = [perm.index(i) for i in range(t.dim())]
        return t.permute(perm).contiguous().permute(inverse)
    raise ValueError(f"unknown layout {layout!r}")


class Canary:
    """An output view inside a poisoned buffer; `intact()` says whether the margins survived."""

    MARGIN = 64

    def __init__(self, shape: Sequence[int], dtype: torch.dtype, device):
        n = 1
        for d in shape:
            n *= d
        self.buffer = torch.full((n + 2 * self.MARGIN,), poison_value(dtype), dtype=dtype,
                                 device=device)
        self.view = self.buffer[self.MARGIN:self.MARGIN + n].view(tuple(shape))

    def intact(self) -> bool:
        head, tail = self.buffer[: self.MARGIN], self.buffer[-self.MARGIN:]
        if self.buffer.is_floating_point():
            return bool(torch.isnan(head).all() and torch.isnan(tail).all())
        fill = poison_value(self.buffer.dtype)
        return bool((head == fill).all() and (tail == fill).all())
