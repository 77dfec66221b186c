"""Host microseconds of each layer of one eager softmax call on a tiny CUDA tensor: the torch
frontend, run_plan, the candidate's launch, Triton's launch, the compiled launcher alone.

Usage (GPU machine): python3 lab/scripts/launch_cost.py
"""

from __future__ import annotations

import torch

import baracuda.torch as bt
from baracuda.backends.torch_ops import run_plan
from baracuda.families.softmax import kernels as sk
from baracuda.families.softmax.descriptors import SoftmaxArgs, SoftmaxDescriptor, SoftmaxKind
from baracuda.families.softmax.plans import SoftmaxPlan
from baracuda.tools.bench import host_seconds_per_call


def us(fn, n=5000) -> float:
    return host_seconds_per_call(fn, n, warmup=100) * 1e6


def main() -> None:
    from triton import knobs

    x = torch.randn(8, 64, device="cuda")
    y = torch.empty_like(x)
    desc = SoftmaxDescriptor.cached(SoftmaxKind.SOFTMAX, (8, 64), 1, x.dtype)
    args = SoftmaxArgs(x=x, y=y)
    plan = SoftmaxPlan.select(desc)
    rows = {
        "bt.softmax (no grad)": lambda: bt.softmax(x, -1),
        "torch.softmax": lambda: torch.softmax(x, -1),
        "torch.empty_like": lambda: torch.empty_like(x),
        "SoftmaxDescriptor.cached": lambda: SoftmaxDescriptor.cached(
            SoftmaxKind.SOFTMAX, (8, 64), 1, x.dtype),
        "SoftmaxArgs(...)": lambda: SoftmaxArgs(x=x, y=y),
        "run_plan": lambda: run_plan(SoftmaxPlan, desc, args),
        "plan.run_trusted": lambda: plan.run_trusted(args, None),
        "candidate.launch": lambda: plan.candidate.launch(desc, args, None),
    }
    for name, fn in rows.items():
        print(f"{name:<28}{us(fn):8.1f} us")
    print("launch_enter_hook set:", knobs.runtime.launch_enter_hook is not None)
    for name in dir(sk):
        table = getattr(getattr(sk, name), "__dict__", {}).get("_baracuda_launch_table")
        if table:
            print(f"kernel {name}: {len(table)} launch-table entries")


if __name__ == "__main__":
    main()
