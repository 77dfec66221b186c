"""A/B of the long-line softmax forward modes through the frontend, timed as the bench times
(tools.bench.time_fn: batches of calls over rotating inputs) and with triton's do_bench.

Usage (GPU machine): python3 lab/scripts/softmax_long_ab.py
"""

from __future__ import annotations

import torch
import triton
import triton.testing

import baracuda.torch as bt
from baracuda.backends import torch_ops as factory
from baracuda.backends.triton_exchange import SPIN_LIMIT
from baracuda.core.plan import _select_cached
from baracuda.families.softmax import plans as P
from baracuda.families.softmax.kernels import EXCHANGE, LOOP
from baracuda.tools.bench import time_fn

ORIG = P.launch_config


def forced(mode, block, warps, seg=None):
    """seg: the LOOP's segment length (None: one program per line)."""
    def cfg(extent, element, rows=1 << 20, backward=False):
        if backward:
            return ORIG(extent, element, rows, backward)
        out = {"MODE": mode, "BLOCK": block, "ROWS": 1, "num_warps": warps,
               "PARTS": triton.next_power_of_2(triton.cdiv(extent, block))}
        if mode == EXCHANGE:
            out["SPIN"] = SPIN_LIMIT
        if mode == LOOP:
            out.update(KEEP="evict_last", STREAM="evict_first", PARTS=1)
            if seg:
                out.update(SEG=seg, SPIN=SPIN_LIMIT)
        return out
    return cfg


def main() -> None:
    for shape in ((256, 262144), (1024, 65536)):
        sets = [{"x": torch.randn(shape, device="cuda", dtype=torch.bfloat16)} for _ in range(3)]
        nbytes = 2 * sets[0]["x"].numel() * 2
        for name, cfg in (("default", ORIG), ("exchange 8192x8", forced(EXCHANGE, 8192, 8)),
                          ("exchange 4096x4", forced(EXCHANGE, 4096, 4)),
                          ("loop 8192x16", forced(LOOP, 8192, 16)),
                          *((f"loop {b}x{w} seg {seg}", forced(LOOP, b, w, seg))
                            for b, w in ((8192, 16), (4096, 8)) for seg in (16384, 32768, 65536)
                            if seg < shape[1])):
            P.launch_config = cfg
            P._STEPS.clear()
            _select_cached.cache_clear()
            factory._TRUSTED.clear()
            ms = time_fn(lambda x: bt.softmax(x, -1), sets, 1.0)
            x = sets[0]["x"]
            db = triton.testing.do_bench(lambda x=x: bt.softmax(x, -1), warmup=10, rep=50)
            print(f"{list(shape)} {name:18} bench {nbytes / ms / 1e6:7.0f} GB/s   "
                  f"do_bench {nbytes / db / 1e6:7.0f} GB/s", flush=True)
        P.launch_config = ORIG


if __name__ == "__main__":
    main()
