"""Where a differentiable call's host time goes: forward, the hand-off to the autograd engine's
device thread, our Python backward, the hand-off back. Tiny CUDA problems, so host time is all.

Usage (GPU machine): python3 lab/scripts/autograd_timeline.py [--n 2000]
Prints microseconds per phase (means) for baracuda ops and for torch's kernels wrapped in a
Python autograd.Function (the floor any Python-level differentiable op pays).
"""

from __future__ import annotations

import argparse
import gc
import time

import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.families.normalization import torch_api as norm_api
from baracuda.families.softmax import torch_api as softmax_api

_clock = time.perf_counter_ns
_marks: dict[str, int] = {}


def _timed_backward(backward):
    def wrapped(ctx, *grads):
        _marks["bwd_in"] = _clock()
        out = backward(ctx, *grads)
        _marks["bwd_out"] = _clock()
        return out
    return staticmethod(wrapped)


def _instrument(function_cls) -> None:
    function_cls.backward = _timed_backward(function_cls.backward)


def _torch_softmax_function():
    def fwd(ctx, t):
        out = torch.softmax(t, -1)
        ctx.save_for_backward(out)
        return out

    def bwd(ctx, g):
        (out,) = ctx.saved_tensors
        return torch._softmax_backward_data(g, out, -1, out.dtype)

    return type("TorchSoftmaxFn", (torch.autograd.Function,),
                {"forward": staticmethod(fwd), "backward": _timed_backward(bwd)})


def timeline(fn, leaf, n: int) -> dict[str, float]:
    sums = dict.fromkeys(("forward", "to engine", "hand-off in", "backward body",
                          "hand-off out", "total"), 0.0)
    for i in range(n + 50):
        t0 = _clock()
        y = fn()
        t1 = _clock()
        g = torch.ones_like(y)
        t2 = _clock()
        torch.autograd.grad(y, leaf, g)
        t3 = _clock()
        if i < 50:
            continue
        sums["forward"] += t1 - t0
        sums["to engine"] += t2 - t1
        sums["hand-off in"] += _marks["bwd_in"] - t2
        sums["backward body"] += _marks["bwd_out"] - _marks["bwd_in"]
        sums["hand-off out"] += t3 - _marks["bwd_out"]
        sums["total"] += t3 - t0
    torch.cuda.synchronize()
    return {k: v / n / 1e3 for k, v in sums.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    n = ap.parse_args().n
    dev = torch.device("cuda")
    xg = torch.randn(8, 64, device=dev, requires_grad=True)
    w = torch.randn(64, device=dev, requires_grad=True)
    _instrument(softmax_api._softmax._function)
    _instrument(norm_api._RMSNormFunction)
    torch_fn = _torch_softmax_function()
    cases = {
        "torch kernels in a Python Function": lambda: torch_fn.apply(xg),
        "baracuda softmax": lambda: bt.softmax(xg, -1),
        "baracuda rms_norm": lambda: bt.rms_norm(xg, (64,), w),
    }
    variants = {
        "default": lambda: None,
        "gc disabled": gc.disable,
        "single-threaded autograd": lambda: None,
    }
    phases = None
    for vname, setup in variants.items():
        setup()
        for cname, fn in cases.items():
            if vname == "single-threaded autograd":
                with torch.autograd.set_multithreading_enabled(False):
                    r = timeline(fn, xg, n)
            else:
                r = timeline(fn, xg, n)
            if phases is None:
                phases = list(r)
                print(f"{'variant':<26}{'case':<36}" + "".join(f"{p:>15}" for p in phases))
            print(f"{vname:<26}{cname:<36}" + "".join(f"{r[p]:15.1f}" for p in phases))
        gc.enable()
    # torch's own native ops, total only (no Python backward to mark)
    for name, fn in (("torch softmax", lambda: F.softmax(xg, -1)),
                     ("torch rms_norm", lambda: F.rms_norm(xg, (64,), w))):
        for _ in range(50):
            torch.autograd.grad(fn(), xg, torch.ones(8, 64, device=dev))
        t0 = _clock()
        for _ in range(n):
            y = fn()
            torch.autograd.grad(y, xg, torch.ones_like(y))
        torch.cuda.synchronize()
        print(f"{'native':<26}{name:<36}{'':>75}{(_clock() - t0) / n / 1e3:15.1f}")


if __name__ == "__main__":
    main()
