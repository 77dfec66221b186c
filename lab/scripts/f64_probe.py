"""f64 unary kinds on the GPU, ours and torch's CUDA kernels, each against torch's CPU result
(session 16: hardswish f64 was 1.4e-7 off torch's CUDA result at x = 4.5678 in the GPU fuzz,
an f32-sized error): the worst error per kind.

    python lab/scripts/f64_probe.py [constants]
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import baracuda.torch as bt


def main() -> None:
    x = torch.linspace(-8, 8, 4097, dtype=torch.float64, device="cuda") + 1e-3
    names = ["hardswish", "hardsigmoid", "relu6", "hardtanh", "softsign", "silu"]
    cases = {n: (getattr(bt, n), getattr(F, n)) for n in names}
    for name, (ours, theirs) in cases.items():
        for layout in ("contiguous", "strided"):
            xi = x if layout == "contiguous" else torch.empty(4097, 2, dtype=x.dtype,
                                                              device=x.device)[:, 0]
            if layout == "strided":
                xi.copy_(x)
            a, b, c = ours(xi), theirs(xi), theirs(xi.cpu()).cuda()
            for who, err in (("ours", (a - c).abs()), ("torch cuda", (b - c).abs())):
                i = int(err.argmax())
                print(f"{name:12} {layout:10} {who:10} vs torch cpu: worst {float(err[i]):.3e} "
                      f"at x={float(xi[i]):.4f}")




def constants() -> None:
    """How a Python float constant meets an f64 tensor in a Triton kernel on the GPU."""
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, y_ptr, N, V: tl.constexpr, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + o, mask=o < N)
        if V == 0:
            y = x / 6.0
        elif V == 1:
            y = x * (1.0 / 6.0)
        elif V == 2:
            y = x / tl.full([], 6.0, tl.float64)
        elif V == 3:
            y = x * tl.full([], 1.0 / 6.0, tl.float64)
        elif V == 4:
            y = x * 1.0507009873554804934193349852946
        else:
            y = x * tl.full([], 1.0507009873554804934193349852946, tl.float64)
        tl.store(y_ptr + o, y, mask=o < N)

    x = torch.linspace(-8, 8, 4097, dtype=torch.float64, device="cuda") + 1e-3
    want = [x / 6.0, x * (1.0 / 6.0), x / 6.0, x / 6.0, x * 1.0507009873554805,
            x * 1.0507009873554805]
    names = ["x / 6.0", "x * (1/6)", "x / full(6, f64)", "x * full(1/6, f64)",
             "x * SELU const", "x * full(SELU, f64)"]
    for v, (name, w) in enumerate(zip(names, want)):
        y = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), V=v, BLOCK=1024)
        print(f"{name:22} worst relative error {float(((y - w) / w).abs().max()):.3e}")


if __name__ == "__main__":
    import sys
    constants() if sys.argv[1:] == ["constants"] else main()
