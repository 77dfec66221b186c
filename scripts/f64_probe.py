"""f64 unary kinds on the GPU against torch (session 16: hardswish f64 was 1.4e-7 off at
x = 4.5678 in the GPU fuzz, an f32-sized error): prints the worst error per kind.

    python scripts/f64_probe.py
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import baracuda.torch as bt


def main() -> None:
    x = torch.linspace(-8, 8, 4097, dtype=torch.float64, device="cuda") + 1e-3
    cases = {
        "hardswish": (bt.hardswish, F.hardswish),
        "hardsigmoid": (bt.hardsigmoid, F.hardsigmoid),
        "relu6": (bt.relu6, F.relu6),
        "hardtanh": (bt.hardtanh, F.hardtanh),
        "softsign": (bt.softsign, F.softsign),
        "silu": (bt.silu, F.silu),
    }
    for name, (ours, theirs) in cases.items():
        for layout in ("contiguous", "strided"):
            xi = x if layout == "contiguous" else torch.empty(4097, 2, dtype=x.dtype,
                                                              device=x.device)[:, 0]
            if layout == "strided":
                xi.copy_(x)
            a, b = ours(xi), theirs(xi)
            err = (a - b).abs()
            i = int(err.argmax())
            print(f"{name:12} {layout:10} worst {float(err[i]):.3e} at x={float(xi[i]):.4f} "
                  f"dtype {a.dtype}")


if __name__ == "__main__":
    main()
