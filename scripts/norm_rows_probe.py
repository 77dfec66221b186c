# ruff: noqa: B023  (lambdas are timed at once)
"""The whole-row forward (normalization/kernels_rows.py) against the plan's forward: max error
to the float64 reference, rerun bits, kernel-only x + y GB/s (CUDA graph replay).

    python scripts/norm_rows_probe.py [R/S/warps ...]   (ROWS_SHAPES="1024x65536,...")
"""

from __future__ import annotations

import os
import sys

import torch
import triton
import triton.testing

import baracuda as bc
from baracuda.backends.triton_support import sm_count
from baracuda.families.normalization.kernels_rows import row_norm_fwd_rows_kernel

LANE = 256


def launch(x, y, w, b, mean, rstd, rms, r, s, warps, programs=None):
    rows, m = x.shape
    nch = triton.cdiv(m, r * LANE)
    grid = (min(rows, programs or sm_count()),)
    row_norm_fwd_rows_kernel[grid](
        x, y, w, x if b is None else b, rstd if mean is None else mean, rstd, rows, m, 1e-5,
        NCH=nch, S=s, R=r, RMS=rms, HAS_W=True, HAS_B=b is not None,
        EVEN=m % (r * LANE) == 0, num_warps=warps)


def main(configs) -> None:
    shapes = [tuple(int(v) for v in t.split("x")) for t in os.environ.get(
        "ROWS_SHAPES", "1024x65536,2048x32768,777x64768").split(",")]
    for rows, m in shapes:
        for dt in (torch.bfloat16, torch.float16):
            x = torch.randn(rows, m, device="cuda", dtype=dt) * 2 + 0.5
            w = torch.rand(m, device="cuda", dtype=dt) + 0.5
            b = torch.randn(m, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            mean = torch.empty(rows, 1, device="cuda")
            rstd = torch.empty(rows, 1, device="cuda")
            nbytes = 2 * x.numel() * x.element_size()
            for rms in (False, True):
                ref = (torch.nn.functional.rms_norm(x.double(), (m,), w.double(), 1e-5) if rms
                       else torch.nn.functional.layer_norm(x.double(), (m,), w.double(),
                                                           b.double(), 1e-5))
                if rms:
                    plan = bc.RMSNormPlan.select(bc.RMSNormDescriptor((rows, m), (1,), True,
                                                                      1e-5, dt))
                    args = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
                else:
                    plan = bc.LayerNormPlan.select(bc.LayerNormDescriptor(
                        (rows, m), (1,), True, True, 1e-5, dt))
                    args = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
                ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8,
                                 device="cuda")
                plan.run(args, ws)
                plan_err = (y.double() - ref).abs().max().item()
                cells = [f"plan {nbytes / triton.testing.do_bench_cudagraph(lambda: plan.run(args, ws), rep=100) / 1e6:5.0f} (err {plan_err:.3g})"]  # noqa: E501
                for cfg in configs:
                    r, s, warps = (int(v) for v in cfg.split("/"))
                    bb = None if rms else b
                    mm = None if rms else mean
                    y.fill_(float("nan"))
                    launch(x, y, w, bb, mm, rstd, rms, r, s, warps)
                    err = (y.double() - ref).abs().max().item()
                    first = y.clone()
                    launch(x, y, w, bb, mm, rstd, rms, r, s, warps)
                    same = torch.equal(first, y)
                    ms = triton.testing.do_bench_cudagraph(
                        lambda: launch(x, y, w, bb, mm, rstd, rms, r, s, warps), rep=100)
                    cells.append(f"{cfg} {nbytes / ms / 1e6:5.0f} (err {err:.3g}"
                                 f"{'' if same else ' BITS DIFFER'})")
                name = "rms" if rms else "layer"
                print(f"{name:5} {str(dt)[6:]:8} [{rows}, {m}]: " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["16/27/8", "32/13/8", "16/27/16", "8/54/8"])
