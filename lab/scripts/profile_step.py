"""Kernel table (torch.profiler) of one bench row's `ours` and `torch_eager` steps, to see
where a GPU-bound row's time goes. Usage (GPU machine):
    python3 lab/scripts/profile_step.py FAMILY "BENCH NAME" [SHAPE-SUBSTRING]
"""

from __future__ import annotations

import sys

import torch
from torch.profiler import ProfilerActivity, profile

import baracuda  # noqa: F401 - registers families
from baracuda.core import registry


def main() -> None:
    family, name = sys.argv[1], sys.argv[2]
    shape = sys.argv[3] if len(sys.argv) > 3 else ""
    cases = [c for c in registry.benches(family)[family](True)
             if c.name == name and shape in c.shape]
    case = cases[0]
    inputs = case.setup(torch.device("cuda"))
    for side in ("ours", "torch_eager"):
        fn = getattr(case, side)
        for _ in range(5):
            fn(**inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                fn(**inputs)
            torch.cuda.synchronize()
        print(f"==== {side}: {case.name} {case.shape} (10 steps)")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10,
                                        max_name_column_width=60))


if __name__ == "__main__":
    main()
