# ruff: noqa: B023  (lambdas are timed at once)
"""Long-row forwards, kernel only (CUDA graph replay, back to back), x + y GB/s:

- softmax / log_softmax f32 by the register exchange, with and without its register cap
  (softmax/plans.py EXCHANGE_FWD_MAXNREG);
- rms_norm / layer_norm by the shared-memory exchange (normalization/kernels_smem.py) per
  (ROWS, R, SL, warps): rows per program sharing gamma / beta loads, chunk rows of 256, slice
  rows, warps; bf16 and f32 (f32 rows take the Triton register exchange in the plans: the
  "plan" cell); "nob" = layer_norm without beta (gamma only) at the table's config.

    python scripts/long_row_sweep.py [softmax] [norm]

SWEEP_SHAPES="1024x65536,256x262144" and SWEEP_CONFIGS="1/32/4/4,2/16/4/4" narrow it.
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

import baracuda as bc
from baracuda.families.normalization import plans_smem as NS
from baracuda.families.softmax import plans as SP

SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get(
    "SWEEP_SHAPES", "1024x65536,256x262144").split(",")]
CONFIGS = [tuple(int(v) for v in c.split("/")) for c in os.environ.get(
    "SWEEP_CONFIGS", "1/32/4/4,2/16/4/4,2/16/2/4,2/32/4/4,2/8/4/4,1/64/8/8,2/32/8/8").split(",")]


def _gbs(nbytes, fn) -> float:
    return nbytes / triton.testing.do_bench_cudagraph(fn, rep=100) / 1e6


def softmax_cap() -> None:
    ws = torch.empty(1 << 24, dtype=torch.uint8, device="cuda")
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda")
        y = torch.empty_like(x)
        cells = [f"softmax f32 {shape}"]
        for kind in (bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX):
            desc = bc.SoftmaxDescriptor(kind, shape, 1, torch.float32)
            capped = SP.launch_config(shape[1], desc.element, shape[0])
            uncapped = {k: v for k, v in capped.items() if k != "maxnreg"}
            for name, cfg in (("cap", capped), ("nocap", uncapped)):
                rate = _gbs(2 * x.numel() * 4,
                            lambda: SP._launch(SP.softmax_fwd_kernel, desc, [x, y], ws, cfg))
                cells.append(f"{kind.value[:3]}-{name} {rate:5.0f}")
        print("  ".join(cells), flush=True)


def norm_rows() -> None:
    for dtype in (torch.bfloat16, torch.float32):
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda", dtype=dtype) + 1.0
            y = torch.empty_like(x)
            w = torch.rand(shape[1], device="cuda", dtype=dtype) + 0.5
            b = torch.randn(shape[1], device="cuda", dtype=dtype)
            mean = torch.empty(shape[0], 1, device="cuda")
            rstd = torch.empty(shape[0], 1, device="cuda")
            ws = torch.empty(1 << 24, dtype=torch.uint8, device="cuda")
            nbytes = 2 * x.numel() * x.element_size()
            for layer in (False, True):
                if layer:
                    d = bc.LayerNormDescriptor(shape, (1,), True, True, 1e-5, dtype)
                    a = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
                    a_nob = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w)
                    plan = bc.LayerNormPlan.select(d)
                else:
                    d = bc.RMSNormDescriptor(shape, (1,), True, 1e-5, dtype)
                    a = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
                    plan = bc.RMSNormPlan.select(d)
                pws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8,
                                  device="cuda")
                cells = [f"{'layer' if layer else 'rms'} {str(dtype)[6:]} {shape}",
                         f"plan({plan.candidate.name[:12]}) {_gbs(nbytes, lambda: plan.run(a, pws)):5.0f}"]
                for rows_per, r, sl, warps in CONFIGS:
                    cfg = {"ROWS": rows_per, "R": r, "SL": sl, "num_warps": warps}
                    try:
                        rate = _gbs(nbytes, lambda: NS.launch_smem(d, a, ws, not layer, cfg=cfg))
                        cells.append(f"{rows_per}/{r}/{sl}/{warps} {rate:5.0f}")
                    except Exception as exc:  # noqa: BLE001 - a config that fails is a result
                        cells.append(f"{rows_per}/{r}/{sl}/{warps} {type(exc).__name__}")
                if layer:
                    rate = _gbs(nbytes, lambda: NS.launch_smem(d, a_nob, ws, False))
                    cells.append(f"nob {rate:5.0f}")
                print("  ".join(cells), flush=True)


if __name__ == "__main__":
    which = sys.argv[1:] or ["softmax", "norm"]
    if "softmax" in which:
        softmax_cap()
    if "norm" in which:
        norm_rows()
