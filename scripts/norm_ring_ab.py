# ruff: noqa: B023  (lambdas are timed at once)
"""The norms' ring forward (kernels_smem.row_norm_fwd_ring_kernel: row groups walked by chunk
programs that keep gamma / beta in registers) against the plan's forward, kernel only (CUDA
graph), three interleaved rounds, x + y GB/s; each ring config first checked against the
float64 reference and for the same bits on its no-wait path.

    python3 scripts/norm_ring_ab.py [bfloat16|float32 ...]

RING_CONFIGS="R/NS/AHEAD/warps/PER_SM/maxnreg,..." (maxnreg 0: none), RING_SHAPES="1024x65536".
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

import baracuda as bc
from baracuda.families.normalization import plans_smem as NS

CONFIGS = [tuple(int(v) for v in c.split("/")) for c in os.environ.get(
    "RING_CONFIGS", "2/4/2/1/16/128,2/6/3/1/16/128,4/4/2/2/8/0,8/4/2/4/4/0,8/3/1/4/6/0,"
    "4/6/2/1/12/128").split(",")]
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get(
    "RING_SHAPES", "1024x65536,256x262144,4096x32768").split(",")]


def _cfg(r, ns, ahead, warps, per_sm, maxnreg):
    return {"R": r, "NS": ns, "AHEAD": ahead, "num_warps": warps, "PER_SM": per_sm,
            "maxnreg": maxnreg or None}


def _reference(x, w, b, rms):
    xd = x.double()
    if rms:
        y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-5)
        return y * w.double()
    return torch.nn.functional.layer_norm(xd, x.shape[-1:], w.double(), b.double(), 1e-5)


def main(dtypes) -> None:
    for dtype in dtypes:
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda", dtype=dtype) * 2 + 0.5
            w = torch.rand(shape[1], device="cuda", dtype=dtype) + 0.5
            b = torch.randn(shape[1], device="cuda", dtype=dtype)
            nbytes = 2 * x.numel() * x.element_size()
            for rms in (False, True):
                name = "rms" if rms else "layer"
                y = torch.empty_like(x)
                rstd = torch.empty(shape[0], 1, device="cuda")
                mean = torch.empty(shape[0], 1, device="cuda")
                if rms:
                    d = bc.RMSNormDescriptor(shape, (1,), True, 1e-5, dtype)
                    a = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
                    plan = bc.RMSNormPlan.select(d)
                else:
                    d = bc.LayerNormDescriptor(shape, (1,), True, True, 1e-5, dtype)
                    a = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
                    plan = bc.LayerNormPlan.select(d)
                ref = _reference(x, w, b, rms)
                ws = torch.empty(max(plan.workspace_size(), 64 << 20), dtype=torch.uint8,
                                 device="cuda")
                variants = {f"plan {plan.sku}": lambda: plan.run(a, ws)}
                for c in CONFIGS:
                    cfg = _cfg(*c)
                    try:
                        NS.launch_ring(d, a, ws, rms, cfg=cfg)
                        torch.cuda.synchronize()
                        err = (y.double() - ref).abs().max().item()
                        bits = y.clone()
                        NS.launch_ring(d, a, ws, rms, spin=0, cfg=cfg)
                        same = torch.equal(bits, y)
                        print(f"  {name} {shape} {str(dtype)[6:]} ring {c}: max err {err:.3g},"
                              f" no-wait bits equal {same}", flush=True)
                        variants[f"ring {'/'.join(map(str, c))}"] = \
                            lambda cfg=cfg: NS.launch_ring(d, a, ws, rms, cfg=cfg)
                    except Exception as exc:  # noqa: BLE001 - a config that fails is a result
                        print(f"  ring {c}: {type(exc).__name__}: {str(exc)[:300]}")
                plan.run(a, ws)
                torch.cuda.synchronize()
                print(f"  plan max err {(y.double() - ref).abs().max().item():.3g}")
                rates = {k: [] for k in variants}
                for rnd in range(3):
                    order = list(variants) if rnd % 2 == 0 else list(reversed(variants))
                    for k in order:
                        ms = triton.testing.do_bench_cudagraph(variants[k], rep=60)
                        rates[k].append(nbytes / ms / 1e6)
                print(f"{name} {shape} {str(dtype)[6:]}: " + "  ".join(
                    f"{k} {sorted(v)[1]:.0f}" for k, v in rates.items()), flush=True)


if __name__ == "__main__":
    main([getattr(torch, n) for n in (sys.argv[1:] or ["bfloat16"])])
