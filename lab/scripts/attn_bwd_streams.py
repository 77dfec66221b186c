# ruff: noqa: B023  (the closures are timed at once)
"""Experiment: the Triton two-kernel backward's dK/dV and dQ kernels (independent once delta
is written) run one after the other against side by side on two streams, plan level, bf16
B=4 H=16 S=4096 D=128 and B=8 H=16 S=2048 D=64, causal and not; ms per backward.

    python lab/scripts/attn_bwd_streams.py
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


def _ms(fn, reps=20) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def main() -> None:
    dev = torch.device("cuda")
    side = torch.cuda.Stream()
    for b, h, s, dh in ((4, 16, 4096, 128), (8, 16, 2048, 64)):
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
            grads = [torch.empty_like(x) for x in (q, k, v)]
            ws = torch.empty(b * h * s * 4, dtype=torch.uint8, device=dev)
            launches = P.backward_launches(db, SdpaBackwardArgs(q, k, v, o, do, lse, *grads), ws,
                                           False)
            delta, dkdv, dq = launches

            def serial():
                for launch in launches:
                    launch()

            def overlapped():
                delta()
                side.wait_stream(torch.cuda.current_stream())
                dkdv()
                with torch.cuda.stream(side):
                    dq()
                torch.cuda.current_stream().wait_stream(side)

            fl = 2.5 * 4 * b * h * s * s * dh / (2 if causal else 1)
            cells = []
            for name, fn in (("serial", serial), ("two streams", overlapped), ("dkdv", dkdv),
                             ("dq", dq), ("serial", serial)):
                ms = _ms(fn)
                cells.append(f"{name} {ms:.3f} ms ({fl / ms / 1e9:.0f} TFLOP/s)")
            print(f"B={b} H={h} S={s} D={dh} causal={causal}: " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    main()
