# ruff: noqa: B023  (lambdas are timed at once)
"""rms_norm / layer_norm forwards against Liger-Kernel's, kernel only and in one harness: 20
calls captured in a CUDA graph, replayed (normalization/tune.py's `_time` for ours, the same
capture of Liger's forward function), x + y GB/s. Beside the table's config: for rows held in
registers, the plain grid (one row per program) on 16 and 32 elements per thread, and gamma
loaded with the row (W_FIRST) rather than after its reductions.

    python lab/scripts/norm_vs_liger.py [bfloat16,float32] [rms,layer]
"""

from __future__ import annotations

import sys

import torch
import triton.testing
from lab.normalization import tune as T

from baracuda.families.normalization import plans as P

SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536)]


def _graph_ms(fn, calls: int = 20) -> float:
    fn()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        fn()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(graph.replay, warmup=3, rep=40) / calls


def _variants(table: dict, m: int, rows: int) -> list[tuple[str, dict]]:
    out = [("table", dict(table))]
    if not table.get("SINGLE") or table.get("EXCHANGE"):
        return out
    if not table["PIPE"]:
        out.append(("table+wfirst", dict(table, W_FIRST=True)))
    for per_thread in (16, 32):
        warps = m // (32 * per_thread)
        if not 1 <= warps <= 32 or table["BLOCK_R"] != 1:
            continue
        plain = dict(BLOCK_R=1, BLOCK_N=m, SINGLE=True, num_warps=warps, PIPE=False, G=rows)
        out.append((f"plain{warps}w", plain))
        out.append((f"plain{warps}w+wfirst", dict(plain, W_FIRST=True)))
    return out


def main(dtypes, ops) -> None:
    from liger_kernel.ops.layer_norm import layer_norm_forward
    from liger_kernel.ops.rms_norm import rms_norm_forward

    for dtype in dtypes:
        for layer in [op == "layer" for op in ops]:
            for shape in SHAPES:
                plan_cls, desc, args, nbytes = T._problem("fwd", shape, dtype, layer)
                T._use("fwd", None)
                table = P.fwd_config(shape[1], shape[0], desc.element, layer)
                cells = [f"{'layer' if layer else 'rms'} {str(dtype)[6:]} {list(shape)}"]
                for name, cfg in _variants(table, shape[1], shape[0]):
                    T._use("fwd", None if name == "table" else cfg)
                    try:
                        rate = nbytes / T._time(plan_cls, desc, args) / 1e6
                        cells.append(f"{name} {rate:5.0f}")
                    except Exception as exc:  # noqa: BLE001 - a variant that fails is a result
                        cells.append(f"{name} {type(exc).__name__}")
                T._use("fwd", None)
                x, w = args.x, args.gamma
                if layer:
                    b = args.beta
                    ms = _graph_ms(lambda: layer_norm_forward(x, w, b, 1e-5))
                else:
                    ms = _graph_ms(lambda: rms_norm_forward(x, w, 1e-6, 0.0, "llama", False))
                cells.append(f"liger {nbytes / ms / 1e6:5.0f}")
                print("  ".join(cells), flush=True)


if __name__ == "__main__":
    dts = [getattr(torch, d) for d in (sys.argv[1] if len(sys.argv) > 1
                                       else "bfloat16,float32").split(",")]
    main(dts, sys.argv[2].split(",") if len(sys.argv) > 2 else ["rms", "layer"])
