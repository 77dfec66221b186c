"""rms_norm halves' 16K-row forward: the prefetching persistent tile against the plain grid,
gamma loaded with the row or after the reductions (W_FIRST), padded first or last; kernel only
(normalization/tune.py's CUDA-graph timing), three interleaved rounds, x + y GB/s.

    python lab/scripts/norm_fwd16k_ab.py
"""

from __future__ import annotations

import torch
from lab.normalization import tune as T

from baracuda.backends.triton_support import sm_count
from baracuda.families.normalization import layout as L
from baracuda.families.normalization import plans as P


def main() -> None:
    sms = sm_count()
    plain = dict(BLOCK_R=1, BLOCK_N=16384, SINGLE=True, num_warps=16, PIPE=False, G=4096)
    variants = {
        "prefetch, first": (dict(plain, PIPE=True, G=min(4096, 4 * sms), W_FIRST=False), False),
        "plain W_FIRST, last": (dict(plain, W_FIRST=True), True),
        "plain W_FIRST, first": (dict(plain, W_FIRST=True), False),
        "plain, last": (dict(plain, W_FIRST=False), True),
        "plain, first": (dict(plain, W_FIRST=False), False),
        "plain 32 warps, last": (dict(plain, W_FIRST=False, num_warps=32), True),
    }
    for dtype in (torch.bfloat16, torch.float16):
        plan_cls, desc, args, nbytes = T._problem("fwd", (4096, 16384), dtype, False)
        rates = {k: [] for k in variants}
        for _ in range(3):
            for name, (cfg, last) in variants.items():
                T._use("fwd", cfg)
                P.pads_last = lambda *a, last=last: last
                T._time(plan_cls, desc, args)
                rates[name].append(nbytes / T._time(plan_cls, desc, args) / 1e6)
        T._use("fwd", None)
        P.pads_last = L.pads_last
        print(f"rms {str(dtype)[6:]} [4096, 16384] fwd: " + "  ".join(
            f"{k} {' / '.join(f'{r:.0f}' for r in v)}" for k, v in rates.items()), flush=True)


if __name__ == "__main__":
    main()
