"""Dropout family through baracuda.torch: keep rate (binomial bounds), scaling, the gradient
equal to mask * scale (regenerated, not stored), channel-wise masks, alpha dropout's moments,
native_dropout and its backward against torch, reproducibility, torch's flags and errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.dropout import torch_api as bt
from conftest import DEVICE, ON_GPU

N = 8000


def _x(*shape, dtype=torch.float32, grad=False):
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(shape, generator=g, dtype=torch.float64) + 0.5).to(DEVICE, dtype)
    return x.requires_grad_(grad)


@pytest.mark.parametrize("p", [0.1, 0.8])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_keep_rate_scaling_and_gradient(p, dtype):
    torch.manual_seed(3)
    x = _x(N, dtype=dtype, grad=True)
    y = bt.dropout(x, p, True)
    kept = y.detach() != 0
    rate = float(kept.double().mean())
    assert abs(rate - (1 - p)) < 4 * math.sqrt(p * (1 - p) / N)
    scale = torch.tensor(1 / (1 - p), dtype=torch.float32)  # one multiply in f32, as torch
    want = (x.detach().float() * scale).to(dtype)
    assert torch.equal(y.detach()[kept], want[kept])
    dy = torch.randn(N, device=DEVICE, dtype=dtype)
    (dx,) = torch.autograd.grad(y, x, dy)
    assert torch.equal(dx, (dy.float() * kept * scale).to(dtype))


def test_gradient_is_reproducible_and_double_backward():
    torch.manual_seed(1)
    x = _x(300, dtype=torch.float64, grad=True)
    y = bt.dropout(x, 0.3)
    dy = torch.randn(300, device=DEVICE, dtype=torch.float64, requires_grad=True)
    (dx,) = torch.autograd.grad(y, x, dy, create_graph=True)
    (dx2,) = torch.autograd.grad(y, x, dy.detach(), retain_graph=True)
    assert torch.equal(dx.detach(), dx2)
    (ddy,) = torch.autograd.grad(dx.sum(), dy)
    torch.testing.assert_close(ddy, (y.detach() != 0).double() / 0.7, rtol=1e-14, atol=0)


def test_gradcheck_f64():
    x = _x(3, 2, 2, dtype=torch.float64, grad=True)

    def seeded(fn):
        def call(t):
            torch.manual_seed(21)  # one mask for every evaluation
            return fn(t)
        return call

    for fn in (lambda t: bt.dropout(t, 0.4), lambda t: bt.feature_alpha_dropout(t, 0.3, True)):
        assert torch.autograd.gradcheck(seeded(fn), (x,), fast_mode=True)


def test_reproducible_and_advancing():
    x = _x(2000)
    torch.manual_seed(5)
    a, b = bt.dropout(x, 0.5), bt.dropout(x, 0.5)
    torch.manual_seed(5)
    assert torch.equal(bt.dropout(x, 0.5), a)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("fn,shape,inner", [
    (bt.dropout1d, (6, 9, 11), 11), (bt.dropout1d, (9, 11), 11),
    (bt.dropout2d, (4, 6, 5, 3), 15), (bt.dropout3d, (3, 4, 2, 3, 5), 30),
    (bt.dropout3d, (4, 2, 3, 5), 30)])
def test_channel_dropout_zeroes_whole_maps(fn, shape, inner):
    torch.manual_seed(8)
    x = _x(*shape, grad=True)
    y = fn(x, 0.5)
    maps = y.detach().reshape(-1, inner)
    zero, kept = (maps == 0).all(1), (maps != 0).all(1)
    assert bool((zero | kept).all()) and bool(zero.any()) and bool(kept.any())
    assert torch.allclose(maps[kept], (x.detach().reshape(-1, inner) * 2)[kept])
    y.sum().backward()
    assert torch.equal(x.grad.reshape(-1, inner), kept[:, None].float().expand(-1, inner) * 2)


def test_channel_keep_rate():
    torch.manual_seed(9)
    y = bt.dropout2d(_x(40, 50, 2, 2), 0.3)
    rate = float((y.reshape(2000, 4) != 0).all(1).double().mean())
    assert abs(rate - 0.7) < 4 * math.sqrt(0.21 / 2000)


def test_alpha_dropout_keeps_mean_and_variance():
    torch.manual_seed(2)
    z = torch.randn(N, device=DEVICE, dtype=torch.float64)
    y = bt.alpha_dropout(z, 0.2, True)
    assert abs(float(y.mean())) < 5 / math.sqrt(N)
    assert abs(float(y.var()) - 1) < 5 * math.sqrt(2 / N)
    # the dropped value: a * (-alpha') + b, the same for every dropped element
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    dropped = (y - (-alpha * a + alpha * a * 0.2)).abs() < 1e-12
    assert abs(float(dropped.double().mean()) - 0.2) < 4 * math.sqrt(0.16 / N)
    assert torch.allclose(y[~dropped], z[~dropped] * a + alpha * a * 0.2)
    fy = bt.feature_alpha_dropout(z.reshape(80, 20, 5, 1), 0.5, True)
    maps = fy.reshape(1600, 5)
    assert bool((maps == maps[:, :1]).all(1).sum() > 0)


def test_native_dropout_and_backward():
    torch.manual_seed(4)
    x = _x(50, 40, grad=True)
    y, mask = bt.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool and torch.equal(mask, y.detach() != 0)
    assert torch.allclose(y.detach()[mask], x.detach()[mask] / 0.75)
    y.sum().backward()
    assert torch.equal(x.grad, mask.float() / 0.75)
    dy = torch.randn(50, 40, device=DEVICE)
    got = bt.native_dropout_backward(dy, mask, 1 / 0.75)
    want = torch.ops.aten.native_dropout_backward(dy.cpu(), mask.cpu(), 1 / 0.75)
    torch.testing.assert_close(got.cpu(), want)
    y0, m0 = bt.native_dropout(x.detach(), 0.5, False)
    assert torch.equal(y0, x.detach()) and bool(m0.all())


def test_flags_and_edges():
    x = _x(300)
    assert bt.dropout(x, 0.5, training=False) is x
    assert bt.dropout(x, 0.0) is x
    assert bt.alpha_dropout(x, 0.5) is x  # alpha_dropout's training defaults to False
    assert torch.equal(bt.dropout(x, 1.0), torch.zeros_like(x))
    y = x.clone()
    torch.manual_seed(1)
    out = bt.dropout(y, 0.5, True, inplace=True)
    assert out is y and bool((y == 0).any())
    assert bt.dropout(torch.empty(0, 3, device=DEVICE), 0.5).shape == (0, 3)
    s = _x(8, 6).t()  # strided input
    torch.manual_seed(2)
    ys = bt.dropout(s, 0.5)
    assert torch.equal(ys != 0, (ys / s) != 0) and ys.shape == s.shape


@pytest.mark.parametrize("call,error", [
    (lambda: bt.dropout(_x(3), 1.5), ValueError),
    (lambda: bt.dropout(_x(3), -0.1), ValueError),
    (lambda: bt.dropout1d(_x(2, 3, 4, 5), 0.5), RuntimeError),
    (lambda: bt.dropout3d(_x(2, 3), 0.5), RuntimeError),
    (lambda: bt.feature_alpha_dropout(_x(3), 0.5, True), RuntimeError),
    (lambda: bt.native_dropout_backward(_x(3), _x(3), 2.0), RuntimeError),
])
def test_errors_as_torch(call, error):
    with pytest.raises(error):
        call()


def test_matches_torch_in_law():
    """torch and ours drop at the same rate and scale identically (draws differ)."""
    torch.manual_seed(0)
    x = _x(N)
    ours, theirs = bt.dropout(x, 0.4), F.dropout(x.cpu(), 0.4)
    assert abs(float((ours != 0).double().mean()) - float((theirs != 0).double().mean())) < \
        8 * math.sqrt(0.24 / N)


@pytest.mark.skipif(not ON_GPU, reason="launch replay runs on the GPU only")
def test_replayed_calls_draw_new_masks():
    x = _x(4096)
    masks = [bt.dropout(x, 0.5) != 0 for _ in range(5)]
    for i in range(1, 5):
        assert not torch.equal(masks[i], masks[i - 1])


def test_compiles_fullgraph_with_gradient():
    x = _x(6, 7, grad=True)

    def f(t):
        return bt.dropout(t, 0.5).sum()

    torch._dynamo.reset()
    torch.manual_seed(3)
    loss = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
    (g,) = torch.autograd.grad(loss, x)
    assert set(g.unique().tolist()) <= {0.0, 2.0}
