"""Exchange kernels launched with and without programmatic dependent launch after their
counter fill (backends/triton_exchange.AFTER_FILL), our side of bench cases, interleaved
rounds: the bench's timing (rotating inputs, median of batches), GB/s.

    python3 scripts/pdl_ab.py ROUNDS FAMILY:MATCH [FAMILY:MATCH ...]
"""

from __future__ import annotations

import statistics
import sys

import torch

from baracuda.backends import triton_exchange as X
from baracuda.tools import bench as B


def main(rounds: int, picks: list[str]) -> None:
    device = torch.device("cuda")
    pdl = dict(X.AFTER_FILL)
    for pick in picks:
        family, match = pick.split(":", 1)
        for _family, case in B.select_cases(family, False, match):
            sets = B.input_sets(case, device)
            rates = {"off": [], "pdl": []}
            for _ in range(rounds):
                for mode in ("off", "pdl"):
                    X.AFTER_FILL.clear()
                    X.AFTER_FILL.update(pdl if mode == "pdl" else {})
                    rates[mode].append(B._measure(case, case.ours, sets, 0.4).rate)
            X.AFTER_FILL.update(pdl)
            gain = statistics.median(p / o for p, o in zip(rates["pdl"], rates["off"]))
            print(f"{case.name} {case.shape}: off {' '.join(f'{r:.0f}' for r in rates['off'])}"
                  f" | pdl {' '.join(f'{r:.0f}' for r in rates['pdl'])} | x{gain:.3f}",
                  flush=True)
            del sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
