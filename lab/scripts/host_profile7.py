"""cProfile of the host path of the host-cost bench's seven calls (forward under no_grad, and
forward+backward), on tiny CUDA tensors: where each microsecond goes.
Usage (GPU machine): python3 lab/scripts/host_profile7.py [N] [TOP] [op,op...]"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys

import torch

import baracuda.torch as bt
from baracuda.tools import host_cost as H

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
top = int(sys.argv[2]) if len(sys.argv) > 2 else 14
only = sys.argv[3].split(",") if len(sys.argv) > 3 else None
inputs = H._inputs(torch.device("cuda"), torch.bfloat16)
if only:
    inputs = {k: v for k, v in inputs.items() if k in only}
calls = H._calls(bt)
for op, args in inputs.items():
    for mode in ("fw", "fwbw"):
        def one(op=op, args=args, mode=mode):
            if mode == "fw":
                with torch.no_grad():
                    calls[op](*args)
            else:
                calls[op](*args).float().sum().backward()
        for _ in range(20):
            one()
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            one()
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        st = pstats.Stats(prof, stream=s).sort_stats("tottime")
        st.print_stats(top)
        total = st.total_tt / n * 1e6
        print(f"===== {op} {mode}: {total:.1f} us/call under cProfile")
        body = s.getvalue().split("\n")
        start = next(i for i, line in enumerate(body) if "ncalls" in line)
        print("\n".join(line[:150] for line in body[start:start + top + 1]))
