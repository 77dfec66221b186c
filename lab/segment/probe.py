"""GPU tuning probe for the segment / indexing / embedding paths (not imported by the package).

Usage on the GPU machine: python3 -m baracuda.families.segment.probe
Prints, per bench shape: ms per call for each tile setting (median of rotating-input batches,
the bench harness's timer) and, per path, GPU kernel time per call from torch.profiler next to
wall time per call (GPU time < wall time means the call is host-bound), launches per call.
"""

from __future__ import annotations

import time

import torch

from baracuda.backends import grouping as seg_sort
from baracuda.families.segment import plans as seg_plans
from baracuda.tools.bench import time_fn

#: (bytes per program, bytes per row chunk, warps) of the row gathers, swept by the probe
TILES = [(8192, 2048, 4), (16384, 2048, 4), (16384, 2048, 8), (32768, 2048, 8),
         (16384, 1024, 4), (32768, 4096, 8), (8192, 1024, 4)]


def _ms(fn, sets):
    return time_fn(fn, sets, 0.3)


def _sweep(label, module, attr, values, fn, sets, reset=None):
    old = getattr(module, attr)
    for v in values:
        setattr(module, attr, v)
        if reset is not None:
            reset()
        try:
            print(f"  {label} {attr}={v}: {_ms(fn, sets):.3f} ms", flush=True)
        except Exception as exc:  # noqa: BLE001 - a failing tile is a result
            print(f"  {label} {attr}={v}: FAILED {type(exc).__name__}: {str(exc)[:120]}")
    setattr(module, attr, old)
    if reset is not None:
        reset()


def _reset_sort():
    """Forget cached sort shapes, layouts and plans (their workspace sizes) after a change of
    the sort's module constants."""
    from baracuda.backends import torch_ops as factory
    from baracuda.core import plan as core_plan
    for f in (seg_sort.count_shape, seg_sort.sort_layout, seg_sort._count_recipe,
              core_plan._select_cached):
        f.cache_clear()
    getattr(factory, "_TRUSTED", {}).clear()  # the frontend's per-signature workspace sizes


def _reset_gather():
    """Forget the index_select launch recipes (they hold the gather tile)."""
    from baracuda.families.indexing import plans as idx_plans
    idx_plans._GATHER_RECIPES.clear()


def _reset_reduce():
    """Forget the reduction launch recipes (they hold the reduce tiles)."""
    seg_plans._REDUCE_RECIPES.clear()


def _host_us(label, fn, torch_fn):
    """Host time per call on tiny tensors (launch + Python), then where ours goes."""
    from baracuda.tools.bench import host_profile, host_seconds_per_call

    ours, ref = host_seconds_per_call(fn) * 1e6, host_seconds_per_call(torch_fn) * 1e6
    print(f"  HOST {label}: ours {ours:.1f} us/call, torch {ref:.1f} us/call")
    lines = host_profile(fn, 300, 14).splitlines()[-15:]
    print("\n".join("      " + ln[:150] for ln in lines))


def sum_probe(dev) -> None:
    """Unsorted / sorted segment_sum at the bench shape: chunk / warp sweep of the counting
    sort, the radix sort for comparison, GPU time vs wall, host time per call."""
    import baracuda.torch as bt
    n, d, s = 1 << 20, 128, 4096
    sets = [{"x": torch.randn(n, d, device=dev), "ids": torch.randint(0, s, (n,), device=dev)}
            for _ in range(3)]

    def sum_f(x, ids):
        return bt.segment_sum(x, ids, s)

    def torch_sum(x, ids):
        return torch.zeros(s, d, device=x.device).index_add_(0, ids, x)

    print(f"segment_sum N=2^20 D=128 S=4096 f32; torch index_add_ {_ms(torch_sum, sets):.3f} ms")
    _sweep("unsorted sum", seg_sort, "COUNT_CHUNK", [2048, 4096], sum_f, sets, _reset_sort)
    _sweep("unsorted sum", seg_sort, "COUNT_WARPS", [4, 8], sum_f, sets, _reset_sort)
    _sweep("unsorted sum (radix sort)", seg_sort, "COUNT_MAX_KEYS", [0], sum_f, sets,
           _reset_sort)
    _sweep("unsorted sum", seg_plans, "REDUCE_TILE", [(1, 16, 128), (1, 32, 64)], sum_f, sets,
           _reset_reduce)
    _profile("unsorted segment_sum fwd", sum_f, sets)
    srt = [{"x": t["x"], "ids": t["ids"].sort().values} for t in sets]
    _profile("sorted segment_sum fwd",
             lambda x, ids: bt.segment_sum(x, ids, s, indices_are_sorted=True), srt)
    xs, ids_s = torch.randn(64, 8, device=dev), torch.randint(0, 16, (64,), device=dev)
    _host_us("unsorted segment_sum [64, 8] S=16", lambda: bt.segment_sum(xs, ids_s, 16),
             lambda: torch.zeros(16, 8, device=dev).index_add_(0, ids_s, xs))


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
    import sys
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name(0), torch.__version__)
    probes = {"sum": sum_probe, "gather": gather_probe, "chunks": chunk_sweep,
              "maxcheck": max_check, "gatherhost": gather_host, "rest": rest_probe}
    parts = sys.argv[1:] or ["sum", "gather", "rest"]
    for name, probe in probes.items():
        if name in parts:
            probe(dev)


def chunk_sweep(dev) -> None:
    """Counting sort: rows per chunk x warps at the bench shape (unsorted segment_sum)."""
    import baracuda.torch as bt
    n, d, s = 1 << 20, 128, 4096
    sets = [{"x": torch.randn(n, d, device=dev), "ids": torch.randint(0, s, (n,), device=dev)}
            for _ in range(3)]
    old = seg_sort.COUNT_CHUNK, seg_sort.COUNT_WARPS
    for chunk in (1024, 2048):
        seg_sort.COUNT_CHUNK = chunk
        _sweep(f"unsorted sum COUNT_CHUNK={chunk}", seg_sort, "COUNT_WARPS", [2, 4, 8],
               lambda x, ids: bt.segment_sum(x, ids, s), sets, _reset_sort)
    seg_sort.COUNT_CHUNK, seg_sort.COUNT_WARPS = old
    _reset_sort()
    _profile("unsorted segment_sum fwd", lambda x, ids: bt.segment_sum(x, ids, s), sets)


def max_check(dev) -> None:
    """segment_max fwd+bwd at the bench shape against an exact reference: the gradient goes to
    the first row holding the maximum (torch splits it over ties, so the bench's comparison
    with torch fails whenever a random tie lands on a maximum)."""
    import baracuda.torch as bt
    n, d, s = 1 << 20, 128, 4096
    x = torch.randn(n, d, device=dev, requires_grad=True)
    ids = torch.randint(0, s, (n,), device=dev)
    g = torch.randn(s, d, device=dev)
    out = bt.segment_max(x, ids, s)
    (gx,) = torch.autograd.grad(out, x, g)
    ref = torch.full((s, d), -float("inf"), device=dev).scatter_reduce(
        0, ids[:, None].expand(n, d), x.detach(), "amax")
    hit = x.detach() == ref[ids]
    rows = torch.arange(n, device=dev)[:, None].expand(n, d)
    first = torch.full((s, d), n, device=dev).scatter_reduce(
        0, ids[:, None].expand(n, d), torch.where(hit, rows, n), "amin")
    expect = torch.where(rows == first[ids], g[ids], 0.0)
    ties = int((torch.zeros(s, d, device=dev, dtype=torch.int64).index_add_(
        0, ids, hit.long()) > 1).sum())
    print(f"  MAXCHECK fwd equal: {torch.equal(out, ref)}, grad equal (first row wins): "
          f"{torch.equal(gx, expect)}, (segment, column) pairs with a tied maximum: {ties}")


def gather_probe(dev) -> None:
    import baracuda.torch as bt

    # index_select / embedding forward: gather tile
    n, d, k = 131072, 1024, 65536
    sets = [{"x": torch.randn(n, d, device=dev, dtype=torch.bfloat16),
             "idx": torch.randint(0, n, (k,), device=dev)} for _ in range(3)]
    print("index_select fwd [131072,1024] K=65536 bf16; torch "
          f"{_ms(lambda x, idx: torch.index_select(x, 0, idx), sets):.3f} ms")
    # index_select reads the tile through the indexing module's own name
    from baracuda.families.indexing import plans as idx_plans
    _sweep("index_select", idx_plans, "INDEX_GATHER_TILE", TILES,
           lambda x, idx: bt.index_select(x, 0, idx), sets, _reset_gather)
    _profile("index_select fwd", lambda x, idx: bt.index_select(x, 0, idx), sets)
    _profile("torch index_select fwd", lambda x, idx: torch.index_select(x, 0, idx), sets)
    gather_host(dev)


def gather_host(dev) -> None:
    import baracuda.torch as bt
    xs = torch.randn(256, 64, device=dev, dtype=torch.bfloat16)
    ids = torch.randint(0, 256, (128,), device=dev)
    _host_us("index_select [256, 64] K=128 bf16", lambda: bt.index_select(xs, 0, ids),
             lambda: torch.index_select(xs, 0, ids))


def rest_probe(dev) -> None:
    import baracuda.torch as bt

    v, dm, t = 131072, 4096, 16384
    w = [torch.randn(v, dm, device=dev, dtype=torch.bfloat16, requires_grad=True)
         for _ in range(2)]
    sets = [{"w": w[i % 2], "tok": torch.randint(0, v, (t,), device=dev),
             "g": torch.randn(t, dm, device=dev, dtype=torch.bfloat16)} for i in range(3)]
    print("embedding fwd V=131072 D=4096 T=16384 bf16; torch "
          f"{_ms(lambda w, tok, g: torch.nn.functional.embedding(tok, w), sets):.3f} ms")
    _sweep("embedding fwd", seg_sort, "GATHER_TILE", TILES[:5],
           lambda w, tok, g: bt.embedding(tok, w), sets)

    def emb_fb(w, tok, g):
        return torch.autograd.grad(bt.embedding(tok, w), w, g)

    def emb_fb_torch(w, tok, g):
        return torch.autograd.grad(torch.nn.functional.embedding(tok, w), w, g)

    print(f"embedding fwd+bwd; torch {_ms(emb_fb_torch, sets):.3f} ms")
    _sweep("embedding fwd+bwd", seg_plans, "REDUCE_TILE_SHORT",
           [(4, 4, 512), (4, 4, 1024), (8, 4, 1024), (8, 2, 2048), (16, 2, 1024),
            (16, 1, 2048), (32, 1, 1024)], emb_fb, sets, _reset_reduce)
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
           [(1, 16, 128), (1, 16, 64), (1, 16, 32), (2, 16, 64)], max_f, sets, _reset_reduce)
    _sweep("segment_sum fwd", seg_plans, "REDUCE_TILE",
           [(1, 16, 128), (1, 32, 128), (1, 16, 64), (1, 32, 64)], sum_f, sets, _reset_reduce)
    _sweep("segment_max fwd+bwd rows", seg_plans, "BACKWARD_TILE",
           [(4, 128), (8, 128), (16, 128), (32, 128)], max_fb, sets)
    _profile("segment_max fwd+bwd", max_fb, sets)
    _profile("segment_sum fwd", sum_f, sets)


if __name__ == "__main__":
    main()
