# ruff: noqa: B023  (lambdas are timed at once)
"""The shared-memory ring backward of rms_norm / layer_norm (normalization/kernels_smem.py)
against the Triton backward it replaces: kernel-only GB/s (dy + x + dx bytes; CUDA graph
replay, back to back) per config "R/NS/AHEAD/warps/per_sm/maxnreg" (0: no cap), with the
registers it compiled to, after a check that the default config agrees with the Triton
launch.

    python lab/scripts/norm_bwd_sweep.py

SWEEP_SHAPES="1024x65536,4096x16384" and SWEEP_CONFIGS="8/4/1/4/4,8/6/2/4/4" narrow it.
"""

from __future__ import annotations

import os

import torch
import triton.testing

import baracuda as bc
from baracuda.families.normalization import plans as NP
from baracuda.families.normalization import plans_smem as NS

CONFIGS = [tuple(int(v) for v in c.split("/")) for c in (os.environ.get("SWEEP_CONFIGS") or (
    "8/4/1/4/4/128,8/4/1/4/3/0,8/4/2/4/4/128,8/6/2/4/4/128,8/4/1/4/5/96,4/4/1/4/6/96,"
    "4/6/2/4/6/96,8/3/1/8/3/80,16/3/1/8/2/128")).split(",")]
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get(
    "SWEEP_SHAPES", "1024x65536,4096x16384,256x262144").split(",")]


def _rate(nbytes, fn) -> float:
    return nbytes / triton.testing.do_bench_cudagraph(fn, rep=100) / 1e6


def main() -> None:
    for shape in SHAPES:
        dtype = torch.bfloat16
        x = (torch.randn(shape, device="cuda") * 2 + 1).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        w = (torch.rand(shape[1], device="cuda") + 0.5).to(dtype)
        rstd = torch.rand(shape[0], 1, device="cuda") + 0.5
        mean = torch.randn(shape[0], 1, device="cuda")
        ws = torch.empty(1 << 26, dtype=torch.uint8, device="cuda")
        nbytes = 3 * x.numel() * x.element_size()
        for layer in (False, True):
            if not layer and shape[1] <= NS.BWD_SINGLE_TILE[False]:
                continue
            dx, dg, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(w)
            if layer:
                d = bc.LayerNormBackwardDescriptor(shape, (1,), True, True, dtype)
                a = bc.LayerNormBackwardArgs(dy=dy, x=x, mean=mean, rstd=rstd, dx=dx, gamma=w,
                                             dgamma=dg, dbeta=db)
            else:
                d = bc.RMSNormBackwardDescriptor(shape, (1,), True, dtype)
                a = bc.RMSNormBackwardArgs(dy=dy, x=x, rstd=rstd, dx=dx, gamma=w, dgamma=dg)
            NP._launch_backward(d, a, ws, not layer)
            want = [t.float().clone() for t in (dx, dg, db)]
            NS.launch_smem_backward(d, a, ws, not layer)
            errs = [float((t.float() - u).abs().max() / u.abs().max())
                    for t, u in zip((dx, dg, db), want)][: 3 if layer else 2]
            triton_rate = _rate(nbytes, lambda: NP._launch_backward(d, a, ws, not layer))
            cells = [f"{'layer' if layer else 'rms':5} {shape} rel.err "
                     + "/".join(f"{e:.1e}" for e in errs), f"triton {triton_rate:5.0f}"]
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
