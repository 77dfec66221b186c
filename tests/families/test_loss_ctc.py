"""ctc_loss through baracuda.torch against torch.nn.functional.ctc_loss: loss and log_probs
gradient in float64, padded and concatenated targets, lengths as lists and tensors, the
unbatched form, zero_infinity, torch's errors, determinism, and real sizes on CUDA."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.loss import torch_api as bt
from conftest import DEVICE, ON_GPU


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _problem(T, N, C, S, seed=0, blank=0, dtype=torch.float64):
    g = _gen(seed)
    lp = torch.randn(T, N, C, generator=g, dtype=torch.float64).log_softmax(2)
    labels = torch.randint(0, C - 1, (N, S), generator=g)
    labels = labels + (labels >= blank).long()  # every class but the blank
    tl = torch.randint(0, S + 1, (N,), generator=g)
    tl[0] = S
    il = torch.randint(max(1, T // 2), T + 1, (N,), generator=g)
    return lp.to(DEVICE, dtype), labels.to(DEVICE), il, tl


def _compare(lp, targets, il, tl, atol=1e-10, rtol=1e-8, **kw):
    a = lp.detach().clone().requires_grad_()
    b = lp.detach().clone().requires_grad_()
    la = bt.ctc_loss(a, targets, il, tl, **kw)
    lb = F.ctc_loss(b, targets, il, tl, **kw)
    assert la.shape == lb.shape and la.dtype == lb.dtype
    torch.testing.assert_close(la, lb, atol=atol, rtol=rtol, equal_nan=True)
    g = torch.randn(lb.shape, generator=_gen(7), dtype=torch.float64).to(DEVICE, lb.dtype)
    (ga,), (gb,) = torch.autograd.grad(la, a, g), torch.autograd.grad(lb, b, g)
    torch.testing.assert_close(ga, gb, atol=atol, rtol=rtol, equal_nan=True)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concat", [False, True])
def test_matches_torch(reduction, concat):
    lp, labels, il, tl = _problem(6, 3, 6, 3, seed=1)
    labels[1, :2] = labels[1, 2]  # repeats: no skip between equal labels
    targets = torch.cat([labels[b, :tl[b]] for b in range(3)]) if concat else labels
    if reduction == "mean":  # lengths as lists too (the other cases pass tensors)
        _compare(lp, targets, il.tolist(), tl.tolist(), reduction=reduction)
    _compare(lp, targets, il.to(DEVICE), tl.to(DEVICE), reduction=reduction)


def test_blank_not_zero_int32_targets_strided_log_probs():
    lp, labels, il, tl = _problem(9, 2, 5, 3, seed=2, blank=4)
    strided = lp.transpose(0, 1).contiguous().transpose(0, 1)  # (T, N, C) N-major storage
    _compare(strided, labels.int(), il, tl, blank=4, reduction="sum")


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_zero_infinity_and_impossible_alignments(reduction):
    lp, labels, il, tl = _problem(5, 2, 4, 3, seed=3)
    il[0] = 1  # too short for 3 labels: infinite loss
    _compare(lp, labels, il, tl, reduction=reduction, zero_infinity=True)
    _compare(lp, labels, il, tl, reduction=reduction, zero_infinity=False)


def test_unbatched_and_empty_targets():
    lp, labels, il, tl = _problem(8, 1, 5, 3, seed=4)
    _compare(lp[:, 0], labels[0], [int(il[0])], [int(tl[0])], reduction="none")
    _compare(lp[:, 0], labels[0], torch.tensor(int(il[0])), torch.tensor(int(tl[0])))
    _compare(lp, labels, [8], [0], reduction="none")  # empty target: all blanks


def test_float32_against_float64():
    lp, labels, il, tl = _problem(20, 3, 12, 6, seed=5)
    ours = bt.ctc_loss(lp.float(), labels, il, tl, reduction="none")
    assert ours.dtype == torch.float32
    torch.testing.assert_close(ours.double(), F.ctc_loss(lp, labels, il, tl, reduction="none"),
                               atol=1e-4, rtol=1e-5)


def test_backward_bit_stable():
    lp, labels, il, tl = _problem(6, 2, 5, 2, seed=6, dtype=torch.float32)
    x = lp.requires_grad_()
    runs = [torch.autograd.grad(bt.ctc_loss(x, labels, il, tl), x)[0] for _ in range(2)]
    assert torch.equal(runs[0], runs[1])


@pytest.mark.parametrize("kw,err,match", [
    (dict(input_lengths=[11, 8]), RuntimeError, "input_lengths to have value at most 10"),
    (dict(target_lengths=[4, 2]), RuntimeError, "size at least 4 at dimension 1"),
    (dict(target_lengths=[3, -1]), RuntimeError, "target_lengths to have value at least 0"),
    (dict(blank=6), RuntimeError, "blank must be in label range"),
    (dict(input_lengths=[10]), RuntimeError, "input_lengths must be of size batch_size"),
    (dict(dtype=torch.float16), NotImplementedError, "not implemented for 'Float16'"),
    (dict(targets=torch.tensor([1, 2, 3, 1, 1])), RuntimeError, "size 6 at dimension 0"),
    (dict(reduction="avg"), ValueError, "avg"),
])
def test_errors_as_torch(kw, err, match):
    lp = torch.randn(10, 2, 6, dtype=torch.float64).log_softmax(2).to(DEVICE)
    args = dict(targets=torch.tensor([[1, 2, 3], [1, 1, 2]]), input_lengths=[10, 8],
                target_lengths=[3, 3], blank=0, reduction="mean")
    if "dtype" in kw:
        lp = lp.to(kw.pop("dtype"))
    args.update(kw)
    with pytest.raises(err, match=match):
        bt.ctc_loss(lp, args.pop("targets").to(DEVICE), args.pop("input_lengths"),
                    args.pop("target_lengths"), **args)


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("C", [64, 1024])
def test_cuda_real_size(C):
    T, N, S = 512, 32, 128
    lp = torch.randn(T, N, C, device="cuda").log_softmax(2)
    targets = torch.randint(1, C, (N, S), device="cuda")
    il = torch.full((N,), T, dtype=torch.long)
    tl = torch.randint(S // 2, S + 1, (N,))
    _compare(lp, targets, il, tl, atol=1e-4, rtol=1e-4)
