"""Issue #34's last shape rows: combinations (table gather, CSR gradient), out= for the
*_copy functions, resize_ / resize_as_ (torch's own, in place) and jnp_resize."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import baracuda.torch as bt
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 0.5).to(DEVICE, dtype)


# -- combinations ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n,r,wr", [(7, 2, False), (6, 3, True), (5, 1, False), (9, 4, False),
                                    (3, 5, False), (3, 4, True), (0, 2, False), (1, 1, True)])
def test_combinations_matches_torch_forward_and_gradient(n, r, wr):
    base = _x(2 * n, seed=n + r)
    x = base[::2].detach().requires_grad_()  # strided
    y = bt.combinations(x, r, wr)
    ref = torch.combinations(x, r, wr)
    assert y.shape == ref.shape and torch.equal(y, ref)
    rows = list((itertools.combinations_with_replacement if wr else itertools.combinations)(
        range(n), r))
    assert y.shape == (len(rows), r)
    if not rows:
        return
    g = _x(*y.shape, seed=3)
    (dx,) = torch.autograd.grad(y, x, g)
    want = torch.zeros(n, dtype=torch.float64)
    for k, row in enumerate(rows):
        for c, j in enumerate(row):
            want[j] += g[k, c].item()
    torch.testing.assert_close(dx.cpu(), want, rtol=1e-12, atol=1e-12)
    # a broadcast gradient (stride 0) and a rerun: bit-identical
    (d1,) = torch.autograd.grad(bt.combinations(x, r, wr).sum(), x)
    (d2,) = torch.autograd.grad(bt.combinations(x, r, wr).sum(), x)
    assert torch.equal(d1, d2)
    torch.testing.assert_close(d1.cpu(), torch.full((n,), float(r * len(rows) / n),
                                                     dtype=torch.float64))


def test_combinations_gradgradcheck():
    # the gradient's gradient is the forward gather (few launches: the interpreter is slow)
    x = _x(4).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda t: bt.combinations(t, 2, True), (x,))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32, torch.bool])
def test_combinations_dtypes(dtype):
    x = _x(6).to(dtype)
    assert torch.equal(bt.combinations(x, 3), torch.combinations(x, 3))


def test_combinations_edges_and_errors():
    assert bt.combinations(_x(4), 0).shape == torch.combinations(_x(4), 0).shape == (0,)
    assert bt.combinations(_x(0), 0).shape == (0,)
    with pytest.raises(RuntimeError, match="non-negative"):
        bt.combinations(_x(4), -1)
    with pytest.raises(RuntimeError, match="1D vector"):
        bt.combinations(_x(2, 2))
    with pytest.raises(RuntimeError, match="1D vector"):
        bt.combinations(_x(1).reshape(()))


# -- out= for the *_copy functions --------------------------------------------------------------
COPIES = [
    ("permute_copy", lambda x: ((x, (2, 0, 1)), {})),
    ("transpose_copy", lambda x: ((x, 0, 2), {})),
    ("view_copy", lambda x: ((x, (5, 12)), {})),
    ("expand_copy", lambda x: ((x[:1], (4, 3, 4, 5)), {})),
    ("squeeze_copy", lambda x: ((x[:1], 0), {})),
    ("unsqueeze_copy", lambda x: ((x, 1), {})),
    ("diagonal_copy", lambda x: ((x, 1, 1, 2), {})),
    ("as_strided_copy", lambda x: ((x, (2, 3), (7, 2), 1), {})),
    ("unfold_copy", lambda x: ((x, 2, 2, 1), {})),
    ("alias_copy", lambda x: ((x,), {})),
    ("t_copy", lambda x: ((x[0],), {})),
]


@pytest.mark.parametrize("name,make", COPIES, ids=[c[0] for c in COPIES])
def test_copy_out_matches_torch(name, make):
    x = _x(3, 4, 5, dtype=torch.float32)
    args, kwargs = make(x)
    want = getattr(torch, name)(*args, **kwargs)
    for out in (torch.full((2,), float("nan"), device=DEVICE),  # resized
                torch.full(want.shape[::-1], float("nan"), device=DEVICE).mT
                if want.dim() >= 2 else torch.full(want.shape, float("nan"), device=DEVICE)):
        got = getattr(bt, name)(*args, **kwargs, out=out)
        assert got is out and torch.equal(out, want)
    with pytest.raises(RuntimeError, match="dtype"):
        getattr(bt, name)(*args, **kwargs, out=torch.empty(0, dtype=torch.float64,
                                                           device=DEVICE))


def test_copy_list_outs_match_torch():
    x = _x(3, 4)
    outs = [torch.empty(0, dtype=x.dtype, device=DEVICE) for _ in range(3)]
    assert bt.unbind_copy(x, 0, out=outs) is None
    assert all(torch.equal(o, x[i]) for i, o in enumerate(outs))
    outs = [torch.empty(7, dtype=x.dtype, device=DEVICE) for _ in range(2)]
    assert bt.split_with_sizes_copy(x, [1, 3], 1, out=outs) is None
    assert torch.equal(outs[0], x[:, :1]) and torch.equal(outs[1], x[:, 1:])
    with pytest.raises(RuntimeError, match="size 3, got size 1"):
        bt.unbind_copy(x, 0, out=outs[:1])


def test_copy_out_with_grad_input_writes_values():
    x = _x(3, 4).requires_grad_()
    out = torch.empty(0, dtype=x.dtype, device=DEVICE)
    bt.permute_copy(x, (1, 0), out=out)
    assert torch.equal(out, x.detach().t())


# -- resize_ / resize_as_ / jnp_resize -------------------------------------------------------------
def test_resize_is_torchs_in_place():
    x = _x(3, 4)
    keep = x.clone()
    assert bt.resize_(x, (2, 3)) is x and x.shape == (2, 3)
    assert torch.equal(x.reshape(-1), keep.reshape(-1)[:6])
    y = _x(5)
    assert bt.resize_as_(y, _x(2, 2)) is y and y.shape == (2, 2)
    leaf = _x(3).requires_grad_()
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        bt.resize_(leaf, (4,))
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        bt.resize_as_(leaf, _x(4))


@pytest.mark.parametrize("shape,new", [((3, 4), (5, 7)), ((5,), 3), ((2, 3), (2, 3)),
                                       ((4,), (0, 3)), ((0,), (2, 2)), ((7,), ())])
def test_jnp_resize_matches_numpy(shape, new):
    base = _x(*shape[:-1], shape[-1] * 2) if shape else _x()
    x = base[..., ::2].detach().requires_grad_()  # strided
    y = bt.jnp_resize(x, new)
    want = np.resize(x.detach().cpu().numpy(), new)
    if x.numel() == 0:
        want = np.zeros(new)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), want)
    if y.numel() and x.numel():
        g = _x(*y.shape, seed=5)
        (dx,) = torch.autograd.grad(y, x, g)
        idx = np.resize(np.arange(x.numel()), y.numel())
        ref = np.zeros(x.numel())
        np.add.at(ref, idx, g.reshape(-1).cpu().numpy())
        np.testing.assert_allclose(dx.cpu().numpy().reshape(-1), ref, rtol=1e-12)


def test_jnp_resize_errors():
    with pytest.raises(ValueError, match="non-negative"):
        bt.jnp_resize(_x(3), (2, -1))
    with pytest.raises(TypeError):
        bt.jnp_resize(_x(3), 2.0)
