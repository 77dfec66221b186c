"""GPU tuning sweep for the GEMM family (run by hand on an H100; not imported by the package).

    python3 -m baracuda.families.gemm.tune [--quick] [SECTION ...]

Prints one table: Triton tiles for the fused bias+gelu forward, backend/tile per layout of
the Linear backward GEMMs, cuBLASLt kernel time vs call time (profiler), host overhead per
call, and the activation-derivative kernel. Timing: baracuda.tools.bench.time_fn (median of
pipelined batches over rotating input sets larger than L2).
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from baracuda.core.vocab import BackendKind, ElementKind, PlanPreference
from baracuda.families.gemm import launch
from baracuda.families.gemm import torch_api as bt
from baracuda.families.gemm.descriptors import DenseGemmArgs, DenseGemmDescriptor, GemmActivation
from baracuda.families.gemm.plans import DenseGemmPlan
from baracuda.tools.bench import host_seconds_per_call, time_fn

BF = torch.bfloat16
LT = PlanPreference(prefer_backend=BackendKind.CUBLASLT)
TRI = PlanPreference(prefer_backend=BackendKind.TRITON)
_REAL_TILE = launch.tile_for


def _row(name: str, ms: float, flops: float | None = None, ref: float | None = None) -> None:
    rate = f"{flops / ms / 1e9:7.1f} TF/s" if flops else " " * 12
    rel = f"  {ref / ms:5.2f}x" if ref else ""
    print(f"{name:<58} {ms * 1e3:9.1f} us {rate}{rel}", flush=True)


def _t(fn, sets, budget=0.25) -> float:
    try:
        return time_fn(fn, sets, budget)
    except Exception as exc:  # noqa: BLE001 - a failing config is a result of the sweep
        print(f"   failed: {type(exc).__name__}: {str(exc)[:160]}")
        return float("nan")


_REAL_TILES = launch.EPILOGUE_TILES


def _force_tile(tile):
    def pick(element, m, n, arch, pref, epilogue_math=False):
        return tile
    launch.tile_for = pick
    launch.EPILOGUE_TILES = ()


def _dense(a, b, d, pref, **kw):
    desc = DenseGemmDescriptor(m=a.shape[0], n=b.shape[1], k=a.shape[1],
                               element=ElementKind.BF16, **kw)
    plan = DenseGemmPlan.select(desc, pref)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=a.device)
    return plan, ws


def fused_forward(dev, quick: bool) -> None:
    t, i, o = 8192, 4096, 4096
    fl = 2 * t * i * o
    sets = [dict(x=torch.randn(t, i, device=dev, dtype=BF),
                 w=torch.randn(o, i, device=dev, dtype=BF) * i ** -0.5,
                 b=torch.randn(o, device=dev, dtype=BF)) for _ in range(3)]
    y = torch.empty(t, o, device=dev, dtype=BF)
    pre = torch.empty(t, o, device=dev, dtype=BF)
    print(f"== fused bias+gelu forward {t}x{i}->{o} bf16 (ratio: torch unfused / ours)")
    ref = _t(lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), sets)
    _row("torch F.gelu(F.linear) tanh", ref, fl, ref)
    _row("torch F.linear (bias) alone", _t(lambda x, w, b: F.linear(x, w, b), sets), fl, ref)
    _row("torch x@w.T alone", _t(lambda x, w, b: x @ w.T, sets), fl, ref)
    _row("torch _addmm_activation (cublasLt GELU_BIAS)",
         _t(lambda x, w, b: torch._addmm_activation(b, x, w.T, use_gelu=True), sets), fl, ref)
    for name, pref, kw in (("ours cuBLASLt BIAS", LT, dict(bias=True)),
                           ("ours cuBLASLt GELU_BIAS (no save)", LT,
                            dict(bias=True, activation=GemmActivation.GELU_TANH)),
                           ("ours cuBLASLt no epilogue", LT, {})):
        plan, ws = _dense(sets[0]["x"], sets[0]["w"].T, y, pref, **kw)

        def run(x, w, b, plan=plan, ws=ws, kw=kw):
            plan.run(DenseGemmArgs(a=x, b=w.T, d=y, bias=b if kw else None), ws)
        _row(name, _t(run, sets), fl, ref)
        _profile(name, lambda p=plan, w=ws, r=run: r(**sets[0]))
    plan, _ = _dense(sets[0]["x"], sets[0]["w"].T, y, TRI, bias=True,
                     activation=GemmActivation.GELU_TANH, save_preact=True)

    def tuned(x, w, b, plan=plan):
        plan.run(DenseGemmArgs(a=x, b=w.T, d=y, bias=b, preact_out=pre))
    _row("triton gelu_tanh+save, default (timed tile choice)", _t(tuned, sets), fl, ref)
    print("   chosen:", list(launch._TUNED.values()))
    tiles = [launch.Tile(128, 256, 64, 8, 8, 3, 2, s) for s in (1, 2, 4)]
    tiles += [launch.Tile(128, 256, 64, 8, 8, 4, 2, 4), launch.Tile(256, 128, 64, 8, 8, 3, 2, 2),
              launch.Tile(256, 128, 64, 8, 8, 3, 2, 4), launch.Tile(128, 128, 64, 8, 8, 4, 2, 1),
              launch.Tile(128, 128, 64, 8, 8, 4, 2, 2), launch.Tile(128, 128, 64, 8, 4, 4, 2, 2)]
    if quick:
        tiles = tiles[:3]
    for act in (GemmActivation.GELU_TANH, GemmActivation.GELU):
        for tile in tiles if act is GemmActivation.GELU_TANH else tiles[2:3]:
            _force_tile(tile)
            try:
                plan, ws = _dense(sets[0]["x"], sets[0]["w"].T, y, TRI, bias=True,
                                  activation=act, save_preact=True)

                def run(x, w, b, plan=plan):
                    plan.run(DenseGemmArgs(a=x, b=w.T, d=y, bias=b, preact_out=pre))
                _row(f"triton {act.value}+save {tile.block_m}x{tile.block_n} w{tile.warps} "
                     f"s{tile.stages} split{tile.epi_split}", _t(run, sets), fl, ref)
            finally:
                launch.tile_for = _REAL_TILE
                launch.EPILOGUE_TILES = _REAL_TILES


def cuda_profile(fn, n: int):
    """torch.profiler (CUDA activity) over n calls of fn after one warm-up call."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    return prof


def _profile(name, fn, n=5) -> None:
    """Kernel time per call (CUPTI) next to the call time: separates algorithm from host."""
    prof = cuda_profile(fn, n)
    for ev in sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:2]:
        print(f"   kernel {ev.key[:70]:<70} {ev.device_time_total / n:8.1f} us/call")


def backward_gemms(dev, quick: bool) -> None:
    print("== Linear GEMMs by layout (ratio: torch / ours)")
    shapes = ((8192, 4096, 14336), (8192, 14336, 4096))
    tiles = [launch.Tile(128, 256, 64, 8, 8, 3, 2), launch.Tile(128, 256, 64, 8, 8, 4, 2),
             launch.Tile(256, 128, 64, 8, 8, 3, 2), launch.Tile(128, 128, 64, 8, 8, 4, 2)]
    if quick:
        tiles = tiles[:1]
    for t, i, o in shapes:
        sets = [dict(x=torch.randn(t, i, device=dev, dtype=BF),
                     w=torch.randn(o, i, device=dev, dtype=BF),
                     dy=torch.randn(t, o, device=dev, dtype=BF)) for _ in range(2)]
        fl = 2 * t * i * o
        cells = (("fwd x@W^T", lambda s: (s["x"], s["w"].T)),
                 ("dx=dy@W", lambda s: (s["dy"], s["w"])),
                 ("dW=dy^T@x", lambda s: (s["dy"].T, s["x"])))
        for cname, ab in cells:
            a0, b0 = ab(sets[0])
            d = torch.empty(a0.shape[0], b0.shape[1], device=dev, dtype=BF)
            ref = _t(lambda x, w, dy, ab=ab: torch.mm(*ab(dict(x=x, w=w, dy=dy))), sets)
            tag = f"{t}x{i}->{o} {cname}"
            _row(f"{tag} torch.mm", ref, fl, ref)
            plan, ws = _dense(a0, b0, d, LT)

            def run(x, w, dy, plan=plan, ws=ws, ab=ab, d=d):
                a, b = ab(dict(x=x, w=w, dy=dy))
                plan.run(DenseGemmArgs(a=a, b=b, d=d), ws)
            _row(f"{tag} cuBLASLt", _t(run, sets), fl, ref)
            if cname != "fwd x@W^T":
                _profile(tag, lambda r=run, s0=sets[0]: r(**s0))
            for tile in tiles:
                _force_tile(tile)
                try:
                    plan_t, _ = _dense(a0, b0, d, TRI)

                    def run_t(x, w, dy, plan=plan_t, ab=ab, d=d):
                        a, b = ab(dict(x=x, w=w, dy=dy))
                        plan.run(DenseGemmArgs(a=a, b=b, d=d))
                    _row(f"{tag} triton {tile.block_m}x{tile.block_n} s{tile.stages}",
                         _t(run_t, sets), fl, ref)
                finally:
                    launch.tile_for = _REAL_TILE
                    launch.EPILOGUE_TILES = _REAL_TILES


def elementwise(dev, quick: bool) -> None:
    print("== dh = dy*gelu'(pre) (+ bias-grad partials) 8192x4096 bf16 (ratio: torch / ours)")
    r, c = 8192, 4096
    sets = [dict(dy=torch.randn(r, c, device=dev, dtype=BF),
                 pre=torch.randn(r, c, device=dev, dtype=BF)) for _ in range(3)]
    dh = torch.empty(r, c, device=dev, dtype=BF)
    db = torch.empty(c, device=dev, dtype=BF)
    ws = torch.empty(launch.act_partials_workspace(r, c, ElementKind.BF16), dtype=torch.uint8,
                     device=dev)

    def theirs(dy, pre):
        g = torch.ops.aten.gelu_backward(dy, pre, approximate="tanh")
        return g, g.sum(0)
    ref = _t(theirs, sets)
    _row("torch gelu_backward + sum(0)", ref, None, ref)
    _row("ours dgelu + partials + stage 2", _t(lambda dy, pre: launch.activation_2d(
        pre, dh, 3, ElementKind.BF16, grad=dy, dbias=db, workspace=ws), sets), None, ref)
    _row("ours dgelu only", _t(lambda dy, pre: launch.activation_2d(
        pre, dh, 3, ElementKind.BF16, grad=dy), sets), None, ref)
    ref2 = _t(lambda dy, pre: F.gelu(pre, approximate="tanh"), sets)
    _row("torch gelu fwd", ref2, None, ref2)
    _row("ours gelu fwd", _t(lambda dy, pre: launch.activation_2d(
        pre, dh, 3, ElementKind.BF16), sets), None, ref2)


def host_overhead(dev, quick: bool) -> None:
    print("== host time per eager call, 64x64x64 bf16 (us; ratio: torch / ours)")
    x = torch.randn(64, 64, device=dev, dtype=BF, requires_grad=True)
    w = torch.randn(64, 64, device=dev, dtype=BF, requires_grad=True)
    b = torch.randn(64, device=dev, dtype=BF, requires_grad=True)
    xd, wd = x.detach(), w.detach()

    def per_call(fn, n=200) -> float:
        return host_seconds_per_call(fn, n) * 1e3

    def fb(fn):
        return lambda: torch.autograd.grad(fn().sum(), (x, w, b))
    for name, ours, theirs in (
            ("mm", lambda: bt.mm(xd, wd), lambda: torch.mm(xd, wd)),
            ("mm triton", lambda: bt._dense_mm(xd, wd, TRI), lambda: torch.mm(xd, wd)),
            ("linear fwd", lambda: bt.linear(xd, wd), lambda: F.linear(xd, wd)),
            ("linear+bias+gelu fwd", lambda: bt.linear_act(xd, wd, b.detach(), "gelu_tanh"),
             lambda: F.gelu(F.linear(xd, wd, b.detach()), approximate="tanh")),
            ("linear fwd+bwd", fb(lambda: bt.linear(x, w, b)), fb(lambda: F.linear(x, w, b))),
            ("bias+gelu fwd+bwd", fb(lambda: bt.linear_act(x, w, b, "gelu_tanh")),
             fb(lambda: F.gelu(F.linear(x, w, b), approximate="tanh")))):
        ref = per_call(theirs)
        _row(f"host {name}", per_call(ours), None, ref)
    for name, fn in (("mm", lambda: bt.mm(xd, wd)),
                     ("bias+gelu fwd+bwd", fb(lambda: bt.linear_act(x, w, b, "gelu_tanh")))):
        _host_profile(name, fn)


def _host_profile(name, fn, n=300, top=14) -> None:
    """cProfile of `n` eager calls: where the host time of one call goes."""
    from baracuda.tools.bench import host_profile

    print(f"   profile {name} ({n} calls; tottime):")
    for line in host_profile(fn, n, top).splitlines():
        if "{" in line or ".py" in line or "ncalls" in line:
            print("   " + line[:150])


def main() -> None:
    quick = "--quick" in sys.argv
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name(0), torch.__version__)
    sections = (fused_forward, backward_gemms, elementwise, host_overhead)
    named = [a for a in sys.argv[1:] if not a.startswith("--")]
    for section in sections:
        if named and section.__name__ not in named:
            continue
        try:
            section(dev, quick)
        except Exception as exc:  # noqa: BLE001 - report and go on to the next section
            print(f"   section {section.__name__} failed: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
