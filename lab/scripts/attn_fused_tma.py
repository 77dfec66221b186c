# ruff: noqa: B023  (closures are run at once, in the loop that made them)
"""Experiment: a fused flash-attention backward whose dQ terms are summed by TMA bulk
reductions (`tensor_descriptor.atomic_add`, cp.reduce.async.bulk) instead of session 13's
element atomics (attention/PERF_NOTES.md). Non-causal, MHA, bf16, tiles dividing S, no mask
or dropout: enough to time it against the library's backwards at the issue's shapes.

ORDER 0: reductions in any order (not deterministic); 1: each query tile's terms in a fixed
order (session 13's lockstep schedule and counters; after its reduction a program waits for
the bulk group to complete, fences the async proxy and releases the count); 2: no dQ at all
(the dK/dV work of the fused loop alone, a floor).

    python3 lab/scripts/attn_fused_tma.py [d128|d64|all|dkdv]

dkdv: the library's two-kernel backward at D=128 with each candidate dK/dV tile (patched into
plans._DKDV_MHA), interleaved over three rounds, against ORDER 2 at the same tiles.
"""

from __future__ import annotations

import math
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from baracuda.core.vocab import ArchSku, PlanPreference
from baracuda.families.attention import plans as P
from baracuda.families.attention.descriptors import (
    CausalKind,
    SdpaArgs,
    SdpaBackwardArgs,
    SdpaBackwardDescriptor,
    SdpaDescriptor,
)
from baracuda.tools.bench import CudaEventChain

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _bulk_done():
    """Wait until this thread's bulk async groups completed (not only read their source),
    then order the async proxy's writes before what follows."""
    tl.inline_asm_elementwise("cp.async.bulk.wait_group 0; fence.proxy.async.global; "
                              "mov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False,
                              pack=1)


@triton.jit
def fused_bwd_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_desc,
                     cnt_ptr, S, qs, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, ORDER: tl.constexpr, SPIN: tl.constexpr):
    pid_n = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    n_q = S // BLOCK_M
    n_k = S // BLOCK_N
    base = bh * S * D
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :])
    v = tl.load(v_ptr + base + offs_n[:, None] * D + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    start = (pid_n * n_q + n_k - 1) // n_k  # the lockstep schedule: key tile j starts here
    for t in range(0, n_q):
        i = start + t
        i = tl.where(i >= n_q, i - n_q, i)
        offs_m = i * BLOCK_M + offs_m0
        qt = tl.load(q_ptr + base + offs_m[None, :] * D + offs_d[:, None])  # [D, M]
        do = tl.load(do_ptr + base + offs_m[:, None] * D + offs_d[None, :])  # [M, D]
        lse = tl.load(lse_ptr + bh * S + offs_m)
        delta = tl.load(delta_ptr + bh * S + offs_m)
        st = tl.dot(k, qt) * qs
        pt = tl.exp2(st - lse[None, :] * LOG2E)
        dpt = tl.dot(v, tl.trans(do))
        dv = tl.dot(pt.to(do.dtype), do, dv)
        dst = pt * (dpt - delta[None, :])
        dsb = dst.to(qt.dtype)
        dk = tl.dot(dsb, tl.trans(qt), dk)
        if ORDER != 2:
            dq = tl.dot(tl.trans(dsb), k)  # [M, D]
            cnt = cnt_ptr + bh * n_q + i
            if ORDER == 1:
                first = i * n_k // n_q
                rank = first - pid_n
                rank = tl.where(rank < 0, rank + n_k, rank)
                seen = tl.atomic_add(cnt, 0, sem="acquire")
                polls = 0
                while (seen < rank) & (polls < SPIN):
                    seen = tl.atomic_add(cnt, 0, sem="acquire")
                    polls += 1
            dq_desc.atomic_add([(bh * S + i * BLOCK_M).to(tl.int32), 0], dq)
            if ORDER == 1:
                _bulk_done()
                tl.debug_barrier()
                tl.atomic_add(cnt, 1, sem="release")
    tl.store(dk_ptr + base + offs_n[:, None] * D + offs_d[None, :], (dk * scale).to(tl.bfloat16))
    tl.store(dv_ptr + base + offs_n[:, None] * D + offs_d[None, :], dv.to(tl.bfloat16))


def fused(q, k, v, do, lse, delta, dq_acc, cnt, dk, dv, tile, order, spin=1 << 20):
    b, h, s, d = q.shape
    bm, bn, warps, stages = tile
    dq_acc.zero_()
    cnt.zero_()
    desc = TensorDescriptor.from_tensor(dq_acc.view(b * h * s, d), [bm, d])
    fused_bwd_kernel[(s // bn, b * h)](q, k, v, do, lse, delta, dk, dv, desc, cnt, s,
                                       LOG2E.value / math.sqrt(d), 1 / math.sqrt(d), D=d,
                                       BLOCK_M=bm, BLOCK_N=bn, ORDER=order, SPIN=spin,
                                       num_warps=warps, num_stages=stages)
    return (dq_acc * (1 / math.sqrt(d))).to(q.dtype)


def _problem(b, h, s, dh):
    """A non-causal bf16 MHA problem with its forward run: (backward descriptor, q, k, v, dO,
    O, lse, delta)."""
    dev = torch.device("cuda")
    f = (b, h, h, s, s, dh, dh, 1 / math.sqrt(dh), torch.bfloat16, CausalKind.NONE)
    d, db = SdpaDescriptor(*f), SdpaBackwardDescriptor(*f)
    q, k, v, do = (torch.randn(b, h, s, dh, device=dev, dtype=torch.bfloat16) for _ in range(4))
    o = torch.empty_like(q)
    lse = torch.empty(b, h, s, device=dev)
    fp = P.SdpaPlan.select(d)
    fp.run(SdpaArgs(q, k, v, o, lse),
           workspace=torch.empty(fp.workspace_size(), dtype=torch.uint8, device=dev))
    return db, q, k, v, do, o, lse, (o.float() * do.float()).sum(-1).contiguous()


def _ms(fn, reps=10):
    return sorted(CudaEventChain(fn, reps).ms())[reps // 2]


TILES = {128: [(32, 64, 4, 2), (64, 64, 4, 2), (32, 128, 8, 2), (64, 128, 8, 2)],
         64: [(64, 64, 4, 2), (32, 64, 4, 2), (64, 128, 8, 2)]}


def main(which: str) -> None:
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
        dq_acc = torch.empty(b, h, s, dh, device=dev)
        cnt = torch.empty(b * h * s // 16, device=dev, dtype=torch.int32)
        dk, dv = torch.empty_like(k), torch.empty_like(v)
        for tile in TILES[dh]:
            for order in (2, 0, 1):
                try:
                    def run(tile=tile, order=order):
                        return fused(q, k, v, do, lse, delta, dq_acc, cnt, dk, dv, tile, order)
                    dq = run()
                    torch.cuda.synchronize()
                    note = ""
                    if order != 2:
                        err = max(((x.float() - y.float()).abs().max() / y.float().abs().max())
                                  .item() for x, y in zip((dq, dk, dv), ref))
                        again = run()
                        note = f"err {err:.1e} bits {'same' if torch.equal(again, dq) else 'DIFF'}"
                    rows.append((f"fused {tile} order {order} {note}", _ms(run)))
                except Exception as exc:  # noqa: BLE001 - a failing tile is a result too
                    print(f"fused {tile} order {order} failed: {str(exc)[-400:]}", flush=True)
        best = min(ms for n, ms in rows if n == "cudnn_bwd") if rows else float("nan")
        print(f"B={b} H={h} S={s} D={dh}", flush=True)
        for name, ms in rows:
            print(f"  {name:58} {ms:7.3f} ms {fl / ms / 1e9:6.1f} TFLOP/s "
                  f"{best / ms:5.2f}x cudnn_bwd", flush=True)
    for caches in fused_bwd_kernel.device_caches.values():
        for ck in caches[0].values():
            print(f"fused warps={ck.metadata.num_warps} regs={ck.n_regs} "
                  f"spills={ck.n_spills} shared={ck.metadata.shared}", flush=True)


DKDV_TILES = [(32, 64, 4, 3), (64, 64, 4, 2), (64, 64, 4, 3), (64, 128, 8, 2)]


def dkdv_ab() -> None:
    dev, arch, pref = torch.device("cuda"), ArchSku.current(), PlanPreference()
    b, h, s, dh = 4, 16, 4096, 128
    db, q, k, v, do, o, lse, delta = _problem(b, h, s, dh)
    cand = {c.name: c for c in P.SdpaBackwardPlan.candidates}["triton_flash_bwd"]
    plan = P.SdpaBackwardPlan(db, cand, pref, arch)
    grads = [torch.empty_like(x) for x in (q, k, v)]
    a = SdpaBackwardArgs(q, k, v, o, do, lse, *grads)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=dev)
    dq_acc = torch.empty(b, h, s, dh, device=dev)
    cnt = torch.empty(b * h * s // 16, device=dev, dtype=torch.int32)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    keep = dict(P._DKDV_MHA)
    ref = None
    times = {}
    for rnd in range(3):
        for tile in DKDV_TILES if rnd % 2 == 0 else DKDV_TILES[::-1]:
            P._DKDV_MHA[("half", 128)] = tile
            plan.run(a, workspace=ws)
            if ref is None:
                ref = [g.clone() for g in grads]
            same = all(torch.equal(x, y) for x, y in zip(grads, ref))
            times.setdefault(f"two-kernel, dK/dV {tile} bits vs first {same}", []).append(
                _ms(lambda: plan.run(a, workspace=ws)))
            times.setdefault(f"fused ORDER 2 {tile}", []).append(_ms(
                lambda tile=tile: fused(q, k, v, do, lse, delta, dq_acc, cnt, dk, dv, tile, 2)))
    P._DKDV_MHA.clear()
    P._DKDV_MHA.update(keep)
    for name, ms in times.items():
        print(f"  {name:64} {' '.join(f'{t:.3f}' for t in ms)} ms", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["dkdv"]:
        dkdv_ab()
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "all")
