# ruff: noqa: B023  (closures are run at once, in the loop that made them)
"""Experiment (session 17): the flash backward's dK/dV and dQ loops with Triton's automatic
warp specialization on Hopper (`tl.range(..., warp_specialize=True)`). With TMA tensor
descriptors for the loop's loads, Triton 3.6's Hopper pass splits a 4-warp program into a
producer warpgroup (the TMA loads) and two consumer warpgroups that share the tile's rows
(setmaxnreg 40 / 256), FlashAttention-3's layout, with no change to the math. With pointer
loads the pass asserts (WSLowerToken), hence the descriptors.

MHA, non-causal, bf16, S a multiple of the tiles, D = the block dim: the issue's D=128 shape.

    python3 lab/scripts/attn_ws_probe.py [d128|d64|all]

Each case runs in a child process with a timeout (the first GPU run hung on one).

Prints each kernel's time per tile, its error against the library's two-kernel backward
(relative to the largest magnitude) and whether a rerun is bit-identical, and the backends'
times from the same run.
"""

from __future__ import annotations

import math
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _stats(lse, delta, row0, BLOCK_M: tl.constexpr, STATS_DESC: tl.constexpr):
    """A query tile's lse and delta: by TMA descriptors, or (STATS_DESC off) plain loads from
    the descriptors' base pointers (passed as pointers then)."""
    if STATS_DESC:
        a, b = lse.load([row0]), delta.load([row0])
    else:
        offs = row0 + tl.arange(0, BLOCK_M)
        a, b = tl.load(lse + offs), tl.load(delta + offs)
    return a, b


@triton.jit
def dkdv_ws_kernel(q_desc, k_desc, v_desc, do_desc, lse_desc, delta_desc, dk_ptr, dv_ptr, S,
                   qs, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   WS: tl.constexpr, STATS_DESC: tl.constexpr):
    pid_n = tl.program_id(0)
    rows = tl.program_id(1) * S
    k = k_desc.load([rows + pid_n * BLOCK_N, 0])
    v = v_desc.load([rows + pid_n * BLOCK_N, 0])
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    for start_m in tl.range(0, S, BLOCK_M, warp_specialize=WS):
        q = q_desc.load([rows + start_m, 0])
        do = do_desc.load([rows + start_m, 0])
        lse, delta = _stats(lse_desc, delta_desc, rows + start_m, BLOCK_M, STATS_DESC)
        pt = tl.exp2(tl.dot(k, tl.trans(q)) * qs - lse[None, :] * LOG2E)
        dpt = tl.dot(v, tl.trans(do))
        dv = tl.dot(pt.to(do.dtype), do, dv)
        dst = pt * (dpt - delta[None, :])
        dk = tl.dot(dst.to(q.dtype), q, dk)
    offs_n = (rows + pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_d = tl.arange(0, D)
    out = offs_n[:, None] * D + offs_d[None, :]
    tl.store(dk_ptr + out, (dk * scale).to(dk_ptr.dtype.element_ty))
    tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty))


@triton.jit
def dq_ws_kernel(q_desc, k_desc, v_desc, do_desc, lse_desc, delta_desc, dq_ptr, S, qs, scale,
                 D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 WS: tl.constexpr, STATS_DESC: tl.constexpr):
    pid_m = tl.program_id(0)
    rows = tl.program_id(1) * S
    q = q_desc.load([rows + pid_m * BLOCK_M, 0])
    do = do_desc.load([rows + pid_m * BLOCK_M, 0])
    lse, delta = _stats(lse_desc, delta_desc, rows + pid_m * BLOCK_M, BLOCK_M, STATS_DESC)
    dq = tl.zeros([BLOCK_M, D], tl.float32)
    for start_n in tl.range(0, S, BLOCK_N, warp_specialize=WS):
        k = k_desc.load([rows + start_n, 0])
        v = v_desc.load([rows + start_n, 0])
        p = tl.exp2(tl.dot(q, tl.trans(k)) * qs - lse[:, None] * LOG2E)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    offs_m = (rows + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_d = tl.arange(0, D)
    out = offs_m[:, None] * D + offs_d[None, :]
    tl.store(dq_ptr + out, (dq * scale).to(dq_ptr.dtype.element_ty))


def ws_kernel(kernel, q, k, v, do, lse, delta, out, tile, ws=True, stats_desc=True):
    """Launch one of the kernels above: tile = (BLOCK_M, BLOCK_N, warps, stages)."""
    b, h, s, d = q.shape
    bm, bn, warps, stages = tile
    flat = lambda t: t.view(b * h * s, d)
    dkdv = kernel is dkdv_ws_kernel
    rows_q, rows_k = (bm, bn)
    descs = [TensorDescriptor.from_tensor(flat(q), [rows_q, d]),
             TensorDescriptor.from_tensor(flat(k), [rows_k, d]),
             TensorDescriptor.from_tensor(flat(v), [rows_k, d]),
             TensorDescriptor.from_tensor(flat(do), [rows_q, d])]
    descs += ([TensorDescriptor.from_tensor(lse.view(-1), [rows_q]),
               TensorDescriptor.from_tensor(delta.view(-1), [rows_q])] if stats_desc
              else [lse, delta])
    grid = (s // (bn if dkdv else bm), b * h)
    kernel[grid](*descs, *out, s, LOG2E.value / math.sqrt(d), 1 / math.sqrt(d), D=d,
                 BLOCK_M=bm, BLOCK_N=bn, WS=ws, STATS_DESC=stats_desc, num_warps=warps,
                 num_stages=stages)


#: (kernel, BLOCK_M, BLOCK_N, warps, stages, WS, STATS_DESC) per head dim, in run order
CASES = {
    128: [("dkdv", 64, 128, 4, 2, 0, 1), ("dq", 128, 64, 4, 2, 0, 1),
          ("dkdv", 64, 128, 4, 2, 1, 1), ("dq", 128, 64, 4, 2, 1, 1),
          ("dkdv", 64, 128, 4, 3, 1, 1), ("dq", 128, 64, 4, 3, 1, 1),
          ("dkdv", 64, 64, 4, 2, 1, 1), ("dq", 128, 128, 4, 2, 1, 1),
          ("dkdv", 32, 128, 4, 2, 1, 1), ("dq", 64, 64, 4, 2, 1, 1)],
    64: [("dkdv", 64, 128, 4, 2, 1, 1), ("dkdv", 64, 64, 4, 2, 1, 1),
         ("dq", 128, 64, 4, 2, 1, 1), ("dq", 128, 128, 4, 2, 1, 1)],
}
SHAPES = {128: (4, 16, 4096, 128), 64: (8, 16, 2048, 64)}


def _saved(dh: int) -> str:
    return f"/tmp/attn_ws_probe_{dh}.pt"


def parent(which: str) -> None:
    """Time the backends, save the problem and the library's gradients, then run each case in
    a child process with a timeout (a hung warp-specialized kernel costs one case)."""
    import subprocess

    sys.path.insert(0, "scripts")
    from attn_fused_tma import _ms, _problem

    from baracuda.core.vocab import ArchSku, PlanPreference
    from baracuda.families.attention import plans as P
    from baracuda.families.attention.descriptors import SdpaBackwardArgs

    dev, arch, pref = torch.device("cuda"), ArchSku.current(), PlanPreference()
    dims = {"d128": [128], "d64": [64]}.get(which, [128, 64])
    for dh in dims:
        b, h, s, _ = SHAPES[dh]
        torch.manual_seed(0)
        db, q, k, v, do, o, lse, delta = _problem(b, h, s, dh)
        fl = 2.5 * 4 * b * h * s * s * dh
        cands = {c.name: c for c in P.SdpaBackwardPlan.candidates}
        print(f"B={b} H={h} S={s} D={dh}", flush=True)
        cudnn = None
        for name in ("cudnn_bwd", "cudnn_bwd_deterministic", "triton_flash_bwd"):
            p = P.SdpaBackwardPlan(db, cands[name], pref, arch)
            grads = [torch.empty_like(x) for x in (q, k, v)]
            a = SdpaBackwardArgs(q, k, v, o, do, lse, *grads)
            ws = torch.empty(p.workspace_size(), dtype=torch.uint8, device=dev)
            ms = _ms(lambda p=p, a=a, ws=ws: p.run(a, workspace=ws))
            cudnn = cudnn or ms
            print(f"  {name:44} {ms:7.3f} ms {fl / ms / 1e9:6.1f} TFLOP/s "
                  f"{cudnn / ms:5.2f}x cudnn_bwd", flush=True)
            del ws
        torch.save(dict(q=q, k=k, v=v, do=do, lse=lse, delta=delta, ref=grads, cudnn=cudnn),
                   _saved(dh))
        del q, k, v, do, o, lse, delta, grads
        torch.cuda.empty_cache()
        hung = 0
        for case in CASES[dh]:
            if hung >= 2 and case[5]:
                print(f"  {case} skipped: two warp-specialized cases hung", flush=True)
                continue
            try:
                out = subprocess.run([sys.executable, __file__, "case", str(dh),
                                      *map(str, case)], capture_output=True, text=True,
                                     timeout=CASE_TIMEOUT_S)
                lines = [ln for ln in out.stdout.splitlines() if ln.startswith("  ")]
                print(lines[-1] if lines else f"  {case} rc {out.returncode}: "
                      f"{out.stderr.strip()[-300:]}", flush=True)
            except subprocess.TimeoutExpired:
                print(f"  {case} timed out after {CASE_TIMEOUT_S} s (hang?)", flush=True)
                hung += case[5]


CASE_TIMEOUT_S = 80


def child(dh: int, kind: str, bm: int, bn: int, warps: int, stages: int, ws: int,
          stats_desc: int) -> None:
    sys.path.insert(0, "scripts")
    from attn_fused_tma import _ms

    t = torch.load(_saved(dh))
    q, k, v, do, lse, delta, ref = (t[n] for n in ("q", "k", "v", "do", "lse", "delta", "ref"))
    b, h, s, _ = q.shape
    fl = 2.5 * 4 * b * h * s * s * dh
    if kind == "dkdv":
        kernel, outs, refs = dkdv_ws_kernel, (torch.empty_like(k), torch.empty_like(v)), ref[1:]
    else:
        kernel, outs, refs = dq_ws_kernel, (torch.empty_like(q),), ref[:1]
    tile = (bm, bn, warps, stages)
    run = lambda: ws_kernel(kernel, q, k, v, do, lse, delta, outs, tile, bool(ws),
                            bool(stats_desc))
    run()
    torch.cuda.synchronize()
    first = [x.clone() for x in outs]
    err = max(((x.float() - y.float()).abs().max() / y.float().abs().max()).item()
              for x, y in zip(outs, refs))
    run()
    same = all(torch.equal(x, y) for x, y in zip(outs, first))
    exact = all(torch.equal(x, y) for x, y in zip(outs, refs))
    ms = _ms(run)
    ck = next(iter(next(iter(kernel.device_caches.values()))[0].values()))
    # share of the backward's 2.5x-forward FLOPs: dK/dV does 4 of the 7 matmuls, dQ 3
    share = 4 / 7 if kind == "dkdv" else 3 / 7
    print(f"  {kind} {tile} WS={ws} stats_desc={stats_desc}: {ms:7.3f} ms "
          f"({fl * share * 7 / 5 / ms / 1e9:5.0f} TFLOP/s of MMA) err {err:.1e} rerun "
          f"{'same' if same else 'DIFF'} vs library {'bit-equal' if exact else 'differs'} "
          f"warps={ck.metadata.num_warps} regs={ck.n_regs} spills={ck.n_spills}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["case"]:
        child(int(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:10]))
    else:
        parent(sys.argv[1] if len(sys.argv) > 1 else "all")
