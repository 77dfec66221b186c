"""Where a host-bound training step's time goes: the `baracuda bench --train` model at a small
shape, forward and backward timed apart (ours and torch eager), GPU busy time per step from
torch.profiler, then cProfile of our steps (top functions by own time and by cumulative
time; the backward runs on the calling thread there, so that cProfile sees it).

Usage (GPU machine): python3 lab/scripts/step_profile.py [BxS, default 1x512] [steps]
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

from baracuda.backends import launch_replay
from baracuda.tools import train_step as ts


def main() -> None:
    b, s = (int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "1x512").split("x"))
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    shape, dev = ts.ModelShape(), torch.device("cuda")
    params = ts.init_params(shape, dev, torch.bfloat16)
    tokens = torch.randint(0, shape.vocab, (b, s), device=dev)
    targets = torch.randint(0, shape.vocab, (b, s), device=dev)
    cos, sin = ts.rope_tables(s, shape.dim // shape.heads, dev)
    ways = {"baracuda": ts.baracuda_ops(), "torch eager": ts.torch_ops()}

    def step(ops):
        for p in params.values():
            p.grad = None
        t0 = time.perf_counter()
        loss = ts.loss_fn(ops, shape, params, tokens, targets, cos, sin)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    for name, ops in ways.items():
        for _ in range(5):
            step(ops)
        torch.cuda.synchronize()
        fw = bw = 0.0
        t0 = time.perf_counter()
        for _ in range(steps):
            f, g = step(ops)
            fw, bw = fw + f, bw + g
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / steps * 1e3
        with torch.no_grad():
            t1 = time.perf_counter()
            for _ in range(steps):
                ts.loss_fn(ops, shape, params, tokens, targets, cos, sin)
            torch.cuda.synchronize()
            inf = (time.perf_counter() - t1) / steps * 1e3
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step(ops)
            torch.cuda.synchronize()
        gpu_us = sum(e.self_device_time_total for e in prof.key_averages()) / 3
        kernels = sum(e.count for e in prof.key_averages()) / 3
        print(f"== {name}: step {wall:.2f} ms (host fw {fw / steps * 1e3:.2f} ms, host bw call "
              f"{bw / steps * 1e3:.2f} ms), no_grad forward {inf:.2f} ms, GPU busy "
              f"{gpu_us / 1e3:.2f} ms/step in {kernels:.0f} kernels")

    # host time per forward call of each op in the model's context (the GPU queue absorbs
    # the work: what is timed is the call's own host time, or a wait if it blocks)
    for name, ops in ways.items():
        spent: dict[str, list[float]] = {}

        def timed(fn, label, spent=spent):
            def call(*args, **kwargs):
                t0 = time.perf_counter()
                out = fn(*args, **kwargs)
                spent.setdefault(label, []).append(time.perf_counter() - t0)
                return out
            return call

        wrapped = ts.Ops(**{f: timed(getattr(ops, f), f) for f in ts.Ops.__dataclass_fields__})
        for _ in range(3):
            step(wrapped)
        torch.cuda.synchronize()
        spent.clear()
        for _ in range(steps):
            step(wrapped)
        torch.cuda.synchronize()
        print(f"-- {name}: forward host time per step by op (ms), calls per step, us per call")
        for label, times in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
            n = len(times) / steps
            print(f"   {label:14s} {sum(times) / steps * 1e3:7.3f} ms  {n:5.1f} calls  "
                  f"{sum(times) / len(times) * 1e6:8.1f} us")

    print(launch_replay.refusals() or "launch replay: every recorded op replays")
    ops = ways["baracuda"]
    prof = cProfile.Profile()
    # backward on this thread, so that cProfile sees our backward functions too
    with torch.autograd.set_multithreading_enabled(False):
        prof.enable()
        for _ in range(steps):
            step(ops)
        torch.cuda.synchronize()
        prof.disable()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(45)
    st.sort_stats("cumtime").print_stats(45)


if __name__ == "__main__":
    main()
