"""Issue 34 rows of the elementwise family against torch (numpy / a Python reference where torch
has no op): predicates, frexp / modf / nan_to_num / spacing / integer_pow / reduce_precision,
divmod / float_power / ldexp / heaviside, clamp_min / clamp_max, piecewise, isin, allclose /
equal, and dtype bitcasts. The integer bit ops and packbits are in test_elementwise_rows34_bits.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from baracuda.families.elementwise import bitrefs
from conftest import DEVICE

SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -2.5, 1e-3, 3e38, -7.0, 0.5]
FLOATS = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


def _x(shape, dtype, seed=0, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * scale)
    flat = x.view(-1)
    n = min(len(SPECIALS), flat.numel())
    flat[:n] = torch.tensor(SPECIALS[:n], dtype=torch.float64)
    return x.to(dtype).to(DEVICE)


def _same(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape)
    if got.dtype.is_floating_point:
        assert torch.equal(got.isnan(), ref.isnan())
        ok = got.isnan() | (got == ref)
        assert ok.all(), (got[~ok][:5], ref[~ok][:5])
    else:
        assert torch.equal(got, ref)


PREDICATES = ["isfinite", "isinf", "isnan", "isposinf", "isneginf", "isreal", "signbit",
              "logical_not"]


@pytest.mark.parametrize("name", PREDICATES)
@pytest.mark.parametrize("dtype", [*FLOATS, torch.int32, torch.uint8, torch.bool])
def test_predicates_match_torch(name, dtype):
    x = _x((7, 13), torch.float64).to(dtype) if dtype.is_floating_point else (
        torch.randint(-5, 5, (7, 13)).to(dtype).to(DEVICE))
    for v in (x, x.t(), x[:, ::3], x[0, 0], x[:0]):
        _same(getattr(bt, name)(v), getattr(torch, name)(v))


def test_positive_deg2rad_rad2deg():
    x = _x((5, 9), torch.float32)
    assert bt.positive(x) is x
    with pytest.raises(Unsupported):
        bt.positive(torch.ones(2, dtype=torch.bool))
    for name in ("deg2rad", "rad2deg"):
        torch.testing.assert_close(getattr(bt, name)(x), getattr(torch, name)(x),
                                   equal_nan=True)
        i = torch.arange(-4, 5, device=DEVICE)
        _same(getattr(bt, name)(i), getattr(torch, name)(i))
        y = x.clone()
        getattr(bt, name + "_")(y)
        torch.testing.assert_close(y, getattr(torch, name)(x), equal_nan=True)
    a = _x((6,), torch.float64).nan_to_num().requires_grad_()
    (ga,) = torch.autograd.grad(bt.deg2rad(a).sum(), a)
    torch.testing.assert_close(ga, torch.full_like(a, math.pi / 180))


@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp_and_modf(dtype):
    x = _x((4, 11), dtype, scale=1e4)
    if dtype != torch.bfloat16:  # (the interpreter flushes bf16 subnormals when widening)
        x.view(-1)[-1] = torch.finfo(dtype).tiny / 4
    m, e = bt.frexp(x.t())
    rm, re = torch.frexp(x.t())
    _same(m, rm)
    _same(e, re)
    frac, whole = bt.modf(x)
    _same(whole, torch.trunc(x))
    _same(frac, x - torch.trunc(x))
    with pytest.raises(Unsupported):
        bt.frexp(torch.ones(3, dtype=torch.int32))


def test_frexp_modf_gradients():
    x = _x((3, 5), torch.float64).nan_to_num(0.3, 4.0, -4.0).requires_grad_()
    for ours, theirs in ((lambda t: bt.frexp(t)[0], lambda t: torch.frexp(t)[0]),
                         (lambda t: bt.modf(t)[0] * 2 + bt.modf(t)[1],
                          lambda t: torch.frac(t) * 2)):
        dy = torch.randn_like(x)
        (g,) = torch.autograd.grad(ours(x), x, dy)
        (r,) = torch.autograd.grad(theirs(x), x, dy)
        torch.testing.assert_close(g, r)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_to_num(dtype):
    x = _x((6, 7), dtype)
    for kw in ({}, dict(nan=1.5), dict(nan=2.0, posinf=9.0, neginf=-9.0)):
        _same(bt.nan_to_num(x.t(), **kw), torch.nan_to_num(x.t(), **kw))
    y = x.clone()
    assert bt.nan_to_num_(y, nan=-1.0) is y
    _same(y, torch.nan_to_num(x, nan=-1.0))
    i = torch.arange(5, device=DEVICE)
    _same(bt.nan_to_num(i), i)


def test_nan_to_num_gradient_zero_off_finite():
    x = _x((20,), torch.float64).requires_grad_()
    dy = torch.randn(20, dtype=torch.float64, device=DEVICE)
    for kw in ({}, dict(nan=0.5, posinf=1.0, neginf=-1.0)):
        (g,) = torch.autograd.grad(bt.nan_to_num(x, **kw), x, dy)
        (r,) = torch.autograd.grad(torch.nan_to_num(x, **kw), x, dy)
        _same(g, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_spacing_matches_numpy(dtype):
    x = _x((40,), dtype)
    got = bt.spacing(x).cpu().numpy()
    with np.errstate(all="ignore"):
        ref = np.spacing(x.cpu().numpy())
    np.testing.assert_array_equal(got, ref)


def test_spacing_halves_and_ints():
    # numpy's float16 spacing drops the sign of negative x (its half routine); ours keeps
    # numpy's f32 / f64 definition for every type
    for dtype in (torch.float16, torch.bfloat16):
        x = _x((40,), dtype)
        if dtype == torch.bfloat16 and DEVICE.type == "cpu":
            x = x[x != 0]  # (the interpreter flushes bf16 subnormal results when widening)
        _same(bt.spacing(x), bitrefs.spacing(x.cpu()).to(DEVICE))
    _same(bt.spacing(torch.tensor([1, -2], device=DEVICE)),
          torch.tensor([2.0 ** -23, -(2.0 ** -22)], device=DEVICE))


def test_integer_pow():
    i = torch.tensor([-3, -1, 0, 1, 2, 5], device=DEVICE)
    for y in (0, 1, 3, -1, -2):
        ref = torch.tensor([int(v) ** y if y >= 0 else (1 // int(v) ** -y if v in (1, -1) else 0)
                            for v in i.tolist()], device=DEVICE)
        _same(bt.integer_pow(i, y), ref)
    x = _x((8,), torch.float64).nan_to_num(0.7, 2.0, -2.0).requires_grad_()
    for y in (2, 3, -2):
        torch.testing.assert_close(bt.integer_pow(x, y), x ** y)
        (g,) = torch.autograd.grad(bt.integer_pow(x, y).sum(), x)
        (r,) = torch.autograd.grad((x ** y).sum(), x)
        torch.testing.assert_close(g, r)
    with pytest.raises(ArgumentTypeError):
        bt.integer_pow(x, 2.0)


def test_reduce_precision():
    x = _x((50,), torch.float32, scale=300.0)
    # to bf16's format (same exponent width): exactly torch's round-to-nearest-even cast
    _same(bt.reduce_precision(x, 8, 7), x.to(torch.bfloat16).to(torch.float32))
    ref = bitrefs.reduce_precision(x.cpu().double(), 4, 3).float()
    _same(bt.reduce_precision(x, 4, 3).cpu(), ref)
    h = _x((50,), torch.float16)
    _same(bt.reduce_precision(h, 5, 10), h)  # its own format: unchanged, subnormals kept
    d = _x((50,), torch.float64).requires_grad_()
    dy = torch.randn(50, dtype=torch.float64, device=DEVICE)
    (g,) = torch.autograd.grad(bt.reduce_precision(d, 5, 2), d, dy)
    _same(g.cpu(), bitrefs.reduce_precision(dy.cpu(), 5, 2))
    with pytest.raises(Unsupported):
        bt.reduce_precision(torch.ones(2, dtype=torch.int32), 5, 2)
    with pytest.raises(InvalidProblem):
        bt.reduce_precision(x, 0, 2)


def test_divmod_float_power_ldexp_heaviside():
    a = _x((5, 8), torch.float32).nan_to_num(1.0, 5.0, -5.0)
    b = _x((8,), torch.float32, seed=1).nan_to_num(1.0, 5.0, -5.0) + 0.25
    q, r = bt.divmod(a, b)
    _same(q, torch.floor_divide(a, b))
    _same(r, torch.remainder(a, b))
    ai, bi = torch.tensor([7, -7, 7, -7], device=DEVICE), torch.tensor([2, 2, -2, -2],
                                                                         device=DEVICE)
    _same(bt.divmod(ai, bi)[0], torch.floor_divide(ai, bi))
    _same(bt.divmod(ai, bi)[1], torch.remainder(ai, bi))
    torch.testing.assert_close(bt.float_power(a.abs(), b), torch.float_power(a.abs(), b))
    torch.testing.assert_close(bt.float_power(ai, 2), torch.float_power(ai, 2))
    torch.testing.assert_close(bt.float_power(2, b), torch.float_power(2, b))
    torch.testing.assert_close(bt.ldexp(a, bi[:1].expand(8)), torch.ldexp(a, bi[:1].expand(8)))
    torch.testing.assert_close(bt.ldexp(ai, bi), torch.ldexp(ai, bi))
    h = _x((9,), torch.float64)
    _same(bt.heaviside(h, torch.tensor([0.5], dtype=torch.float64, device=DEVICE)),
          torch.heaviside(h, torch.tensor([0.5], dtype=torch.float64, device=DEVICE)))
    with pytest.raises(InvalidProblem):
        bt.heaviside(h, torch.tensor([1.0], device=DEVICE))


def test_binary_gradients():
    a = (_x((4, 6), torch.float64).nan_to_num(0.5, 2.0, -2.0)).requires_grad_()
    b = (_x((6,), torch.float64, seed=2).nan_to_num(0.5, 2.0, -2.0) + 3.5).requires_grad_()
    for ours, theirs in ((lambda p, q: bt.divmod(p, q)[1], torch.remainder),
                         (bt.ldexp, torch.ldexp),
                         (lambda p, q: bt.float_power(p.abs() + 0.1, q),
                          lambda p, q: torch.float_power(p.abs() + 0.1, q))):
        dy = torch.randn(4, 6, dtype=torch.float64, device=DEVICE)
        g = torch.autograd.grad(ours(a, b), (a, b), dy)
        r = torch.autograd.grad(theirs(a, b), (a, b), dy)
        for gi, ri in zip(g, r):
            torch.testing.assert_close(gi, ri)


@pytest.mark.parametrize("fn", ["clamp_min", "clamp_max"])
def test_clamp_min_max(fn):
    x = _x((6, 5), torch.float32)
    bound = _x((5,), torch.float32, seed=4).nan_to_num(0.0, 1.0, -1.0)
    bound[0] = x[1, 0]  # a tie
    for b in (0.5, bound, bound[0]):
        _same(getattr(bt, fn)(x, b), getattr(torch, fn)(x, b))
    i = torch.arange(-4, 4, device=DEVICE)
    _same(getattr(bt, fn)(i, 1), getattr(torch, fn)(i, 1))
    _same(getattr(bt, fn)(i, 1.5), getattr(torch, fn)(i, 1.5))
    y = x.clone()
    getattr(bt, fn + "_")(y, bound)
    _same(y, getattr(torch, fn)(x, bound))
    xd = x.double().nan_to_num(0.2, 3.0, -3.0).requires_grad_()
    bd = bound.double().requires_grad_()
    dy = torch.randn(6, 5, dtype=torch.float64, device=DEVICE)
    for b in (bd, 0.25):
        ins = (xd, bd) if isinstance(b, torch.Tensor) else (xd,)
        g = torch.autograd.grad(getattr(bt, fn)(xd, b), ins, dy)
        r = torch.autograd.grad(getattr(torch, fn)(xd, b), ins, dy)
        for gi, ri in zip(g, r):  # (the bound's gradient is a sum: rounding may differ)
            torch.testing.assert_close(gi, ri)


def test_piecewise():
    x = _x((4, 9), torch.float32).nan_to_num(0.0, 5.0, -5.0)
    xn = x.cpu().numpy()
    for funcs in ([-1.0, 1.0], [-1.0, 1.0, 7.0]):
        got = bt.piecewise(x, [x < 0, x > 1], funcs)
        ref = np.piecewise(xn, [xn < 0, xn > 1], funcs)
        np.testing.assert_array_equal(got.cpu().numpy(), ref)
    got = bt.piecewise(torch.arange(6, device=DEVICE), [torch.arange(6, device=DEVICE) > 2],
                       [5, 9])
    assert got.tolist() == [9, 9, 9, 5, 5, 5]
    with pytest.raises(Unsupported):
        bt.piecewise(x, [x < 0], [lambda t: t])
    with pytest.raises(InvalidProblem):
        bt.piecewise(x, [x < 0], [1.0, 2.0, 3.0])


def test_isin():
    e = torch.tensor([[1, 2, 3], [4, 5, 6]], device=DEVICE)
    t = torch.tensor([2, 5, 9], device=DEVICE)
    for args in ((e, t), (e.t(), t.view(3, 1).expand(3, 2)), (e, 4), (3, t), (e[:0], t),
                 (e, t[:0]), (e.float() / 2, t), (e.to(torch.uint8), t.to(torch.int8)),
                 (e[:, ::2], t[::2])):
        for invert in (False, True):
            # (torch's own isin can't view an expanded test set: it gets a dense copy)
            theirs = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
            _same(bt.isin(*args, invert=invert), torch.isin(*theirs, invert=invert))
    f = torch.tensor([float("nan"), -0.0, 1.5], device=DEVICE)
    _same(bt.isin(f, torch.tensor([float("nan"), 0.0], device=DEVICE)),
          torch.isin(f, torch.tensor([float("nan"), 0.0], device=DEVICE)))
    with pytest.raises(Unsupported):
        bt.isin(torch.ones(2, dtype=torch.bool, device=DEVICE), t)


def test_allclose_equal():
    a = _x((3, 4), torch.float32).nan_to_num()
    assert bt.allclose(a, a.clone()) is True
    assert bt.allclose(a, a + 1) is False
    assert bt.allclose(a[:1], a[:1].expand(3, 4))  # broadcasting, as torch
    n = torch.tensor([math.nan, 1.0], device=DEVICE)
    assert bt.allclose(n, n) is False and bt.allclose(n, n, equal_nan=True) is True
    assert bt.equal(a, a.clone()) is True
    assert bt.equal(a, a[:1].expand(3, 4)) == torch.equal(a, a[:1].expand(3, 4))
    assert bt.equal(torch.ones(2, device=DEVICE), torch.ones(2, 1, device=DEVICE)) is False
    assert bt.equal(torch.tensor([1], device=DEVICE), torch.tensor([1.0], device=DEVICE))
    assert bt.equal(n, n) is False
    assert bt.equal(a[:0], a[:0]) is True


def test_bitcasts_are_views():
    x = torch.arange(12, dtype=torch.float32, device=DEVICE).view(3, 4)
    for dt in (torch.int32, torch.int16, torch.uint8, torch.float64):
        got = bt.view_dtype(x, dt)
        _same(got, x.view(dt))
        assert got.data_ptr() == x.data_ptr()
    y = bt.bitcast_convert_type(x, torch.int16)
    assert y.shape == (3, 4, 2) and y.data_ptr() == x.data_ptr()
    _same(bt.bitcast_convert_type(y, torch.float32), x)
    _same(bt.bitcast_convert_type(x, torch.int32), x.view(torch.int32))
    with pytest.raises(InvalidProblem):
        bt.bitcast_convert_type(x, torch.float64)  # last dim 4, not 2


@pytest.mark.gpu
def test_rows34_at_size():
    x = torch.randn(1 << 26, device="cuda", dtype=torch.bfloat16)
    x[::1000] = float("nan")
    x[1::999] = float("inf")
    _same(bt.isnan(x), torch.isnan(x))
    _same(bt.signbit(x), torch.signbit(x))
    _same(bt.nan_to_num(x), torch.nan_to_num(x))
    _same(bt.clamp_min(x, 0.0), torch.clamp_min(x, 0.0))
    t = torch.randint(0, 1000, (64,), device="cuda")
    e = torch.randint(0, 1000, (1 << 24,), device="cuda")
    _same(bt.isin(e, t), torch.isin(e, t))
