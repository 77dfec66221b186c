"""Launch replay (backends/launch_replay.py): what a recording refuses, how pointers are
re-based, and on the GPU that replayed frontends give the right answer on fresh buffers."""

from __future__ import annotations

import pytest
import torch

from baracuda.backends import launch_replay as lr


def test_recording_refuses_work_that_is_not_a_view():
    rec = lr.Recording()
    x = torch.randn(4, 6)
    with lr._ViewsOnly(rec):
        x.view(24)[3:].view(3, 7).t()
        x.view(torch.int32)
    assert rec.refusal is None
    with lr._ViewsOnly(rec):
        torch.empty(3)
    assert rec.refusal and "empty" in rec.refusal
    for work in (lambda t: t.zero_(), lambda t: t.sum().item(), lambda t: t.clone()):
        rec = lr.Recording()
        with lr._ViewsOnly(rec):
            work(x)
        assert rec.refusal is not None


def _fake_recording(launch_args):
    import types

    rec = lr.Recording()
    compiled = types.SimpleNamespace(run=None, function=1, packed_metadata=2)
    for args in launch_args:
        rec.add(None, compiled, (7,), args)
    return rec


def test_program_rebases_pointers_into_their_own_slot(monkeypatch):
    x = torch.randn(10, 16)
    y = torch.empty(10, 16)
    ws = torch.empty(64, dtype=torch.uint8)
    rec = _fake_recording([(x, y[2:], 5, 2.5, None), (ws.view(torch.float32)[4:], y, 16)])
    prog = lr.Program.build(rec, [x, y, ws], device=0)
    assert prog is not None
    calls = []

    def fake_launch(g0, g1, g2, stream, function, coop, pdl, a, b, packed, meta, enter, leave,
                    *args):
        calls.append(((g0, g1, g2), stream, args, enter, leave))

    prog.launches = [(fake_launch, grid, (None, 0, 0, None, None, None, None, None, None), *rest)
                     for _, grid, _, *rest in prog.launches]
    monkeypatch.setattr(lr, "_current_device", lambda: 0)
    monkeypatch.setattr(lr, "_raw_stream", lambda d: 99)
    assert prog.replay([1000, 5000, 9000, 0])
    assert calls[0] == ((7, 1, 1), 99, (1000, 5000 + 2 * 16 * 4, 5, 2.5, None), None, None)
    assert calls[1][2] == (9000 + 16, 5000, 16)
    monkeypatch.setattr(lr, "_current_device", lambda: 1)
    assert not prog.replay([1000, 5000, 9000, 0])  # another device: the caller's normal path
    assert len(calls) == 2


def test_program_refuses_foreign_ambiguous_and_empty_pointers():
    x = torch.randn(8)
    foreign = torch.randn(8)
    assert lr.Program.build(_fake_recording([(foreign,)]), [x], 0) is None
    assert lr.Program.build(_fake_recording([(x[2:],)]), [x, x[1:]], 0) is None  # in two slots
    empty = torch.empty(0)
    assert lr.Program.build(_fake_recording([(empty,)]), [empty], 0) is None
    assert lr.Program.build(_fake_recording([(x[2:],)]), [None, x], 0) is not None


@pytest.mark.gpu
def test_replayed_frontends_match_on_fresh_buffers():
    """Each replayable frontend: the first call records, later calls replay on new buffers
    (and an in-place alias) and must equal the same op on the normal path."""
    import torch.nn.functional as F

    import baracuda.torch as bt
    from baracuda.backends import torch_ops as factory

    cases = {
        "TritonSoftmaxForward": (lambda x: bt.softmax(x, -1), lambda x: torch.softmax(x, -1)),
        "TritonRMSNorm": (lambda x: bt.rms_norm(x, [x.shape[-1]], None, 1e-6),
                          lambda x: F.rms_norm(x, [x.shape[-1]], None, 1e-6)),
        "TritonLayerNorm": (lambda x: bt.layer_norm(x, [x.shape[-1]]),
                            lambda x: F.layer_norm(x, [x.shape[-1]])),
        "TritonUnary": (lambda x: bt.silu(x), lambda x: F.silu(x)),
    }
    for name, (ours, ref) in cases.items():
        for _ in range(3):
            x = torch.randn(37, 1000, device="cuda")[:, 3:995]  # strided rows, odd extent
            torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-5)
        assert lr.OUTCOMES.get(name, "not recorded") is None, (name, lr.OUTCOMES.get(name))
    # a backward through autograd replays too, with the gradient right
    for _ in range(3):
        x = torch.randn(64, 777, device="cuda", requires_grad=True)
        dy = torch.randn(64, 777, device="cuda")
        (g,) = torch.autograd.grad(bt.softmax(x, -1), x, dy)
        (r,) = torch.autograd.grad(torch.softmax(x, -1), x, dy)
        torch.testing.assert_close(g, r)
    assert lr.OUTCOMES["TritonSoftmaxBackward"] is None
    assert any(e[-1] is not None for e in factory._TRUSTED.values())
    # chunked lines (EXCHANGE; the forward LOOP's segments) zero their counters with a
    # Triton fill from backends/: they replay too
    for shape, dtype in (((5, 40000), torch.float32), ((256, 70000), torch.bfloat16)):
        for _ in range(3):
            x = torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
            dy = torch.randn_like(x)
            y = bt.softmax(x, -1)
            (g,) = torch.autograd.grad(y, x, dy)
            torch.testing.assert_close(y, torch.softmax(x.detach().float(), -1).to(dtype))
            (r,) = torch.autograd.grad(torch.softmax(x.float(), -1), x, dy.float())
            torch.testing.assert_close(g.float(), r.float(), rtol=2e-2, atol=1e-5)
        for name in ("TritonSoftmaxForward", "TritonSoftmaxBackward"):
            assert lr.OUTCOMES[name] is None, (shape, name, lr.OUTCOMES[name])


@pytest.mark.gpu
def test_replay_yields_to_launch_hooks_and_refuses_uncounted_work():
    import triton
    import triton.language as tl
    from triton import knobs

    import baracuda.torch as bt

    x = torch.randn(16, 300, device="cuda")
    bt.softmax(x, -1)
    bt.softmax(x, -1)
    seen = []
    hook = knobs.runtime.launch_enter_hook
    hook.add(seen.append)
    try:
        torch.testing.assert_close(bt.softmax(x, -1), torch.softmax(x, -1))
    finally:
        hook.remove(seen.append)
    assert len(seen) == 1  # a profiler's hook sees the launch: the call took Triton's path

    @triton.jit
    def _unpatched(p, n, BLOCK: tl.constexpr):  # not in a baracuda module: no fast launcher
        o = tl.arange(0, BLOCK)
        tl.store(p + o, o.to(tl.float32), mask=o < n)

    y = torch.empty(64, device="cuda")
    assert lr.record("probe", lambda: _unpatched[(1,)](y, 64, BLOCK=64), [y]) is None
    assert "recorded" in lr.OUTCOMES["probe"]
    assert lr.record("probe", lambda: y.zero_(), [y]) is None
    assert "aten" in lr.OUTCOMES["probe"]


def test_every_kernel_module_loads_with_the_package():
    """`enable_fast_launch` runs once, when `baracuda` is imported, and patches the kernels of
    the modules loaded by then: a kernel module imported later (lazily, inside a launch)
    would stay on Triton's slow path and be refused every replay (session 9: a lazily
    imported Gluon kernel ran at 1858 GB/s against 2763 replayed). Importing every submodule
    must therefore not bring in a kernel the package import did not already load."""
    import importlib
    import pkgutil
    import sys

    from triton.runtime.jit import KernelInterface  # JIT and interpreted kernels alike

    import baracuda

    loaded = set(sys.modules)
    late = []
    for info in pkgutil.walk_packages(baracuda.__path__, "baracuda."):
        if info.name in loaded or info.name.endswith(("__main__", ".tune", ".tune_gpu",
                                                      ".probe_gpu")):
            continue
        mod = importlib.import_module(info.name)
        if any(isinstance(v, KernelInterface) and getattr(v.fn, "__module__", None) == info.name
               for v in vars(mod).values()):  # defined there, not imported from elsewhere
            late.append(info.name)
    assert not late, f"kernel modules not loaded by `import baracuda`: {late}"
