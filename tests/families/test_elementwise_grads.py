"""Binary-op gradients that need no kernel: add and sub hand the incoming gradient on, as torch's
formula does, where an operand has the gradient's shape and dtype; broadcast, mixed-dtype and
scaled operands still get theirs from the backward kernel. Against torch on the device in use."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from conftest import DEVICE


def _grads(fn, a, b, dy):
    a, b = a.detach().clone().requires_grad_(a.is_floating_point()), \
        b.detach().clone().requires_grad_(b.is_floating_point())
    out = fn(a, b)
    leaves = [t for t in (a, b) if t.requires_grad]
    return out, torch.autograd.grad(out, leaves, dy)


@pytest.mark.parametrize("name,alpha", [("add", 1), ("add", 2.5), ("sub", 1), ("sub", -0.5)])
@pytest.mark.parametrize("case", ["same", "broadcast", "mixed", "int"])
def test_add_and_sub_gradients_match_torch(name, alpha, case):
    g = torch.Generator().manual_seed(7)
    a = torch.randn(5, 7, generator=g, dtype=torch.float64).to(torch.bfloat16).to(DEVICE)
    b = torch.randn(5, 7, generator=g, dtype=torch.float64).to(torch.bfloat16).to(DEVICE)
    if case == "broadcast":
        b = b[:1]
    elif case == "mixed":
        a = a.float()
    elif case == "int":
        b = torch.randint(-3, 4, (5, 7), generator=g).to(DEVICE)
    out_dtype = torch.result_type(a, b)
    dy = torch.randn(5, 7, generator=g).to(out_dtype).to(DEVICE)
    ours = getattr(bt, name)
    theirs = getattr(torch, name)
    got, got_grads = _grads(lambda x, y: ours(x, y, alpha=alpha), a, b, dy)
    want, want_grads = _grads(lambda x, y: theirs(x, y, alpha=alpha), a, b, dy)
    torch.testing.assert_close(got, want)  # (the interpreter does not fuse a + alpha * b)
    for gg, wg in zip(got_grads, want_grads):
        assert gg.dtype == wg.dtype and gg.shape == wg.shape
    if case == "broadcast":
        # b's gradient is a sum over the broadcast rows: against the float64 sum, within two
        # units of bf16 rounding of the summed magnitudes (torch rounds grad * alpha first)
        terms = dy.double() * (alpha if name == "add" else -alpha)
        err = (got_grads[1].double() - terms.sum(0, keepdim=True)).abs()
        assert (err <= 2**-7 * terms.abs().sum(0, keepdim=True)).all()
    else:
        for gg, wg in zip(got_grads, want_grads):
            torch.testing.assert_close(gg, wg, rtol=0, atol=0)


def test_add_hands_the_incoming_gradient_on_without_a_copy():
    a = torch.randn(4, 6, device=DEVICE, requires_grad=True)
    b = torch.randn(4, 6, device=DEVICE, requires_grad=True)
    dy = torch.randn(4, 6, device=DEVICE)
    da, db = torch.autograd.grad(bt.add(a, b), (a, b), dy)
    assert da.data_ptr() == dy.data_ptr() and db.data_ptr() == dy.data_ptr()
    da, db = torch.autograd.grad(bt.sub(a, b), (a, b), dy)
    assert da.data_ptr() == dy.data_ptr()
    assert torch.equal(db, -dy) and db.data_ptr() != dy.data_ptr()
