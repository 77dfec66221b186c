"""Structured losses (multi_margin, multilabel_margin, cosine_embedding, triplet_margin,
triplet_margin_with_distance) through baracuda.torch against torch.nn.functional: values and
gradients in float64, torch's 1-D forms, broadcasting and dtype promotion, torch's errors,
determinism, and a CUDA compile check."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.loss import torch_api as bt
from conftest import DEVICE, ON_GPU


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=_gen(seed), dtype=torch.float64).to(DEVICE, dtype)


def _check(ours, theirs, floats, others=(), kw=None, atol=1e-10, rtol=1e-8):
    """Loss and gradients of the float inputs for a random upstream gradient."""
    kw = kw or {}
    a = [t.detach().clone().requires_grad_() for t in floats]
    b = [t.detach().clone().requires_grad_() for t in floats]
    la, lb = ours(*a, *others, **kw), theirs(*b, *others, **kw)
    assert la.shape == lb.shape and la.dtype == lb.dtype
    torch.testing.assert_close(la, lb, atol=atol, rtol=rtol, equal_nan=True)
    g = torch.randn(lb.shape, generator=_gen(9), dtype=torch.float64).to(DEVICE, lb.dtype)
    ga = torch.autograd.grad(la, a, g)
    gb = torch.autograd.grad(lb, b, g)
    for x, y in zip(ga, gb):
        torch.testing.assert_close(x, y, atol=atol, rtol=rtol)


RED = ["none", "mean", "sum"]


# -- multi_margin ----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.6, True)])
def test_multi_margin_matches_torch(reduction, p, margin, weighted):
    x = _rand(5, 17, seed=1)[:, ::1]
    t = torch.randint(0, 17, (5,), generator=_gen(2)).to(DEVICE)
    w = (torch.rand(17, generator=_gen(3), dtype=torch.float64) + 0.1).to(DEVICE)
    kw = dict(p=p, margin=margin, weight=w if weighted else None, reduction=reduction)
    _check(bt.multi_margin_loss, F.multi_margin_loss, [x], [t], kw)


def test_multi_margin_unbatched_and_strided():
    x = _rand(9, seed=4)
    _check(bt.multi_margin_loss, F.multi_margin_loss, [x], [torch.tensor(3, device=DEVICE)],
           dict(reduction="none"))
    _check(bt.multi_margin_loss, F.multi_margin_loss, [x], [torch.tensor([3], device=DEVICE)],
           dict(reduction="none"))
    xs = _rand(9, 6, seed=5).t()  # (6, 9), column-major
    _check(bt.multi_margin_loss, F.multi_margin_loss, [xs],
           [torch.arange(6, device=DEVICE)], dict(reduction="sum"))


@pytest.mark.parametrize("call,err,match", [
    (lambda x, t: bt.multi_margin_loss(x, t, p=3), ValueError, "only p == 1 and p == 2"),
    (lambda x, t: bt.multi_margin_loss(x, t + 5), RuntimeError, "target out of range"),
    (lambda x, t: bt.multi_margin_loss(x, t.int()), RuntimeError, "expected scalar type Long"),
    (lambda x, t: bt.multi_margin_loss(x, t[:2]), RuntimeError, "target tensor should be 1-D"),
    (lambda x, t: bt.multi_margin_loss(x, t, weight=torch.ones(4, dtype=x.dtype,
                                                               device=x.device)),
     RuntimeError, "inconsistent weight size"),
    (lambda x, t: bt.multi_margin_loss(x, t, margin="a"), TypeError, "must be Number"),
    (lambda x, t: bt.multi_margin_loss(x.reshape(1, 3, 5), t), RuntimeError, "non-empty"),
    (lambda x, t: bt.multi_margin_loss(x, t, reduction="avg"), ValueError, "avg"),
])
def test_multi_margin_errors_as_torch(call, err, match):
    if "out of range" in match and ON_GPU:
        pytest.skip("CUDA kernels fail a device-side assert instead")
    x = _rand(3, 5, seed=6)
    t = torch.tensor([0, 4, 2], device=DEVICE)
    with pytest.raises(err, match=match):
        call(x, t)


# -- multilabel_margin -----------------------------------------------------------------------
@pytest.mark.parametrize("reduction", RED)
def test_multilabel_margin_matches_torch(reduction):
    x = _rand(6, 13, seed=7)
    t = torch.randint(0, 13, (6, 13), generator=_gen(8))
    cut = torch.tensor([0, 1, 3, 13, 5, 2]).unsqueeze(1)
    t = torch.where(torch.arange(13) < cut, t, -1)
    t[4, 7] = 11  # after the first -1: ignored, as in torch
    t[2, :3] = 4  # a repeated target counts once per entry
    _check(bt.multilabel_margin_loss, F.multilabel_margin_loss, [x], [t.to(DEVICE)],
           dict(reduction=reduction))
    _check(bt.multilabel_margin_loss, F.multilabel_margin_loss, [x[1]], [t[1].to(DEVICE)],
           dict(reduction=reduction))


def test_multilabel_margin_errors_as_torch():
    x = _rand(3, 5, seed=9)
    t = torch.tensor([[0, 2, -1, 0, 0]] * 3, device=DEVICE)
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        bt.multilabel_margin_loss(x, t[:2])
    with pytest.raises(RuntimeError, match="expected scalar type Long"):
        bt.multilabel_margin_loss(x, t.int())
    if not ON_GPU:
        with pytest.raises(RuntimeError, match="'target' is out of range"):
            bt.multilabel_margin_loss(x, t.clone().fill_(5))


# -- cosine_embedding ------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", RED)
def test_cosine_embedding_matches_torch(reduction):
    a, b = _rand(7, 19, seed=10), _rand(7, 19, seed=11)
    b[3] = a[3] * 2.0  # cos = 1
    y = torch.tensor([1, -1, 1, -1, 0, -1, 1], device=DEVICE)
    _check(bt.cosine_embedding_loss, F.cosine_embedding_loss, [a, b], [y],
           dict(margin=0.1, reduction=reduction))


def test_cosine_embedding_broadcast_promotion_and_unbatched():
    a, b = _rand(5, 8, seed=12), _rand(1, 8, seed=13, dtype=torch.float32)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0], device=DEVICE)
    # torch sums b * b in float32 (b's dtype), ours in the promoted float64
    _check(bt.cosine_embedding_loss, F.cosine_embedding_loss, [a, b], [y],
           dict(margin=-0.3, reduction="none"), atol=1e-6, rtol=1e-6)
    _check(bt.cosine_embedding_loss, F.cosine_embedding_loss, [a[0], a[1]],
           [torch.tensor(-1, device=DEVICE)], dict(margin=-0.5, reduction="none"))


def test_cosine_embedding_errors_as_torch():
    a = _rand(3, 5)
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input"):
        bt.cosine_embedding_loss(a[0], a[1], torch.ones(1, device=DEVICE))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        bt.cosine_embedding_loss(a, a, torch.ones(1, 3, device=DEVICE))
    with pytest.raises(RuntimeError):
        bt.cosine_embedding_loss(a, a[:2], torch.ones(3, device=DEVICE))


# -- triplet_margin --------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("p,swap,margin,eps", [(2.0, False, 1.0, 1e-6), (1, True, 2.0, 1e-6),
                                               (3.0, True, 0.5, 1e-3)])
def test_triplet_margin_matches_torch(reduction, p, swap, margin, eps):
    a, q, n = (_rand(6, 21, seed=s) for s in (14, 15, 16))
    q[2] = n[2]  # d(a, p) == d(a, n): the swap's tie splits its gradient
    _check(bt.triplet_margin_loss, F.triplet_margin_loss, [a, q, n], (),
           dict(margin=margin, p=p, eps=eps, swap=swap, reduction=reduction))


def test_triplet_margin_broadcast_ranks_and_promotion():
    a = _rand(2, 1, 9, seed=17)
    q = _rand(1, 3, 9, seed=18, dtype=torch.float32)
    n = _rand(2, 3, 1, seed=19)
    _check(bt.triplet_margin_loss, F.triplet_margin_loss, [a, q, n], (),
           dict(reduction="none", swap=True), atol=1e-6, rtol=1e-5)
    _check(bt.triplet_margin_loss, F.triplet_margin_loss,
           [_rand(9, seed=20), _rand(9, seed=21), _rand(9, seed=22)], (), dict(reduction="none"))


def test_triplet_margin_errors_as_torch():
    a = _rand(3, 5)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        bt.triplet_margin_loss(a, a, a[0])
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        bt.triplet_margin_loss(a, a, a, margin=-1.0)
    with pytest.raises(NotImplementedError, match="p must be finite"):
        bt.triplet_margin_loss(a, a, a, p=float("inf"))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", RED)
def test_triplet_with_distance_matches_torch(swap, reduction):
    a, q, n = (_rand(5, 11, seed=s) for s in (23, 24, 25))

    def dist(u, v):
        return (u - v).abs().sum(-1)

    kw = dict(margin=3.0, swap=swap, reduction=reduction)
    _check(lambda *x, **k: bt.triplet_margin_with_distance_loss(*x, distance_function=dist, **k),
           lambda *x, **k: F.triplet_margin_with_distance_loss(*x, distance_function=dist, **k),
           [a, q, n], (), kw)
    _check(bt.triplet_margin_with_distance_loss, F.triplet_margin_with_distance_loss,
           [a, q, n], (), kw)


def test_triplet_with_distance_errors_as_torch():
    a = _rand(3, 5)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        bt.triplet_margin_with_distance_loss(a, a, a, margin=0.0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        bt.triplet_margin_with_distance_loss(a, a, a[0])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_low_precision_against_float64(dtype):
    """Reduced dtypes compute in f32: close to the float64 answer at the dtype's rounding."""
    a, q, n = (_rand(4, 40, seed=s, dtype=dtype) for s in (26, 27, 28))
    y = torch.tensor([1, -1, 1, -1], device=DEVICE)
    tol = dict(atol=2e-2, rtol=2e-2) if dtype != torch.float32 else dict(atol=1e-5, rtol=1e-5)
    got = bt.cosine_embedding_loss(a, q, y)
    want = F.cosine_embedding_loss(a.double(), q.double(), y)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), want, **tol)
    got = bt.triplet_margin_loss(a, q, n, swap=True, reduction="none")
    want = F.triplet_margin_loss(a.double(), q.double(), n.double(), swap=True,
                                 reduction="none")
    torch.testing.assert_close(got.double(), want, **tol)


def test_backward_bit_stable():
    a, q, n = (_rand(8, 40, seed=s, dtype=torch.float32).requires_grad_() for s in (29, 30, 31))
    runs = [torch.autograd.grad(bt.triplet_margin_loss(a, q, n, swap=True), (a, q, n))
            for _ in range(2)]
    for x, y in zip(*runs):
        assert torch.equal(x, y)


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_cuda_real_size_bf16():
    a, q, n = (torch.randn(65536, 512, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    y = torch.randint(0, 2, (65536,), device="cuda") * 2 - 1
    torch.testing.assert_close(bt.cosine_embedding_loss(a, q, y).double(),
                               F.cosine_embedding_loss(a.double(), q.double(), y),
                               atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(bt.triplet_margin_loss(a, q, n).double(),
                               F.triplet_margin_loss(a.double(), q.double(), n.double()),
                               atol=1e-2, rtol=1e-3)
