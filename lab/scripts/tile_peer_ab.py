"""Softmax TILE configs against torch.compile through the functions, interleaved: the bench's
timing (rotating input sets, median of batches) of ours with the table's tile, ours with each
candidate (ROWS x warps, patched into plans.launch_config), and torch.compile of
torch.softmax, for ROUNDS rounds on the same inputs. GB/s = x + y bytes.

    python3 lab/scripts/tile_peer_ab.py ROUNDS DTYPE ROWSxCOLS ROWSxWARPS [...]

Run with BARACUDA_REPLAY=0 (replayed launches keep the tile they were recorded with).
(Session 17 also timed a "noeven" variant, the TILE forward without masks on whole lines:
within 0.2% either way, not kept.)

TILE_AB_GRAPH=1: GPU time instead, each function (output allocation included) replayed in a
CUDA graph on one input (triton.testing.do_bench_cudagraph): whether a gap is the kernel's.
"""

from __future__ import annotations

import os
import statistics
import sys

import torch
import triton.testing

from baracuda.families.softmax import plans as P
from baracuda.tools import bench as B


def main(rounds: int, dtype: str, shape: str, tiles: list[str]) -> None:
    from baracuda.torch import softmax

    dt = getattr(torch, dtype)
    shape = tuple(int(v) for v in shape.split("x"))
    case = B.BenchCase("softmax fwd", str(shape), lambda dev: {
        "x": torch.randn(shape, device=dev, dtype=dt)}, ours=lambda x: softmax(x, -1),
        torch_eager=lambda x: torch.softmax(x, -1), bytes=2 * shape[0] * shape[1] * dt.itemsize)
    sets = B.input_sets(case, torch.device("cuda"))
    table = P.launch_config
    compiled = torch.compile(case.torch_eager)

    def with_tile(tile):
        rows, warps = (int(v) for v in tile.split("x"))

        def cfg(extent, element, rows_=1 << 20, backward=False, log=False):
            out = table(extent, element, rows_, backward, log)
            return dict(out, ROWS=rows, num_warps=warps) if out["MODE"] == P.TILE else out
        return cfg

    fns = {"table": (table, case.ours)}
    fns.update({t: (with_tile(t), case.ours) for t in tiles})
    fns["compile"] = (table, compiled)
    rates = {name: [] for name in fns}
    for r in range(rounds):
        for name, (cfg, fn) in (fns.items() if r % 2 == 0 else reversed(fns.items())):
            P.launch_config = cfg
            P._STEPS._table.clear()  # launch recipes are cached per layout: work them out again
            if os.environ.get("TILE_AB_GRAPH") == "1":
                x = sets[0]["x"]
                ms = triton.testing.do_bench_cudagraph(lambda fn=fn, x=x: fn(x), rep=100)
                rates[name].append(case.bytes / ms / 1e6)
            else:
                rates[name].append(B._measure(case, fn, sets, 0.5).rate)
    P.launch_config = table
    P._STEPS._table.clear()
    for name, rs in rates.items():
        print(f"{dtype} {shape} {name:8} median {statistics.median(rs):6.0f}  "
              f"{' '.join(f'{v:.0f}' for v in rs)}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:])
