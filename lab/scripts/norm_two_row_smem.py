# ruff: noqa: B023  (the closures are timed at once)
"""Experiment (not library code): the shared-memory norm forward with ROWS rows per program
whose exchanges overlap. Each program copies chunk c of ROWS consecutive rows, reduces each
and publishes its partials and counts in for every row first, then waits for each row in
turn, so no row's wait holds back another's publication (the session-12 variant waited for
the first row before publishing the second). gamma / beta are loaded once per slice for all
the rows. Compared against the library's one-row kernel (bits and kernel-only GB/s).

    python lab/scripts/norm_two_row_smem.py
"""

from __future__ import annotations

import torch
import triton.testing
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

import baracuda as bc
from baracuda.backends.gluon_chunks import (
    LANE,
    UNSWIZZLED,
    arrived_pairs,
    chunk_config,
    copy_slice,
    fresh_exchange,
    n_chunks,
    slice_cols,
    slice_layout,
    triton_poll,
    wait_prior_grid,
)
from baracuda.families.normalization import plans_smem as NS
from baracuda.families.normalization.kernels_smem import chunk_sums, pair_moments


@gluon.jit
def _issue(x_row, c, M, R: gl.constexpr, SL: gl.constexpr, num_warps: gl.constexpr):
    slices = gl.allocate_shared_memory(x_row.dtype.element_ty, [R // SL, SL, LANE], UNSWIZZLED)
    for s in gl.static_range(R // SL):
        copy_slice(slices.index(s), x_row, c, s, M, R, SL, num_warps)
    return slices


@gluon.jit
def _publish(slices, x_row, row, c, M, part_ptr, count_ptr, RMS: gl.constexpr,
             NCH: gl.constexpr, R: gl.constexpr, SL: gl.constexpr, num_warps: gl.constexpr):
    if RMS:
        k = 0.0
    else:
        k = gl.load(x_row).to(gl.float32)
    t1, t2 = chunk_sums(slices, x_row, c, M, k, False, R, SL, num_warps)
    slot = row * NCH + c
    gl.store(part_ptr + slot * 2, t1)
    gl.store(part_ptr + slot * 2 + 1, t2)
    gl.thread_barrier()
    gl.atomic_add(count_ptr + row, 1, sem="release")
    return k


@gluon.jit
def _moments(row, k, M, eps, part_ptr, count_ptr, SPIN, RMS: gl.constexpr, NCH: gl.constexpr,
             NCH_P2: gl.constexpr, num_warps: gl.constexpr):
    triton_poll(count_ptr + row, gl.atomic_add(count_ptr + row, 0, sem="acquire"), NCH, SPIN)
    p1, p2 = arrived_pairs(part_ptr, row, 0.0, NCH, NCH_P2, num_warps)
    return pair_moments(p1, p2, k, M, eps, RMS)


@gluon.jit
def _write(slices, s, y_row, cols, live, mean, rstd, w, b, num_warps: gl.constexpr):
    x = slices.index(s).load(slice_layout(num_warps)).to(gl.float32)
    gl.store(y_row + cols, ((x - mean) * rstd * w + b).to(y_row.dtype.element_ty), mask=live)


@gluon.jit
def two_row_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, part_ptr, count_ptr,
                       M, eps, SPIN, NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr,
                       SL: gl.constexpr, RMS: gl.constexpr, num_warps: gl.constexpr):
    pid = gl.program_id(0)
    row = (pid // NCH) * 2
    c = pid % NCH
    xa = x_ptr + row.to(gl.int64) * M
    xb = xa + M
    sa = _issue(xa, c, M, R, SL, num_warps)
    sb = _issue(xb, c, M, R, SL, num_warps)
    async_copy.commit_group()
    async_copy.wait_group(0)
    gl.thread_barrier()
    wait_prior_grid()
    ka = _publish(sa, xa, row, c, M, part_ptr, count_ptr, RMS, NCH, R, SL, num_warps)
    kb = _publish(sb, xb, row + 1, c, M, part_ptr, count_ptr, RMS, NCH, R, SL, num_warps)
    mean_a, rstd_a = _moments(row, ka, M, eps, part_ptr, count_ptr, SPIN, RMS, NCH, NCH_P2,
                              num_warps)
    mean_b, rstd_b = _moments(row + 1, kb, M, eps, part_ptr, count_ptr, SPIN, RMS, NCH, NCH_P2,
                              num_warps)
    if c == 0:
        if not RMS:
            gl.store(mean_ptr + row, mean_a)
            gl.store(mean_ptr + row + 1, mean_b)
        gl.store(rstd_ptr + row, rstd_a)
        gl.store(rstd_ptr + row + 1, rstd_b)
    ya = y_ptr + row.to(gl.int64) * M
    for s in range(R // SL):
        cols = slice_cols(c, s, R, SL, num_warps)
        live = cols < M
        w = gl.load(w_ptr + cols, mask=live, other=0.0).to(gl.float32)
        if RMS:
            b = 0.0
        else:
            b = gl.load(b_ptr + cols, mask=live, other=0.0).to(gl.float32)
        _write(sa, s, ya, cols, live, mean_a, rstd_a, w, b, num_warps)
        _write(sb, s, ya + M, cols, live, mean_b, rstd_b, w, b, num_warps)


def main() -> None:
    for rows, m in ((1024, 65536), (256, 262144)):
        for rms in (True, False):
            x = torch.randn(rows, m, device="cuda", dtype=torch.bfloat16)
            w = torch.rand(m, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(m, device="cuda", dtype=torch.bfloat16)
            ws = torch.empty(rows * (m // 1024 * 8 + 64) + 4096, dtype=torch.uint8,
                             device="cuda")
            outs = {}
            for kind in ("lib", "two"):
                y = torch.full_like(x, float("nan"))
                mean = torch.empty(rows, 1, device="cuda")
                rstd = torch.empty(rows, 1, device="cuda")
                if rms:
                    d = bc.RMSNormDescriptor((rows, m), (1,), True, 1e-5, x.dtype)
                    a = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
                else:
                    d = bc.LayerNormDescriptor((rows, m), (1,), True, True, 1e-5, x.dtype)
                    a = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
                for cfg in (chunk_config(m), {"R": 32, "SL": 4, "num_warps": 4},
                            {"R": 16, "SL": 4, "num_warps": 4}):
                    nch = n_chunks(m, cfg)

                    def run(cfg=cfg, nch=nch):
                        if kind == "lib":
                            return NS.launch_smem(d, a, ws, rms, cfg=cfg)
                        part, cnt = fresh_exchange(ws, rows, nch)
                        two_row_fwd_kernel[(rows // 2 * nch,)](
                            x, y, w, b, rstd if rms else mean, rstd, part, cnt, m, 1e-5,
                            1 << 20, NCH=nch, NCH_P2=1 << (nch - 1).bit_length(),
                            R=cfg["R"], SL=cfg["SL"], RMS=rms, num_warps=cfg["num_warps"],
                            launch_pdl=True)

                    run()
                    outs[(kind, cfg["R"])] = (y.clone(), rstd.clone())
                    ms = triton.testing.do_bench_cudagraph(run, rep=100)
                    print(f"{'rms' if rms else 'layer'} [{rows}, {m}] {kind} "
                          f"{cfg['R']}/{cfg['SL']}/{cfg['num_warps']}: "
                          f"{2 * x.numel() * 2 / ms / 1e6:.0f} GB/s", flush=True)
            for r in (32, 16):
                same = all(torch.equal(p, q) for p, q in zip(outs[("lib", r)], outs[("two", r)]))
                print(f"  R={r}: two-row bits equal the library's: {same}", flush=True)


if __name__ == "__main__":
    main()
