"""Distance bench rows (issue #35): cdist f32 p = 2 (matmul form) and p = 1 (direct tiles),
pairwise_distance and cosine_similarity bf16 forward + backward; targets >= 1.0x torch."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core.registry import register_bench
from ...core.spec import BenchCase

CDIST_SHAPES = [(4096, 4096, 256), (2048, 8192, 64)]
ROW_SHAPES = [(65536, 1024), (16384, 4096)]


@register_bench("distance")
def distance_benches(quick: bool):
    from .torch_api import cdist, cosine_similarity, pairwise_distance

    out = []
    for (P, R, M), p in ((s, p) for s in CDIST_SHAPES for p in (2.0, 1.0)):
        label = f"[{P}, {M}] x [{R}, {M}] f32 p={p:g}"
        flops = (2 if p == 2 else 3) * P * R * M

        def setup(device, P=P, R=R, M=M):
            x = torch.randn(P, M, device=device, requires_grad=True)
            y = torch.randn(R, M, device=device, requires_grad=True)
            return {"x": x, "y": y, "g": torch.randn(P, R, device=device)}

        out.append(BenchCase("cdist fwd", label, setup,
                             ours=lambda x, y, g, p=p: cdist(x.detach(), y.detach(), p),
                             torch_eager=lambda x, y, g, p=p: torch.cdist(x.detach(),
                                                                          y.detach(), p),
                             flops=flops, quick=(P, R, M) == CDIST_SHAPES[0]))

        def ours_fb(x, y, g, p=p):
            return torch.autograd.grad(cdist(x, y, p), (x, y), g)

        def torch_fb(x, y, g, p=p):
            return torch.autograd.grad(torch.cdist(x, y, p), (x, y), g)

        out.append(BenchCase("cdist fwd+bwd", label, setup, ours=ours_fb, torch_eager=torch_fb,
                             flops=3 * flops, quick=False))
    for (R, M), (name, ours_fn, torch_fn) in (
            (s, f) for s in ROW_SHAPES for f in (
                ("pairwise_distance", pairwise_distance, F.pairwise_distance),
                ("cosine_similarity", cosine_similarity, F.cosine_similarity))):
        nbytes = R * M * 2
        label = f"[{R}, {M}] bf16"

        def row_setup(device, R=R, M=M):
            x = torch.randn(R, M, device=device, dtype=torch.bfloat16, requires_grad=True)
            y = torch.randn(R, M, device=device, dtype=torch.bfloat16, requires_grad=True)
            return {"x": x, "y": y, "g": torch.randn(R, device=device, dtype=torch.bfloat16)}

        out.append(BenchCase(f"{name} fwd", label, row_setup,
                             ours=lambda x, y, g, f=ours_fn: f(x.detach(), y.detach()),
                             torch_eager=lambda x, y, g, f=torch_fn: f(x.detach(), y.detach()),
                             bytes=2 * nbytes, quick=(R, M) == ROW_SHAPES[0]))

        def ours_rb(x, y, g, f=ours_fn):
            return torch.autograd.grad(f(x, y), (x, y), g)

        def torch_rb(x, y, g, f=torch_fn):
            return torch.autograd.grad(f(x, y), (x, y), g)

        # forward reads x, y; backward reads them again and writes both gradients
        out.append(BenchCase(f"{name} fwd+bwd", label, row_setup, ours=ours_rb,
                             torch_eager=torch_rb, bytes=6 * nbytes,
                             quick=(R, M) == ROW_SHAPES[0]))
    return out
