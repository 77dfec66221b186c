# ruff: noqa: B023, F821  (lambdas are timed at once; loop tensors are freed at the end)
"""rms_norm / layer_norm forward+backward through each library's torch function, captured in
a CUDA graph and replayed back to back: the GPU time of a training step's norm without the
host (the bench's fwd+bwd rows are host-bound on some runs). Peers: torch eager, torch.compile
of the eager function, Liger. GB/s over 5 tensors (x, y, dy, x, dx), as the bench counts them;
with `fwd`, the forward alone (x, y: 2 tensors).

    python lab/scripts/fwbw_graph.py [float32] [fwd]
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
import triton.testing

from baracuda.torch import layer_norm, rms_norm

SHAPES = ((32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536))


def _libraries(op):
    ours = {"rms": lambda x, w, b: rms_norm(x, [x.shape[-1]], w, 1e-6),
            "layer": lambda x, w, b: layer_norm(x, [x.shape[-1]], w, b, 1e-5)}[op]
    eager = {"rms": lambda x, w, b: F.rms_norm(x, [x.shape[-1]], w, 1e-6),
             "layer": lambda x, w, b: F.layer_norm(x, [x.shape[-1]], w, b, 1e-5)}[op]
    # torch.compile of the eager function: one compile per shape (dynamo reset in main), static
    # shapes, so each row gets the kernels inductor specializes for it
    out = [("ours", ours), ("eager", eager), ("compile", torch.compile(eager, dynamic=False))]
    try:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        out.append(("liger", {"rms": lambda x, w, b: LigerRMSNormFunction.apply(x, w, 1e-6),
                              "layer": lambda x, w, b: LigerLayerNormFunction.apply(
                                  x, w, b, 1e-5)}[op]))
    except Exception:  # noqa: BLE001 - optional peer
        pass
    return out


def main() -> None:
    dtype = torch.float32 if "float32" in sys.argv[1:] else torch.bfloat16
    fwd_only = "fwd" in sys.argv[1:]
    for op in ("rms", "layer"):
        for shape in SHAPES:
            torch._dynamo.reset()
            x = torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
            w = torch.randn(shape[-1:], device="cuda", dtype=dtype, requires_grad=True)
            b = torch.randn(shape[-1:], device="cuda", dtype=dtype, requires_grad=True)
            dy = torch.randn(shape, device="cuda", dtype=dtype)
            inputs = (x, w, b) if op == "layer" else (x, w)
            nbytes = (2 if fwd_only else 5) * x.numel() * x.element_size()
            cells = [f"{op:5} {'fwd' if fwd_only else 'fwd+bwd'} {list(shape)} "
                     f"{str(dtype)[6:]}"]
            for name, fn in _libraries(op):
                try:
                    if fwd_only:
                        step = lambda: fn(x.detach(), w.detach(), b.detach())
                    else:
                        step = lambda: torch.autograd.grad(fn(x, w, b), inputs, dy)
                    ms = triton.testing.do_bench_cudagraph(step, rep=100)
                    cells.append(f"{name} {nbytes / ms / 1e6:5.0f}")
                except Exception as exc:  # noqa: BLE001
                    cells.append(f"{name} ERR {type(exc).__name__}")
            print("  ".join(cells), flush=True)
            del x, w, b, dy


if __name__ == "__main__":
    main()
