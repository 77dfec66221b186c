"""torch.nn.functional.pad / torch.constant_pad_nd against torch: every mode, negative pads,
layouts, dtypes, gradients (float64, against torch's), torch's error cases, opcheck,
torch.compile, and the GPU sizes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.core.errors import BaracudaError, InvalidProblem, Unsupported
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 3
    if not dtype.is_floating_point:
        x = x.round().abs() if dtype in (torch.uint8, torch.bool) else x.round()
    return x.to(DEVICE, dtype)


# (shape, pad, mode)
PADS = [
    ((2, 3, 7), (2, 3), "reflect"),
    ((3, 7), (0, 6), "reflect"),
    ((2, 3, 5, 6), (1, 2, 3, 1), "reflect"),
    ((1, 2, 4, 5, 6), (1, 1, 2, 0, 1, 3), "reflect"),
    ((2, 5, 6), (-1, 2, 2, -3), "reflect"),
    ((2, 3, 7), (5, 9), "replicate"),
    ((2, 4, 1), (2, 3), "replicate"),
    ((3, 5, 6), (1, 2, 3, 1), "replicate"),
    ((2, 3, 4, 5), (2, 0, 1, 3, -1, 2), "replicate"),
    ((3, 9), (-2, 4), "replicate"),
    ((2, 3, 7), (2, 3), "circular"),
    ((2, 3, 5, 6), (-1, 2, 3, -2), "circular"),
    ((2, 3, 4, 5, 6), (1, 1, 2, 0, 1, 3), "circular"),
    ((3, 9), (-2, 4), "circular"),
    ((3, 9), (3, -2), "circular"),
    ((5, 6, 7), (1, 2, -3, 4, 0, 2), "constant"),
    ((4,), (-1, -2), "constant"),
    ((2, 0, 3), (1, 1, 2, 2), "constant"),
]


@pytest.mark.parametrize("case", range(len(PADS)))
def test_pad_matches_torch_with_gradient(case):
    shape, pad, mode = PADS[case]
    x = _x(*shape)
    if case % 2 and x.dim() >= 2:  # every other case stored transposed
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, want = bt.pad(xa, pad, mode=mode), F.pad(xb, pad, mode=mode)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    if got.numel():
        dy = _x(*want.shape, seed=3)
        ga, = torch.autograd.grad(got, xa, dy)
        gb, = torch.autograd.grad(want, xb, dy)
        torch.testing.assert_close(ga, gb)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int32, torch.int64,
                                   torch.uint8, torch.bool, torch.int8])
@pytest.mark.parametrize("value", [None, 2.7, -3])
def test_constant_values_and_dtypes(dtype, value):
    x = _x(3, 4, 5, dtype=dtype)
    if dtype == torch.uint8 and value == -3:
        value = 3
    got = bt.pad(x, (1, 2, -1, 1), value=value)
    want = F.pad(x, (1, 2, -1, 1), value=value)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_f64_fill_is_exact_and_specials():
    x = _x(2, 3)
    for value in (1 / 3, float("inf"), float("nan"), -0.0):
        got, want = bt.pad(x, (1, 1), value=value), F.pad(x, (1, 1), value=value)
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        assert torch.equal(got.signbit(), want.signbit())


def test_constant_pad_nd_and_0d():
    x = _x(4, 5)
    torch.testing.assert_close(bt.constant_pad_nd(x, (1, -2, 3, 0), 1.5),
                               torch.constant_pad_nd(x, (1, -2, 3, 0), 1.5), rtol=0, atol=0)
    s = _x(())
    torch.testing.assert_close(bt.constant_pad_nd(s, ()), s, rtol=0, atol=0)
    torch.testing.assert_close(bt.pad(x, ()), x, rtol=0, atol=0)


def test_strided_and_broadcast_inputs():
    base = _x(6, 8, 10)
    for x in (base[:, ::2, 1::3], base[:1].expand(4, 8, 10), base.permute(2, 0, 1)):
        for mode in ("constant", "reflect", "replicate", "circular"):
            torch.testing.assert_close(bt.pad(x, (1, 2, 2, 1), mode=mode),
                                       F.pad(x, (1, 2, 2, 1), mode=mode), rtol=0, atol=0)


ERRORS = [
    ((2, 3, 4), (1,), {}, InvalidProblem),
    ((2, 3, 4), (1,) * 8, {}, InvalidProblem),
    ((2, 3, 4), (4, 1), {"mode": "reflect"}, InvalidProblem),
    ((2, 3, 4), (1, 1), {"mode": "reflect", "value": 1.0}, InvalidProblem),
    ((2, 3, 4), (1,) * 6, {"mode": "reflect"}, Unsupported),
    ((4,), (1, 1), {"mode": "replicate"}, Unsupported),
    ((2, 3, 4), (5, 1), {"mode": "circular"}, InvalidProblem),
    ((2, 3, 4), (-5, 1), {}, InvalidProblem),
    ((2, 3, 4), (1, 1), {"mode": "mirror"}, Unsupported),
    ((2, 0, 4), (1, 1), {"mode": "replicate"}, InvalidProblem),
    ((2, 3, 4), (1.5, 1), {}, TypeError),
]


@pytest.mark.parametrize("shape,pad,kw,error", ERRORS)
def test_errors_as_torch(shape, pad, kw, error):
    x = _x(*shape)
    with pytest.raises((RuntimeError, NotImplementedError, TypeError, ValueError)):
        F.pad(x, pad, **kw)
    with pytest.raises(error) as info:
        bt.pad(x, pad, **kw)
    assert isinstance(info.value, BaracudaError)


def test_backward_is_deterministic():
    x = _x(2, 3, 40, 33, dtype=torch.float32).requires_grad_()
    dy = _x(2, 3, 46, 37, dtype=torch.float32, seed=5)
    for mode in ("reflect", "replicate", "circular"):
        a, = torch.autograd.grad(bt.pad(x, (2, 2, 3, 3), mode=mode), x, dy)
        b, = torch.autograd.grad(bt.pad(x, (2, 2, 3, 3), mode=mode), x, dy)
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_gradcheck_f64():
    # tiny: each numerical-Jacobian column is an interpreted launch
    x = _x(1, 2, 3).requires_grad_()
    for mode, pad in (("reflect", (2, 1)), ("replicate", (2, 0)), ("circular", (-1, 2)),
                      ("constant", (1, -2))):
        assert torch.autograd.gradcheck(lambda t, m=mode, p=pad: bt.pad(t, p, mode=m), (x,),
                                        fast_mode=True)


def test_opcheck_custom_ops():
    x = _x(2, 3, 5).requires_grad_()
    torch.library.opcheck(torch.ops.baracuda.pad.default,
                          (x, [0, 0, 0, 0, 2, 1], "reflect", 0.0, 0))
    torch.library.opcheck(torch.ops.baracuda.pad.default,
                          (x, [0, 0, 1, -1, 2, 1], "constant", 2.5, 2))
    torch.library.opcheck(torch.ops.baracuda.pad_backward.default,
                          (_x(2, 3, 8), [0, 0, 0, 0, 2, 1], "replicate", [2, 3, 5]))


def test_torch_compile_fullgraph():
    def f(t):
        return bt.pad(t, (1, 2), mode="reflect").sin().sum() + \
            bt.pad(t, (2, 1, 1, 0), value=3.0).square().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = _x(3, 5, 7)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = compiled(xa), f(xb)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(torch.autograd.grad(a, xa)[0], torch.autograd.grad(b, xb)[0])


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_real_sizes(mode):
    x = torch.randn(8, 32, 509, 515, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    pad = (3, 2, 1, 3)
    got, want = bt.pad(x, pad, mode=mode), F.pad(x, pad, mode=mode)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    dy = torch.randn_like(want)
    ga, = torch.autograd.grad(got, x, dy)
    # the float64 gradient: torch's bf16 backward adds in bf16 (atomics), ours in f32 and
    # rounds once, so a sum that cancels is compared with the exact one
    x64 = x.detach().double().requires_grad_()
    g64, = torch.autograd.grad(F.pad(x64, pad, mode=mode), x64, dy.double())
    torch.testing.assert_close(ga.double(), g64, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype,value", [(torch.int32, float("nan")), (torch.uint8, -1),
                                         (torch.int32, 2**40), (torch.float16, 1e6)])
def test_fill_overflow_raises(dtype, value):
    x = _x(2, 3, dtype=dtype)
    with pytest.raises(RuntimeError):
        F.pad(x, (1, 1), value=value)
    with pytest.raises(InvalidProblem):
        bt.pad(x, (1, 1), value=value)
