"""Launch replay (backends/launch_replay.py): what a recording refuses, how pointers are
re-based, and on the GPU that replayed frontends give the right answer on fresh buffers."""

from __future__ import annotations

import pytest
import torch

from baracuda.backends import launch_replay as lr


def test_recording_allows_metadata_ops_and_allocations_when_asked():
    rec = lr.Recording(allocate=True)
    x = torch.randn(3, 4)
    with lr._ViewsOnly(rec):
        torch.promote_types(torch.float32, torch.bfloat16)
        torch.result_type(x, 2.0)
        # aten's allocator directly: tests/memcheck.py poisons torch.empty with a fill
        y = torch.ops.aten.empty.memory_format([5])
        e = torch.ops.aten.empty.memory_format([0, 3])
    assert rec.refusal is None and len(rec.allocations) == 2
    assert lr._source(y, [x], rec.allocations) == ("alloc", 0)
    assert lr._source(y[1:], [x], rec.allocations)[0] == "view"
    assert lr._source(e, [x], rec.allocations)[0] == "empty"
    assert lr._source(x, [x], rec.allocations) == ("input", 0)
    assert lr._source(torch.randn(2), [x], rec.allocations) is None


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


def test_program_tells_interleaved_views_apart_by_their_first_element(monkeypatch):
    qkv = torch.randn(2, 5, 3, 4, 8)  # [B, S, 3, H, D]: q, k, v overlap in bytes
    q, k, v = qkv.unbind(2)
    out = torch.empty(2, 5, 4, 8)
    prog = lr.Program.build(_fake_recording([(q, k, v, out)]), [q, k, v, out], 0)
    assert prog is not None
    assert [slot for _, slot, _ in prog.launches[0][4]] == [0, 1, 2, 3]
    assert all(off == 0 for _, _, off in prog.launches[0][4])
    # a pointer inside two of them, at neither's first element, stays ambiguous
    assert lr.Program.build(_fake_recording([(k[:, 1:],)]), [q, k, v], 0) is None


@pytest.mark.gpu
def test_replayed_frontends_match_on_fresh_buffers():
    """Each replayable frontend: the first call records, later calls replay on new buffers
    (and an in-place alias) and must equal the same op on the normal path."""
    import torch.nn.functional as F

    import baracuda.torch as bt

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
        # without a gradient the whole function replays (torch_ops.replayed); otherwise the
        # op, or when the op is not recorded, per plan (the candidate)
        fn, op = {"TritonSoftmaxForward": ("softmax", "softmax"),
                  "TritonRMSNorm": ("rms_norm", "rms_norm"),
                  "TritonLayerNorm": ("layer_norm", "layer_norm"),
                  "TritonUnary": ("silu", "ew_unary")}[name]
        outcome = lr.OP_OUTCOMES.get(f"baracuda.torch.{fn}", lr.OP_OUTCOMES.get(
            op, lr.OUTCOMES.get(name, "not recorded")))
        assert outcome is None, (name, outcome)
    # a backward through autograd replays too, with the gradient right
    for _ in range(3):
        x = torch.randn(64, 777, device="cuda", requires_grad=True)
        dy = torch.randn(64, 777, device="cuda")
        (g,) = torch.autograd.grad(bt.softmax(x, -1), x, dy)
        (r,) = torch.autograd.grad(torch.softmax(x, -1), x, dy)
        torch.testing.assert_close(g, r)
    assert lr.OP_OUTCOMES.get("softmax_backward",
                              lr.OUTCOMES.get("TritonSoftmaxBackward")) is None
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
        for name in ("softmax", "softmax_backward"):
            assert lr.OP_OUTCOMES[name] is None, (shape, name, lr.OP_OUTCOMES[name])


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


# -- op-level replay (EagerOp._run): a fake kernel on CPU memory stands in for Triton ---------

class _FakeKernel:
    """A 'compiled kernel' whose launcher scales n floats from one address into another, so
    replays are checked on real memory; every launch is counted by Triton's enter hook and
    recorded the way the fast launcher records (`Recording.add`)."""

    function = packed_metadata = None

    def __init__(self):
        self.launches = 0

    def run(self, g0, g1, g2, stream, function, packed, meta, enter, leave, x, y, n, scale):
        import ctypes

        src = (ctypes.c_float * n).from_address(x)
        dst = (ctypes.c_float * n).from_address(y)
        for i in range(n):
            dst[i] = src[i] * scale
        self.launches += 1

    def launch(self, x: torch.Tensor, y: torch.Tensor, scale: float) -> None:
        from triton import knobs

        args = (x, y, x.numel(), scale)
        knobs.runtime.launch_enter_hook(None)
        rec = lr.active()
        if rec is not None:
            rec.add(None, self, (1,), args)
        self.run(1, 1, 1, 0, None, None, None, None, None, x.data_ptr(), y.data_ptr(),
                 x.numel(), scale)


_KERNEL = _FakeKernel()


def _library_scale(stream: int, x: int, y: int, n: int, scale: float) -> None:
    _KERNEL.run(1, 1, 1, stream, None, None, None, None, None, x, y, n, scale)

_aten = torch.ops.aten
_IMPL_CALLS = []


def _scale_impl(x: torch.Tensor, scale: float, mode: str) -> torch.Tensor:
    _IMPL_CALLS.append(mode)
    # aten's allocators directly: tests/memcheck.py's poisoned torch.empty fills (aten work)
    if mode == "view":  # the output is a view of a larger allocation
        y = _aten.empty.memory_format([x.numel() + 8], dtype=x.dtype, device=x.device)[8:]
        _KERNEL.launch(x, y, scale)
        return y.view(x.shape)
    y = _aten.empty_like.default(x)
    if mode == "spare":  # an output slot the call does not need, allocated empty
        _aten.empty.memory_format([0], dtype=x.dtype, device=x.device)
    if mode == "call":  # a library launch (cuBLASLt, cuDNN) records itself as a call
        rec = lr.active()
        if rec is not None:
            rec.add_call(_library_scale, (x, y, x.numel(), scale))
        _library_scale(0, x.data_ptr(), y.data_ptr(), x.numel(), scale)
        return y
    _KERNEL.launch(x, y, scale)
    if mode == "aten":
        y.add_(0)  # work outside the launches: never replayable
    if mode == "foreign":
        return _FOREIGN
    return y


_FOREIGN = torch.zeros(3)


def _scale_fake(x: torch.Tensor, scale: float, mode: str) -> torch.Tensor:
    return torch.empty_like(x)


_scale_op = None


def _op(monkeypatch):
    global _scale_op
    from baracuda.backends import torch_ops

    if _scale_op is None:
        _scale_op = torch_ops.define_op("test_fake_scale", _scale_impl, _scale_fake)
    monkeypatch.setattr(torch_ops, "interpreter_active", lambda: False)
    monkeypatch.setattr(torch_ops, "RECORD_ON_FIRST_CALL", False)
    monkeypatch.setattr(lr, "_current_device", lambda: 0)
    monkeypatch.setattr(lr, "_raw_stream", lambda d: 0)
    _scale_op._replays.clear()
    _IMPL_CALLS.clear()
    return _scale_op


@pytest.mark.parametrize("mode", ["plain", "view", "call", "spare"])
def test_op_replay_allocates_and_launches_without_the_implementation(monkeypatch, mode):
    op = _op(monkeypatch)
    for i in range(5):
        x = torch.randn(3, 7 + 0 * i)
        y = op(x, 2.5, mode)
        torch.testing.assert_close(y, x * 2.5)
        assert y.shape == x.shape and y.data_ptr() != x.data_ptr()
    assert len(_IMPL_CALLS) == 2  # the first call runs, the second records, the rest replay
    assert lr.OP_OUTCOMES["test_fake_scale"] is None
    (program,) = op._replays.values()
    # the output is the allocation itself (matched by storage: a dispatch mode hands the
    # caller another Python object), or a view of a larger one
    assert program.outputs[0][0] == ("view" if mode == "view" else "alloc")
    # an empty allocation is not made again on a replay
    assert [spec is None for spec in program.allocations] == (
        [False, True] if mode == "spare" else [False])
    # another signature (shape, scale, the sign of a zero) is its own entry
    x = torch.randn(2, 5)
    torch.testing.assert_close(op(x, -1.0, mode), -x)
    for s in (0.0, -0.0):
        op(x, s, mode), op(x, s, mode)
        out = op(x, s, mode)
        assert torch.equal(torch.signbit(out), torch.signbit(x * s))
    assert len(_IMPL_CALLS) == 2 + 1 + 4


@pytest.mark.parametrize("mode,why", [("aten", "aten op"), ("foreign", "output")])
def test_op_replay_refuses_work_it_cannot_repeat(monkeypatch, mode, why):
    op = _op(monkeypatch)
    x = torch.randn(4, 4)
    for _ in range(4):
        op(x, 3.0, mode)
    assert len(_IMPL_CALLS) == 4  # refused: every call takes the implementation
    assert why in lr.OP_OUTCOMES["test_fake_scale"]


def test_op_replay_yields_on_another_device(monkeypatch):
    op = _op(monkeypatch)
    x = torch.randn(6)
    for _ in range(3):
        op(x, 2.0, "plain")
    monkeypatch.setattr(lr, "_current_device", lambda: 1)
    torch.testing.assert_close(op(x, 2.0, "plain"), x * 2)
    assert len(_IMPL_CALLS) == 3  # the replay declined; the implementation ran


# -- whole-function replay (torch_ops.replayed): a frontend around the fake op --------------

_FRONT_CALLS = []


def _frontend(x: torch.Tensor, scale: float = 2.0, mode: str = "plain") -> torch.Tensor:
    """A baracuda.torch-like function: Python argument handling, a view, then the op."""
    _FRONT_CALLS.append(mode)
    if not isinstance(scale, float):
        raise TypeError("scale must be a float")
    return _scale_op(x.reshape(-1), scale, mode).view(x.shape)


def _replayed_frontend(monkeypatch):
    from baracuda.backends import torch_ops

    _op(monkeypatch)
    _FRONT_CALLS.clear()
    return torch_ops.replayed(_frontend)


def test_replayed_function_skips_the_frontend_without_grad(monkeypatch):
    fn = _replayed_frontend(monkeypatch)
    assert fn.__wrapped__ is _frontend
    for _ in range(5):
        x = torch.randn(3, 4)
        torch.testing.assert_close(fn(x, 1.5), x * 1.5)
        torch.testing.assert_close(fn(x, scale=1.5), x * 1.5)  # keywords: their own key
    assert len(_FRONT_CALLS) == 4  # per key: the first call runs, the second records
    assert lr.OP_OUTCOMES["baracuda.torch._frontend"] is None
    out = fn(x, 1.5)
    assert out.shape == x.shape and out.data_ptr() != x.data_ptr()
    # a gradient needed: never replayed (autograd must see the op); the result is the same
    xg = x.clone().requires_grad_()
    before = len(_FRONT_CALLS)
    fn(xg, 1.5)
    assert len(_FRONT_CALLS) == before + 1
    # the grad mode, default dtype and deterministic switch are part of the key
    with torch.no_grad():
        fn(x, 1.5), fn(x, 1.5)
        torch.testing.assert_close(fn(x, 1.5), x * 1.5)
    assert len(_FRONT_CALLS) == before + 3


def test_replayed_function_refuses_what_it_cannot_repeat(monkeypatch):
    fn = _replayed_frontend(monkeypatch)
    x = torch.randn(5)
    for _ in range(4):
        fn(x, 2.0, "aten")
    assert len(_FRONT_CALLS) == 4 and "aten op" in lr.OP_OUTCOMES["baracuda.torch._frontend"]
    with pytest.raises(TypeError):  # errors still come from the function, every time
        fn(x, 2)
    with pytest.raises(TypeError):
        fn(x, 2)


@pytest.mark.gpu
def test_op_replay_on_the_gpu_matches_torch_forward_and_backward():
    """The host-cost path: after two calls of a signature, the custom ops of an eager step
    replay whole (allocations and launches); every later call, on fresh tensors, forward and
    backward, must still equal torch."""

    import baracuda.torch as bt
    from baracuda.tools.host_cost import _TorchLib
    from helpers import assert_same_value_and_grads

    def step(lib, x, w, labels):
        h = lib.rms_norm(x, (x.shape[-1],), w, 1e-6)
        # (+ x hands the gradient on; + w reduces it over rows: a backward kernel)
        h = lib.add(lib.add(lib.silu(h), x), w)
        h = lib.layer_norm(lib.softmax(h, -1) * 0 + h, (h.shape[-1],))
        return lib.cross_entropy(h, labels)

    for _ in range(5):
        x = torch.randn(24, 333, device="cuda", requires_grad=True)
        w = torch.randn(333, device="cuda", requires_grad=True)
        labels = torch.randint(0, 333, (24,), device="cuda")
        assert_same_value_and_grads(step(bt, x, w, labels), step(_TorchLib, x, w, labels),
                                    (x, w))
        with torch.no_grad():
            torch.testing.assert_close(bt.add(x, w), x + w)
    # (with a gradient, cross_entropy is one fused op: loss and input gradient together)
    for op in ("ew_binary", "ew_unary", "softmax", "rms_norm", "layer_norm",
               "cross_entropy_fused", "ew_binary_backward", "ew_unary_backward",
               "softmax_backward", "rms_norm_backward", "layer_norm_backward"):
        assert lr.OP_OUTCOMES.get(op, "not recorded") is None, (op, lr.OP_OUTCOMES.get(op))
