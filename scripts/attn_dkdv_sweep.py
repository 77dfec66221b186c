# ruff: noqa: B023  (the closures are timed at once)
"""The Triton dK/dV kernel's tiles in both score orientations (plans._DKDV_QMAJOR), kernel
only (CUDA-event chains), bf16 B=4 H=16 S=4096 D=128 and B=8 H=16 S=2048 D=64, causal and
not; each tile's dK, dV against the table tile's and rerun for bits.

    python scripts/attn_dkdv_sweep.py
"""

from __future__ import annotations

import math

import torch

from baracuda.families.attention import plans as P
from baracuda.families.attention.descriptors import (
    CausalKind,
    SdpaArgs,
    SdpaBackwardArgs,
    SdpaBackwardDescriptor,
    SdpaDescriptor,
)
from baracuda.tools.bench import CudaEventChain

# (BLOCK_M, BLOCK_N, warps, stages, QMAJOR)
TILES = {128: [(32, 64, 4, 3, 0), (64, 32, 4, 3, 1), (64, 32, 4, 2, 1), (64, 64, 4, 2, 1),
               (128, 64, 8, 2, 1), (128, 32, 8, 3, 1), (64, 64, 8, 2, 1), (128, 64, 8, 3, 1)],
         64: [(32, 64, 4, 3, 0), (64, 32, 4, 3, 1), (64, 64, 4, 3, 1), (64, 64, 4, 2, 1),
              (128, 64, 8, 2, 1), (128, 32, 8, 3, 1)]}


def main() -> None:
    dev = torch.device("cuda")
    for b, h, s, dh in ((4, 16, 4096, 128), (8, 16, 2048, 64)):
        key = ("half", max(64, dh))
        for causal in (False, True):
            ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
            f = (b, h, h, s, s, dh, dh, 1 / math.sqrt(dh), torch.bfloat16, ck)
            d, db = SdpaDescriptor(*f), SdpaBackwardDescriptor(*f)
            q, k, v, do = (torch.randn(b, h, s, dh, device=dev, dtype=torch.bfloat16)
                           for _ in range(4))
            o, lse = torch.empty_like(q), torch.empty(b, h, s, device=dev)
            fp = P.SdpaPlan.select(d)
            fp.run(SdpaArgs(q, k, v, o, lse),
                   workspace=torch.empty(fp.workspace_size(), dtype=torch.uint8, device=dev))
            ws = torch.empty(b * h * s * 4, dtype=torch.uint8, device=dev)
            fl = 4 * 2 * b * h * s * s * dh / (2 if causal else 1)  # the dK/dV kernel's 4 MMAs
            ref = None
            cells = []
            for tile in TILES[dh]:
                tables = (P._DKDV_MHA, P._DKDV) if key in P._DKDV_MHA else (P._DKDV,)
                saved = [t[key] for t in tables]
                for t in tables:
                    t[key] = tile[:4]
                (P._DKDV_QMAJOR.add if tile[4] else P._DKDV_QMAJOR.discard)(key)
                try:
                    grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
                    a = SdpaBackwardArgs(q, k, v, o, do, lse, *grads)
                    launches = P.backward_launches(db, a, ws, False)
                    for launch in launches:
                        launch()
                    first = [g.clone() for g in grads[1:]]
                    dkdv = launches[1]
                    ms = sum(CudaEventChain(dkdv, 10).ms()) / 10
                    same = all(torch.equal(x, y) for x, y in zip(first, grads[1:]))
                    if ref is None:
                        ref = first
                    err = max(((x.float() - y.float()).abs().max() / y.float().abs().max()).item()
                              for x, y in zip(first, ref))
                    cells.append(f"{tile} {ms:.3f} ms {fl / ms / 1e9:.0f} TF/s "
                                 f"bits={'same' if same else 'DIFF'} vs0={err:.1e}")
                except Exception as exc:  # noqa: BLE001 - a failing tile is a result too
                    cells.append(f"{tile} failed: {str(exc)[:100]}")
                finally:
                    for t, old in zip(tables, saved):
                        t[key] = old
                    P._DKDV_QMAJOR.discard(key)
            print(f"B={b} H={h} S={s} D={dh} causal={causal}", flush=True)
            for c in cells:
                print("  " + c, flush=True)
    from baracuda.families.attention.kernels import sdpa_bwd_dkdv_kernel
    for caches in sdpa_bwd_dkdv_kernel.device_caches.values():
        for ck in caches[0].values():
            print(f"dkdv warps={ck.metadata.num_warps} stages={ck.metadata.num_stages} "
                  f"regs={ck.n_regs} spills={ck.n_spills} shared={ck.metadata.shared}",
                  flush=True)


if __name__ == "__main__":
    main()
