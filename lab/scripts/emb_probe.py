"""torch's CUDA embedding renorm (F.embedding with max_norm) against the CPU float64 result,
and ours, each in its own process with CUDA_LAUNCH_BLOCKING=1 (a failed launch stays
attributable). Session 16 on the H100: torch 2.11's CUDA path is off by 1.6 at norm_type 3,
right at norm_type 2; ours matches the CPU at both.

`python lab/scripts/emb_probe.py sgbf`: torch's CUDA embedding backward with
scale_grad_by_freq=True and an empty index, between canary tensors: does its failed launch
("invalid argument") leave other memory changed?

    python lab/scripts/emb_probe.py [sgbf]
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch
import torch.nn.functional as F


def one(which: str) -> None:
    import baracuda.torch as bt
    p = float(which[-1])
    torch.manual_seed(0)
    w0 = torch.randn(8, 6, dtype=torch.float32)
    idx = torch.tensor([1, 1, 3])
    ref_w = w0.double().clone()
    ref = F.embedding(idx, ref_w, None, 0.5, p)
    w = w0.cuda().clone()
    fn = F.embedding if which.startswith("torch") else bt.embedding
    out = fn(idx.cuda(), w, None, 0.5, p)
    torch.cuda.synchronize()
    print("out err", (out.double().cpu() - ref).abs().max().item(),
          "weight err", (w.double().cpu() - ref_w).abs().max().item())


def sgbf() -> None:
    dev = "cuda"
    canaries = [torch.arange(i, i + 64, device=dev, dtype=torch.int64) for i in range(64)]
    for trial in range(20):
        w = torch.randn(12, 9, device=dev, dtype=torch.bfloat16, requires_grad=True)
        idx = torch.empty(0, dtype=torch.int64, device=dev)
        try:
            out = F.embedding(idx, w, None, None, 2.0, True)
            out.backward(torch.randn_like(out))
            torch.cuda.synchronize()
            err = "none"
        except Exception as exc:  # noqa: BLE001 - the failure is what is probed
            err = type(exc).__name__ + ": " + str(exc).splitlines()[0]
        bad = sum(int(not torch.equal(c, torch.arange(i, i + 64, device=dev)))
                  for i, c in enumerate(canaries))
        x = torch.randn(8, device=dev)
        g = torch.gather(x, 0, torch.tensor([7], device=dev))
        torch.cuda.synchronize()
        print(f"trial {trial}: torch error {err}; canaries changed {bad}; gather ok {g.item()}")


def main() -> None:
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
    for which in ("torch3", "torch2", "ours3", "ours2"):
        r = subprocess.run([sys.executable, __file__, which], capture_output=True, text=True,
                           env=env)
        tail = r.stderr.strip().splitlines()[-1:] if r.returncode else ""
        print(which, r.stdout.strip()[-300:], tail)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sgbf() if sys.argv[1] == "sgbf" else one(sys.argv[1])
    else:
        main()
