"""`baracuda demo`: a small pre-norm transformer block (RMSNorm, attention, SwiGLU MLP,
cross-entropy head), forward and backward, once with baracuda.torch functions and once with
torch's, comparing the loss and every parameter gradient.

Each op uses baracuda's function when the torch frontend has it; the table says which ran.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

OPS = ("rms_norm", "linear", "scaled_dot_product_attention", "silu", "softmax", "cross_entropy")


def _ops(use_ours: bool) -> dict:
    import baracuda.torch as bt

    table = {}
    for name in OPS:
        ours = getattr(bt, name, None) if use_ours else None
        table[name] = (ours, "baracuda") if ours is not None else (getattr(F, name), "torch")
    return table


def block(params: dict, x: torch.Tensor, targets: torch.Tensor, ops: dict, heads: int):
    f = {k: v[0] for k, v in ops.items()}
    b, s, d = x.shape
    h = f["rms_norm"](x, (d,), params["g1"], 1e-6)
    q, k, v = (f["linear"](h, params[n]).view(b, s, heads, d // heads).transpose(1, 2)
               for n in ("wq", "wk", "wv"))
    a = f["scaled_dot_product_attention"](q, k, v, is_causal=True)
    x = x + f["linear"](a.transpose(1, 2).reshape(b, s, d), params["wo"])
    h = f["rms_norm"](x, (d,), params["g2"], 1e-6)
    up = f["linear"](h, params["w_up"])
    gate, lin = up.chunk(2, dim=-1)
    x = x + f["linear"](f["silu"](gate) * lin, params["w_down"])
    logits = f["linear"](x, params["w_head"])
    return f["cross_entropy"](logits.reshape(b * s, -1), targets.reshape(-1))


def main() -> int:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    big = device.type == "cuda"
    b, s, d, heads, vocab = (4, 512, 512, 8, 8192) if big else (1, 16, 32, 2, 64)
    dtype = torch.bfloat16 if big else torch.float32
    gen = torch.Generator().manual_seed(0)

    def p(*shape, scale=None):
        t = torch.randn(*shape, generator=gen) * (scale if scale else shape[-1] ** -0.5)
        return t.to(device, dtype).requires_grad_()

    params = {"g1": p(d, scale=1.0), "g2": p(d, scale=1.0), "wq": p(d, d), "wk": p(d, d),
              "wv": p(d, d), "wo": p(d, d), "w_up": p(2 * (8 * d // 3), d),
              "w_down": p(d, 8 * d // 3), "w_head": p(vocab, d)}
    x = torch.randn(b, s, d, generator=gen).to(device, dtype)
    targets = torch.randint(0, vocab, (b, s), generator=gen).to(device)
    results = {}
    for label, use_ours in (("baracuda", True), ("torch", False)):
        ops = _ops(use_ours)
        for prm in params.values():
            prm.grad = None
        t0 = time.perf_counter()
        loss = block(params, x, targets, ops, heads)
        loss.backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        results[label] = (loss.detach().double(), {k: v.grad.double() for k, v in params.items()},
                          time.perf_counter() - t0, {k: v[1] for k, v in ops.items()})
    (l0, g0, t_ours, which), (l1, g1, t_torch, _) = results["baracuda"], results["torch"]
    print(f"device {device}, dtype {dtype}, batch {b} x seq {s} x dim {d}, vocab {vocab}")
    print("ops: " + ", ".join(f"{k}={v}" for k, v in which.items()))
    print(f"loss  baracuda {float(l0):.6f}   torch {float(l1):.6f}")
    worst = 0.0
    for k in params:
        rel = float((g0[k] - g1[k]).norm() / g1[k].norm().clamp_min(1e-30))
        worst = max(worst, rel)
        print(f"  grad {k:7} relative difference {rel:.2e}")
    tol = 5e-2 if dtype == torch.bfloat16 else 1e-4
    ok = abs(float(l0 - l1)) <= tol * max(1.0, abs(float(l1))) and worst <= tol
    print(f"first-call wall time: baracuda {t_ours:.2f}s, torch {t_torch:.2f}s "
          "(includes kernel compilation)")
    print("demo", "PASSED" if ok else "FAILED")
    return 0 if ok else 1
