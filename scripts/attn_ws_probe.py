# ruff: noqa: B023  (closures are run at once, in the loop that made them)
"""Experiment (session 17): the flash backward's dK/dV and dQ loops with Triton's automatic
warp specialization on Hopper (`tl.range(..., warp_specialize=True)`). With TMA tensor
descriptors for the loop's loads, Triton 3.6's Hopper pass splits a 4-warp program into a
producer warpgroup (the TMA loads) and two consumer warpgroups that share the tile's rows
(setmaxnreg 40 / 256), FlashAttention-3's layout, with no change to the math. With pointer
loads the pass asserts (WSLowerToken), hence the descriptors.

MHA, non-causal, bf16, S a multiple of the tiles, D = the block dim: the issue's D=128 shape.

    python3 scripts/attn_ws_probe.py [d128|d64|all]

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
def dkdv_ws_kernel(q_desc, k_desc, v_desc, do_desc, lse_desc, delta_desc, dk_ptr, dv_ptr, S,
                   qs, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   WS: tl.constexpr):
    pid_n = tl.program_id(0)
    rows = tl.program_id(1) * S
    k = k_desc.load([rows + pid_n * BLOCK_N, 0])
    v = v_desc.load([rows + pid_n * BLOCK_N, 0])
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    for start_m in tl.range(0, S, BLOCK_M, warp_specialize=WS):
        q = q_desc.load([rows + start_m, 0])
        do = do_desc.load([rows + start_m, 0])
        lse = lse_desc.load([rows + start_m])
        delta = delta_desc.load([rows + start_m])
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
                 WS: tl.constexpr):
    pid_m = tl.program_id(0)
    rows = tl.program_id(1) * S
    q = q_desc.load([rows + pid_m * BLOCK_M, 0])
    do = do_desc.load([rows + pid_m * BLOCK_M, 0])
    lse = lse_desc.load([rows + pid_m * BLOCK_M])
    delta = delta_desc.load([rows + pid_m * BLOCK_M])
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


def ws_kernel(kernel, q, k, v, do, lse, delta, out, tile, ws=True):
    """Launch one of the kernels above: tile = (BLOCK_M, BLOCK_N, warps, stages)."""
    b, h, s, d = q.shape
    bm, bn, warps, stages = tile
    flat = lambda t: t.view(b * h * s, d)
    dkdv = kernel is dkdv_ws_kernel
    rows_q, rows_k = (bm, bn)
    descs = [TensorDescriptor.from_tensor(flat(q), [rows_q, d]),
             TensorDescriptor.from_tensor(flat(k), [rows_k, d]),
             TensorDescriptor.from_tensor(flat(v), [rows_k, d]),
             TensorDescriptor.from_tensor(flat(do), [rows_q, d]),
             TensorDescriptor.from_tensor(lse.view(-1), [rows_q]),
             TensorDescriptor.from_tensor(delta.view(-1), [rows_q])]
    grid = (s // (bn if dkdv else bm), b * h)
    kernel[grid](*descs, *out, s, LOG2E.value / math.sqrt(d), 1 / math.sqrt(d), D=d,
                 BLOCK_M=bm, BLOCK_N=bn, WS=ws, num_warps=warps, num_stages=stages)


DKDV_TILES = {128: [(64, 128, 4, 2), (32, 128, 4, 2), (64, 128, 4, 3), (64, 64, 4, 2),
                    (32, 128, 4, 3), (64, 128, 4, 2, False)],
              64: [(64, 128, 4, 2), (32, 128, 4, 2), (64, 128, 4, 3), (64, 64, 4, 2),
                   (128, 128, 4, 2)]}
DQ_TILES = {128: [(128, 64, 4, 2), (128, 128, 4, 2), (128, 64, 4, 3), (128, 32, 4, 3),
                  (64, 64, 4, 2), (128, 64, 4, 2, False)],
            64: [(128, 64, 4, 2), (128, 128, 4, 2), (128, 64, 4, 3), (64, 64, 4, 2)]}


def main(which: str) -> None:
    sys.path.insert(0, "scripts")
    from attn_fused_tma import _ms, _problem

    from baracuda.core.vocab import ArchSku, PlanPreference
    from baracuda.families.attention import plans as P
    from baracuda.families.attention.descriptors import SdpaBackwardArgs

    dev, arch, pref = torch.device("cuda"), ArchSku.current(), PlanPreference()
    shapes = {"d128": [(4, 16, 4096, 128)], "d64": [(8, 16, 2048, 64)]}.get(
        which, [(4, 16, 4096, 128), (8, 16, 2048, 64)])
    for b, h, s, dh in shapes:
        db, q, k, v, do, o, lse, delta = _problem(b, h, s, dh)
        fl = 2.5 * 4 * b * h * s * s * dh
        cands = {c.name: c for c in P.SdpaBackwardPlan.candidates}
        rows, ref = [], None
        for name in ("cudnn_bwd", "cudnn_bwd_deterministic", "triton_flash_bwd"):
            try:
                p = P.SdpaBackwardPlan(db, cands[name], pref, arch)
            except Exception as exc:  # noqa: BLE001
                print(name, "n/a", str(exc)[:80])
                continue
            grads = [torch.empty_like(x) for x in (q, k, v)]
            a = SdpaBackwardArgs(q, k, v, o, do, lse, *grads)
            ws = torch.empty(p.workspace_size(), dtype=torch.uint8, device=dev)
            rows.append((name, _ms(lambda p=p, a=a, ws=ws: p.run(a, workspace=ws))))
            if name == "triton_flash_bwd":
                ref = grads
        cudnn = rows[0][1]
        print(f"B={b} H={h} S={s} D={dh}", flush=True)
        for name, ms in rows:
            print(f"  {name:40} {ms:7.3f} ms {fl / ms / 1e9:6.1f} TFLOP/s "
                  f"{cudnn / ms:5.2f}x cudnn_bwd", flush=True)
        best = {}
        for kernel, tiles, outs, refs in (
                (dkdv_ws_kernel, DKDV_TILES[dh], (torch.empty_like(k), torch.empty_like(v)),
                 ref[1:]),
                (dq_ws_kernel, DQ_TILES[dh], (torch.empty_like(q),), ref[:1])):
            for tile in tiles:
                ws = len(tile) == 4
                tile = tile[:4]
                name = f"{kernel.__name__[:-10]} {tile}{'' if ws else ' no WS'}"
                try:
                    run = lambda: ws_kernel(kernel, q, k, v, do, lse, delta, outs, tile, ws)
                    run()
                    torch.cuda.synchronize()
                    first = [x.clone() for x in outs]
                    err = max(((x.float() - y.float()).abs().max() / y.float().abs().max())
                              .item() for x, y in zip(outs, refs))
                    run()
                    same = all(torch.equal(x, y) for x, y in zip(outs, first))
                    exact = all(torch.equal(x, y) for x, y in zip(outs, refs))
                    ms = _ms(run)
                    best[kernel] = min(best.get(kernel, 1e9), ms)
                    print(f"  {name:40} {ms:7.3f} ms err {err:.1e} rerun "
                          f"{'same' if same else 'DIFF'} vs library "
                          f"{'bit-equal' if exact else 'differs'}", flush=True)
                except Exception as exc:  # noqa: BLE001 - a failing tile is a result too
                    print(f"  {name} failed: {str(exc)[-300:]}", flush=True)
        if len(best) == 2:
            total = sum(best.values())
            print(f"  best dK/dV + best dQ (no delta) {total:7.3f} ms "
                  f"{fl / total / 1e9:6.1f} TFLOP/s {cudnn / total:5.2f}x cudnn_bwd", flush=True)
    for kernel in (dkdv_ws_kernel, dq_ws_kernel):
        for caches in kernel.device_caches.values():
            for ck in caches[0].values():
                print(f"{kernel.__name__} warps={ck.metadata.num_warps} regs={ck.n_regs} "
                      f"spills={ck.n_spills} shared={ck.metadata.shared}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "all")
