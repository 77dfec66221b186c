"""rrelu / rrelu_ through baracuda.torch: the slopes' law (Kolmogorov-Smirnov against
U(lower, upper) at fixed seeds, and moments), the gradient equal to the forward's slope
(regenerated, not stored), eval mode against torch, reproducibility under a generator,
strided / empty / 0-d inputs, in place, torch's errors and a fullgraph compile."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.dropout import torch_api as bt
from conftest import DEVICE

N = 8000
#: KS critical value at alpha = 0.001 (one-sample, large n)
KS_CRIT = 1.95


def _x(*shape, dtype=torch.float32, grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64).to(DEVICE, dtype)
    return x.requires_grad_(grad)


def _ks(sample: torch.Tensor, cdf) -> float:
    x = sample.detach().double().cpu().flatten().sort().values
    n = x.numel()
    f = cdf(x)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    return float(torch.maximum(i / n - f, f - (i - 1) / n).max()) * math.sqrt(n)


@pytest.mark.parametrize("lower,upper", [(0.125, 1 / 3), (0.0, 1.0)])
def test_rrelu_slopes_uniform_and_gradient(lower, upper):
    torch.manual_seed(11)
    x = _x(N, dtype=torch.float64, grad=True)
    y = bt.rrelu(x, lower, upper, training=True)
    xd = x.detach()
    neg = xd <= 0
    r = (y.detach() / xd)[neg]
    assert torch.equal(y.detach()[~neg], xd[~neg])
    assert float(r.min()) >= lower and float(r.max()) <= upper
    assert _ks(r, lambda t: ((t - lower) / (upper - lower)).clamp(0, 1)) < KS_CRIT
    m = r.numel()
    assert abs(float(r.mean()) - (lower + upper) / 2) < 5 * (upper - lower) / math.sqrt(12 * m)
    assert abs(float(r.var()) / ((upper - lower) ** 2 / 12) - 1) < 5 * math.sqrt(0.8 / m)
    dy = torch.randn(N, device=DEVICE, dtype=torch.float64)
    (dx,) = torch.autograd.grad(y, x, dy)
    torch.testing.assert_close(dx[neg], dy[neg] * r, rtol=1e-14, atol=0)
    assert torch.equal(dx[~neg], dy[~neg])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rrelu_low_precision_slope_in_range(dtype):
    torch.manual_seed(2)
    x = _x(2000, dtype=dtype, grad=True)
    y = bt.rrelu(x, 0.1, 0.3, True)
    assert y.dtype == dtype
    neg = x.detach() < 0
    r = y.detach().float()[neg] / x.detach().float()[neg]
    assert float(r.min()) > 0.09 and float(r.max()) < 0.31
    y.sum().backward()
    assert torch.equal(x.grad[~neg], torch.ones_like(x.grad[~neg]))
    g = x.grad[neg].float()
    assert float(g.min()) >= 0.099 and float(g.max()) <= 0.301


def test_rrelu_eval_matches_torch_with_gradient():
    x = _x(7, 9, grad=True)
    x.data[0, :3] = torch.tensor([0.0, -0.0, -1.5])
    y = bt.rrelu(x, 0.1, 0.4)
    xt = x.detach().cpu().requires_grad_()
    yt = F.rrelu(xt, 0.1, 0.4)
    torch.testing.assert_close(y.detach().cpu(), yt.detach(), rtol=1e-6, atol=0)
    dy = torch.randn(7, 9)
    (dx,) = torch.autograd.grad(y, x, dy.to(DEVICE))
    (dxt,) = torch.autograd.grad(yt, xt, dy)
    torch.testing.assert_close(dx.cpu(), dxt, rtol=1e-6, atol=0)


def test_rrelu_reproducible_generator_and_advancing():
    x = _x(3000)
    torch.manual_seed(5)
    a, b = bt.rrelu(x, training=True), bt.rrelu(x, training=True)
    torch.manual_seed(5)
    assert torch.equal(bt.rrelu(x, training=True), a)
    assert not torch.equal(a, b)
    gen = torch.Generator(device=DEVICE).manual_seed(7)
    c = bt.rrelu(x, training=True, generator=gen)
    gen.manual_seed(7)
    assert torch.equal(bt.rrelu(x, training=True, generator=gen), c)


def test_rrelu_gradient_reproducible_double_backward_gradcheck():
    torch.manual_seed(1)
    x = _x(300, dtype=torch.float64, grad=True)
    y = bt.rrelu(x, training=True)
    dy = torch.randn(300, device=DEVICE, dtype=torch.float64, requires_grad=True)
    (dx,) = torch.autograd.grad(y, x, dy, create_graph=True)
    (dx2,) = torch.autograd.grad(y, x, dy.detach(), retain_graph=True)
    assert torch.equal(dx.detach(), dx2)
    (ddy,) = torch.autograd.grad(dx.sum(), dy)
    torch.testing.assert_close(ddy, torch.where(x.detach() <= 0, y.detach() / x.detach(), 1.0),
                               rtol=1e-14, atol=0)

    def seeded(t):
        torch.manual_seed(21)  # the same slopes for every evaluation
        return bt.rrelu(t, 0.2, 0.6, True)

    xs = _x(3, 5, dtype=torch.float64, grad=True, seed=3)
    assert torch.autograd.gradcheck(seeded, (xs,), fast_mode=True)


def test_rrelu_layouts_edges_and_in_place():
    s = _x(9, 6).t()  # strided input: the values depend on the logical order only
    torch.manual_seed(4)
    ys = bt.rrelu(s, training=True)
    torch.manual_seed(4)
    yc = bt.rrelu(s.contiguous(), training=True)
    assert torch.equal(ys, yc) and ys.shape == s.shape
    assert bt.rrelu(torch.empty(0, 3, device=DEVICE), training=True).shape == (0, 3)
    z = bt.rrelu(torch.tensor(-2.0, device=DEVICE), 0.1, 0.2, True)
    assert z.dim() == 0 and -0.4 <= float(z) <= -0.2
    x = _x(500)
    torch.manual_seed(6)
    want = bt.rrelu(x, training=True)
    torch.manual_seed(6)
    out = bt.rrelu_(x, training=True)
    assert out is x and torch.equal(x, want)
    x2 = _x(40)
    torch.manual_seed(6)
    assert bt.rrelu(x2, training=True, inplace=True) is x2


@pytest.mark.parametrize("call,error", [
    (lambda: bt.rrelu(_x(3), 0.5, 0.1, True), RuntimeError),
    (lambda: bt.rrelu(_x(3), 0.5, 0.1, False), RuntimeError),
    (lambda: bt.rrelu_(_x(3), 0.5, 0.1), RuntimeError),
    (lambda: bt.rrelu(torch.ones(3, dtype=torch.int64, device=DEVICE), training=True),
     NotImplementedError),
])
def test_rrelu_errors_as_torch(call, error):
    with pytest.raises(error):
        call()


def test_rrelu_compiles_fullgraph_with_gradient():
    x = _x(6, 7, grad=True)

    def f(t):
        return bt.rrelu(t, 0.1, 0.3, True).sum()

    torch._dynamo.reset()
    torch.manual_seed(3)
    loss = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
    (g,) = torch.autograd.grad(loss, x)
    neg = x.detach() <= 0
    assert torch.equal(g[~neg], torch.ones_like(g[~neg]))
    assert float(g[neg].min()) >= 0.1 and float(g[neg].max()) <= 0.3
