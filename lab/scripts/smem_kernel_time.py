# ruff: noqa: B023  (lambdas are timed at once)
"""Kernel-only time of the shared-memory exchange candidates against the Triton launches they
replace, on long bf16 lines (CUDA graph replay, L2 not flushed: the bench's back-to-back
regime). GB/s = x + y bytes / time.

    python lab/scripts/smem_kernel_time.py
"""

from __future__ import annotations

import torch
import triton.testing

import baracuda as bc
from baracuda.families.normalization import plans as NP
from baracuda.families.normalization import plans_smem as NS
from baracuda.families.softmax import plans as P
from baracuda.families.softmax import plans_smem as S

SHAPES = ((1024, 65536), (256, 262144), (4096, 32768))


def _row(label, nbytes, paths) -> None:
    cells = [label]
    for name, fn in paths:
        ms = triton.testing.do_bench_cudagraph(fn, rep=200)
        cells.append(f"{name} {nbytes / ms / 1e6:7.0f}")
    print("  ".join(cells), flush=True)


def main() -> None:
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        for kind in (bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX):
            desc = bc.SoftmaxDescriptor(kind, shape, 1, x.dtype)
            ws = torch.empty(bc.SoftmaxPlan.select(desc).workspace_size() + 16,
                             dtype=torch.uint8, device="cuda")
            _row(f"{kind.value:11} {shape}", nbytes,
                 (("smem", lambda: S.launch_smem(desc, x, y, ws)),
                  ("triton", lambda: P._launch(P.softmax_fwd_kernel, desc, [x, y], ws))))
        w = torch.rand(shape[1], device="cuda", dtype=torch.bfloat16)
        b = torch.randn(shape[1], device="cuda", dtype=torch.bfloat16)
        mean = torch.empty(shape[0], 1, device="cuda")
        rstd = torch.empty(shape[0], 1, device="cuda")
        for layer in (False, True):
            if layer:
                desc = bc.LayerNormDescriptor(shape, (1,), True, True, 1e-5, x.dtype)
                args = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
                plan = bc.LayerNormPlan.select(desc)
            else:
                desc = bc.RMSNormDescriptor(shape, (1,), True, 1e-5, x.dtype)
                args = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
                plan = bc.RMSNormPlan.select(desc)
            ws = torch.empty(plan.workspace_size() + 16, dtype=torch.uint8, device="cuda")
            _row(f"{'layer_norm' if layer else 'rms_norm':11} {shape}", nbytes,
                 (("smem", lambda: NS.launch_smem(desc, args, ws, not layer)),
                  ("triton", lambda: NP._launch_forward(desc, args, not layer, ws))))


if __name__ == "__main__":
    main()
