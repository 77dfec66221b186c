# ruff: noqa: B023  (lambdas are timed at once)
"""Kernel-only time of the softmax forward candidates on long bf16 lines (CUDA graph replay,
L2 not flushed: the bench's back-to-back regime), GB/s = x + y bytes / time.

    python scripts/smem_softmax_kernel_time.py
"""

from __future__ import annotations

import torch
import triton.testing

import baracuda as bc
from baracuda.families.softmax import plans as P
from baracuda.families.softmax import plans_smem as S


def main() -> None:
    for shape in ((1024, 65536), (256, 262144), (4096, 32768)):
        for kind in (bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX):
            x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
            y = torch.empty_like(x)
            desc = bc.SoftmaxDescriptor(kind, shape, 1, x.dtype)
            plan = bc.SoftmaxPlan.select(desc)
            ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
            nbytes = 2 * x.numel() * x.element_size()
            row = [f"{kind.value:11} {shape}"]
            for name, fn in (("smem", lambda: S.launch_smem(desc, x, y, ws)),
                             ("triton", lambda: P._launch(P.softmax_fwd_kernel, desc, [x, y],
                                                          ws))):
                ms = triton.testing.do_bench_cudagraph(fn, rep=200)
                row.append(f"{name} {nbytes / ms / 1e6:7.0f}")
            print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()
