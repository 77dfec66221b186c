"""The generic torch frontend factory, exercised through softmax: eager, autograd, opcheck,
torch.compile(fullgraph=True) (static and dynamic shapes), torch.export, CUDA graphs (GPU)."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from conftest import DEVICE
from helpers import assert_same_value_and_grads


def _x(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def test_functions_keep_torch_names_and_signatures():
    import inspect

    import torch.nn.functional as F

    for name in ("softmax", "log_softmax"):
        ours = inspect.signature(getattr(bt, name))
        theirs = inspect.signature(getattr(F, name))
        assert list(ours.parameters) == list(theirs.parameters), name


def test_opcheck_passes():
    x = _x(4, 33)
    torch.library.opcheck(torch.ops.baracuda.softmax.default, (x, 1, False))
    torch.library.opcheck(torch.ops.baracuda.softmax.default, (x.t(), 0, True))
    y = torch.softmax(x, 1)
    torch.library.opcheck(torch.ops.baracuda.softmax_backward.default, (_x(4, 33), y, 1, False))


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_fullgraph_forward_and_backward(dynamic):
    x = _x(6, 50, dtype=torch.float64).requires_grad_()
    fn = torch.compile(lambda t: (bt.softmax(t, -1) * bt.log_softmax(t, 0)).sum(),
                       backend="aot_eager", fullgraph=True, dynamic=dynamic)
    loss = fn(x)
    (g,) = torch.autograd.grad(loss, x)
    xr = x.detach().clone().requires_grad_()
    ref = (torch.softmax(xr, -1) * torch.log_softmax(xr, 0)).sum()
    (gr,) = torch.autograd.grad(ref, xr)
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(g, gr)


def test_torch_export_traces_the_custom_op():
    class M(torch.nn.Module):
        def forward(self, t):
            return bt.softmax(t, 1)

    ep = torch.export.export(M(), (_x(3, 9),))
    assert "baracuda.softmax" in str(ep.graph)


def test_errors_follow_torch():
    with pytest.raises(IndexError, match="Dimension out of range"):
        bt.softmax(_x(3, 4), 2)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = bt.softmax(_x(3, 4))
    torch.testing.assert_close(y.sum(1), torch.ones(3, device=DEVICE))


def test_zero_dim_and_dtype_argument():
    s = torch.tensor(2.5, device=DEVICE)
    assert bt.softmax(s, 0).item() == 1.0
    x = _x(3, 5, dtype=torch.float16)
    y = bt.softmax(x, 1, dtype=torch.float32)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, torch.softmax(x.float(), 1))


@pytest.mark.gpu
def test_cuda_graph_capture_and_replay():
    x = _x(64, 1000).requires_grad_()
    dy = torch.randn_like(x)
    static_grad = None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # warm up outside capture (selection, compilation)
            torch.autograd.grad(bt.softmax(x, 1), x, dy)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = bt.softmax(x, 1)
        (static_grad,) = torch.autograd.grad(y, x, dy)
    with torch.no_grad():
        x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    xr = x.detach().clone().requires_grad_()
    (gr,) = torch.autograd.grad(torch.softmax(xr, 1), xr, dy)
    torch.testing.assert_close(static_grad, gr)


def test_eager_fast_path_matches_the_registered_op():
    """Eager calls skip the dispatcher; the result and gradient equal the custom op's bit for
    bit (same implementation, same autograd formula)."""
    x = _x(7, 45).requires_grad_()
    dy = torch.randn(7, 45, device=DEVICE)
    y_fast = bt.softmax(x, 1)
    (g_fast,) = torch.autograd.grad(y_fast, x, dy)
    y_op = torch.ops.baracuda.softmax(x, 1, False)
    (g_op,) = torch.autograd.grad(y_op, x, dy)
    assert torch.equal(y_fast, y_op) and torch.equal(g_fast, g_op)
    assert y_fast.grad_fn is not None


def test_eager_fast_path_is_taken_and_yields_to_tracing(monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    from baracuda.families.softmax import torch_api

    def registered_op(*args):
        raise AssertionError("registered op called")

    monkeypatch.setattr(torch_api._softmax, "custom_op", registered_op)
    x = _x(3, 8)
    bt.softmax(x, 1)  # plain eager: never reaches the dispatcher
    with torch.no_grad():
        bt.softmax(x, 1)
    with FakeTensorMode() as mode, pytest.raises(AssertionError, match="registered op"):
        bt.softmax(mode.from_tensor(x), 1)  # a mode is active: the registered op runs


def test_fast_path_bumps_the_version_of_mutated_arguments():
    x = _x(6, 4, 5)
    rm, rv = torch.zeros(4, device=DEVICE), torch.ones(4, device=DEVICE)
    v0 = rm._version
    bt.batch_norm(x, rm, rv, training=True)
    assert rm._version > v0
    torch.testing.assert_close(rm, 0.1 * x.mean((0, 2)))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_step_equals_eager(mode):
    """A small step through baracuda.torch under torch.compile(fullgraph=True), plain and
    with CUDA graphs (reduce-overhead): the compiled code calls the registered ops (which
    replay per signature, backends/launch_replay.py) and must give eager's results, call
    after call on fresh inputs."""
    def step(x, w, wl, labels):
        h = bt.rms_norm(x, (x.shape[-1],), w, 1e-6)
        h = bt.silu(bt.linear(h, wl)) + x
        return bt.cross_entropy(bt.softmax(h, -1) * 8.0, labels)

    compiled = torch.compile(step, fullgraph=True, mode=mode)
    w = torch.randn(64, device="cuda", requires_grad=True)
    wl = torch.randn(64, 64, device="cuda", requires_grad=True)
    for _ in range(4):
        x = torch.randn(16, 64, device="cuda", requires_grad=True)
        labels = torch.randint(0, 64, (16,), device="cuda")
        assert_same_value_and_grads(compiled(x, w, wl, labels), step(x, w, wl, labels), (x, w))
