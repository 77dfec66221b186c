# ruff: noqa: B023  (lambdas are timed at once)
"""GPU tile sweep for the row-norm kernels (not part of the package API).

    python -m baracuda.families.normalization.tune [budget_s] [fwd|bwd|both] [dtypes] [n_shapes]

For each bench shape (rms_norm with weight; dtypes e.g. "bfloat16,float32", default bf16)
prints GB/s per config, kernel launches only (the plan's `run`, best of triton's do_bench):
forward x + y, backward dy + x + dx (+ the tiny dgamma stage). The tables in layout.py are
set from these measurements.
"""

from __future__ import annotations

import sys
import time

import torch
import triton.testing

from ...backends.triton_support import sm_count
from . import layout as L
from . import plans as P
from .descriptors import (
    RMSNormArgs,
    RMSNormBackwardArgs,
    RMSNormBackwardDescriptor,
    RMSNormDescriptor,
)
from .plans import RMSNormBackwardPlan, RMSNormPlan

SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536)]
T0 = time.time()


def _use(kind: str, cfg: dict | None) -> None:
    """Route fwd_config / bwd_config to `cfg` (None: the library's table)."""
    base = {"fwd": L.fwd_config, "bwd": L.bwd_config}[kind]
    fn = base if cfg is None else (lambda m, rows, element, layer=False: dict(cfg))
    setattr(P, f"{kind}_config", fn)
    for c in (P._fwd_recipe, P._bwd_recipe, P._bwd_partials):
        c.cache_clear()


def _configs(kind: str, m: int) -> list[dict]:
    sms = sm_count()
    out = []
    if m <= 16384:
        for block_r in (1, 2, 4, 8, 16):
            if block_r * m > 16384 or (m > 4096 and block_r > 1):
                continue
            for warps in (2, 4, 8, 16, 32):
                per_thread = block_r * m // (32 * warps)
                if not 8 <= per_thread <= 64 or (kind == "fwd" and per_thread > 32):
                    continue
                for per_sm in (1, 2, 4):
                    for pipe in (False, True):
                        out.append(dict(BLOCK_R=block_r, BLOCK_N=m, SINGLE=True,
                                        num_warps=warps, PIPE=pipe, G=per_sm * sms))
    for block_n, warps in ((4096, 16), (4096, 32), (8192, 16), (8192, 32)):
        for per_sm in (1, 2):
            out.append(dict(BLOCK_R=1, BLOCK_N=block_n, SINGLE=False, num_warps=warps,
                            PIPE=False, G=per_sm * sms, **L.LOOP_HINTS))
    return out


def _problem(kind: str, shape, dtype):
    x = torch.randn(shape, device="cuda", dtype=dtype)
    w = torch.randn(shape[-1:], device="cuda", dtype=dtype)
    rstd = torch.rand(shape[0], 1, device="cuda") + 0.5
    if kind == "fwd":
        desc = RMSNormDescriptor(tuple(shape), (1,), True, 1e-6, dtype)
        args = RMSNormArgs(x=x, y=torch.empty_like(x), rstd=rstd, gamma=w)
        return RMSNormPlan, desc, args, 2 * x.numel() * x.element_size()
    desc = RMSNormBackwardDescriptor(tuple(shape), (1,), True, dtype)
    args = RMSNormBackwardArgs(dy=torch.randn_like(x), x=x, rstd=rstd, dx=torch.empty_like(x),
                               gamma=w, dgamma=torch.empty_like(w))
    return RMSNormBackwardPlan, desc, args, 3 * x.numel() * x.element_size()


def _time(plan_cls, desc, args, calls: int = 20) -> float:
    """ms per call of the kernels alone: `calls` launches captured in a CUDA graph (the
    plan's host-side checks cost more than a 50 us kernel and would be what is timed)."""
    plan = plan_cls.select(desc)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    plan.run(args, ws)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        plan.run(args, ws)  # warm on the side stream
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                plan.candidate.launch_with(plan.desc, args, ws, plan.preference)
    torch.cuda.synchronize()
    return triton.testing.do_bench(graph.replay, warmup=3, rep=40) / calls


def sweep(kind: str, budget: float, dtype: torch.dtype, shapes=SHAPES) -> None:
    for shape in shapes:
        plan_cls, desc, args, nbytes = _problem(kind, shape, dtype)
        _use(kind, None)
        _time(plan_cls, desc, args)  # clocks up, compiled
        base = nbytes / _time(plan_cls, desc, args) / 1e6
        results = []
        for cfg in _configs(kind, shape[1]):
            if time.time() - T0 > budget:
                print("budget exhausted")
                return
            _use(kind, cfg)
            try:
                results.append((nbytes / _time(plan_cls, desc, args) / 1e6, cfg))
            except Exception as e:  # noqa: BLE001 - a config that does not compile
                print("  fails:", cfg, type(e).__name__)
        _use(kind, None)
        results.sort(key=lambda r: -r[0])
        print(f"{kind} {list(shape)} {dtype}: current table {base:.0f} GB/s; best:")
        for gbs, cfg in results[:5]:
            short = {k: v for k, v in cfg.items() if k not in L.LOOP_HINTS}
            print(f"   {gbs:7.0f}  {short}")


if __name__ == "__main__":
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    which = sys.argv[2] if len(sys.argv) > 2 else "both"
    dtypes = [getattr(torch, d) for d in (sys.argv[3] if len(sys.argv) > 3
                                          else "bfloat16").split(",")]
    n_shapes = int(sys.argv[4]) if len(sys.argv) > 4 else len(SHAPES)
    for dtype in dtypes:
        for k in ("fwd", "bwd"):
            if which in (k, "both"):
                sweep(k, budget, dtype, SHAPES[:n_shapes])
