# ruff: noqa: B023  (lambdas are timed at once)
"""softmax / log_softmax forwards of long f32 lines by the register exchange, kernel only (CUDA
graph replay, back to back), x + y GB/s, with and without a register cap (softmax/plans.py
register_cap), in interleaved rounds:

    python scripts/long_row_sweep.py [rounds]

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


def main(rounds: int) -> None:
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
