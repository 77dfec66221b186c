"""The eager host path depends on launch replay (backends/launch_replay.py): a custom op whose
implementation does aten work other than views, allocations and metadata queries is refused
and pays the full launch path on every call. This runs the training-step model's forward and
backward on the CPU with Triton launches stubbed out (they are what a recording keeps) and
lists each op's other aten work: none may appear but the CPU-only index checks (on CUDA those
are device asserts)."""

from __future__ import annotations

import inspect
from collections import defaultdict

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import baracuda.torch  # every op registered
from baracuda.backends import launch_replay as lr
from baracuda.backends import torch_ops
from baracuda.core.runtime import interpreter_active
from baracuda.tools import train_step as T

#: host reads of index values that the CPU path makes (IndexError as torch's CPU kernels)
_CPU_INDEX_CHECKS = {"aten._local_scalar_dense.default", "aten.aminmax.default",
                     "aten.ne.Scalar", "aten.scalar_tensor.default", "aten.where.self"}


class _Watch(TorchDispatchMode):
    def __init__(self, seen: set):
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in lr._ALLOCATORS or func._overloadpacket in lr._METADATA_OPS:
            return out
        rets = func._schema.returns
        if not rets or any(r.alias_info is None or r.alias_info.is_write for r in rets):
            self.seen.add(str(func))
        return out


@pytest.mark.skipif(not interpreter_active(), reason="stubs the interpreter's launches (CPU)")
def test_training_step_ops_do_no_aten_work(monkeypatch):
    from triton.runtime import interpreter

    monkeypatch.setattr(interpreter.InterpretedFunction, "run", lambda self, *a, **k: None)
    for name in ("empty", "empty_like", "empty_strided"):  # tests/memcheck.py's poisoning off
        monkeypatch.setattr(torch, name, inspect.unwrap(getattr(torch, name)))
    monkeypatch.setattr(torch.Tensor, "new_empty", inspect.unwrap(torch.Tensor.new_empty))
    seen: dict[str, set] = defaultdict(set)
    for op in {id(o): o for o in torch_ops.EAGER_OPS}.values():
        def watched(*args, op=op, impl=op._impl):
            with _Watch(seen[op.name]):
                return impl(*args)
        monkeypatch.setattr(op, "_impl", watched)
    shape = T.ModelShape(dim=64, heads=4, ffn=96, vocab=128, layers=1)
    params = T.init_params(shape, "cpu", torch.bfloat16)
    tokens = torch.randint(0, shape.vocab, (2, 16))
    targets = torch.randint(0, shape.vocab, (2, 16))
    cos, sin = T.rope_tables(16, shape.dim // shape.heads, "cpu")
    T.loss_fn(T.baracuda_ops(), shape, params, tokens, targets, cos, sin).backward()
    # and the rest of the host-cost bench's seven calls, forward and backward
    bt = baracuda.torch
    x = torch.randn(8, 64, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(64, dtype=torch.bfloat16, requires_grad=True)
    outs = (bt.add(x, w), bt.softmax(x, -1), bt.layer_norm(x, (64,), w, w),
            bt.scaled_dot_product_attention(*(x.view(1, 2, 4, 64),) * 3, is_causal=True))
    torch.autograd.grad([o.float().sum() for o in outs], [x, w])
    assert {"embedding", "linear", "rms_norm", "rope", "sdpa", "ew_unary", "ew_binary",
            "linear_backward", "sdpa_backward", "softmax", "softmax_backward", "layer_norm",
            "layer_norm_backward", "ew_binary_backward"} <= set(seen)
    extra = {name: sorted(ops - _CPU_INDEX_CHECKS) for name, ops in seen.items()}
    assert not any(extra.values()), {k: v for k, v in extra.items() if v}


@pytest.mark.skipif(not interpreter_active(), reason="stubs the interpreter's launches (CPU)")
def test_host_calls_replay_whole_without_grad(monkeypatch):
    """The seven calls of `bench --host`, without a gradient, replay whole
    (`torch_ops.replayed`): their frontends do no aten work besides views, allocations and
    their custom ops (whose insides the test above watches)."""
    from triton.runtime import interpreter

    from baracuda.tools import host_cost as H

    monkeypatch.setattr(interpreter.InterpretedFunction, "run", lambda self, *a, **k: None)
    for name in ("empty", "empty_like", "empty_strided"):
        monkeypatch.setattr(torch, name, inspect.unwrap(getattr(torch, name)))
    inputs = H._inputs("cpu", torch.bfloat16)
    extra = {}
    with torch.no_grad():
        for name, call in H._calls(baracuda.torch).items():
            seen: set = set()
            with _Watch(seen):
                call(*(t.detach() for t in inputs[name]))
            extra[name] = sorted(f for f in seen - _CPU_INDEX_CHECKS
                                 if not f.startswith("baracuda."))
    assert not any(extra.values()), {k: v for k, v in extra.items() if v}
