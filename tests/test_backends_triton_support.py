"""backends.triton_support: round_to (one rounding, to nearest even, into a float type; the
interpreter's own f32 -> bf16 conversion truncates; NaN kept), and reduce_with / scan_with (a
combine function arriving as a constexpr kernel argument, as a caller's monoid does)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from baracuda.backends.triton_support import reduce_with, round_to, scan_with
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


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def _fold_kernel(x_ptr, total_ptr, prefix_ptr, N: tl.constexpr, COMBINE: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(total_ptr, reduce_with(x, 0, COMBINE))
    tl.store(prefix_ptr + i, scan_with(x, 0, COMBINE))


# compiled only: the interpreter runs builtins without a semantic (the families fold their
# lanes by halvings there instead, see reduction/generic_kernels.fold_lanes)
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["add", "maximum"])
def test_reduce_with_and_scan_with_apply_the_passed_combine(name):
    combine, total_ref, prefix_ref = {
        "add": (_add, lambda v: v.sum(), lambda v: v.cumsum(0)),
        "maximum": (_maximum, lambda v: v.max(), lambda v: v.cummax(0).values),
    }[name]
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(-50, 50, (64,), generator=gen, dtype=torch.int32).to(DEVICE)
    total = torch.full((1,), -7, dtype=torch.int32, device=DEVICE)
    prefix = torch.full((64,), -7, dtype=torch.int32, device=DEVICE)
    _fold_kernel[(1,)](x, total, prefix, N=64, COMBINE=combine)
    assert total.item() == total_ref(x.cpu()).item()
    assert torch.equal(prefix.cpu(), prefix_ref(x.cpu()).to(torch.int32))
