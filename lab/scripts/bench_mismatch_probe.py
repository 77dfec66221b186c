"""The bench rows flagged "output differs from torch" (bf16 cumsum rows and columns, bf16
logsumexp fwd+bwd [16384, 4096]): ours and torch, each against a float64 reference, so the
flag says which side is off.

    python lab/scripts/bench_mismatch_probe.py
"""

from __future__ import annotations

import torch

import baracuda.torch as bt


def _err(got: torch.Tensor, want: torch.Tensor) -> str:
    d = (got.double() - want).abs()
    scale = want.abs().max().clamp(min=1e-30)
    nan = int((got.isnan() != want.isnan()).sum())
    return f"max|d|/max|ref| {float(d.max() / scale):.3e}  nan-mismatch {nan}"


def main() -> None:
    torch.manual_seed(0)
    for shape, dim in (((32768, 1024), 1), ((4096, 16384), 1), ((16384, 4096), 0)):
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        want = torch.cumsum(x.double(), dim)
        print(f"cumsum {shape} dim={dim} bf16: ours {_err(bt.cumsum(x, dim), want)} | "
              f"torch {_err(torch.cumsum(x, dim), want)}")
    for shape in ((16384, 4096), (256, 262144)):
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        dy = torch.randn(shape[0], device="cuda", dtype=torch.bfloat16)
        x64 = x.detach().double().requires_grad_()
        y64 = torch.logsumexp(x64, -1)
        (g64,) = torch.autograd.grad(y64, x64, dy.double())
        for name, fn in (("ours", bt.logsumexp), ("torch", torch.logsumexp)):
            y = fn(x, -1)
            (g,) = torch.autograd.grad(y, x, dy)
            print(f"logsumexp {shape} {name}: y {_err(y, y64.detach())}  dx {_err(g, g64)}")
        y = bt.logsumexp(x, -1)
        (g,) = torch.autograd.grad(y, x, dy)
        (gt,) = torch.autograd.grad(torch.logsumexp(x, -1), x, dy)
        d = (g.double() - gt.double()).abs()
        i = int(d.argmax())
        r, c = divmod(i, shape[1])
        print(f"  worst ours-vs-torch at row {r} col {c}: ours {float(g.flatten()[i]):.4g} "
              f"torch {float(gt.flatten()[i]):.4g} ref {float(g64.flatten()[i]):.4g} "
              f"dy {float(dy[r]):.4g}; rows differing {int((d.amax(1) > 1e-2).sum())}")


if __name__ == "__main__":
    main()
