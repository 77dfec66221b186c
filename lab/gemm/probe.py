"""Issue #8 probe (run by hand on an H100; not imported by the package): where the GPU time of
the Linear and bias+gelu benchmark rows goes, ours against torch's.

    python3 -m baracuda.families.gemm.probe [timeline] [cells] [gelu]

- timeline: each benchmark row (bench.time_fn, same inputs as `baracuda bench`) and its
  kernels from torch.profiler: GPU time per kernel per iteration, busy time (union of kernel
  intervals) and span per iteration; busy == span means GPU-bound (no host gaps).
- cells: every GEMM of those rows on cuBLASLt: all heuristic candidates (config, kernel name,
  time over interleaved rounds), the candidate our tuner picks (three fresh tunings), and
  torch.mm / F.linear on the same operands.
- gelu: the activation kernel's tile sweep (gelu forward, dh, dh + bias partials), the
  training forward as one GELU_AUX_BIAS GEMM vs a BIAS GEMM + gelu pass, and the elementwise
  pieces of the backward against torch's.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import torch.nn.functional as F

from baracuda.core.vocab import BackendKind, ElementKind, PlanPreference
from baracuda.families.gemm import launch, ltcore
from baracuda.families.gemm.descriptors import DenseGemmArgs, DenseGemmDescriptor, GemmActivation
from baracuda.families.gemm.plans import DenseGemmPlan
from baracuda.tools.bench import CudaEventChain, time_fn

BF = torch.bfloat16
LT = PlanPreference(prefer_backend=BackendKind.CUBLASLT)
GELU = GemmActivation.GELU_TANH


def _profile(fn, n: int = 4):
    """(per-kernel {name: [us, calls]} per iteration, busy us / iter, span us / iter)."""
    from baracuda.families.gemm.tune import cuda_profile
    from torch.autograd import DeviceType

    prof = cuda_profile(fn, n)
    spans, per = [], {}
    for ev in prof.events():
        if getattr(ev, "device_type", None) != DeviceType.CUDA:
            continue
        s, e = ev.time_range.start, ev.time_range.end
        spans.append((s, e))
        row = per.setdefault(ev.name, [0.0, 0])
        row[0] += (e - s) / n
        row[1] += 1 / n
    spans.sort()
    busy, cur = 0.0, None
    for s, e in spans:
        if cur is None or s > cur[1]:
            if cur is not None:
                busy += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    if cur is not None:
        busy += cur[1] - cur[0]
    span = (spans[-1][1] - spans[0][0]) if spans else 0.0
    return per, busy / n, span / n


def _kernel_table(per, indent="      ") -> None:
    for name, (us, calls) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        print(f"{indent}{us:9.1f} us  x{calls:4.1f}  {name[:110]}")


def timeline(dev) -> None:
    from baracuda.families.gemm.spec import gemm_benches

    want = {("linear fwd", "8192x4096->14336 bf16"), ("linear fwd+bwd", "8192x4096->14336 bf16"),
            ("linear fwd", "8192x14336->4096 bf16"), ("linear fwd+bwd", "8192x14336->4096 bf16"),
            ("bias+gelu fwd", "8192x4096->4096 bf16"),
            ("bias+gelu fwd+bwd", "8192x4096->4096 bf16")}
    for case in gemm_benches(True):
        if (case.name, case.shape) not in want:
            continue
        sets = [case.setup(dev) for _ in range(2)]
        print(f"== {case.name} {case.shape}")
        res = {}
        for who, fn in (("ours", case.ours), ("torch", case.torch_eager)):
            ms = time_fn(fn, sets, 0.6)
            res[who] = ms
            per, busy, span = _profile(lambda fn=fn, s=sets[0]: fn(**s))
            print(f"   {who:6} time_fn {ms * 1e3:8.1f} us ({case.flops / ms / 1e9:6.1f} TF/s)"
                  f"   profiled: GPU busy {busy:8.1f} us/iter, span {span:8.1f} us/iter")
            _kernel_table(per)
        print(f"   ratio torch/ours {res['torch'] / res['ours']:.3f}")
        sets.clear()
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------ cells
def _cfg(addr) -> str:
    lt = ltcore._lib()[0]
    C = lt.MatmulAlgoConfigAttribute
    out = []
    for name, enum in (("ID", None), ("TILE_ID", getattr(lt, "MatmulTile", None)),
                       ("STAGES_ID", getattr(lt, "MatmulStages", None)), ("SPLITK_NUM", None),
                       ("REDUCTION_SCHEME", None), ("CTA_SWIZZLING", None),
                       ("CUSTOM_OPTION", None),
                       ("CLUSTER_SHAPE_ID", getattr(lt, "ClusterShape", None))):
        attr = getattr(C, name, None)
        if attr is None:
            continue
        try:
            buf = np.zeros(1, dtype=lt.get_matmul_algo_config_attribute_dtype(attr))
            written = np.zeros(1, dtype=np.uint64)
            lt.matmul_algo_config_get_attribute(addr, int(attr), buf.ctypes.data, buf.nbytes,
                                                written.ctypes.data)
            v = int(buf[0])
            label = str(v)
            if enum is not None:
                try:
                    label = enum(v).name
                except ValueError:
                    pass
            out.append(f"{name.split('_')[0].lower()}={label}")
        except Exception as exc:  # noqa: BLE001 - a probe prints what it can
            out.append(f"{name}=?({type(exc).__name__})")
    return " ".join(out)


def _names(cell, addrs, a, b, d, ws, bias, aux, dev) -> list[str]:
    """The kernel name(s) each candidate launches (fill kernels separate the candidates)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    marker = torch.zeros(1, device=dev)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for algo in addrs:
            marker.fill_(1.0)
            ltcore.time_candidates(cell, [algo], a, b, d, ws, bias, aux, dev, reps=1,
                                   warmup=False)
        marker.fill_(1.0)
        torch.cuda.synchronize()
    evs = sorted((ev for ev in prof.events()
                  if getattr(ev, "device_type", None) == DeviceType.CUDA),
                 key=lambda ev: ev.time_range.start)
    groups: list[list[str]] = []
    for ev in evs:
        if "FillFunctor" in ev.name:
            groups.append([])
        elif groups and ev.name not in groups[-1]:
            groups[-1].append(ev.name)
    groups = [g for g in groups][: len(addrs)]
    return [" + ".join(n[:70] for n in g) for g in groups] + [""] * (len(addrs) - len(groups))


def _torch_kernel(fn) -> str:
    per, _, _ = _profile(fn, n=1)
    return " + ".join(f"{name[:70]} ({us:.0f} us)" for name, (us, _) in per.items())


def _event_ms(fn, reps: int = 10) -> float:
    """Median of `reps` back-to-back CUDA-event timings after one warm-up call."""
    chain = CudaEventChain(fn, reps)
    torch.cuda.synchronize()
    ts = sorted(chain.ms())
    return ts[len(ts) // 2]


def _cell(tag, a, b, d, ws, dev, flops, torch_fn, epilogue="DEFAULT", bias=None, aux=None):
    print(f"== cell {tag}: a {tuple(a.shape)}{tuple(a.stride())} b {tuple(b.shape)}"
          f"{tuple(b.stride())} {epilogue}")
    dev = d.get_device()
    picks = []
    cell = None
    for _ in range(3):  # three fresh tunings: does the tuner pick the same candidate?
        ltcore._CELLS.clear()
        ltcore.lt_matmul(a, b, d, ws, ElementKind.BF16, epilogue=epilogue, bias=bias, aux=aux)
        torch.cuda.synchronize()
        cell = next(iter(ltcore._CELLS.values()))
        picks.append(cell.cands.index(cell.algo))
    addrs = cell.cands
    rounds = [ltcore.time_candidates(cell, addrs, a, b, d, ws, bias, aux, dev, reps=3,
                                     warmup=r == 0) for r in range(3)]
    med = [sorted(r[j] for r in rounds)[1] for j in range(len(addrs))]
    names = _names(cell, addrs, a, b, d, ws, bias, aux, dev)
    tref = _event_ms(torch_fn)
    best = min(med)
    order = sorted(range(len(addrs)), key=med.__getitem__)
    print(f"   tuner picks (heuristic index, 3 fresh tunings): {picks}; "
          f"{len(addrs)} candidates; torch {tref * 1e3:.1f} us "
          f"({flops / tref / 1e9:.1f} TF/s): {_torch_kernel(torch_fn)}")
    for rank, j in enumerate(order):
        if rank >= 8 and j not in picks and j != 0:
            continue
        mark = ("P" if j in picks else " ") + ("H" if j == 0 else " ")
        print(f"   {mark} #{j:2d} {med[j] * 1e3:8.1f} us {flops / med[j] / 1e9:6.1f} TF/s "
              f"{tref / med[j]:5.3f}x  {_cfg(addrs[j])}  {names[j]}")
    print(f"   best {best * 1e3:.1f} us = {tref / best:.3f}x torch; pick = "
          f"{tref / med[picks[-1]]:.3f}x")


def _linear_cells(dev, ws, t: int, i: int, o: int) -> None:
    x = torch.randn(t, i, device=dev, dtype=BF)
    w = torch.randn(o, i, device=dev, dtype=BF) * i ** -0.5
    dy = torch.randn(t, o, device=dev, dtype=BF)
    fl = 2 * t * i * o
    y = torch.empty(t, o, device=dev, dtype=BF)
    dx = torch.empty(t, i, device=dev, dtype=BF)
    dw = torch.empty(o, i, device=dev, dtype=BF)
    _cell(f"{t}x{i}->{o} fwd x@W^T", x, w.mT, y, ws, dev, fl, lambda: F.linear(x, w))
    _cell(f"{t}x{i}->{o} dx=dy@W", dy, w, dx, ws, dev, fl, lambda: torch.mm(dy, w))
    _cell(f"{t}x{i}->{o} dW=dy^T@x", dy.mT, x, dw, ws, dev, fl, lambda: torch.mm(dy.mT, x))


def cells(dev) -> None:
    ws = torch.empty(ltcore.CUBLASLT_WORKSPACE, dtype=torch.uint8, device=dev)
    for t, i, o in ((8192, 4096, 14336), (8192, 14336, 4096)):
        _linear_cells(dev, ws, t, i, o)
    t, i, o = 8192, 4096, 4096
    fl = 2 * t * i * o
    x = torch.randn(t, i, device=dev, dtype=BF)
    w = torch.randn(o, i, device=dev, dtype=BF) * i ** -0.5
    b = torch.randn(o, device=dev, dtype=BF)
    dh = torch.randn(t, o, device=dev, dtype=BF)
    y, pre = torch.empty_like(dh), torch.empty_like(dh)
    dx, dw = torch.empty(t, i, device=dev, dtype=BF), torch.empty(o, i, device=dev, dtype=BF)
    db = torch.empty(o, device=dev, dtype=BF)
    g = "8192x4096->4096"
    _cell(f"{g} fwd GELU_AUX_BIAS", x, w.mT, y, ws, dev, fl, lambda: F.linear(x, w, b),
          epilogue="GELU_AUX_BIAS", bias=b, aux=pre)
    _cell(f"{g} fwd BIAS", x, w.mT, y, ws, dev, fl, lambda: F.linear(x, w, b), epilogue="BIAS",
          bias=b)
    _cell(f"{g} dW BGRADB", dh.mT, x, dw, ws, dev, fl, lambda: torch.mm(dh.mT, x),
          epilogue="BGRADB", bias=db)
    _cell(f"{g} dW", dh.mT, x, dw, ws, dev, fl, lambda: torch.mm(dh.mT, x))
    _cell(f"{g} dx", dh, w, dx, ws, dev, fl, lambda: torch.mm(dh, w))
    ltcore._CELLS.clear()


# ------------------------------------------------------------------------------------- gelu
def gelu(dev) -> None:
    t, i, o = 8192, 4096, 4096
    sets = [dict(x=torch.randn(t, i, device=dev, dtype=BF),
                 w=torch.randn(o, i, device=dev, dtype=BF) * i ** -0.5,
                 b=torch.randn(o, device=dev, dtype=BF),
                 dy=torch.randn(t, o, device=dev, dtype=BF)) for _ in range(2)]
    y = torch.empty(t, o, device=dev, dtype=BF)
    pre = torch.randn(t, o, device=dev, dtype=BF)
    dh = torch.empty(t, o, device=dev, dtype=BF)
    db = torch.empty(o, device=dev, dtype=BF)
    part = torch.empty(launch.act_partials_workspace(t, o, ElementKind.BF16), dtype=torch.uint8,
                       device=dev)

    def plan(**kw):
        desc = DenseGemmDescriptor(m=t, n=o, k=i, element=ElementKind.BF16, **kw)
        p = DenseGemmPlan.select(desc, LT)
        return p, torch.empty(p.workspace_size(), dtype=torch.uint8, device=dev)

    aux_p, ws = plan(bias=True, activation=GELU, save_preact=True)
    bias_p, _ = plan(bias=True)
    gb_p, _ = plan(bias=True, activation=GELU)

    def aux(x, w, b, dy):
        aux_p.run(DenseGemmArgs(a=x, b=w.mT, d=y, bias=b, preact_out=pre), ws)

    def split(x, w, b, dy):
        bias_p.run(DenseGemmArgs(a=x, b=w.mT, d=pre, bias=b), ws)
        launch.activation_2d(pre, y, GELU.code, ElementKind.BF16)

    def infer(x, w, b, dy):
        gb_p.run(DenseGemmArgs(a=x, b=w.mT, d=y, bias=b), ws)

    rows = (("ours GELU_AUX_BIAS (y + pre)", aux), ("ours BIAS GEMM + gelu pass", split),
            ("ours GELU_BIAS, no pre (inference bound)", infer),
            ("torch F.linear(bias) + F.gelu", lambda x, w, b, dy: F.gelu(
                F.linear(x, w, b), approximate="tanh")),
            ("torch F.linear(bias)", lambda x, w, b, dy: F.linear(x, w, b)),
            ("ours dh = dy*gelu'(pre)", lambda x, w, b, dy: launch.activation_2d(
                pre, dh, GELU.code, ElementKind.BF16, grad=dy)),
            ("ours dh + bias-grad partials + stage 2", lambda x, w, b, dy: launch.activation_2d(
                pre, dh, GELU.code, ElementKind.BF16, grad=dy, dbias=db, workspace=part)),
            ("torch gelu_backward", lambda x, w, b, dy: torch.ops.aten.gelu_backward(
                dy, pre, approximate="tanh")),
            ("torch sum(0)", lambda x, w, b, dy: dy.sum(0)))
    print("== activation kernel sweep (BLOCK_R, warps, ROWS): gelu fwd / dh / dh+db, us")
    keep = launch.ACT_TILE_HALF, launch.ACT_ROWS
    try:
        for block_r, warps, nrows in ((16, 4, 128), (32, 4, 128), (32, 8, 128), (64, 8, 128),
                                     (16, 4, 64), (32, 8, 256), (16, 8, 128)):
            launch.ACT_TILE_HALF, launch.ACT_ROWS = (block_r, warps), nrows
            p2 = torch.empty(launch.act_partials_workspace(t, o, ElementKind.BF16),
                             dtype=torch.uint8, device=dev)
            ts = [time_fn(fn, sets, 0.3) * 1e3 for fn in (
                lambda x, w, b, dy: launch.activation_2d(pre, y, GELU.code, ElementKind.BF16),
                lambda x, w, b, dy: launch.activation_2d(pre, dh, GELU.code, ElementKind.BF16,
                                                         grad=dy),
                lambda x, w, b, dy, p2=p2: launch.activation_2d(
                    pre, dh, GELU.code, ElementKind.BF16, grad=dy, dbias=db, workspace=p2))]
            print(f"   ({block_r:3d}, {warps}, {nrows:3d})  " + "  ".join(f"{v:7.1f}" for v in ts))
    finally:
        launch.ACT_TILE_HALF, launch.ACT_ROWS = keep
    print("== bias+gelu pieces 8192x4096->4096 bf16 (time_fn; kernels from the profiler)")
    with torch.no_grad():
        for name, fn in rows:
            ms = time_fn(fn, sets, 0.4)
            per, busy, _ = _profile(lambda fn=fn: fn(**sets[0]))
            print(f"   {name:<44} {ms * 1e3:8.1f} us  (GPU busy {busy:7.1f} us)")
            _kernel_table(per, indent="        ")


def main() -> None:
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name(0), torch.__version__, "cuBLASLt",
          ltcore._lib()[0].get_version(), flush=True)
    named = [a for a in sys.argv[1:] if not a.startswith("-")]
    for section in (cells, gelu, timeline):
        if named and section.__name__ not in named:
            continue
        try:
            section(dev)
        except Exception as exc:  # noqa: BLE001 - report and go on to the next section
            import traceback

            traceback.print_exc()
            print(f"   section {section.__name__} failed: {type(exc).__name__}: {exc}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
