"""GPU tuning probe for the segment / indexing / embedding paths (not imported by the package).

Usage on the GPU machine: python3 -m baracuda.families.segment.probe
Prints, per bench shape: ms per call for each tile setting (median of rotating-input batches,
the bench harness's timer) and, per path, GPU kernel time per call from torch.profiler next to
wall time per call (GPU time < wall time means the call is host-bound), launches per call.
"""

from __future__ import annotations

import time

import torch

from ...tools.bench import time_fn
from . import plans as seg_plans
from . import sort as seg_sort


def _ms(fn, sets):
    return time_fn(fn, sets, 0.3)


def _sweep(label, module, attr, values, fn, sets):
    old = getattr(module, attr)
    for v in values:
        setattr(module, attr, v)
        try:
            print(f"  {label} {attr}={v}: {_ms(fn, sets):.3f} ms", flush=True)
        except Exception as exc:  # noqa: BLE001 - a failing tile is a result
            print(f"  {label} {attr}={v}: FAILED {type(exc).__name__}: {str(exc)[:120]}")
    setattr(module, attr, old)


def _profile(label, fn, sets, n=20):
    from torch.profiler import ProfilerActivity, profile
    for s in sets[:2]:
        fn(**s)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        fn(**sets[i % len(sets)])
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n * 1e3
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(n):
            fn(**sets[i % len(sets)])
        torch.cuda.synchronize()
    rows = [(e.key, e.device_time_total / n / 1e3, e.count / n) for e in prof.key_averages()
            if e.device_time_total > 0]
    gpu = sum(r[1] for r in rows)
    launches = sum(r[2] for r in rows)
    print(f"  PROFILE {label}: wall {wall:.3f} ms/call (sync each call: no), GPU kernels "
          f"{gpu:.3f} ms/call, {launches:.0f} kernels/call")
    for k, ms, c in sorted(rows, key=lambda r: -r[1])[:8]:
        print(f"      {ms:8.4f} ms  x{c:.0f}  {k[:90]}")


def main() -> None:
    import baracuda.torch as bt
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name(0), torch.__version__)

    # index_select / embedding forward: gather tile
    n, d, k = 131072, 1024, 65536
    sets = [{"x": torch.randn(n, d, device=dev, dtype=torch.bfloat16),
             "idx": torch.randint(0, n, (k,), device=dev)} for _ in range(3)]
    tiles = [(8192, 2048, 4), (16384, 2048, 4), (16384, 2048, 8), (32768, 2048, 8),
             (16384, 1024, 4), (32768, 4096, 8), (8192, 1024, 4)]
    print("index_select fwd [131072,1024] K=65536 bf16; torch "
          f"{_ms(lambda x, idx: torch.index_select(x, 0, idx), sets):.3f} ms")
    _sweep("index_select", seg_sort, "GATHER_TILE", tiles,
           lambda x, idx: bt.index_select(x, 0, idx), sets)
    _profile("index_select fwd", lambda x, idx: bt.index_select(x, 0, idx), sets)
    del sets

    v, dm, t = 131072, 4096, 16384
    w = [torch.randn(v, dm, device=dev, dtype=torch.bfloat16, requires_grad=True)
         for _ in range(2)]
    sets = [{"w": w[i % 2], "tok": torch.randint(0, v, (t,), device=dev),
             "g": torch.randn(t, dm, device=dev, dtype=torch.bfloat16)} for i in range(3)]
    print("embedding fwd V=131072 D=4096 T=16384 bf16; torch "
          f"{_ms(lambda w, tok, g: torch.nn.functional.embedding(tok, w), sets):.3f} ms")
    _sweep("embedding fwd", seg_sort, "GATHER_TILE", tiles[:5],
           lambda w, tok, g: bt.embedding(tok, w), sets)

    def emb_fb(w, tok, g):
        return torch.autograd.grad(bt.embedding(tok, w), w, g)

    def emb_fb_torch(w, tok, g):
        return torch.autograd.grad(torch.nn.functional.embedding(tok, w), w, g)

    print(f"embedding fwd+bwd; torch {_ms(emb_fb_torch, sets):.3f} ms")
    _sweep("embedding fwd+bwd", seg_plans, "REDUCE_TILE_SHORT",
           [(4, 4, 512), (4, 4, 1024), (8, 4, 1024), (8, 2, 2048), (16, 2, 1024),
            (16, 1, 2048), (32, 1, 1024)], emb_fb, sets)
    _profile("embedding fwd+bwd", emb_fb, sets)
    _profile("torch embedding fwd+bwd", emb_fb_torch, sets)
    del sets, w

    n, d, s = 1 << 20, 128, 4096
    sets = [{"x": torch.randn(n, d, device=dev, requires_grad=True),
             "ids": torch.randint(0, s, (n,), device=dev),
             "g": torch.randn(s, d, device=dev)} for _ in range(3)]

    def max_f(x, ids, g):
        return bt.segment_max(x, ids, s)

    def max_fb(x, ids, g):
        return torch.autograd.grad(bt.segment_max(x, ids, s), x, g)

    def sum_f(x, ids, g):
        return bt.segment_sum(x, ids, s)

    def torch_max_fb(x, ids, g):
        out = torch.zeros(s, d, device=x.device).scatter_reduce(
            0, ids[:, None].expand(n, d), x, "amax", include_self=False)
        return torch.autograd.grad(out, x, g)

    print(f"segment max/sum N=2^20 D=128 S=4096 f32; torch max fwd+bwd "
          f"{_ms(torch_max_fb, sets):.3f} ms")
    _sweep("segment_max fwd", seg_plans, "REDUCE_TILE",
           [(1, 16, 128), (1, 16, 64), (1, 16, 32), (2, 16, 64)], max_f, sets)
    _sweep("segment_sum fwd", seg_plans, "REDUCE_TILE",
           [(1, 16, 128), (1, 32, 128), (1, 16, 64), (1, 32, 64)], sum_f, sets)
    _sweep("segment_max fwd+bwd", seg_plans, "MAX_BACKWARD", ["rows", "scatter"], max_fb,
           sets)
    _sweep("segment_max fwd+bwd rows", seg_plans, "BACKWARD_TILE",
           [(4, 128), (8, 128), (16, 128), (32, 128)], max_fb, sets)
    _profile("segment_max fwd+bwd", max_fb, sets)
    _profile("segment_sum fwd", sum_f, sets)


if __name__ == "__main__":
    main()
