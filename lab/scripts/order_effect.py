"""Does a bench measurement depend on what ran just before it? For bench cases (the bench's
own timing, budget per measurement as in one of its rounds), time ours and one peer right
after each of: the same function, torch eager (a slower kernel at these rows), and an idle
pause; ROUNDS rounds, medians.

    python3 lab/scripts/order_effect.py FAMILY PEER ROUNDS "MATCH" ["MATCH" ...]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from baracuda.tools import bench as B


def main(family: str, peer: str, rounds: int, matches: list[str]) -> None:
    device = torch.device("cuda")
    budget = 0.5 / B.ROUNDS
    for match in matches:
        for _family, case in B.select_cases(family, True, match):
            sets = B.input_sets(case, device)
            fns = {"ours": case.ours, peer: case.extra_peers[peer], "eager": case.torch_eager}
            seen: dict[str, list[float]] = {}
            for _ in range(rounds):
                for name in ("ours", peer):
                    for before in (name, "eager", "idle"):
                        if before == "idle":
                            torch.cuda.synchronize()
                            time.sleep(0.2)
                        else:
                            B._measure(case, fns[before], sets, budget)
                        rate = B._measure(case, fns[name], sets, budget).rate
                        seen.setdefault(f"{name} after {before}", []).append(rate)
            print(f"{case.name} {case.shape}: " + "  ".join(
                f"{k} {statistics.median(v):.0f}" for k, v in seen.items()), flush=True)
            del sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:])
