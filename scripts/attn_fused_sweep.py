"""The fused deterministic backward's tiles against the other backward candidates, plan level,
one run (CUDA-event chains; bf16; B=4 H=16 S=4096 D=128 and B=8 H=16 S=2048 D=64, causal and
not). Each fused tile is also checked against the two-kernel backward and rerun for bits.

    python scripts/attn_fused_sweep.py [d128|d64|all] [seconds]
"""

from __future__ import annotations

import math
import sys
import time

import torch

from baracuda.core.vocab import ArchSku, PlanPreference
from baracuda.families.attention import plans as P
from baracuda.families.attention import plans_fused as F
from baracuda.families.attention.descriptors import (
    CausalKind,
    SdpaArgs,
    SdpaBackwardArgs,
    SdpaBackwardDescriptor,
    SdpaDescriptor,
)
from baracuda.tools.bench import CudaEventChain

TILES = {128: [(32, 64, 4, 2, 0), (32, 64, 4, 3, 0), (32, 64, 8, 2, 0), (32, 64, 8, 2, 1),
               (64, 64, 8, 2, 0), (64, 64, 8, 2, 1), (16, 64, 4, 2, 0), (32, 128, 8, 2, 0)],
         64: [(64, 64, 4, 2, 0), (32, 64, 4, 2, 0), (64, 64, 4, 3, 0), (64, 128, 8, 2, 0),
              (64, 64, 4, 2, 1)]}


def _ms(fn, reps=10):
    return sum(CudaEventChain(fn, reps).ms()) / reps


def main(which: str, budget: float) -> None:
    t_end = time.time() + budget
    dev, arch, pref = torch.device("cuda"), ArchSku.current(), PlanPreference()
    shapes = {"d128": [(4, 16, 4096, 128)], "d64": [(8, 16, 2048, 64)]}.get(
        which, [(4, 16, 4096, 128), (8, 16, 2048, 64)])
    for b, h, s, dh in shapes:
        for causal in (False, True):
            ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
            f = (b, h, h, s, s, dh, dh, 1 / math.sqrt(dh), torch.bfloat16, ck)
            d, db = SdpaDescriptor(*f), SdpaBackwardDescriptor(*f)
            q, k, v, do = (torch.randn(b, h, s, dh, device=dev, dtype=torch.bfloat16)
                           for _ in range(4))
            o = torch.empty_like(q)
            lse = torch.empty(b, h, s, device=dev)
            fp = P.SdpaPlan.select(d)
            fp.run(SdpaArgs(q, k, v, o, lse),
                   workspace=torch.empty(fp.workspace_size(), dtype=torch.uint8, device=dev))
            fl = 2.5 * 4 * b * h * s * s * dh / (2 if causal else 1)
            cands = {c.name: c for c in P.SdpaBackwardPlan.candidates}
            ref = None
            row = []
            for name in ("cudnn_bwd", "cudnn_bwd_deterministic", "triton_flash_bwd"):
                c = cands[name]
                if c.supports(db, pref, arch) is not None and name != "cudnn_bwd_deterministic":
                    continue
                try:
                    p = P.SdpaBackwardPlan(db, c, pref, arch)
                except Exception as exc:  # noqa: BLE001
                    print(name, "n/a", str(exc)[:80])
                    continue
                grads = [torch.empty_like(x) for x in (q, k, v)]
                a = SdpaBackwardArgs(q, k, v, o, do, lse, *grads)
                ws = torch.empty(p.workspace_size(), dtype=torch.uint8, device=dev)
                ms = _ms(lambda p=p, a=a, ws=ws: p.run(a, workspace=ws))
                row.append((name, ms))
                if name == "triton_flash_bwd":
                    ref = grads
            fused = cands["triton_flash_bwd_fused"]
            for tile in TILES[dh]:
                if time.time() > t_end:
                    print("budget spent", flush=True)
                    break
                P._FUSED[("half", max(64, dh))] = tile[:4]
                F.DQ_T = bool(tile[4])
                try:
                    p = P.SdpaBackwardPlan(db, fused, pref, arch)
                    grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
                    a = SdpaBackwardArgs(q, k, v, o, do, lse, *grads)
                    ws = torch.empty(p.workspace_size(), dtype=torch.uint8, device=dev)
                    p.run(a, workspace=ws)
                    first = [g.clone() for g in grads]
                    ms = _ms(lambda p=p, a=a, ws=ws: p.run(a, workspace=ws))
                    same = all(torch.equal(x, y) for x, y in zip(first, grads))
                    err = max(((x.float() - y.float()).abs().max() / y.float().abs().max()).item()
                              for x, y in zip(grads, ref)) if ref is not None else float("nan")
                    row.append((f"fused {tile} bits={'same' if same else 'DIFF'} "
                                f"vs2k={err:.1e}", ms))
                except Exception as exc:  # noqa: BLE001 - a failing tile is a result too
                    print(f"fused {tile} failed: {str(exc)[:160]}", flush=True)
            best = min(ms for n, ms in row if n.startswith("cudnn_bwd")) if any(
                n.startswith("cudnn_bwd") for n, _ in row) else float("nan")
            print(f"B={b} H={h} S={s} D={dh} causal={causal}", flush=True)
            for name, ms in row:
                print(f"  {name:62} {ms:7.3f} ms {fl / ms / 1e9:6.1f} TFLOP/s "
                      f"{best / ms:5.2f}x "
                      "of the fastest cuDNN", flush=True)
    from baracuda.families.attention.kernels_fused import sdpa_bwd_fused_kernel
    for caches in sdpa_bwd_fused_kernel.device_caches.values():
        for ck in caches[0].values():
            print(f"fused warps={ck.metadata.num_warps} stages={ck.metadata.num_stages} "
                  f"regs={ck.n_regs} spills={ck.n_spills} shared={ck.metadata.shared}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "all",
         float(sys.argv[2]) if len(sys.argv) > 2 else 400.0)
