"""cross_entropy (reduction none) input gradient error against float64, ours and torch's own,
over class counts, layouts and dtypes (GPU): the fuzz case 20363 family (logits ~ 40 + 20 z).
python lab/scripts/ce_f16_probe.py"""
import torch
import torch.nn.functional as F

import baracuda.torch as bt


def grad(fn, x, t, w, g):
    x = x.detach().clone().requires_grad_(True)
    return torch.autograd.grad(fn(x, t, w), x, g)[0]


def row(dtype, n, c, layout, weighted, offset=40.0, scale=20.0, red="none"):
    gen = torch.Generator(device="cuda").manual_seed(n * 7 + c)
    x64 = torch.randn(n, c, device="cuda", dtype=torch.float64, generator=gen) * scale + offset
    x = x64.to(dtype)
    if layout == "colmajor":
        x = x.t().contiguous().t()
    t = torch.randint(0, c, (n,), device="cuda", generator=gen)
    w = (torch.rand(c, device="cuda", generator=gen, dtype=torch.float64) + 0.05).to(dtype) \
        if weighted else None
    g = torch.randn(n if red == "none" else (), device="cuda", dtype=torch.float64,
                    generator=gen).to(dtype)

    def ours(x, t, w):
        return bt.cross_entropy(x, t, w, reduction=red)

    def theirs(x, t, w):
        return F.cross_entropy(x, t, w, reduction=red)

    ref = grad(theirs, x.double(), t, None if w is None else w.double(), g.double())
    o, s = grad(ours, x, t, w, g), grad(theirs, x, t, w, g)
    eo, es = (o.double() - ref).abs(), (s.double() - ref).abs()
    zo = int(((o == 0) & (ref != 0)).sum()) - int(((s == 0) & (ref != 0)).sum())
    print(f"{str(dtype)[6:]:8} [{n}, {c}] {layout:9} w={int(weighted)} {red:4}: ours max "
          f"{float(eo.max()):.2e} torch {float(es.max()):.2e} ratio "
          f"{float(eo.max()) / max(float(es.max()), 1e-30):7.2f}; extra zeros {zo}", flush=True)


for dtype in (torch.float16, torch.bfloat16):
    for c in (4096, 16384, 32768, 65536, 131072):
        for layout in ("contig", "colmajor"):
            row(dtype, 143, c, layout, True)
row(torch.float16, 143, 131072, "contig", False)
row(torch.float16, 143, 131072, "contig", True, offset=0.0, scale=1.0)
row(torch.float16, 143, 131072, "contig", True, red="sum")
row(torch.float32, 143, 131072, "colmajor", True)
