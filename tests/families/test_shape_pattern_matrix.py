"""torch.tril / triu (out=, in place), diag, diagflat, diag_embed and block_diag against
torch: offsets, layouts, dtypes, gradients, torch's errors, opcheck, torch.compile."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import ArgumentTypeError, InvalidProblem
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 3
    if not dtype.is_floating_point:
        x = x.round().abs() if dtype in (torch.uint8, torch.bool) else x.round()
    return x.to(DEVICE, dtype)


def _grads(ours, theirs, x, *args):
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = ours(xa, *args), theirs(xb, *args)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    dy = _x(*b.shape, seed=7)
    torch.testing.assert_close(torch.autograd.grad(a, xa, dy)[0],
                               torch.autograd.grad(b, xb, dy)[0], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("k", [-3, 0, 2, 40])
def test_triangles(name, k):
    x = _x(2, 9, 13)
    _grads(getattr(bt, name), getattr(torch, name), x, k)
    _grads(getattr(bt, name), getattr(torch, name), x.transpose(1, 2), k)
    _grads(getattr(bt, name), getattr(torch, name), x[:1].expand(3, 9, 13), k)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32, torch.bool, torch.uint8])
def test_triangle_dtypes_and_batches(dtype):
    x = _x(2, 3, 4, 5, 6, dtype=dtype)
    assert torch.equal(bt.tril(x, 1), torch.tril(x, 1))
    assert torch.equal(bt.triu(x[:, :, ::2], -1), torch.triu(x[:, :, ::2], -1))
    assert bt.tril(_x(0, 3)).shape == (0, 3)


def test_triangle_out_and_in_place():
    x = _x(5, 7)
    out = torch.full((5, 7), float("nan"), dtype=x.dtype, device=DEVICE).t().contiguous().t()
    assert bt.tril(x, 1, out=out) is out
    assert torch.equal(out, torch.tril(x, 1))
    small = torch.empty(0, dtype=x.dtype, device=DEVICE)
    bt.triu(x, out=small)
    assert torch.equal(small, torch.triu(x))
    y = x.clone()
    bt.triu(y, 2, out=y)
    assert torch.equal(y, torch.triu(x, 2))
    with pytest.raises(InvalidProblem):
        bt.tril(x, out=torch.empty(5, 7, dtype=torch.float32, device=DEVICE))


def test_diag_family():
    v, m = _x(6), _x(5, 8)
    for k in (-2, 0, 3):
        _grads(bt.diag, torch.diag, v, k)
        _grads(bt.diag, torch.diag, m, k)
        _grads(bt.diag, torch.diag, m.t(), k)
        _grads(bt.diagflat, torch.diagflat, _x(2, 3), k)
    x = _x(2, 3, 4)
    for k, d1, d2 in ((0, -2, -1), (1, 0, 2), (-2, 3, 1), (2, 1, 0)):
        _grads(lambda t, *a: bt.diag_embed(t, *a), lambda t, *a: torch.diag_embed(t, *a), x, k,
               d1, d2)
    assert torch.equal(bt.diag(_x(4, dtype=torch.int64), 1), torch.diag(_x(4, dtype=torch.int64),
                                                                         1))


def test_block_diag_promotes_and_differentiates():
    a, b, c = _x(2, 3), _x((), dtype=torch.int32), _x(4, dtype=torch.float32)
    got, want = bt.block_diag(a, b, c, _x(0, 2)), torch.block_diag(a, b, c, _x(0, 2))
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(bt.block_diag(b, b), torch.block_diag(b, b))
    aa, cc = a.clone().requires_grad_(), _x(3, 1).requires_grad_()
    y = bt.block_diag(aa, cc.t())
    dy = _x(*y.shape, seed=4)
    ga = torch.autograd.grad(y, (aa, cc), dy)
    torch.testing.assert_close(ga[0], dy[:2, :3])
    torch.testing.assert_close(ga[1], dy[2:, 3:].t())


@pytest.mark.parametrize("call,error", [
    (lambda: bt.tril(_x(5)), InvalidProblem),
    (lambda: bt.diag(_x(2, 3, 4)), InvalidProblem),
    (lambda: bt.diag_embed(_x(3), 0, 0, 0), InvalidProblem),
    (lambda: bt.block_diag(_x(2, 2, 2)), InvalidProblem),
    (lambda: bt.tril(_x(3, 3), 1.5), ArgumentTypeError),
])
def test_errors(call, error):
    with pytest.raises(error):
        call()


def test_opcheck_and_compile():
    x = _x(3, 4).requires_grad_()
    torch.library.opcheck(torch.ops.baracuda.matrix_pattern.default,
                          (x, "lower", 1, -2, -1, []))
    torch.library.opcheck(torch.ops.baracuda.matrix_pattern.default,
                          (x, "diagonal", -1, 0, 1, []))
    torch.library.opcheck(torch.ops.baracuda.block_diag.default, ([x, _x(2)],))

    def f(t):
        return bt.tril(t, -1).sum() + bt.diag(t, 1).square().sum() + \
            bt.diag_embed(t).sin().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    xa, xb = x.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    a, b = compiled(xa), f(xb)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(torch.autograd.grad(a, xa)[0], torch.autograd.grad(b, xb)[0])


@pytest.mark.gpu
def test_tril_real_size():
    x = torch.randn(4, 4099, 4097, device=DEVICE)
    assert torch.equal(bt.tril(x, 3), torch.tril(x, 3))
    assert torch.equal(bt.triu(x, -5), torch.triu(x, -5))
