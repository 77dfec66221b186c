# ruff: noqa: B023  (lambdas are timed at once)
"""ReductionPlan's tile and split knobs (plans.TILE_ELEMS, TILE_WARPS, WARPS_PER_SM) on the
issue's shapes: kernel-only GB/s of input read (CUDA graph replay) per config
"elems/max_warps/warps_per_sm[/max_split]", next to torch.sum / torch.amax, after a check
against torch.

    python lab/scripts/reduction_sweep.py

SWEEP_CONFIGS="4096/8/2,8192/8/4" and SWEEP_CASES="full,rows" narrow it.
"""

from __future__ import annotations

import os

import torch
import triton.testing

from baracuda.core import plan as core_plan
from baracuda.core.vocab import ElementKind
from baracuda.families.reduction import plans as RP
from baracuda.families.reduction.descriptors import (
    ReductionArgs,
    ReductionDescriptor,
    ReductionKind,
)

CONFIGS = [tuple(int(v) for v in c.split("/")) for c in (os.environ.get("SWEEP_CONFIGS") or (
    "4096/8/32,4096/8/64,8192/8/32,4096/4/32,2048/4/32"
)).split(",")]
CASES = {
    "full": ((1 << 28,), (0,)),
    "rows": ((16384, 4096), (1,)),
    "long_rows": ((256, 262144), (1,)),
    "columns": ((16384, 4096), (0,)),
    "wide_columns": ((256, 262144), (0,)),
}
CHOSEN = (os.environ.get("SWEEP_CASES") or ",".join(CASES)).split(",")


def _plan(kind: ReductionKind, x: torch.Tensor, axes):
    core_plan._select_cached.cache_clear()
    el = ElementKind.of(x.dtype)
    desc = ReductionDescriptor(kind, tuple(x.shape), axes, False, el, el)
    plan = RP.ReductionPlan.select(desc)
    y = torch.empty(desc.output_shape, dtype=x.dtype, device=x.device)
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device=x.device)
    return lambda: plan.run(ReductionArgs(x=x, y=y), ws), y


def main() -> None:
    print(f"{'case':13} {'dtype':9} {'kind':5} {'config':14} {'GB/s':>8}  torch")
    for name in CHOSEN:
        shape, axes = CASES[name]
        for dtype in (torch.bfloat16, torch.float32):
            if name != "full" and dtype == torch.float32:
                continue
            x = torch.randn(shape, device="cuda", dtype=dtype)
            nbytes = x.numel() * x.element_size()
            for kind, ref in ((ReductionKind.SUM, torch.sum), (ReductionKind.AMAX, torch.amax)):
                want = ref(x.float(), axes[0]) if len(shape) > 1 else ref(x.float())
                t_ms = triton.testing.do_bench_cudagraph(
                    lambda: ref(x, axes[0]) if len(shape) > 1 else ref(x), rep=100)
                for elems, warps, per_sm, *cap in CONFIGS:
                    RP.TILE_ELEMS, RP.TILE_WARPS, RP.WARPS_PER_SM = elems, warps, per_sm
                    RP.MAX_SPLIT = cap[0] if cap else 1024
                    fn, y = _plan(kind, x, axes)
                    fn()
                    torch.cuda.synchronize()
                    err = float((y.float() - want).abs().max() / want.abs().max().clamp(min=1))
                    ms = triton.testing.do_bench_cudagraph(fn, rep=100)
                    flag = "" if err < 2e-2 else f" WRONG {err:.3g}"
                    print(f"{name:13} {str(dtype)[6:]:9} {kind.value:5} "
                          f"{elems}/{warps}/{per_sm}/{RP.MAX_SPLIT:<6} {nbytes / ms / 1e6:8.1f}  "
                          f"{nbytes / t_ms / 1e6:8.1f}{flag}", flush=True)


if __name__ == "__main__":
    main()
