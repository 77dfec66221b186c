# ruff: noqa: B023  (lambdas are timed at once)
"""The forward through the shared-memory ring (normalization/kernels_smem.py
row_norm_ring_kernel with FORWARD) against the forward it would replace (one program per
chunk, `launch_smem`): kernel-only x + y GB/s (CUDA graph replay, back to back) per config
"R/NS/AHEAD/warps/per_sm/maxnreg" (0: no cap), with the registers it compiled to, after a
check that the ring's y, mean and rstd agree with the replaced launch.

    python scripts/norm_ring_sweep.py

SWEEP_SHAPES="1024x65536", SWEEP_CONFIGS="2/4/2/1/16/128" and SWEEP_DTYPE=float32 narrow or
widen it.
"""

from __future__ import annotations

import os

import torch
import triton.testing

import baracuda as bc
from baracuda.families.normalization import plans_smem as NS

CONFIGS = [tuple(int(v) for v in c.split("/")) for c in (os.environ.get("SWEEP_CONFIGS") or (
    "2/4/2/1/16/128,2/6/3/1/16/128,2/8/4/1/16/0,4/4/2/2/8/0,4/6/3/2/8/0,8/4/2/4/4/0,"
    "1/8/4/1/32/64")).split(",")]
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get(
    "SWEEP_SHAPES", "1024x65536,4096x16384,256x262144").split(",")]
DTYPE = getattr(torch, os.environ.get("SWEEP_DTYPE", "bfloat16"))


def _rate(nbytes, fn) -> float:
    return nbytes / triton.testing.do_bench_cudagraph(fn, rep=100) / 1e6


def main() -> None:
    for shape in SHAPES:
        x = (torch.randn(shape, device="cuda") * 2 + 1).to(DTYPE)
        w = (torch.rand(shape[1], device="cuda") + 0.5).to(DTYPE)
        b = torch.randn(shape[1], device="cuda").to(DTYPE)
        ws = torch.empty(1 << 26, dtype=torch.uint8, device="cuda")
        nbytes = 2 * x.numel() * x.element_size()
        for layer in (False, True):
            y = torch.empty_like(x)
            mean, rstd = (torch.empty(shape[0], 1, device="cuda") for _ in range(2))
            if layer:
                d = bc.LayerNormDescriptor(shape, (1,), True, True, 1e-5, DTYPE)
                a = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
            else:
                d = bc.RMSNormDescriptor(shape, (1,), True, 1e-5, DTYPE)
                a = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
            NS.launch_smem(d, a, ws, not layer)
            want = [t.float().clone() for t in (y, mean, rstd)]
            y.fill_(float("nan"))
            NS.launch_smem_backward(d, a, ws, not layer)
            errs = [float((t.float() - u).abs().max() / u.abs().max())
                    for t, u in zip((y, mean, rstd), want)]
            if not layer:
                errs = errs[::2]
            old = _rate(nbytes, lambda: NS.launch_smem(d, a, ws, not layer))
            cells = [f"{'layer' if layer else 'rms':5} {shape} {DTYPE} rel.err "
                     + "/".join(f"{e:.1e}" for e in errs), f"chunks {old:5.0f}"]
            for r, ns, ahead, warps, per_sm, maxnreg in CONFIGS:
                cfg = {"R": r, "NS": ns, "AHEAD": ahead, "num_warps": warps, "PER_SM": per_sm,
                       "maxnreg": maxnreg or None}
                name = f"{r}/{ns}/{ahead}/{warps}/{per_sm}/{maxnreg}"
                try:
                    k = NS.launch_smem_backward(d, a, ws, not layer, cfg=cfg)
                    rate = _rate(nbytes, lambda: NS.launch_smem_backward(d, a, ws, not layer,
                                                                         cfg=cfg))
                    cells.append(f"{name} {rate:5.0f} ({k.n_regs}r {k.n_spills}s)")
                except Exception as exc:  # noqa: BLE001
                    cells.append(f"{name} ERR {str(exc)[:80]}")
            print("  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
