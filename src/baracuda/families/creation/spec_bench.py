"""Creation benchmark rows: fills of 1 GiB (bf16, f32), ranges of 2**28 elements and
eye(32768); bytes = the bytes written (nothing is read)."""

from __future__ import annotations

import torch

from ...core.registry import register_bench
from ...core.spec import BenchCase

GIB = 1 << 30
RANGE_ELEMENTS = 1 << 28
EYE_N = 32768


def _on(device):
    return {"device": device}


def _label(shape, dtype) -> str:
    return f"{list(shape)} {str(dtype).removeprefix('torch.')}"


@register_bench("creation")
def creation_benches(quick: bool):
    from . import torch_api as bt

    out = []
    for dtype in (torch.bfloat16, torch.float32):
        n = GIB // dtype.itemsize
        out.append(BenchCase("full", _label((n,), dtype), _on,
                             ours=lambda device, n=n, dtype=dtype: bt.full(
                                 (n,), 1.5, dtype=dtype, device=device),
                             torch_eager=lambda device, n=n, dtype=dtype: torch.full(
                                 (n,), 1.5, dtype=dtype, device=device),
                             bytes=GIB, quick=dtype == torch.bfloat16))
        out.append(BenchCase("zeros", _label((n,), dtype), _on,
                             ours=lambda device, n=n, dtype=dtype: bt.zeros(
                                 n, dtype=dtype, device=device),
                             torch_eager=lambda device, n=n, dtype=dtype: torch.zeros(
                                 n, dtype=dtype, device=device),
                             bytes=GIB, quick=False))
    for dtype in (torch.int64, torch.float32):
        out.append(BenchCase("arange", _label((RANGE_ELEMENTS,), dtype), _on,
                             ours=lambda device, dtype=dtype: bt.arange(
                                 RANGE_ELEMENTS, dtype=dtype, device=device),
                             torch_eager=lambda device, dtype=dtype: torch.arange(
                                 RANGE_ELEMENTS, dtype=dtype, device=device),
                             bytes=RANGE_ELEMENTS * dtype.itemsize,
                             quick=dtype == torch.float32))
    out.append(BenchCase("linspace", _label((RANGE_ELEMENTS,), torch.float32), _on,
                         ours=lambda device: bt.linspace(-1.0, 1.0, RANGE_ELEMENTS,
                                                         device=device),
                         torch_eager=lambda device: torch.linspace(-1.0, 1.0, RANGE_ELEMENTS,
                                                                   device=device),
                         bytes=RANGE_ELEMENTS * 4))
    out.append(BenchCase("eye", _label((EYE_N, EYE_N), torch.float32), _on,
                         ours=lambda device: bt.eye(EYE_N, device=device),
                         torch_eager=lambda device: torch.eye(EYE_N, device=device),
                         bytes=EYE_N * EYE_N * 4))
    return out
