"""Host time per call: baracuda.torch against torch on tiny CUDA tensors, where the GPU work is
negligible and the time is launch, argument checks and autograd hand-off.

Seven calls an eager training step makes (add, silu, softmax, rms_norm, linear, causal SDPA,
cross_entropy), each timed forward under `no_grad` and forward + `.float().sum().backward()`,
and the forward once more through `torch.compile(fullgraph=True)` (what a compiled call costs
the host: the guards, the compiled code, and for us the registered custom op it calls); the two
libraries are timed alternately in the same process.

    baracuda bench --host      (GPU machine)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F


@dataclasses.dataclass
class HostRow:
    op: str
    fw_ours_us: float
    fw_torch_us: float
    fwbw_ours_us: float
    fwbw_torch_us: float
    #: forward under no_grad through torch.compile(fullgraph=True); None: not measured
    fwc_ours_us: float | None = None
    fwc_torch_us: float | None = None


def _inputs(device, dtype) -> dict[str, tuple]:
    def t(*shape, grad=True):
        return torch.randn(*shape, device=device, dtype=dtype).requires_grad_(grad)

    labels = torch.randint(0, 256, (8,), device=device)
    return {
        "add": (t(8, 256), t(8, 256)),
        "silu": (t(8, 256),),
        "softmax": (t(8, 256),),
        "rms_norm": (t(8, 256), t(256)),
        "linear": (t(8, 256), t(256, 256), t(256)),
        "scaled_dot_product_attention": (t(1, 4, 16, 64), t(1, 4, 16, 64), t(1, 4, 16, 64)),
        "cross_entropy": (t(8, 256), labels),
    }


def _calls(lib) -> dict[str, Callable]:
    return {
        "add": lambda a, b: lib.add(a, b),
        "silu": lambda x: lib.silu(x),
        "softmax": lambda x: lib.softmax(x, -1),
        "rms_norm": lambda x, w: lib.rms_norm(x, (x.shape[-1],), w, 1e-6),
        "linear": lambda x, w, b: lib.linear(x, w, b),
        "scaled_dot_product_attention":
            lambda q, k, v: lib.scaled_dot_product_attention(q, k, v, is_causal=True),
        "cross_entropy": lambda x, y: lib.cross_entropy(x, y),
    }


class _TorchLib:
    """torch's functions under the names baracuda.torch uses."""

    add = staticmethod(torch.add)
    silu = staticmethod(F.silu)
    softmax = staticmethod(torch.softmax)
    rms_norm = staticmethod(F.rms_norm)
    layer_norm = staticmethod(F.layer_norm)
    linear = staticmethod(F.linear)
    scaled_dot_product_attention = staticmethod(F.scaled_dot_product_attention)
    cross_entropy = staticmethod(F.cross_entropy)


def _us_per_call(fn: Callable[[], object], iters: int, sync: Callable[[], None]) -> float:
    for _ in range(10):
        fn()
    sync()
    best = float("inf")
    for _ in range(5):  # best of 5 batches: host time has no floor to go below, only noise above
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best * 1e6


def measure(iters: int = 200, device=None, dtype=torch.bfloat16, ops=None,
            compile_backend: str | None = "inductor") -> list[HostRow]:
    """The rows of `ops` (default all seven); `compile_backend=None` skips the compiled
    forward."""
    import baracuda.torch as bt

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    inputs = _inputs(device, dtype)
    ours, theirs = _calls(bt), _calls(_TorchLib)
    rows = []
    for op, args in inputs.items():
        if ops is not None and op not in ops:
            continue

        def fw(f, args=args):
            with torch.no_grad():
                f(*args)

        def fwbw(f, args=args):
            f(*args).float().sum().backward()

        times = []
        for kind in (fw, fwbw):
            for calls in (ours, theirs):
                times.append(_us_per_call(lambda k=kind, f=calls[op]: k(f), iters, sync))
        row = HostRow(op, *times)
        if compile_backend is not None:
            row.fwc_ours_us, row.fwc_torch_us = (
                _compiled_us(calls[op], args, compile_backend, iters, sync)
                for calls in (ours, theirs))
        rows.append(row)
    return rows


def _compiled_us(fn: Callable, args: tuple, backend: str, iters: int,
                 sync: Callable[[], None]) -> float | None:
    """Host time per call of fn compiled whole (None when it does not compile)."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    try:
        with torch.no_grad():
            compiled(*args)
            return _us_per_call(lambda: compiled(*args), iters, sync)
    except Exception:  # noqa: BLE001 - a row that does not compile reads "err"
        return None


def _us(v: float | None) -> str:
    return "err" if v is None else f"{v:.1f}"


def markdown(rows: list[HostRow]) -> str:
    lines = ["| op | fw ours µs | fw torch µs | fw ratio | fw+bw ours µs | fw+bw torch µs | "
             "fw+bw ratio | compiled fw ours µs | compiled fw torch µs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.op} | {r.fw_ours_us:.1f} | {r.fw_torch_us:.1f} | "
                     f"{r.fw_ours_us / r.fw_torch_us:.2f}x | {r.fwbw_ours_us:.1f} | "
                     f"{r.fwbw_torch_us:.1f} | {r.fwbw_ours_us / r.fwbw_torch_us:.2f}x | "
                     f"{_us(r.fwc_ours_us)} | {_us(r.fwc_torch_us)} |")
    lines.append("\nratio = ours / torch (host time; lower is better). compiled: the forward "
                 "under no_grad through torch.compile(fullgraph=True).")
    from ..backends.launch_replay import refusals

    if refusals():  # these calls take the full launch path every time
        lines.append("\n" + refusals())
    return "\n".join(lines)
