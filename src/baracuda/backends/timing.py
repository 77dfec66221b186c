"""CUDA-event timing shared by runtime tuners (a plan picking a tile on first use) and the
benchmark harness."""

from __future__ import annotations

import torch


class CudaEventChain:
    """Per-call CUDA-event timing: `warmup` calls of `fn`, then `reps` calls back to back between
    reps + 1 events recorded on the current stream (call i runs from event i to event i + 1, so
    each timed call starts behind the previous one and no launch latency lands inside it).
    Recording never synchronizes: record several chains, then read each with `ms()`."""

    def __init__(self, fn, reps: int, warmup: int = 1):
        for _ in range(warmup):
            fn()
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        self.events[0].record()
        for e in self.events[1:]:
            fn()
            e.record()

    def ms(self) -> list[float]:
        """Milliseconds of each timed call, in call order (waits for the last event)."""
        self.events[-1].synchronize()
        return [s.elapsed_time(e) for s, e in zip(self.events, self.events[1:])]
