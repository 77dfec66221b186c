# ruff: noqa: B023  (lambdas are timed at once)
"""Speed of light of layer_norm's forward access pattern (issue #4's last row).

A layer_norm forward reads x, gamma and beta and writes y. Without the row statistics the
fastest kernel for that traffic is the affine map y = x * gamma + beta. This probe times, kernel
only (CUDA graph replay), x + y GB/s:
- torch's copy (the HBM ceiling for x + y),
- a Triton affine map with one row chunk per program (gamma / beta read from L2 once per row,
  as the layer_norm kernels do), for several chunk widths and warps,
- the same map with RB rows per program (gamma / beta read once per RB rows),
- the library's layer_norm and rms_norm forwards through the plans.

If the one-row affine map cannot pass 2.7 TB/s, no layer_norm forward with that traffic can.

    python lab/scripts/norm_sol_probe.py [ROWSxCOLS ...]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
import triton.testing

import baracuda as bc


@triton.jit
def _affine(x_ptr, g_ptr, b_ptr, y_ptr, n_cols, n_chunks, RB: tl.constexpr,
            BLOCK: tl.constexpr, ROW_FAST: tl.constexpr):
    pid = tl.program_id(0)
    if ROW_FAST:
        n_row_blocks = tl.num_programs(0) // n_chunks
        rb = pid % n_row_blocks
        chunk = pid // n_row_blocks
    else:
        rb = pid // n_chunks
        chunk = pid % n_chunks
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + cols).to(tl.float32)
    b = tl.load(b_ptr + cols).to(tl.float32)
    for i in tl.static_range(RB):
        off = (rb * RB + i).to(tl.int64) * n_cols + cols
        x = tl.load(x_ptr + off).to(tl.float32)
        tl.store(y_ptr + off, (x * g + b).to(y_ptr.dtype.element_ty))


def _gbs(nbytes, fn) -> float:
    ms = triton.testing.do_bench_cudagraph(fn, rep=200)
    return nbytes / ms / 1e6


def probe(rows: int, cols: int, dtype) -> None:
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    g = torch.rand(cols, device="cuda", dtype=dtype)
    b = torch.randn(cols, device="cuda", dtype=dtype)
    nbytes = 2 * x.numel() * x.element_size()
    cells = [f"copy {_gbs(nbytes, lambda: y.copy_(x)):5.0f}"]

    def affine(rb, block, warps, row_fast):
        n_chunks = cols // block
        grid = (rows // rb * n_chunks,)
        return lambda: _affine[grid](x, g, b, y, cols, n_chunks, RB=rb, BLOCK=block,
                                     ROW_FAST=row_fast, num_warps=warps)

    ref = x.float() * g.float() + b.float()
    for rb, block, warps, row_fast in [(1, 2048, 4, False), (1, 2048, 8, False),
                                       (1, 4096, 8, False), (1, 1024, 4, False),
                                       (1, 2048, 4, True), (2, 2048, 8, False),
                                       (4, 2048, 8, False), (8, 1024, 4, False),
                                       (8, 2048, 8, True)]:
        fn = affine(rb, block, warps, row_fast)
        fn()
        err = (y.float() - ref).abs().max().item()
        tag = f"aff{rb}x{block}/{warps}{'r' if row_fast else ''}"
        cells.append(f"{tag} {_gbs(nbytes, fn):5.0f}" + ("" if err < 0.1 else " WRONG"))

    mean = torch.empty(rows, 1, device="cuda")
    rstd = torch.empty(rows, 1, device="cuda")
    ln = bc.LayerNormPlan.select(bc.LayerNormDescriptor((rows, cols), (1,), True, True, 1e-5,
                                                        dtype))
    ln_args = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=g, beta=b)
    ln_ws = torch.empty(max(ln.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    cells.append(f"layer_norm {_gbs(nbytes, lambda: ln.run(ln_args, ln_ws)):5.0f}")
    rms = bc.RMSNormPlan.select(bc.RMSNormDescriptor((rows, cols), (1,), True, 1e-5, dtype))
    rms_args = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=g)
    rms_ws = torch.empty(max(rms.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    cells.append(f"rms_norm {_gbs(nbytes, lambda: rms.run(rms_args, rms_ws)):5.0f}")
    print(f"{str(dtype)[6:]:8} [{rows}, {cols}]: " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    shapes = [tuple(int(v) for v in s.split("x")) for s in (sys.argv[1:] or ["1024x65536"])]
    for _round in range(2):
        for r, c in shapes:
            for dt in (torch.bfloat16, torch.float32):
                probe(r, c, dt)
