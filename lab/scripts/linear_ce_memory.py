"""Peak memory (and time) of one forward + backward of the fused linear + cross-entropy: ours,
torch's unfused F.cross_entropy(F.linear(x, w), t), torch's own F.linear_cross_entropy with
chunking options (where the installed torch has it) and Liger-Kernel's
LigerFusedLinearCrossEntropyLoss (when importable: pip install .whl/liger_kernel*.whl).

Peak is torch.cuda.max_memory_allocated() during the step minus what was allocated before it
(x, w and the targets), so it counts the step's own logits / chunks, and the gradients.
Issue #35 target at 8192 x 4096 x 128256 bf16: ours <= 25% of unfused, time <= 1.05x.

    python lab/scripts/linear_ce_memory.py [--tokens 8192 --hidden 4096 --vocab 128256]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F


def _peers():
    from baracuda.torch import linear_cross_entropy

    peers = {
        "baracuda": lambda x, w, t: linear_cross_entropy(x, w, t),
        "unfused": lambda x, w, t: F.cross_entropy(F.linear(x, w), t),
    }
    if hasattr(F, "linear_cross_entropy"):
        opts = torch.nn.LinearCrossEntropyOptions()
        peers["torch chunked"] = lambda x, w, t: F.linear_cross_entropy(x, w, t, options=opts)
    try:
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

        liger = LigerFusedLinearCrossEntropyLoss()
        peers["liger"] = lambda x, w, t: liger(w, x, t)
    except Exception as exc:  # noqa: BLE001 - optional peer
        print(f"liger not importable: {exc}")
    return peers


def measure(fn, x, w, t, reps: int):
    def step():
        loss = fn(x, w, t)
        return torch.autograd.grad(loss, (x, w))

    step()  # warm-up: compiles, autotunes, allocator pools
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    grads = step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del grads
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        step()
    end.record()
    torch.cuda.synchronize()
    return peak, start.elapsed_time(end) / reps


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--chunk-mib", type=int, nargs="*", default=[],
                   help="also run ours with these logits-chunk budgets (MiB)")
    a = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(a.tokens, a.hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = (torch.randn(a.vocab, a.hidden, device="cuda", dtype=torch.bfloat16) * a.hidden ** -0.5
         ).requires_grad_()
    t = torch.randint(0, a.vocab, (a.tokens,), device="cuda")
    rows = {}
    peers = _peers()
    for mib in a.chunk_mib:
        def ours(x, w, t, mib=mib):
            from baracuda.families.loss import plans_linear
            saved, plans_linear.CHUNK_BYTES = plans_linear.CHUNK_BYTES, mib * 2**20
            try:
                return peers["baracuda"](x, w, t)
            finally:
                plans_linear.CHUNK_BYTES = saved
        peers[f"baracuda {mib} MiB"] = ours
    for name, fn in peers.items():
        try:
            rows[name] = measure(fn, x, w, t, a.reps)
        except torch.cuda.OutOfMemoryError:
            rows[name] = (float("nan"), float("nan"))
        torch.cuda.empty_cache()
    unfused_peak, unfused_ms = rows["unfused"]
    print(f"\n[{a.tokens}, {a.hidden}] x [{a.vocab}, {a.hidden}] bf16, forward + backward")
    print(f"{'peer':<16}{'peak MiB':>12}{'vs unfused':>12}{'ms':>10}{'vs unfused':>12}")
    for name, (peak, ms) in rows.items():
        print(f"{name:<16}{peak / 2**20:>12.0f}{peak / unfused_peak:>12.2f}{ms:>10.2f}"
              f"{ms / unfused_ms:>12.2f}")


if __name__ == "__main__":
    main()
