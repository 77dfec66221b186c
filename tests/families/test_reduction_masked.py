"""torch.masked's reductions on baracuda.torch.masked: against torch.masked in float64 (fully
masked lines, broadcast and non-bool masks, integer inputs, dtype=), gradients (zero at
masked-out elements), gradcheck, errors, determinism."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from conftest import DEVICE

NAN = float("nan")
NAMES = ["sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp",
         "norm"]
DIFFERENTIABLE = ["sum", "prod", "mean", "amax", "amin", "var", "std", "logsumexp", "norm"]
TOL = {torch.float32: 2e-5, torch.bfloat16: 1.6e-2, torch.float64: 1e-12, torch.float16: 2e-3}


def _x(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(DEVICE, dtype)


def _mask(*shape, seed=1, p=0.4):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(*shape, generator=g) > p
    if m.dim() >= 2 and m.shape[0] > 1:
        m[0] = False  # a fully masked-out line (along dim 1)
    return m.to(DEVICE)


def _call(mod, name, x, dim, mask, **kw):
    fn = getattr(mod, name)
    if name in ("argmax", "argmin"):
        dim = dim if isinstance(dim, int) else None
    if name == "norm":
        return fn(x, 2.0, dim, mask=mask, **kw)
    return fn(x, dim, mask=mask, **kw)


def _same(got, want, dtype=torch.float32):
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.is_floating_point():
        tol = TOL.get(dtype, 1e-5)
        torch.testing.assert_close(got.double().cpu(), want.double().cpu(), rtol=tol,
                                   atol=tol, equal_nan=True)
    else:
        assert torch.equal(got.cpu(), want.cpu()), (got, want)


@pytest.mark.parametrize("name", NAMES)
def test_masked_matches_torch(name):
    x = _x(5, 37, seed=2).t()  # transposed input
    m = _mask(37, 5, seed=3)
    for dim, kw in ((1, {}), (0, {"keepdim": True}), ((0, 1), {}), (None, {})):
        want = _call(torch.masked, name, x.double(), dim, m, **kw)
        got = _call(bt.masked, name, x, dim, m, **kw)
        _same(got, want.to(got.dtype) if want.is_floating_point() else want)


@pytest.mark.parametrize("name", NAMES)
def test_masked_broadcast_and_long_lines(name):
    x = _x(3, 5000, seed=4)
    x[1, 7] = NAN  # masked out below: must not leak
    m = _mask(1, 5000, seed=5)
    m[0, 7] = False
    want = _call(torch.masked, name, x.double(), 1, m)
    got = _call(bt.masked, name, x, 1, m)
    _same(got, want.to(got.dtype) if want.is_floating_point() else want)
    small = _x(4, 6, 3, seed=6)
    mb = _mask(6, 1, seed=7).to(torch.int32)  # not bool, fewer dims: broadcast
    want = _call(torch.masked, name, small.double(), (0, 2) if "arg" not in name else 1, mb)
    got = _call(bt.masked, name, small, (0, 2) if "arg" not in name else 1, mb)
    _same(got, want.to(got.dtype) if want.is_floating_point() else want)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.uint8])
def test_masked_integers(name, dtype):
    g = torch.Generator().manual_seed(8)
    x = torch.randint(0 if dtype == torch.uint8 else -5, 5, (4, 9), generator=g).to(DEVICE,
                                                                                     dtype)
    m = _mask(4, 9, seed=9)
    _same(_call(bt.masked, name, x, 1, m), _call(torch.masked, name, x, 1, m))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_masked_dtypes(dtype):
    x = _x(6, 40, dtype=dtype, seed=10)
    m = _mask(6, 40, seed=11)
    for name in ("sum", "mean", "amax", "var", "logsumexp", "norm"):
        want = _call(torch.masked, name, x.double(), 1, m).to(dtype)
        _same(_call(bt.masked, name, x, 1, m), want, dtype)
    _same(bt.masked.sum(x, 1, mask=m, dtype=torch.float64),
          torch.masked.sum(x.double(), 1, mask=m), torch.float64)


def test_masked_norm_orders():
    x = _x(5, 30, seed=12)
    x.view(-1)[::7] = 0.0
    m = _mask(5, 30, seed=13)
    for ord in (0.0, 1.0, 2.0, 3.0, 0.5, -1.0, float("inf"), -float("inf")):
        want = torch.masked.norm(x.double(), ord, 1, mask=m).float()
        _same(bt.masked.norm(x, ord, 1, mask=m), want)


def test_masked_without_mask_is_the_plain_reduction():
    x = _x(4, 9, seed=14)
    for name in NAMES:
        if name in ("argmax", "argmin"):  # (indices in the input's dtype, as torch.masked)
            want = _call(torch.masked, name, x, 1, None)
        else:
            want = _call(torch.masked, name, x.double(), 1, None).float()
        _same(_call(bt.masked, name, x, 1, None), want)


def test_masked_var_std_options():
    x = _x(4, 20, seed=15)
    m = _mask(4, 20, seed=16)
    for kw in ({"unbiased": False}, {"correction": 3}, {}):
        for name in ("var", "std"):
            want = getattr(torch.masked, name)(x.double(), 1, mask=m, **kw).float()
            _same(getattr(bt.masked, name)(x, 1, mask=m, **kw), want)
    i = torch.arange(12, device=DEVICE).reshape(3, 4)
    _same(bt.masked.var(i, 1, mask=i > 2), torch.masked.var(i, 1, mask=i > 2))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_masked_gradients_are_torchs(name):
    x = _x(5, 24, dtype=torch.float64, seed=17).round()  # ties for amax / amin
    m = _mask(5, 24, seed=18)
    dy = _x(5, dtype=torch.float64, seed=19)
    grads = []
    for mod in (torch.masked, bt.masked):
        xg = x.clone().requires_grad_()
        (g,) = torch.autograd.grad(_call(mod, name, xg, 1, m), xg, dy)
        grads.append(g)
    theirs, ours = grads
    torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert bool((ours[~m.expand_as(x)] == 0).all() | name.startswith(("var", "std")))


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "logsumexp", "norm"])
def test_masked_gradcheck(name):
    x = _x(3, 8, dtype=torch.float64, seed=20).requires_grad_()
    m = _mask(3, 8, seed=21, p=0.3)
    m[0, :3] = True  # no fully masked line: gradcheck needs finite outputs
    assert torch.autograd.gradcheck(lambda t: _call(bt.masked, name, t, 1, m), (x,))


def test_masked_errors_as_torch():
    x = _x(3, 4, seed=22)
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        bt.masked.sum(x, 1, mask=torch.ones(2, 3, 4, dtype=torch.bool, device=DEVICE))
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        bt.masked.mean(torch.ones(3, dtype=torch.int32, device=DEVICE))
    with pytest.raises(RuntimeError):
        bt.masked.sum(x, 1, mask=torch.ones(5, dtype=torch.bool, device=DEVICE))
    with pytest.raises(IndexError, match="non-zero size"):
        bt.masked.amax(torch.empty(2, 0, device=DEVICE), 1, mask=torch.ones(2, 0,
                                                                            dtype=torch.bool))
    with pytest.raises(IndexError, match="Dimension out of range"):
        bt.masked.sum(x, 2, mask=x > 0)


def test_masked_reruns_are_bit_identical():
    x = _x(2, 9000, seed=23)
    m = _mask(2, 9000, seed=24)
    for name in ("sum", "mean", "var", "norm", "amax"):
        a = _call(bt.masked, name, x, 1, m)
        b = _call(bt.masked, name, x, 1, m)
        assert torch.equal(a.nan_to_num(), b.nan_to_num())
