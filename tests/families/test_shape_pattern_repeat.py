"""torch.repeat_interleave against torch: both overloads, int / tensor / one-element repeats,
dims, layouts, dtypes, output_size, gradients (segment sums), errors, opcheck, compile."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import ArgumentTypeError, InvalidProblem
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 3
    return x.round().to(DEVICE, dtype) if not dtype.is_floating_point else x.to(DEVICE, dtype)


COUNTS = torch.tensor([2, 0, 3, 1, 4])


@pytest.mark.parametrize("repeats", [0, 1, 3, "counts", "one"])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_matches_torch_with_gradient(repeats, dim):
    x = _x(5, 5, 3)[:, :, ::1].transpose(0, 1)
    rep = {"counts": COUNTS.to(DEVICE), "one": torch.tensor([2], device=DEVICE)}.get(
        repeats, repeats)
    if repeats == "counts" and dim is None:
        rep = torch.arange(75, device=DEVICE) % 3
    if repeats == "counts" and dim == -1:
        rep = COUNTS[:3].to(DEVICE)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = bt.repeat_interleave(xa, rep, dim), torch.repeat_interleave(xb, rep, dim)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    if b.numel():
        dy = _x(*b.shape, seed=2)
        torch.testing.assert_close(torch.autograd.grad(a, xa, dy)[0],
                                   torch.autograd.grad(b, xb, dy)[0])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32, torch.bool])
def test_dtypes_output_size_and_indices(dtype):
    x = _x(4, 6, dtype=dtype)
    c = torch.tensor([1, 3, 0, 2], device=DEVICE, dtype=torch.int32)
    want = torch.repeat_interleave(x, c, 0)
    assert torch.equal(bt.repeat_interleave(x, c, 0, output_size=6), want)
    assert torch.equal(bt.repeat_interleave(c), torch.repeat_interleave(c))
    assert torch.equal(bt.repeat_interleave(c, output_size=6), torch.repeat_interleave(c))
    assert torch.equal(bt.repeat_interleave(_x((), dtype=dtype), 3),
                       torch.repeat_interleave(_x((), dtype=dtype), 3))


def test_backward_is_deterministic():
    x = _x(300, 17, dtype=torch.float32).requires_grad_()
    c = (torch.arange(300, device=DEVICE) * 7) % 5
    dy = _x(int(c.sum()), 17, dtype=torch.float32, seed=3)
    a = torch.autograd.grad(bt.repeat_interleave(x, c, 0), x, dy)[0]
    b = torch.autograd.grad(bt.repeat_interleave(x, c, 0), x, dy)[0]
    assert torch.equal(a.view(torch.int32), b.view(torch.int32))


@pytest.mark.parametrize("call,error", [
    (lambda: bt.repeat_interleave(_x(3), -1), InvalidProblem),
    (lambda: bt.repeat_interleave(_x(3), torch.tensor([1, -1, 2], device=DEVICE)),
     InvalidProblem),
    (lambda: bt.repeat_interleave(_x(3), torch.tensor([1, 2], device=DEVICE)), InvalidProblem),
    (lambda: bt.repeat_interleave(_x(3), torch.tensor([1.0, 2.0, 1.0], device=DEVICE)),
     InvalidProblem),
    (lambda: bt.repeat_interleave(_x(3), 2.5), ArgumentTypeError),
    (lambda: bt.repeat_interleave(_x(3), 2, 1), IndexError),
])
def test_errors(call, error):
    with pytest.raises(error):
        call()


def test_opcheck_and_compile():
    x = _x(4, 3).requires_grad_()
    c = torch.tensor([1, 0, 2, 3], device=DEVICE)
    torch.library.opcheck(torch.ops.baracuda.repeat_interleave.default, (x, 2, None, 0, 8))
    torch.library.opcheck(torch.ops.baracuda.repeat_interleave.default, (x, 0, c, 0, 6))
    torch.library.opcheck(torch.ops.baracuda.repeat_interleave_indices.default, (c, 6))

    def f(t):
        return bt.repeat_interleave(t, 3, 1).sin().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    xa, xb = x.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    a, b = compiled(xa), f(xb)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(torch.autograd.grad(a, xa)[0], torch.autograd.grad(b, xb)[0])


@pytest.mark.gpu
def test_real_size():
    x = torch.randn(8191, 2049, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    c = torch.randint(0, 4, (8191,), device=DEVICE)
    for rep in (2, c):
        a, b = bt.repeat_interleave(x, rep, 0), torch.repeat_interleave(x, rep, 0)
        assert torch.equal(a, b)
        dy = torch.randn_like(b)
        torch.testing.assert_close(torch.autograd.grad(a, x, dy)[0].float(),
                                   torch.autograd.grad(b, x, dy)[0].float(), rtol=2e-2,
                                   atol=2e-2)
