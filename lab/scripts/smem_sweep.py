# ruff: noqa: B023  (lambdas are timed at once)
"""Chunk-config sweep of the shared-memory exchange kernels (backends/gluon_chunks.py):
kernel-only GB/s (CUDA graph replay, back to back) per (R, SL, warps), bf16.

    python lab/scripts/smem_sweep.py [softmax|norm|ce ...]

SWEEP_SHAPES="16384x4096,4096x16384", SWEEP_CONFIGS="16/4/4,32/4/4" and SWEEP_DTYPE=float32
narrow or widen it; a config may end in constexpr flags of the norm forward, "32/4/4/EVEN=1".
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

import baracuda as bc
from baracuda.families.loss import plans_smem as CS
from baracuda.families.normalization import plans_smem as NS
from baracuda.families.softmax import plans_smem as SS


def _config(text: str) -> tuple:
    """"R/SL/warps[/NAME=INT...]": the chunk config and integer constexprs of the norm forward."""
    r, sl, w, *flags = text.split("/")
    return (int(r), int(sl), int(w), *((k, int(v)) for k, v in
                                       (f.split("=") for f in flags)))


CONFIGS = [_config(c) for c in os.environ.get(
    "SWEEP_CONFIGS", "32/4/4,64/8/8,64/8/4,64/4/4,32/4/2,128/16/8,16/2/2,32/8/8").split(",")]
DTYPE = getattr(torch, os.environ.get("SWEEP_DTYPE", "bfloat16"))
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get(
    "SWEEP_SHAPES", "1024x65536,256x262144,8192x32768,4096x131072").split(",")]


def _sweep(label, nbytes, run) -> None:
    cells = []
    for r, sl, w, *flags in CONFIGS:
        cfg = {"R": r, "SL": sl, "num_warps": w, **dict(flags)}
        ms = triton.testing.do_bench_cudagraph(lambda: run(cfg), rep=100)
        tag = "".join(f" {k}" + ("" if v == 1 else str(v)) for k, v in flags if v)
        cells.append(f"{r}/{sl}/{w}{tag} {nbytes / ms / 1e6:5.0f}")
    print(f"{label:34} " + "  ".join(cells), flush=True)


def main(which) -> None:
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda", dtype=DTYPE)
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        ws = torch.empty(shape[0] * (shape[1] // 1024 * 8 + 64) + 4096, dtype=torch.uint8,
                         device="cuda")
        if "softmax" in which:
            d = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, shape, 1, x.dtype)
            _sweep(f"softmax {shape}", nbytes, lambda cfg: SS.launch_smem(d, x, y, ws, cfg=cfg))
        if "norm" in which:
            w = torch.rand(shape[1], device="cuda", dtype=DTYPE)
            b = torch.randn(shape[1], device="cuda", dtype=DTYPE)
            mean = torch.empty(shape[0], 1, device="cuda")
            rstd = torch.empty(shape[0], 1, device="cuda")
            d = bc.RMSNormDescriptor(shape, (1,), True, 1e-5, x.dtype)
            a = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
            _sweep(f"rms_norm {shape}", nbytes, lambda cfg: NS.launch_smem(d, a, ws, True,
                                                                          cfg=cfg))
            d2 = bc.LayerNormDescriptor(shape, (1,), True, True, 1e-5, x.dtype)
            a2 = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
            _sweep(f"layer_norm {shape}", nbytes, lambda cfg: NS.launch_smem(d2, a2, ws, False,
                                                                            cfg=cfg))
        if "ce" in which:
            t = torch.randint(0, shape[1], (shape[0],), device="cuda")
            loss = torch.empty((), device="cuda", dtype=torch.bfloat16)
            d = bc.CrossEntropyLossDescriptor(shape, x.dtype)
            a = bc.CrossEntropyLossFusedArgs(x, t, None, loss, y)
            _sweep(f"cross_entropy {shape}", nbytes, lambda cfg: CS.launch_smem(d, a, ws,
                                                                               cfg=cfg))


if __name__ == "__main__":
    main(sys.argv[1:] or ["softmax", "norm", "ce"])
