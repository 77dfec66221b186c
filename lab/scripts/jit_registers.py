"""Registers and spills of the row-norm kernels as the JIT compiled them on this GPU (the
AOT check compiles without the JIT's argument specialization and can differ): runs a few
forward + backward calls, then reads n_regs / n_spills of every compiled kernel.

    python lab/scripts/jit_registers.py
"""

from __future__ import annotations

import torch

import baracuda.torch as bt
from baracuda.families.normalization import kernels as K
from baracuda.families.normalization import kernels_exchange as KX

PROBLEMS = ((torch.float32, (4096, 16384), False), (torch.float32, (4096, 16384), True),
            (torch.float32, (1024, 65536), True), (torch.float32, (1024, 65536), False),
            (torch.bfloat16, (4096, 16384), False))


def main() -> None:
    for dtype, shape, layer in PROBLEMS:
        x = torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
        w = torch.randn(shape[-1:], device="cuda", dtype=dtype, requires_grad=True)
        b = torch.randn(shape[-1:], device="cuda", dtype=dtype, requires_grad=True)
        y = bt.layer_norm(x, shape[-1:], w, b) if layer else bt.rms_norm(x, shape[-1:], w)
        y.backward(torch.randn_like(y))
    torch.cuda.synchronize()
    for fn in (K.row_norm_fwd_kernel, K.row_norm_bwd_kernel, KX.row_norm_fwd_exchange_kernel,
               KX.row_norm_bwd_exchange_kernel):
        for cache in fn.device_caches.values():
            for compiled in cache[0].values():
                print(f"{fn.__name__:32} warps {compiled.metadata.num_warps:2} "
                      f"registers {compiled.n_regs:3} spills {compiled.n_spills}", flush=True)


if __name__ == "__main__":
    main()
