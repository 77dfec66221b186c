# ruff: noqa: B023, F821  (lambdas are timed at once; loop tensors are freed at the end)
"""GPU tile sweep for softmax and the fused cross-entropy (not part of the package API).

    python -m baracuda.families.softmax.tune [budget_s] [long | short] [noce] [f32]

Prints GB/s per config (kernel only, best of do_bench) next to torch eager and the full
frontend call, so the tables in plans.py can be set from measurements.
"""

from __future__ import annotations

import sys
import time

import torch
import triton
import triton.testing

from baracuda.families.loss import plans as LP
from baracuda.families.loss.descriptors import CrossEntropyLossDescriptor
from baracuda.families.softmax import plans as P
from baracuda.families.softmax.descriptors import (
    SoftmaxBackwardDescriptor,
    SoftmaxDescriptor,
    SoftmaxKind,
)
from baracuda.families.softmax.kernels import (
    EXCHANGE,
    LOOP,
    TILE,
    softmax_bwd_kernel,
    softmax_fwd_kernel,
)

T0 = time.time()


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=40)


def configs(n: int, f32: bool):
    out = []
    if n <= 16384:
        for rows in (1, 2, 4, 8, 16):
            if n * rows > 32768 or (rows > 1 and n > 4096):
                continue
            for w in (1, 2, 4, 8, 16, 32):
                if n * rows // (32 * w) < 2 or n * rows // (32 * w) > 64:
                    continue
                out.append(dict(MODE=TILE, BLOCK=n, ROWS=rows, num_warps=w, PARTS=1))
    else:
        from baracuda.backends.triton_exchange import SPIN_LIMIT
        for b, w in ((16384, 8), (8192, 4), (8192, 8), (4096, 4)):
            out.append(dict(MODE=EXCHANGE, BLOCK=b, ROWS=1, num_warps=w, SPIN=SPIN_LIMIT,
                            PARTS=triton.next_power_of_2(triton.cdiv(n, b))))
        hint = dict(KEEP="evict_last", STREAM="evict_first")
        for b, w in ((8192, 16), (8192, 32), (4096, 8), (4096, 16)):
            out.append(dict(MODE=LOOP, BLOCK=b, ROWS=1, num_warps=w, PARTS=1, **hint))
            # segments of a line, one program each, swapping (max, sum): forward only
            for seg in (16384, 32768, 65536):
                if b < seg < n:
                    out.append(dict(MODE=LOOP, BLOCK=b, ROWS=1, num_warps=w, SEG=seg,
                                    SPIN=SPIN_LIMIT, PARTS=1, **hint))
    return out


def sweep_softmax(budget: float, long_only: bool = False) -> None:
    shapes = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536), (256, 262144)]
    if long_only:
        shapes = shapes[3:]
    if "short" in sys.argv[2:]:
        shapes = shapes[:1]
    one_dtype = long_only or "short" in sys.argv[2:]
    dtypes = (torch.bfloat16,) if one_dtype else (torch.bfloat16, torch.float32)
    if "f32" in sys.argv[2:]:
        dtypes = (torch.float32,)
    for dtype in dtypes:
        for shape in shapes:
            if time.time() - T0 > budget:
                print("budget exhausted")
                return
            x = torch.randn(shape, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            dy = torch.randn_like(x)
            dx = torch.empty_like(x)
            nb = x.numel() * x.element_size()
            ws = torch.empty(shape[0] * shape[1] * 8 // 1024 + 4096, dtype=torch.uint8,
                             device="cuda")
            fd = SoftmaxDescriptor(SoftmaxKind.SOFTMAX, shape, 1, dtype)
            bd = SoftmaxBackwardDescriptor(SoftmaxKind.SOFTMAX, shape, 1, dtype)
            t_torch = bench(lambda: torch.softmax(x, -1))
            yt = torch.softmax(x, -1)
            t_torch_b = bench(lambda: torch._softmax_backward_data(dy, yt, -1, dtype))
            from baracuda.torch import softmax as bsoftmax
            t_front = bench(lambda: bsoftmax(x, -1))
            print(f"== {list(shape)} {dtype}: torch fwd {2 * nb / t_torch / 1e6:.0f} GB/s "
                  f"bwd {3 * nb / t_torch_b / 1e6:.0f}; frontend fwd {2 * nb / t_front / 1e6:.0f}"
                  f" (default cfg {P.launch_config(shape[1], fd.element, shape[0])})",
                  flush=True)
            for cfg in configs(shape[1], dtype == torch.float32):
                try:
                    if cfg.get("SPIN"):  # chunked lines: the fallback path gives the same bits
                        P._launch(softmax_fwd_kernel, fd, [x, y], ws, cfg)
                        y0 = y.clone()
                        P._launch(softmax_fwd_kernel, fd, [x, y], ws, dict(cfg, SPIN=0))
                        assert torch.equal(y, y0), "exchange != fallback"
                        torch.testing.assert_close(y, torch.softmax(x.float(), -1).to(dtype))
                    tf = bench(lambda: P._launch(softmax_fwd_kernel, fd, [x, y], ws, cfg))
                    tb = bench(lambda: P._launch(softmax_bwd_kernel, bd, [dy, yt, dx], ws, cfg))
                    print(f"   {cfg}: fwd {2 * nb / tf / 1e6:.0f} GB/s  bwd "
                          f"{3 * nb / tb / 1e6:.0f} GB/s", flush=True)
                except Exception as exc:  # noqa: BLE001
                    print(f"   {cfg}: FAILED {type(exc).__name__}: {str(exc)[:120]}")
            del x, y, dy, dx, yt
            torch.cuda.empty_cache()


def sweep_ce(budget: float) -> None:
    import torch.nn.functional as F

    from baracuda.families.loss.torch_api import cross_entropy
    for shape in [(8192, 32768), (4096, 131072)]:
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        t = torch.randint(0, shape[1], (shape[0],), device="cuda")
        loss = torch.empty((), device="cuda", dtype=torch.bfloat16)
        dx = torch.empty_like(x)
        nb = 2 * x.numel() * 2
        desc = CrossEntropyLossDescriptor(shape, torch.bfloat16, torch.int64, "mean")
        ws = torch.empty(LP.ce_workspace(desc, True, True), dtype=torch.uint8, device="cuda")
        xg = x.clone().requires_grad_()

        def eager():
            return torch.autograd.grad(F.cross_entropy(xg, t), xg)

        def ours():
            return torch.autograd.grad(cross_entropy(xg, t), xg)

        print(f"== CE {list(shape)}: torch eager fwd+bwd {nb / bench(eager) / 1e6:.0f} GB/s, "
              f"frontend {nb / bench(ours) / 1e6:.0f} GB/s "
              f"(default {LP.ce_config(shape[1], desc.element)})", flush=True)
        cfgs = [dict(BLOCK=b, SINGLE=False, ROWS=1, num_warps=w, **hint)
                for hint in ({}, dict(KEEP="evict_last", STREAM="evict_first"))
                for b, w in ((4096, 4), (4096, 8), (8192, 8), (8192, 16))]
        if shape[1] <= 32768:
            cfgs += [dict(BLOCK=32768, SINGLE=True, ROWS=1, num_warps=w) for w in (16, 32)]
        for cfg in cfgs:
            if time.time() - T0 > budget:
                print("budget exhausted")
                return
            try:
                ms = bench(lambda: LP.launch_ce(desc, x, t, None, loss=loss, grad_input=dx,
                                                workspace=ws, cfg=cfg))
                print(f"   {cfg}: fused {nb / ms / 1e6:.0f} GB/s", flush=True)
            except Exception as exc:  # noqa: BLE001
                print(f"   {cfg}: FAILED {type(exc).__name__}: {str(exc)[:120]}")
        del x, dx, xg
        torch.cuda.empty_cache()


if __name__ == "__main__":
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 200.0
    print(torch.cuda.get_device_name(0), triton.__version__, flush=True)
    long_only = "long" in sys.argv[2:]
    if "noce" not in sys.argv[2:]:
        sweep_ce(budget * 0.4)
    sweep_softmax(budget, long_only)
