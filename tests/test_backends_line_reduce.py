"""backends/line_reduce.py: the shared line reductions, run in tiny kernels, against torch."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from baracuda.backends.line_reduce import (
    chunk_exp,
    chunk_max_sum,
    clamped_variance,
    loop_max_sum,
    merge_max_sum,
)
from conftest import DEVICE

NEG = float("-inf")
#: the same inside kernels (compiled Triton reads only constexpr globals; the interpreter any)
NEG_K = tl.constexpr(NEG)


@triton.jit
def _pairs_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    """out[0:2]: the line's pair by the online loop; out[2:4]: the merge of per-chunk pairs;
    out[4:6]: the first chunk's pair from chunk_exp (max, sum of its exps)."""
    cols = tl.arange(0, BLOCK)
    m, s = loop_max_sum(x_ptr, 0, N, N, 1, cols, BLOCK, tl.float32, "")
    tl.store(out_ptr, m)
    tl.store(out_ptr + 1, s)
    j = tl.arange(0, CHUNK)
    m_p = tl.full([CHUNK], NEG_K, tl.float32)
    s_p = tl.zeros([CHUNK], tl.float32)
    for k in range(0, CHUNK):
        c = k * BLOCK + cols
        mk, sk = chunk_max_sum(tl.load(x_ptr + c, mask=c < N, other=NEG_K).to(tl.float32))
        m_p = tl.where(j == k, mk, m_p)
        s_p = tl.where(j == k, sk, s_p)
    m2, s2 = merge_max_sum(m_p, s_p, 0)
    tl.store(out_ptr + 2, m2)
    tl.store(out_ptr + 3, s2)
    m3, e3 = chunk_exp(tl.load(x_ptr + cols, mask=cols < N, other=NEG_K).to(tl.float32))
    tl.store(out_ptr + 4, m3)
    tl.store(out_ptr + 5, tl.sum(e3, 0))


@triton.jit
def _rows_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """merge_max_sum along axis 1 of a [ROWS, BLOCK] tile of (max, sum) pairs (x, 1)."""
    r = tl.arange(0, ROWS)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * BLOCK + c[None, :])
    m, s = merge_max_sum(x, tl.where(x > NEG_K, 1.0, 0.0), 1)
    tl.store(out_ptr + r, m)
    tl.store(out_ptr + ROWS + r, s)


@triton.jit
def _clamp_kernel(v_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, clamped_variance(tl.load(v_ptr + i)))


def _pairs(x: torch.Tensor, block: int = 16) -> torch.Tensor:
    chunks = triton.next_power_of_2(triton.cdiv(x.numel(), block))
    out = torch.empty(6, dtype=torch.float32, device=DEVICE)
    _pairs_kernel[(1,)](x, out, x.numel(), BLOCK=block, CHUNK=chunks)
    return out.cpu()


@pytest.mark.parametrize("n", [1, 5, 16, 37, 64])
def test_max_sum_pairs_match_torch(n):
    torch.manual_seed(n)
    x = (torch.randn(n) * 8).to(DEVICE)
    if n > 1:
        x[n // 2] = NEG  # a -inf element adds nothing
    out = _pairs(x)
    xf = x.double().cpu()
    m = xf.max()
    s = torch.exp(xf - m).sum()
    for k in (0, 2):
        assert out[k].item() == m.item()
        torch.testing.assert_close(out[k + 1].double(), s, rtol=1e-5, atol=0)
    first = xf[:16]
    torch.testing.assert_close(out[4].double(), first.max())
    torch.testing.assert_close(out[5].double(), torch.exp(first - first.max()).sum(),
                               rtol=1e-5, atol=0)


def test_all_neg_inf_line_sums_to_nan():
    out = _pairs(torch.full((37,), NEG, device=DEVICE))
    assert out[0].item() == NEG and out[1].isnan()
    assert out[2].item() == NEG and out[3].isnan()
    # a chunk alone reports (-inf, 0): only the line's merge turns it into NaN
    assert out[4].item() == NEG and out[5].item() == 0.0


def test_merge_along_rows():
    x = torch.randn(4, 8, device=DEVICE)
    x[1, 3:] = NEG
    x[2] = NEG
    out = torch.empty(8, dtype=torch.float32, device=DEVICE)
    _rows_kernel[(1,)](x, out, ROWS=4, BLOCK=8)
    xd = x.double().cpu()
    m = xd.max(1).values
    s = torch.where(xd > NEG, torch.exp(xd - m[:, None]), 0.0).sum(1)
    s[2] = float("nan")
    torch.testing.assert_close(out[:4].cpu().double(), m)
    torch.testing.assert_close(out[4:].cpu().double(), s, rtol=1e-5, atol=0, equal_nan=True)


def test_clamped_variance_keeps_nan():
    v = torch.tensor([-1e-7, 0.0, 2.5, float("nan")], device=DEVICE)
    out = torch.empty_like(v)
    _clamp_kernel[(1,)](v, out, N=4)
    assert out[:3].tolist() == [0.0, 0.0, 2.5] and out[3].isnan()

