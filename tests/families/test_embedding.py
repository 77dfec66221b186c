"""Embedding through the torch frontend: values and gradients vs torch, padding_idx,
scale_grad_by_freq, errors, opcheck, torch.compile, determinism."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.embedding.torch_api import _embedding, embedding, embedding_bag
from helpers import assert_bitwise_equal


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("freq", [False, True])
def test_matches_torch(padding_idx, freq, device):
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(10, 6, generator=gen, dtype=torch.float64).to(device)
    idx = torch.randint(0, 10, (3, 7), generator=gen).to(device)
    idx[0, :3] = 9
    g = torch.randn(3, 7, 6, generator=gen, dtype=torch.float64).to(device)
    w1 = w.clone().requires_grad_()
    w2 = w.clone().requires_grad_()
    out = embedding(idx, w1, padding_idx=padding_idx, scale_grad_by_freq=freq)
    exp = F.embedding(idx, w2, padding_idx=padding_idx, scale_grad_by_freq=freq)
    assert torch.equal(out, exp)
    (g1,) = torch.autograd.grad(out, w1, g)
    (g2,) = torch.autograd.grad(exp, w2, g)
    torch.testing.assert_close(g1, g2)


def test_gradcheck(device):
    w = torch.randn(6, 3, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([1, 4, 1, 0, 5, 1], device=device)
    torch.autograd.gradcheck(lambda t: embedding(idx, t), (w,), fast_mode=True)


def test_bf16_strided_weight_and_int32(device):
    gen = torch.Generator().manual_seed(1)
    big = torch.randn(20, 16, generator=gen).to(device, torch.bfloat16)
    w = big[::2, ::2]
    idx = torch.randint(0, 10, (25,), generator=gen, dtype=torch.int32).to(device)
    assert torch.equal(embedding(idx, w), F.embedding(idx, w))


def test_errors(device):
    w = torch.randn(5, 3, device=device)
    if device.type == "cpu":  # CUDA: a device-side assert, as torch (it would end the process)
        with pytest.raises(IndexError):
            embedding(torch.tensor([0, 5], device=device), w)
        with pytest.raises(IndexError):
            embedding(torch.tensor([-1], device=device), w)
    for bad in (5, -6):  # torch's AssertionError, raised explicitly (survives python -O)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            embedding(torch.tensor([0], device=device), w, padding_idx=bad)
        with pytest.raises(RuntimeError, match="padding_idx must be within the number"):
            embedding_bag(torch.tensor([[0]], device=device), w, padding_idx=bad)
    with pytest.raises(RuntimeError):
        embedding(torch.tensor([0.0], device=device), w)


def test_empty_and_deterministic(device):
    w = torch.randn(7, 4, device=device, requires_grad=True)
    out = embedding(torch.zeros(0, 3, dtype=torch.int64, device=device), w)
    assert out.shape == (0, 3, 4)
    idx = torch.randint(0, 7, (300,), generator=torch.Generator().manual_seed(2)).to(device)
    g = torch.randn(300, 4, generator=torch.Generator().manual_seed(3)).to(device)
    (first,) = torch.autograd.grad(embedding(idx, w), w, g)
    (again,) = torch.autograd.grad(embedding(idx, w), w, g)
    assert_bitwise_equal(first, again)


def test_opcheck_and_compile(device):
    w = torch.randn(6, 3, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([[1, 4], [1, 0]], device=device)
    torch.library.opcheck(_embedding.custom_op, (idx, w, -1))

    def f(idx, w):
        return embedding(idx, w, padding_idx=1).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    (g1,) = torch.autograd.grad(compiled(idx, w), w)
    (g2,) = torch.autograd.grad(f(idx, w), w)
    assert torch.equal(g1, g2)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_max_norm_renormalizes_in_place(norm_type, device):
    w = torch.randn(8, 5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    w = w.to(device) * 2
    idx = torch.tensor([[1, 3], [3, 6]], device=device)
    w1, w2 = w.clone(), w.cpu().clone()
    out = embedding(idx, w1, max_norm=1.0, norm_type=norm_type)
    # The reference is torch's CPU kernel, the p-norm of |w|: torch's CUDA kernel sums
    # pow(w, p) without the absolute value, which differs for odd p and negative entries.
    exp = F.embedding(idx.cpu(), w2, max_norm=1.0, norm_type=norm_type)
    # p outside {1, 2, inf}: the norm is computed in f32 (documented)
    tol = {} if norm_type in (1.0, 2.0) else dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w1.cpu(), w2, **tol)
    torch.testing.assert_close(out.cpu(), exp, **tol)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_matches_torch(mode, padding_idx, device):
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(9, 4, generator=gen, dtype=torch.float64).to(device)
    idx = torch.randint(0, 9, (14,), generator=gen).to(device)
    idx[:3] = 2
    offsets = torch.tensor([0, 3, 3, 8], device=device)  # an empty bag
    psw = torch.randn(14, generator=gen, dtype=torch.float64).to(device) \
        if mode == "sum" else None
    w1, w2 = w.clone().requires_grad_(), w.clone().requires_grad_()
    p1 = psw.clone().requires_grad_() if psw is not None else None
    p2 = psw.clone().requires_grad_() if psw is not None else None
    out = embedding_bag(idx, w1, offsets, mode=mode, per_sample_weights=p1,
                        padding_idx=padding_idx)
    exp = F.embedding_bag(idx, w2, offsets, mode=mode, per_sample_weights=p2,
                          padding_idx=padding_idx)
    torch.testing.assert_close(out, exp)
    g = torch.randn(exp.shape, generator=gen, dtype=torch.float64).to(device)
    inputs1 = (w1,) if p1 is None else (w1, p1)
    inputs2 = (w2,) if p2 is None else (w2, p2)
    for a, b in zip(torch.autograd.grad(out, inputs1, g), torch.autograd.grad(exp, inputs2, g)):
        torch.testing.assert_close(a, b)


def test_embedding_bag_2d_and_last_offset(device):
    gen = torch.Generator().manual_seed(6)
    w = torch.randn(7, 3, generator=gen, dtype=torch.float64).to(device)
    idx2 = torch.randint(0, 7, (4, 5), generator=gen).to(device)
    torch.testing.assert_close(embedding_bag(idx2, w, mode="sum"),
                               F.embedding_bag(idx2, w, mode="sum"))
    idx = idx2.reshape(-1)
    offs = torch.tensor([0, 6, 20], device=device)
    torch.testing.assert_close(embedding_bag(idx, w, offs, include_last_offset=True),
                               F.embedding_bag(idx, w, offs, include_last_offset=True))


def test_embedding_bag_compile(device):
    w = torch.randn(8, 3, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([1, 4, 4, 0, 7, 2], device=device)
    offs = torch.tensor([0, 2, 5], device=device)

    def f(w):
        return embedding_bag(idx, w, offs, mode="max").sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    (g1,) = torch.autograd.grad(compiled(w), w)
    (g2,) = torch.autograd.grad(f(w), w)
    assert torch.equal(g1, g2)
