"""Ours against one peer of bench cases, interleaved: the bench's own timing (rotating input
sets, median of batches) of ours, then the peer, for ROUNDS rounds on the same inputs, so
that clock or order effects of one `baracuda bench` run do not decide a ratio of 1-2%.

    python3 lab/scripts/peer_ab.py FAMILY PEER ROUNDS "MATCH" ["MATCH" ...]

PEER: an extra peer of the case ("liger"), "torch" (eager) or "compile" (torch.compile of
the eager function, as the bench makes it). Prints each round's rates and the median ratio
(peer time / ours: > 1 means ours is faster). PEER_AB_COMPILE=1 first runs torch.compile of
the eager function once, as the bench does before its rounds.
"""

from __future__ import annotations

import os
import statistics
import sys

import torch

from baracuda.tools import bench as B


def main(family: str, peer: str, rounds: int, matches: list[str]) -> None:
    device = torch.device("cuda")
    for match in matches:
        for _family, case in B.select_cases(family, False, match):
            fn = {"torch": case.torch_eager,
                  "compile": case.torch_eager and torch.compile(case.torch_eager)}.get(
                      peer, case.extra_peers.get(peer))
            if fn is None:
                continue
            sets = B.input_sets(case, device)
            if os.environ.get("PEER_AB_COMPILE") == "1":  # as the bench: a compiled peer ran
                torch.compile(case.torch_eager)(**sets[0])
                torch.cuda.synchronize()
            ours, theirs = [], []
            for _ in range(rounds):
                ours.append(B._measure(case, case.ours, sets, 0.5).rate)
                theirs.append(B._measure(case, fn, sets, 0.5).rate)
            ratio = statistics.median(o / t for o, t in zip(ours, theirs))
            print(f"{case.name} {case.shape}: ours {' '.join(f'{r:.0f}' for r in ours)} | "
                  f"{peer} {' '.join(f'{r:.0f}' for r in theirs)} | median ratio {ratio:.3f}",
                  flush=True)
            del sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:])
