"""Host time of one eager call of the norm functions at a real shape, with the GPU kept busy
(a queued sleep) so that no call waits for the device: what bounds the bench's forward rows
when the kernel is short (layer_norm [32768, 1024] bf16: ~46 us of GPU time).

    python3 lab/scripts/norm_host_cost.py [--profile]
"""

from __future__ import annotations

import sys
import time

import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.tools.bench import host_profile


def host_us(fn, n: int = 300) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # ~1 s of GPU work ahead of the timed calls
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return us


def main(profile: bool) -> None:
    dev = torch.device("cuda")
    x = torch.randn(32768, 1024, device=dev, dtype=torch.bfloat16)
    w = torch.rand(1024, device=dev, dtype=torch.bfloat16)
    b = torch.randn(1024, device=dev, dtype=torch.bfloat16)
    cases = {
        "rms_norm fwd": (lambda: bt.rms_norm(x, (1024,), w), lambda: F.rms_norm(x, (1024,), w)),
        "layer_norm fwd": (lambda: bt.layer_norm(x, (1024,), w, b),
                           lambda: F.layer_norm(x, (1024,), w, b)),
        "layer_norm fwd, no bias": (lambda: bt.layer_norm(x, (1024,), w),
                                    lambda: F.layer_norm(x, (1024,), w)),
        "softmax fwd": (lambda: bt.softmax(x, -1), lambda: torch.softmax(x, -1)),
    }
    print(f"{'call [32768, 1024] bf16':<28} {'baracuda us':>12} {'torch us':>10}")
    for name, (ours, theirs) in cases.items():
        print(f"{name:<28} {host_us(ours):12.1f} {host_us(theirs):10.1f}", flush=True)
    if profile:
        for name in ("softmax fwd", "rms_norm fwd", "layer_norm fwd"):
            for order in ("cumulative", "tottime"):
                print(f"==== {name} ({order})")
                print(host_profile(cases[name][0], 300, 30, order, busy_cycles=2_000_000_000))


if __name__ == "__main__":
    main("--profile" in sys.argv)
