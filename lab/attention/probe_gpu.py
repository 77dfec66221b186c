"""Where the time of an SDPA training step goes, on a GPU (run by hand on an H100):

    python -m baracuda.families.attention.probe_gpu [profile] [cudnn] [triton] [seconds]

- profile: baracuda.torch vs torch eager at the bench shapes: the bench's timing, backward alone
  (retain_graph), host time per step (measured behind a GPU sleep, so a hidden sync shows up
  as a step as long as the sleep), and torch.profiler's kernel table for both.
- cudnn: every cuDNN plan (heuristic modes A, B, FALLBACK; causal as use_causal_mask and as a
  diagonal band) of the backward, non-deterministic and deterministic, timed one by one, plus
  knob variants of the first plan, to pick plans by measurement (PERF_NOTES.md).
- triton: our deterministic backward with other tiles at D=64.

Not imported by the package; prints lines meant for PERF_NOTES.md.
"""

from __future__ import annotations

import math
import sys
import time

import torch

SHAPES = ((8, 16, 2048, 64, True), (8, 16, 2048, 64, False), (4, 16, 4096, 128, False),
          (4, 16, 4096, 128, True))


def _events_ms(fn, reps: int = 20) -> float:
    """Median of `reps` back-to-back single-call CUDA-event timings after two warm-up calls."""
    from baracuda.tools.bench import CudaEventChain

    fn()
    fn()
    torch.cuda.synchronize()
    chain = CudaEventChain(fn, reps, warmup=0)
    torch.cuda.synchronize()
    return sorted(chain.ms())[reps // 2]


def _host_ms(fn, steps: int = 20) -> float:
    """Host milliseconds per call with the GPU kept busy by a sleep kernel: the CPU never waits
    for the GPU, so this is Python + dispatch + launch time (a sync inside shows as ~sleep)."""
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(400_000_000)  # ~0.2 s at 1.98 GHz
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    host = (time.perf_counter() - t0) / steps
    torch.cuda.synchronize()
    return host * 1e3


def _flops(b, h, s, d, causal) -> float:
    return 4 * b * h * s * s * d / (2 if causal else 1)


def profile(b: int, h: int, s: int, d: int, causal: bool) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    from baracuda.families.attention.torch_api import scaled_dot_product_attention as ours
    from baracuda.tools.bench import time_fn

    sdpa = torch.nn.functional.scaled_dot_product_attention
    fl = _flops(b, h, s, d, causal)

    def mk():
        return torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    sets = []
    for _ in range(2):
        q = mk()
        sets.append({"q": q, "k": mk(), "v": mk(), "g": torch.randn_like(q)})
    print(f"== profile B={b} H={h} S={s} D={d} causal={causal}", flush=True)
    for name, fn in (("ours", ours), ("torch", sdpa)):
        def step(q, k, v, g, fn=fn):
            return torch.autograd.grad(fn(q, k, v, is_causal=causal), (q, k, v), g)

        def fwd(q, k, v, g, fn=fn):
            with torch.no_grad():
                return fn(q, k, v, is_causal=causal)

        ms = time_fn(step, sets, 1.5)
        fms = time_fn(fwd, sets, 1.0)
        one = sets[0]
        out = fn(one["q"], one["k"], one["v"], is_causal=causal)
        bms = _events_ms(lambda out=out, one=one: torch.autograd.grad(
            out, (one["q"], one["k"], one["v"]), one["g"], retain_graph=True))
        host = _host_ms(lambda step=step, one=one: step(**one))
        hostf = _host_ms(lambda fwd=fwd, one=one: fwd(**one))
        print(f"  {name:6} fwd+bwd {ms:.3f} ms {3.5 * fl / ms / 1e9:6.1f} TFLOP/s | fwd {fms:.3f} "
              f"ms {fl / fms / 1e9:6.1f} | bwd alone {bms:.3f} ms {2.5 * fl / bms / 1e9:6.1f} | "
              f"host/step {host:.3f} ms, host/fwd {hostf:.3f} ms", flush=True)
        with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(4):
                step(**sets[i % 2])
            torch.cuda.synchronize()
        kern: dict[str, list[float]] = {}
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                k = kern.setdefault(ev.name[:110], [0, 0.0])
                k[0] += 1
                k[1] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time
        for kname, (n, us) in sorted(kern.items(), key=lambda kv: -kv[1][1])[:8]:
            print(f"    {us / 4:8.1f} us/step x{n / 4:.0f}  {kname}", flush=True)
        rows = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14,
                                         max_name_column_width=50)
        print("\n".join("    " + r[:150] for r in rows.splitlines()), flush=True)


def host(b: int, h: int, s: int, d: int, causal: bool) -> None:
    """Host time per training step through baracuda.torch with each way of binding buffers to
    the cuDNN graph (plans_cudnn._EXECUTE), and cProfile's top entries of one."""
    from baracuda.families.attention import plans_cudnn as PC
    from baracuda.families.attention.torch_api import scaled_dot_product_attention as ours
    from baracuda.tools.bench import host_profile

    def mk():
        return torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    q, k, v = mk(), mk(), mk()
    g = torch.randn_like(q)

    def step():
        return torch.autograd.grad(ours(q, k, v, is_causal=causal), (q, k, v), g)

    def fwd():
        with torch.no_grad():
            return ours(q, k, v, is_causal=causal)

    print(f"== host B={b} H={h} S={s} D={d} causal={causal}", flush=True)
    from baracuda.families.attention.torch_api import _bwd, _fwd

    qd, kd, vd = q.detach(), k.detach(), v.detach()
    out, lse = _fwd(qd, kd, vd, None, None, 0.0, int(causal), 1 / math.sqrt(d))

    def bwd():
        return _bwd(g, qd, kd, vd, out, lse, None, None, 0.0, int(causal), 1 / math.sqrt(d))

    want = step()
    for bind in PC._EXECUTE:
        PC._BIND = bind
        try:
            got = step()
            ok = all(torch.allclose(a.float(), w.float(), atol=2e-2, rtol=2e-2)
                     for a, w in zip(got, want))
            print(f"  bind={bind:8} host/step {_host_ms(step):.3f} ms, host/fwd "
                  f"{_host_ms(fwd):.3f} ms, host/bwd called directly {_host_ms(bwd):.3f} ms; "
                  f"bench timing {_events_ms(step, 10):.3f} ms match={ok}", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"  bind={bind}: failed {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    PC._BIND = "raw"
    for name, fn, top in (("bwd called directly", bwd, 30), ("step", step, 30)):
        print(f"  cProfile bind=raw, {name}, 20 calls, by cumtime:", flush=True)
        table = host_profile(fn, 20, top, "cumtime", busy_cycles=400_000_000)
        for line in table.splitlines()[4:top + 7]:
            print("   ", line[:170], flush=True)


# -- cuDNN plans ---------------------------------------------------------------------------------
def _graph(desc, deterministic: bool, modes, band: bool):
    import cudnn

    from baracuda.families.attention.plans_cudnn import _canonical, _handle, _shapes

    dt = cudnn.data_type.BFLOAT16
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=_handle(0))
    shapes, strides = _shapes(desc, True), _canonical(desc, True)

    def inp(name, dtype=dt):
        return g.tensor(name=name, dim=list(shapes[name]), stride=list(strides[name]),
                        data_type=dtype)

    t = {n: inp(n) for n in ("q", "k", "v", "out", "dout")}
    t["lse"] = inp("lse", cudnn.data_type.FLOAT)
    causal = {}
    if desc.causal.value != "none":
        causal = ({"diagonal_alignment": cudnn.diagonal_alignment.TOP_LEFT,
                   "diagonal_band_right_bound": 0} if band else {"use_causal_mask": True})
    dq, dk, dv = g.sdpa_backward(name="bwd", q=t["q"], k=t["k"], v=t["v"], o=t["out"],
                                 dO=t["dout"], stats=t["lse"], attn_scale=float(desc.scale),
                                 use_deterministic_algorithm=deterministic, **causal)
    for name, x in (("dq", dq), ("dk", dk), ("dv", dv)):
        x.set_output(True).set_dim(list(shapes[name])).set_stride(list(strides[name]))
        x.set_data_type(dt)
        t[name] = x
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans(modes)
    return g, t


def cudnn_plans(budget_s: float) -> None:
    import cudnn

    from baracuda.families.attention.descriptors import CausalKind, SdpaBackwardDescriptor
    from baracuda.families.attention.plans_cudnn import _handle

    t_end = time.time() + budget_s
    h = _handle(0)
    cudnn.set_stream(h, torch.cuda.current_stream().cuda_stream)
    modes = [cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK]
    for b, hh, s, d, causal in SHAPES:
        ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
        desc = SdpaBackwardDescriptor(b, hh, hh, s, s, d, d, 1 / math.sqrt(d), torch.bfloat16,
                                      ck)
        fl = 2.5 * _flops(b, hh, s, d, causal)
        data = {n: torch.randn(b, hh, s, d, device="cuda", dtype=torch.bfloat16)
                for n in ("q", "k", "v", "out", "dout", "dq", "dk", "dv")}
        # a real lse so P is a softmax (timings of garbage stats can differ)
        sc = data["q"].float() @ data["k"].float().transpose(-1, -2) / math.sqrt(d)
        if causal:
            sc.masked_fill_(torch.ones(s, s, device="cuda", dtype=torch.bool).triu(1),
                            -float("inf"))
        data["lse"] = torch.logsumexp(sc, -1, keepdim=True).contiguous()
        del sc
        for det in (False, True):
            for band in ((False, True) if causal else (False,)):
                if time.time() > t_end:
                    print("cudnn budget spent", flush=True)
                    return
                tag = (f"B={b} H={hh} S={s} D={d} causal={causal} det={det} "
                       f"{'band' if band else 'mask'}")
                try:
                    g, t = _graph(desc, det, modes, band)
                except Exception as exc:  # noqa: BLE001
                    print(f"{tag}: graph failed {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                pack = {t[n]: data[n] for n in t}
                n = g.get_execution_plan_count()
                first = None
                for i in range(min(n, 8)):
                    _time_plan(g, pack, i, h, tag, fl)
                    if first is None:
                        try:
                            first = g.get_engine_and_knobs_at_index(i)
                        except Exception:  # noqa: BLE001
                            pass
                if first is not None and not band and time.time() < t_end:
                    _knob_variants(g, pack, h, tag, fl, first, t_end)


def _time_plan(g, pack, i, h, tag, fl) -> float | None:
    try:
        name = g.get_plan_name_at_index(i)
        g.build_plan_at_index(i)
        ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
        ms = _events_ms(lambda: g.execute_plan_at_index(pack, ws, index=i, handle=h), 10)
        try:
            eng, knobs = g.get_engine_and_knobs_at_index(i)
            knobs = {str(k).split(".")[-1]: v for k, v in knobs.items()}
        except Exception:  # noqa: BLE001
            eng, knobs = "?", {}
        print(f"{tag} plan {i} {name} eng={eng} knobs={knobs} ws={ws.numel()}: {ms:.3f} ms "
              f"{fl / ms / 1e9:.1f} TFLOP/s", flush=True)
        return ms
    except Exception as exc:  # noqa: BLE001
        print(f"{tag} plan {i}: failed {type(exc).__name__}: {str(exc)[:160]}", flush=True)
        return None


def _knob_variants(g, pack, h, tag, fl, first, t_end) -> None:
    eng, knobs = first
    errors = 0
    for k, v in list(knobs.items()):
        for nv in range(48):
            if nv == v or time.time() > t_end:
                continue
            kn = dict(knobs)
            kn[k] = nv
            try:
                g.create_execution_plan(eng, kn)
            except Exception as exc:  # noqa: BLE001 - an invalid knob value is a result
                if errors < 2:
                    print(f"{tag} knob {k}={nv}: {type(exc).__name__}: {str(exc)[:160]}")
                errors += 1
                continue
            _time_plan(g, pack, g.get_execution_plan_count() - 1, h,
                       f"{tag} knob {str(k).split('.')[-1]}={nv}", fl)


def knob_sweep(budget_s: float) -> None:
    """The deterministic backward at D=128 (the shape where it trails): every KERNEL_CFG value
    of cuDNN's first engine that builds, timed."""
    import cudnn

    from baracuda.families.attention.descriptors import CausalKind, SdpaBackwardDescriptor
    from baracuda.families.attention.plans_cudnn import _handle

    t_end = time.time() + budget_s
    h = _handle(0)
    cudnn.set_stream(h, torch.cuda.current_stream().cuda_stream)
    for b, hh, s, d, causal in SHAPES[2:]:
        ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
        desc = SdpaBackwardDescriptor(b, hh, hh, s, s, d, d, 1 / math.sqrt(d), torch.bfloat16,
                                      ck)
        data = {n: torch.randn(b, hh, s, d, device="cuda", dtype=torch.bfloat16)
                for n in ("q", "k", "v", "out", "dout", "dq", "dk", "dv")}
        data["lse"] = torch.randn(b, hh, s, 1, device="cuda") + 9
        for det in (True, False):
            tag = f"sweep D={d} causal={causal} det={det}"
            g, t = _graph(desc, det, [cudnn.heur_mode.A], False)
            pack = {t[n]: data[n] for n in t}
            _time_plan(g, pack, 0, h, tag, 2.5 * _flops(b, hh, s, d, causal))
            if det:
                _knob_variants(g, pack, h, tag, 2.5 * _flops(b, hh, s, d, causal),
                               g.get_engine_and_knobs_at_index(0), t_end)


# -- Triton tiles ------------------------------------------------------------------------------
def triton_tiles(budget_s: float) -> None:
    from baracuda.families.attention import plans as P
    from baracuda.families.attention.descriptors import (
        CausalKind,
        SdpaBackwardArgs,
        SdpaBackwardDescriptor,
    )
    from baracuda.families.attention.plans import SdpaBackwardPlan

    t_end = time.time() + budget_s
    trials = {
        "dkdv": [(32, 64, 4, 3), (64, 64, 4, 3), (32, 128, 4, 3), (64, 128, 8, 3),
                 (64, 64, 8, 3), (32, 64, 4, 4), (64, 64, 4, 2)],
        "dq": [(64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 8, 2), (64, 128, 4, 2),
               (128, 64, 8, 3), (64, 32, 4, 3)],
    }
    for b, h, s, d, causal in SHAPES:
        if d != 64:
            continue
        ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
        db = SdpaBackwardDescriptor(b, h, h, s, s, d, d, 1 / math.sqrt(d), torch.bfloat16, ck)
        q, k, v, o, do, dq, dk, dv = (torch.randn(b, h, s, d, device="cuda",
                                                  dtype=torch.bfloat16) for _ in range(8))
        lse = torch.randn(b, h, s, device="cuda") + 8
        cand = next(c for c in SdpaBackwardPlan.candidates if c.name == "triton_flash_bwd")
        from baracuda.core.vocab import ArchSku, PlanPreference

        plan = SdpaBackwardPlan(db, cand, PlanPreference(), ArchSku.current())
        ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
        args = SdpaBackwardArgs(q, k, v, o, do, lse, dq, dk, dv)
        fl = 2.5 * _flops(b, h, s, d, causal)
        for table, configs in trials.items():
            tab = {"dkdv": P._DKDV, "dq": P._DQ}[table]
            orig = tab[("half", 64)]
            for cfg in configs:
                if time.time() > t_end:
                    tab[("half", 64)] = orig
                    print("triton budget spent", flush=True)
                    return
                tab[("half", 64)] = cfg
                try:
                    ms = _events_ms(lambda p=plan, a=args, w=ws: p.run(a, workspace=w), 10)
                    print(f"triton bwd D={d} causal={causal} {table} {cfg}: {ms:.3f} ms "
                          f"{fl / ms / 1e9:.1f} TFLOP/s", flush=True)
                except Exception as exc:  # noqa: BLE001
                    print(f"triton {table} {cfg} failed: {str(exc)[:120]}", flush=True)
            tab[("half", 64)] = orig


def main(argv: list[str]) -> None:
    what = [a for a in argv if not a.replace(".", "").isdigit()] or ["profile", "host",
                                                                        "cudnn", "triton"]
    secs = float(next((a for a in argv if a.replace(".", "").isdigit()), "60"))
    print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
    probes = {"profile": lambda: [profile(*shape) for shape in SHAPES[:2]],
              "host": lambda: host(*SHAPES[0]), "cudnn": lambda: cudnn_plans(secs),
              "knobs": lambda: knob_sweep(secs), "triton": lambda: triton_tiles(secs)}
    for name, probe in probes.items():
        if name in what:
            probe()


if __name__ == "__main__":
    main(sys.argv[1:])
