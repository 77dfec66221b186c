"""Where a cross_entropy fuzz case's gradient differs (GPU): the case's problem rebuilt from
tests/families/test_fuzz_loss.py, ours / torch's same-dtype / float64 gradients, the worst
elements and how many of ours are 0 where the reference is not.
python lab/scripts/ce_case_probe.py CASE [CASE ...]"""
import sys

import torch
import torch.nn.functional as F

sys.path[:0] = ["tests", "tests/families"]
from test_fuzz_loss import _common, _torch_target  # noqa: E402

import baracuda.torch as bt  # noqa: E402
from fuzz import rng_for  # noqa: E402


def grads(x, t, w, fn, g):
    x = x.detach().clone().requires_grad_(True)
    out = fn(x, t, w)
    (gx,) = torch.autograd.grad(out, x, g.to(out.dtype))
    return out.detach(), gx


def probe(case: int) -> None:
    r = rng_for("cross_entropy", case)
    c = _common(r, case, nll=False)
    red, ig, eps = c["reduction"], c["ignore_index"], c["smoothing"]
    x, t, w = c["x"], c["t"], c["weight"]
    print(c["desc"])

    def ours_fn(x, t, w):
        return bt.cross_entropy(x, t, w, ignore_index=ig, reduction=red, label_smoothing=eps)

    def torch_fn(x, t, w):
        t = _torch_target(x, t, eps > 0 and w is not None)
        return F.cross_entropy(x, t, w, ignore_index=ig, reduction=red, label_smoothing=eps)

    g = torch.randn(torch_fn(x.detach(), t, w).shape, device=x.device, dtype=torch.float64)
    o_out, o_gx = grads(x, t, w, ours_fn, g)
    s_out, s_gx = grads(x, t, w, torch_fn, g)
    r_out, r_gx = grads(x.double(), t, None if w is None else w.double(), torch_fn, g)
    for name, gx in (("ours", o_gx), ("torch", s_gx)):
        flat = (gx.double() - r_gx).abs().flatten()
        print(f"  {name}: max err {float(flat.max()):.3e}; ref != 0 but {name} == 0 at "
              f"{int(((gx == 0) & (r_gx != 0)).sum())} of {gx.numel()}")
        for i in flat.topk(min(8, flat.numel())).indices.tolist():
            idx = tuple(int(k) for k in torch.unravel_index(torch.tensor(i), gx.shape))
            print(f"    at {idx}: {name} {float(gx[idx]):.6e} ref {float(r_gx[idx]):.6e} "
                  f"x {float(x[idx]):.4f}")
    print(f"  forward max err ours {float((o_out.double() - r_out).abs().max()):.3e} "
          f"torch {float((s_out.double() - r_out).abs().max()):.3e}")


for arg in sys.argv[1:]:
    probe(int(arg))
