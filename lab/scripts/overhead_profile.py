"""Host time per eager call, baracuda vs torch, on tiny CUDA tensors (where launch and Python
overhead is everything), plus a cProfile breakdown of the slowest path.

Usage (GPU machine): python3 lab/scripts/overhead_profile.py [--profile NAME]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.tools.bench import host_profile, host_seconds_per_call


def _cases(dev):
    x = torch.randn(8, 64, device=dev)
    xg = torch.randn(8, 64, device=dev, requires_grad=True)
    w = torch.randn(64, device=dev, requires_grad=True)
    y = torch.randn(8, 64, device=dev)

    def fb(fn):
        return lambda: torch.autograd.grad(fn().sum(), xg)

    from baracuda.families.softmax.torch_api import _softmax_backward

    def softmax_function(forward, backward):
        """A Python autograd.Function over the given softmax forward / backward: with torch's
        kernels on both sides it is the floor any Python-level differentiable op (ours,
        Liger's) pays on this host; mixing sides isolates each side's cost."""

        def fwd(ctx, t):
            out = forward(t)
            ctx.save_for_backward(out)
            return out

        def bwd(ctx, g):
            (out,) = ctx.saved_tensors
            return backward(g, out)

        return type("SoftmaxFn", (torch.autograd.Function,),
                    {"forward": staticmethod(fwd), "backward": staticmethod(bwd)})

    def torch_fwd(t):
        return torch.softmax(t, -1)

    def torch_bwd(g, out):
        return torch._softmax_backward_data(g, out, -1, out.dtype)

    PySoftmax = softmax_function(torch_fwd, torch_bwd)
    OursFwdTorchBwd = softmax_function(lambda t: bt.softmax(t, -1), torch_bwd)
    TorchFwdOursBwd = softmax_function(
        torch_fwd, lambda g, out: _softmax_backward(g.contiguous(), out, 1, False))

    def single_thread(fn):
        def run():
            with torch.autograd.set_multithreading_enabled(False):
                return fn()
        return run

    y_ours, y_torch = bt.softmax(xg, -1), F.softmax(xg, -1)
    dy = torch.randn_like(y_ours)
    return {
        "softmax bwd only": (lambda: torch.autograd.grad(y_ours, xg, dy, retain_graph=True),
                             lambda: torch.autograd.grad(y_torch, xg, dy, retain_graph=True)),
        "pyfunc softmax f+b": (fb(lambda: PySoftmax.apply(xg)), fb(lambda: F.softmax(xg, -1))),
        "ours fwd, torch bwd": (fb(lambda: OursFwdTorchBwd.apply(xg)),
                                fb(lambda: F.softmax(xg, -1))),
        "torch fwd, ours bwd": (fb(lambda: TorchFwdOursBwd.apply(xg)),
                                fb(lambda: F.softmax(xg, -1))),
        "f+b 1 thread": (single_thread(fb(lambda: bt.softmax(xg, -1))),
                         single_thread(fb(lambda: F.softmax(xg, -1)))),
        "rms f+b 1 thread": (single_thread(fb(lambda: bt.rms_norm(xg, (64,), w))),
                             single_thread(fb(lambda: F.rms_norm(xg, (64,), w)))),
        "softmax fwd": (lambda: bt.softmax(x, -1), lambda: F.softmax(x, -1)),
        "softmax fwd+bwd": (fb(lambda: bt.softmax(xg, -1)), fb(lambda: F.softmax(xg, -1))),
        "rms_norm fwd": (lambda: bt.rms_norm(x, (64,), w.detach()),
                         lambda: F.rms_norm(x, (64,), w.detach())),
        "rms_norm fwd+bwd": (fb(lambda: bt.rms_norm(xg, (64,), w)),
                             fb(lambda: F.rms_norm(xg, (64,), w))),
        "gelu fwd": (lambda: bt.gelu(x), lambda: F.gelu(x)),
        "add fwd": (lambda: bt.add(x, y), lambda: torch.add(x, y)),
        "gelu fwd+bwd": (fb(lambda: bt.gelu(xg)), fb(lambda: F.gelu(xg))),
    }


def per_call_us(fn, n=2000) -> float:
    return host_seconds_per_call(fn, n, warmup=50) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="softmax fwd+bwd")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--kernels", default="", help="case to run under torch.profiler")
    a = ap.parse_args()
    cases = _cases(torch.device("cuda"))
    print(f"{'op':<20} {'baracuda us':>12} {'torch us':>10} {'ratio':>7}")
    for name, (ours, theirs) in cases.items():
        o, t = per_call_us(ours), per_call_us(theirs)
        print(f"{name:<20} {o:12.1f} {t:10.1f} {o / t:7.2f}")
    if a.kernels:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(50):
                cases[a.kernels][0]()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12,
                                        max_name_column_width=50))
    for name in filter(None, a.profile.split(",")):
        print(f"==== profile: {name}")
        fn = cases[name][0]
        for order in ("tottime", "cumulative"):
            print(host_profile(fn, 2000, a.top, order))


if __name__ == "__main__":
    main()
