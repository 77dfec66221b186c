"""Bit-stability probe of the shared-memory ring backward (normalization/kernels_smem.py):
reruns of each config against the first run and against the no-wait path (spin=0); prints
how many dx / dgamma elements differ and in which rows.

    python lab/scripts/norm_bwd_bits.py
"""

from __future__ import annotations

import torch

import baracuda as bc
from baracuda.families.normalization import plans_smem as NS

CONFIGS = ({"R": 8, "NS": 4, "AHEAD": 1, "num_warps": 4, "PER_SM": 3, "maxnreg": None},
           {"R": 8, "NS": 4, "AHEAD": 2, "num_warps": 4, "PER_SM": 4, "maxnreg": 128})


def main() -> None:
    for shape in ((37, 20224), (1024, 65536), (300, 24576)):
        g = torch.Generator(device="cuda").manual_seed(5)
        x = (torch.randn(shape, device="cuda", generator=g) * 2 + 1).to(torch.bfloat16)
        dy = torch.randn(shape, device="cuda", generator=g).to(torch.bfloat16)
        w = (torch.rand(shape[1], device="cuda", generator=g) + 0.5).to(torch.bfloat16)
        rstd = torch.rand(shape[0], 1, device="cuda", generator=g) + 0.5
        d = bc.RMSNormBackwardDescriptor(shape, (1,), True, torch.bfloat16)
        ws = torch.empty(1 << 26, dtype=torch.uint8, device="cuda")
        for cfg in CONFIGS:
            outs = []
            for spin in (None, None, None, 0, 0):
                dx, dg = torch.empty_like(x), torch.empty_like(w)
                a = bc.RMSNormBackwardArgs(dy=dy, x=x, rstd=rstd, dx=dx, gamma=w, dgamma=dg)
                if spin is None:
                    NS.launch_smem_backward(d, a, ws, True, cfg=cfg)
                else:
                    NS.launch_smem_backward(d, a, ws, True, spin=spin, cfg=cfg)
                torch.cuda.synchronize()
                outs.append((dx, dg))
            cells = []
            for k, (dx, dg) in enumerate(outs[1:], 1):
                bad = (dx.view(torch.int16) != outs[0][0].view(torch.int16))
                rows = bad.any(1).nonzero().flatten().tolist()
                gbad = int((dg.view(torch.int16) != outs[0][1].view(torch.int16)).sum())
                cells.append(f"run{k}: dx {int(bad.sum())} in rows {rows[:6]} dg {gbad}")
            nan = int(torch.isnan(outs[0][0]).sum())
            print(shape, f"A{cfg['AHEAD']} P{cfg['PER_SM']} r{cfg['maxnreg']} nan {nan}:",
                  " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
