"""Time only our side of bench cases (no peers, no torch.compile), for quick A/Bs of two trees
on the GPU machine (run once per tree with PYTHONPATH switched, interleaved):

    python3 lab/scripts/ours_ab.py FAMILY "MATCH" ["MATCH" ...]

Prints GB/s (or the case's unit) per case, measured as `baracuda bench` measures ours.
"""

from __future__ import annotations

import sys

import torch

from baracuda.tools import bench as B


def main(family: str, matches: list[str]) -> None:
    device = torch.device("cuda")
    for match in matches:
        for _family, case in B.select_cases(family, False, match):
            sets = B.input_sets(case, device)
            timing = B._measure(case, case.ours, sets, 0.5)
            print(f"{case.name} {case.shape}: {timing.rate:.1f}", flush=True)
            del sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
