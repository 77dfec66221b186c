# ruff: noqa: B023  (lambdas are timed at once)
"""GPU tile sweep for the row-norm kernels (not part of the package API).

    python -m baracuda.families.normalization.tune [budget] [fwd|bwd|both] [dtypes] [i,j]
        [layer] [plain]

For each bench shape and [16384, 2048] (or those at indices i,j; rms_norm with weight, or
layer_norm with weight and bias; dtypes e.g. "bfloat16,float32", default bf16)
prints GB/s per config, kernel launches only (the plan's `run`, best of triton's do_bench):
forward x + y, backward dy + x + dx (+ the tiny dgamma stage). The tables in layout.py are
set from these measurements.
"""

from __future__ import annotations

import os
import sys
import time

import torch
import triton.testing

from baracuda.backends.triton_support import sm_count
from baracuda.core.plan import _select_cached
from baracuda.families.normalization import layout as L
from baracuda.families.normalization import plans as P
from baracuda.families.normalization.descriptors import (
    LayerNormArgs,
    LayerNormBackwardArgs,
    LayerNormBackwardDescriptor,
    LayerNormDescriptor,
    RMSNormArgs,
    RMSNormBackwardArgs,
    RMSNormBackwardDescriptor,
    RMSNormDescriptor,
)
from baracuda.families.normalization.plans import (
    LayerNormBackwardPlan,
    LayerNormPlan,
    RMSNormBackwardPlan,
    RMSNormPlan,
)

SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536), (16384, 2048),
          (8192, 8192)]
PLAIN_ONLY = "plain" in sys.argv[5:]  # only plain grids (one row group per program)
#: rows per tile to try (TUNE_BLOCK_R="2,4" narrows a sweep)
BLOCK_RS = tuple(int(r) for r in os.environ.get("TUNE_BLOCK_R", "1,2,4,8,16").split(","))
#: rows per program of the long-row forward loop to try
LOOP_RS = tuple(int(r) for r in os.environ.get("TUNE_LOOP_R", "1,2,4").split(","))
#: chunk columns and warps of the exchange backward to try; TUNE_EXCHANGE_ONLY=1 skips the
#: register tiles and the column split
EXCHANGE_BWD_TILES = tuple(tuple(int(v) for v in t.split("x")) for t in os.environ.get(
    "TUNE_EXCHANGE_TILES", "1024x4,2048x4").split(","))
#: (programs per SM, rows published ahead, register cap); TUNE_EXCHANGE_VARIANTS="4:1:0,5:1:96"
#: (cap 0: none) narrows or widens a sweep
EXCHANGE_BWD_VARIANTS = [
    (int(p), int(a), int(r) or None) for p, a, r in (
        v.split(":") for v in os.environ.get("TUNE_EXCHANGE_VARIANTS", ",".join(
            f"{p}:{a}:{r}" for p in (4, 8) for a in (1, 2) for r in (0, 128))).split(","))]
EXCHANGE_ONLY = os.environ.get("TUNE_EXCHANGE_ONLY") == "1"
T0 = time.time()


def _use(kind: str, cfg: dict | None) -> None:
    """Route fwd_config / bwd_config to `cfg` (None: the library's table)."""
    base = {"fwd": L.fwd_config, "bwd": L.bwd_config}[kind]
    fn = base if cfg is None else (lambda m, rows, element, layer=False: dict(cfg))
    setattr(P, f"{kind}_config", fn)
    for c in (P._fwd_recipe, P._fwd_exchange_recipe, P._bwd_recipe, P._bwd_exchange_recipe,
              P._bwd_partials,
              P._colsplit_recipe, _select_cached):
        c.cache_clear()  # plans keep the workspace size of the table they were selected with


def _configs(kind: str, m: int, rows: int) -> list[dict]:
    """Candidate tiles; per_sm 0 is a plain grid (one row group per program, no prefetch)."""
    sms = sm_count()
    out = []
    if m <= 16384 and not (kind == "bwd" and EXCHANGE_ONLY):
        for block_r in BLOCK_RS:
            if block_r * m > 16384 or (m > 4096 and block_r > 1):
                continue
            for warps in (2, 4, 8, 16, 32):
                per_thread = block_r * m // (32 * warps)
                if not 8 <= per_thread <= 64 or (kind == "fwd" and per_thread > 32):
                    continue
                for per_sm in (0,) if PLAIN_ONLY else (0, 1, 2, 4, 8):
                    for pipe in (False, True) if per_sm else (False,):
                        g = per_sm * sms if per_sm else -(-rows // block_r)
                        out.append(dict(BLOCK_R=block_r, BLOCK_N=m, SINGLE=True,
                                        num_warps=warps, PIPE=pipe, G=g))
    if kind == "fwd":
        # several rows per program share each gamma / beta block load of the second pass
        loops = [(r, n // r, w) for r in LOOP_RS for n in (8192, 16384) for w in (16, 32)
                 if r > 1 or n == 8192] + [(1, 4096, 16), (1, 4096, 32)]
        for block_r, block_n, warps in loops:
            for per_sm in (1, 2, 4, 8):  # 8 per SM: about one program per row at 1024 rows
                out.append(dict(BLOCK_R=block_r, BLOCK_N=block_n, SINGLE=False,
                                num_warps=warps, PIPE=False, G=per_sm * sms, **L.LOOP_HINTS))
        for block_n, warps in ((4096, 4), (4096, 8), (8192, 4), (8192, 8), (16384, 16)):
            n_chunks = -(-m // block_n)  # the chunk exchange (kernels_exchange.py)
            out.append(dict(EXCHANGE=True, BLOCK_N=block_n, num_warps=warps,
                            PARTS=L.next_pow2(n_chunks), N_CHUNKS=n_chunks, G=rows * n_chunks,
                            SPIN=L.SPIN_LIMIT))
        return out
    for block_n, warps in EXCHANGE_BWD_TILES:  # chunk exchange (kernels_exchange.py)
        n_chunks = -(-m // block_n)
        if n_chunks < 2 or n_chunks > L.BWD_EXCHANGE_MAX_CHUNKS:
            continue
        for per_sm, ahead, maxnreg in EXCHANGE_BWD_VARIANTS:
            out.append(dict(SINGLE=False, EXCHANGE=True, BLOCK_N=block_n,
                            num_warps=warps, N_CHUNKS=n_chunks, PARTS=L.next_pow2(n_chunks),
                            G=max(1, min(rows, per_sm * sms // n_chunks)), AHEAD=ahead,
                            SPIN=L.SPIN_LIMIT, maxnreg=maxnreg))
    if EXCHANGE_ONLY:
        return out
    for warps in (4, 8, 16):  # the column split: row-statistics warps, row chunks
        for chunks in (sms // 8, sms // 4, sms // 2, sms):
            out.append(dict(SINGLE=False, BLOCK_N=4096, num_warps=warps, BLOCK_C=1024,
                            G=max(1, chunks)))
    return out


def _problem(kind: str, shape, dtype, layer: bool = False):
    x = torch.randn(shape, device="cuda", dtype=dtype)
    w = torch.randn(shape[-1:], device="cuda", dtype=dtype)
    rstd = torch.rand(shape[0], 1, device="cuda") + 0.5
    if layer:
        mean = torch.randn(shape[0], 1, device="cuda")
        if kind == "fwd":
            desc = LayerNormDescriptor(tuple(shape), (1,), True, True, 1e-5, dtype)
            args = LayerNormArgs(x=x, y=torch.empty_like(x), mean=mean, rstd=rstd, gamma=w,
                                 beta=torch.randn_like(w))
            return LayerNormPlan, desc, args, 2 * x.numel() * x.element_size()
        desc = LayerNormBackwardDescriptor(tuple(shape), (1,), True, True, dtype)
        args = LayerNormBackwardArgs(dy=torch.randn_like(x), x=x, mean=mean, rstd=rstd,
                                     dx=torch.empty_like(x), gamma=w, dgamma=torch.empty_like(w),
                                     dbeta=torch.empty_like(w))
        return LayerNormBackwardPlan, desc, args, 3 * x.numel() * x.element_size()
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


def sweep(kind: str, budget: float, dtype: torch.dtype, shapes=SHAPES, layer=False) -> None:
    for shape in shapes:
        plan_cls, desc, args, nbytes = _problem(kind, shape, dtype, layer)
        _use(kind, None)
        _time(plan_cls, desc, args)  # clocks up, compiled
        base = nbytes / _time(plan_cls, desc, args) / 1e6
        op = "layer_norm" if layer else "rms_norm"
        table = P.fwd_config(shape[1], shape[0], desc.element, layer) if kind == "fwd" else {}
        print(f"{op} {kind} {list(shape)} {dtype}: current table {base:.0f} GB/s {table}",
              flush=True)
        results = []
        for cfg in _configs(kind, shape[1], shape[0]):
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
        print(f"{op} {kind} {list(shape)} {dtype}: best:")
        for gbs, cfg in results[:5]:
            short = {k: v for k, v in cfg.items() if k not in L.LOOP_HINTS}
            print(f"   {gbs:7.0f}  {short}")


if __name__ == "__main__":
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    which = sys.argv[2] if len(sys.argv) > 2 else "both"
    dtypes = [getattr(torch, d) for d in (sys.argv[3] if len(sys.argv) > 3
                                          else "bfloat16").split(",")]
    picked = (SHAPES if len(sys.argv) <= 4 else
              [SHAPES[int(i)] for i in sys.argv[4].split(",")])
    layer = "layer" in sys.argv[5:]
    for dtype in dtypes:
        for k in ("fwd", "bwd"):
            if which in (k, "both"):
                sweep(k, budget, dtype, picked, layer)
