"""backends.triton_support.round_to: one rounding, to nearest even, into a float type (the
interpreter's own f32 -> bf16 conversion truncates), NaN kept."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from baracuda.backends.triton_support import round_to
from conftest import DEVICE


@triton.jit
def _cast_kernel(x_ptr, y_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(y_ptr + i, round_to(tl.load(x_ptr + i), y_ptr.dtype.element_ty))


def test_round_to_matches_torch_conversion_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(256, generator=gen) * 100).to(DEVICE)
    x[0] = float("nan")
    for dtype in (torch.bfloat16, torch.float16):
        y = torch.full((256,), float("nan"), dtype=dtype, device=DEVICE)
        _cast_kernel[(1,)](x, y, N=256)
        torch.testing.assert_close(y, x.to(dtype), equal_nan=True, rtol=0, atol=0)
