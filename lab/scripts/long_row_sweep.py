# ruff: noqa: B023  (lambdas are timed at once)
"""Forwards of long f32 rows by the register exchange, kernel only (CUDA graph replay, back to
back), x + y GB/s, against register caps:

- softmax / log_softmax, with and without the cap (softmax/plans.py register_cap), in
  interleaved rounds;
- rms_norm / layer_norm (normalization/kernels_exchange.py), chunk x warps x cap (the cap sets
  how many programs share an SM; values past it spill).

    python lab/scripts/long_row_sweep.py [rounds] [softmax] [norm]

SWEEP_SHAPES="1024x65536,256x262144" picks the shapes. (Session 12's run of this script at
7e1926a also swept two rows per program in the norms' shared-memory forward: slower,
normalization/PERF_NOTES.md.)
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

import baracuda as bc
from baracuda.families.softmax import plans as SP

SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get(
    "SWEEP_SHAPES", "1024x65536,256x262144").split(",")]


def _gbs(nbytes, fn) -> float:
    return nbytes / triton.testing.do_bench_cudagraph(fn, rep=100) / 1e6


def softmax_cap(rounds: int) -> None:
    ws = torch.empty(1 << 24, dtype=torch.uint8, device="cuda")
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda")
        y = torch.empty_like(x)
        for kind in (bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX):
            desc = bc.SoftmaxDescriptor(kind, shape, 1, torch.float32)
            cfg = SP.launch_config(shape[1], desc.element, shape[0])
            cells = [f"{kind.value:12} f32 {shape}"]
            for _ in range(rounds):
                for name, cap in (("cap64", 64), ("uncapped", None)):
                    launch = dict(cfg, maxnreg=cap)
                    rate = _gbs(2 * x.numel() * 4, lambda: SP._launch(
                        SP.softmax_fwd_kernel, desc, [x, y], ws, launch))
                    cells.append(f"{name} {rate:5.0f}")
            print("  ".join(cells), flush=True)


#: (chunk columns, warps, register cap or None) of the norm exchange forward
NORM_CONFIGS = [(8192, 8, None), (8192, 8, 80), (8192, 8, 72), (8192, 8, 64), (4096, 4, None),
                (4096, 4, 72), (4096, 4, 64), (4096, 4, 56), (8192, 16, None), (16384, 16, 64)]


def norm_cap() -> None:
    from lab.normalization import tune as T

    from baracuda.families.normalization import layout as L

    for shape in SHAPES:
        for layer in (False, True):
            plan_cls, desc, args, nbytes = T._problem("fwd", shape, torch.float32, layer)
            T._use("fwd", None)
            T._time(plan_cls, desc, args)  # clocks up, compiled
            cells = [f"{'layer' if layer else 'rms'} f32 {shape} table "
                     f"{nbytes / T._time(plan_cls, desc, args) / 1e6:5.0f}"]
            for block_n, warps, cap in NORM_CONFIGS:
                n_chunks = -(-shape[1] // block_n)
                T._use("fwd", dict(EXCHANGE=True, BLOCK_N=block_n, num_warps=warps,
                                   PARTS=L.next_pow2(n_chunks), N_CHUNKS=n_chunks,
                                   G=shape[0] * n_chunks, SPIN=L.SPIN_LIMIT, maxnreg=cap))
                rate = nbytes / T._time(plan_cls, desc, args) / 1e6
                cells.append(f"{block_n}x{warps}/{cap or '-'} {rate:5.0f}")
            T._use("fwd", None)
            print("  ".join(cells), flush=True)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    which = sys.argv[2:] or ["softmax", "norm"]
    if "softmax" in which:
        softmax_cap(rounds)
    if "norm" in which:
        norm_cap()
