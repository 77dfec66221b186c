"""Indexing kernels.

- `line_gather_kernel`: torch.gather along one axis; a tile of [lines, positions].
- `line_scatter_kernel`: scatter / scatter_reduce owned by the destination: one program owns a
  block of destination positions of one line and scans that line's indices in order, so every
  reduction (and the last-writer rule of plain scatter) is deterministic without atomics.
  Cost is O(extent x index length) per line: the right trade for the short lines gather
  backward and scatter usually see; long reductions go through backends/grouping.py's sort.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import line_offset

S_ASSIGN: tl.constexpr = tl.constexpr(0)
S_SUM: tl.constexpr = tl.constexpr(1)
S_PROD: tl.constexpr = tl.constexpr(2)
S_MEAN: tl.constexpr = tl.constexpr(3)
S_AMAX: tl.constexpr = tl.constexpr(4)
S_AMIN: tl.constexpr = tl.constexpr(5)


@triton.jit
def line_gather_kernel(x_ptr, idx_ptr, out_ptr, n_lines, K, n,
                       S1, S2, S3,
                       xs0, xs1, xs2, xs3, xsa,
                       is0, is1, is2, is3, isa,
                       os0, os1, os2, os3, osa,
                       BLOCK_L: tl.constexpr, BLOCK_J: tl.constexpr):
    lines = tl.program_id(0).to(tl.int64) * BLOCK_L + tl.arange(0, BLOCK_L)
    j = tl.program_id(1).to(tl.int64) * BLOCK_J + tl.arange(0, BLOCK_J)
    m = (lines < n_lines)[:, None] & (j < K)[None, :]
    x_off = line_offset(lines, S1, S2, S3, xs0, xs1, xs2, xs3)
    i_off = line_offset(lines, S1, S2, S3, is0, is1, is2, is3)
    o_off = line_offset(lines, S1, S2, S3, os0, os1, os2, os3)
    i = tl.load(idx_ptr + i_off[:, None] + j[None, :] * isa, mask=m, other=0).to(tl.int64)
    ok = m & (i >= 0) & (i < n)
    v = tl.load(x_ptr + x_off[:, None] + tl.where(ok, i, 0) * xsa, mask=ok, other=0)
    tl.store(out_ptr + o_off[:, None] + j[None, :] * osa, v, mask=m)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _nanmax(a, b):
    return tl.where((a != a) | (a > b), a, b)


@triton.jit
def _nanmin(a, b):
    return tl.where((a != a) | (a < b), a, b)


@triton.jit
def line_scatter_kernel(self_ptr, idx_ptr, src_ptr, out_ptr, K, n, alpha,
                        S1, S2, S3,
                        ss0, ss1, ss2, ss3, ssa,
                        is0, is1, is2, is3, isa,
                        rs0, rs1, rs2, rs3, rsa,
                        os0, os1, os2, os3, osa,
                        KIND: tl.constexpr, HAS_SELF: tl.constexpr, INCLUDE_SELF: tl.constexpr,
                        ACC: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_J: tl.constexpr):
    line = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1).to(tl.int64) * BLOCK_S + tl.arange(0, BLOCK_S)
    sm = s < n
    s_off = line_offset(line, S1, S2, S3, ss0, ss1, ss2, ss3)
    i_off = line_offset(line, S1, S2, S3, is0, is1, is2, is3)
    r_off = line_offset(line, S1, S2, S3, rs0, rs1, rs2, rs3)
    o_off = line_offset(line, S1, S2, S3, os0, os1, os2, os3)
    if HAS_SELF:
        base = tl.load(self_ptr + s_off + s * ssa, mask=sm, other=0).to(ACC)
    else:
        base = tl.zeros([BLOCK_S], ACC)
    if INCLUDE_SELF:
        acc = base
    elif KIND == S_PROD:
        acc = tl.full([BLOCK_S], 1.0, ACC)
    elif KIND == S_AMAX:
        acc = tl.full([BLOCK_S], -float("inf"), ACC)
    elif KIND == S_AMIN:
        acc = tl.full([BLOCK_S], float("inf"), ACC)
    else:
        acc = tl.zeros([BLOCK_S], ACC)
    hits = tl.zeros([BLOCK_S], tl.int32)
    last = tl.full([BLOCK_S], -1, tl.int64)
    for j0 in range(0, K, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J).to(tl.int64)
        jm = j < K
        i = tl.load(idx_ptr + i_off + j * isa, mask=jm, other=-1).to(tl.int64)
        match = (i[None, :] == s[:, None]) & jm[None, :]  # [BLOCK_S, BLOCK_J]
        hits += tl.sum(match.to(tl.int32), axis=1)
        if KIND == S_ASSIGN:
            last = tl.maximum(last, tl.max(tl.where(match, j[None, :], -1), axis=1))
        else:
            v = tl.load(src_ptr + r_off + j * rsa, mask=jm, other=0).to(ACC)
            if KIND == S_SUM or KIND == S_MEAN:
                acc += tl.sum(tl.where(match, v[None, :] * alpha, 0.0), axis=1)
            elif KIND == S_PROD:
                acc *= tl.reduce(tl.where(match, v[None, :], 1.0), 1, _mul)
            elif KIND == S_AMAX:
                acc = _nanmax(acc, tl.reduce(tl.where(match, v[None, :], -float("inf")), 1,
                                             _nanmax))
            else:
                acc = _nanmin(acc, tl.reduce(tl.where(match, v[None, :], float("inf")), 1,
                                             _nanmin))
    if KIND == S_ASSIGN:
        acc = tl.load(src_ptr + r_off + tl.where(last >= 0, last, 0) * rsa,
                      mask=sm & (last >= 0), other=0).to(ACC)
    if KIND == S_MEAN:
        cnt = hits + (1 if INCLUDE_SELF else 0)
        acc = acc / tl.maximum(cnt, 1).to(ACC)
    res = tl.where(hits > 0, acc, base)  # untouched positions keep self (0 without self)
    tl.store(out_ptr + o_off + s * osa, res.to(out_ptr.dtype.element_ty), mask=sm)
