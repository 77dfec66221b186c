# ruff: noqa: B023  (lambdas are timed at once)
"""Softmax forward of lines that fit one program (TILE) against Liger-Kernel's single-block
kernel, kernel only (CUDA graph replay) and through each library's torch function; TILE with
other tiles as variants (Liger's .ca loads / .cs stores were measured too: no faster, session
10). f32 log_softmax of long lines against the chunk tables. GB/s = x + y bytes / time.

    python lab/scripts/tile_vs_liger.py [long]

long: only the f32 long lines (chunk x warps x register cap, softmax and log_softmax).
"""

from __future__ import annotations

import torch
import triton
import triton.testing

import baracuda as bc
from baracuda.families.softmax import plans as P

SHAPES = ((32768, 1024), (16384, 4096), (4096, 16384))
#: (rows per program, warps) tried beside the table's tile, per line length
VARIANTS = {1024: ((1, 2), (4, 8), (4, 4), (2, 4), (1, 8), (2, 8), (8, 8)),
            4096: ((1, 4), (1, 16), (2, 8), (2, 16)),
            16384: ((1, 8), (1, 32))}


def _rate(nbytes, fn, graph=True) -> float:
    ms = (triton.testing.do_bench_cudagraph(fn, rep=200) if graph
          else triton.testing.do_bench(fn, warmup=25, rep=200))
    return nbytes / ms / 1e6


def main(long_only: bool = False) -> None:
    from liger_kernel.ops.softmax import _softmax_single_block_forward_kernel as liger_fwd
    from liger_kernel.ops.utils import calculate_settings
    from liger_kernel.transformers.functional import liger_softmax

    from baracuda.torch import softmax as ours
    compiled = torch.compile(lambda x: torch.softmax(x, -1))
    for dtype in () if long_only else (torch.bfloat16, torch.float32):
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            nbytes = 2 * x.numel() * x.element_size()
            desc = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, shape, 1, dtype)
            cfg = P.launch_config(shape[1], desc.element, shape[0])
            cells = [f"{str(dtype)[6:]:8} {shape}"]
            for rows, warps in ((cfg["ROWS"], cfg["num_warps"]), *VARIANTS[shape[1]]):
                launch = dict(cfg, ROWS=rows, num_warps=warps)
                name = f"{rows}x{warps}"
                rate = _rate(nbytes, lambda: P._launch(P.softmax_fwd_kernel, desc, [x, y], None,
                                                      launch))
                cells.append(f"{name} {rate:5.0f}")
            block, warps = calculate_settings(shape[1])

            def liger_kernel_only():
                liger_fwd[(shape[0],)](y, y.stride(0), x, x.stride(0), shape[1],
                                       BLOCK_SIZE=block, num_warps=warps)
            cells.append(f"liger {_rate(nbytes, liger_kernel_only):5.0f}")
            cells.append(f"| fn ours {_rate(nbytes, lambda: ours(x, -1), False):5.0f}")
            cells.append(f"liger {_rate(nbytes, lambda: liger_softmax(x), False):5.0f}")
            cells.append(f"compile {_rate(nbytes, lambda: compiled(x), False):5.0f}")
            print("  ".join(cells), f"(cfg {cfg})", flush=True)
            del x, y
    # f32 long lines: softmax against log_softmax (the one f32 row under 2.7 TB/s)
    for shape in ((256, 262144), (1024, 65536)):
        x = torch.randn(shape, device="cuda")
        y = torch.empty_like(x)
        cells = [f"f32 {shape}"]
        for kind in (bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX):
            desc = bc.SoftmaxDescriptor(kind, shape, 1, torch.float32)
            ws = torch.empty(1 << 24, dtype=torch.uint8, device="cuda")
            rate = _rate(2 * x.numel() * 4,
                         lambda: P._launch(P.softmax_fwd_kernel, desc, [x, y], ws))
            cells.append(f"{kind.value} {rate:5.0f}")
        print("  ".join(cells), flush=True)
        for kind in (bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX):
            desc = bc.SoftmaxDescriptor(kind, shape, 1, torch.float32)
            cfg = P.launch_config(shape[1], desc.element, shape[0])
            cells = [f"  {kind.value} f32 {shape} {cfg['BLOCK']}x{cfg['num_warps']}"]
            for block, warps, cap in ((4096, 4, None), (4096, 4, 64), (8192, 8, None),
                                      (8192, 8, 64), (8192, 16, None), (4096, 8, None)):
                launch = dict(cfg, BLOCK=block, num_warps=warps, maxnreg=cap,
                              PARTS=triton.next_power_of_2(shape[1] // block))
                rate = _rate(2 * x.numel() * 4,
                             lambda: P._launch(P.softmax_fwd_kernel, desc, [x, y], ws, launch))
                cells.append(f"{block}x{warps}/{cap or '-'} {rate:5.0f}")
            print("  ".join(cells), flush=True)


if __name__ == "__main__":
    import sys

    main(long_only=sys.argv[1:] == ["long"])
