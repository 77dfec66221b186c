"""Rotary-embedding and KV-cache-append kernels: ROWS feature rows per program.

RoPE rotates feature pairs (x1, x2) by θ: (x1 c - x2 s, x2 c + x1 s); the backward is the
same rotation with s negated (SIGN = -1). Pairs are (i, i + R/2) for the half-split layout
and (2i, 2i + 1) for the interleaved one; features past R are copied.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rope_kernel(
    x_ptr, y_ptr, cos_ptr, sin_ptr, pos_ptr,
    n_rows, D1, D2, P,
    sxb, sx1, sx2, syb, sy1, sy2, scp, ssp, spb, sps,
    R: tl.constexpr, D: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_P: tl.constexpr,
    ROWS: tl.constexpr, SEQ_AXIS: tl.constexpr, INTERLEAVED: tl.constexpr,
    HAS_POS: tl.constexpr, SIGN: tl.constexpr, ACC: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    r_ok = rows < n_rows
    i2 = rows % D2
    t = rows // D2
    i1 = t % D1
    b = t // D1
    s = i1 if SEQ_AXIS == 1 else i2
    if HAS_POS:
        pos = tl.load(pos_ptr + b * spb + s * sps, mask=r_ok, other=0).to(tl.int64)
        pos = tl.minimum(tl.maximum(pos, 0), P - 1)
    else:
        pos = s
    x_row = x_ptr + b * sxb + i1 * sx1 + i2 * sx2
    y_row = y_ptr + b * syb + i1 * sy1 + i2 * sy2
    h = tl.arange(0, BLOCK_H)
    msk = r_ok[:, None] & (h < R // 2)[None, :]
    c = tl.load(cos_ptr + pos[:, None] * scp + h[None, :], mask=msk, other=0.0).to(ACC)
    sn = tl.load(sin_ptr + pos[:, None] * ssp + h[None, :], mask=msk, other=0.0).to(ACC) * SIGN
    if INTERLEAVED:
        j1 = 2 * h
        j2 = 2 * h + 1
    else:
        j1 = h
        j2 = h + R // 2
    x1 = tl.load(x_row[:, None] + j1[None, :], mask=msk, other=0.0).to(ACC)
    x2 = tl.load(x_row[:, None] + j2[None, :], mask=msk, other=0.0).to(ACC)
    ty = y_ptr.dtype.element_ty
    tl.store(y_row[:, None] + j1[None, :], (x1 * c - x2 * sn).to(ty), mask=msk)
    tl.store(y_row[:, None] + j2[None, :], (x2 * c + x1 * sn).to(ty), mask=msk)
    if D > R:
        p = R + tl.arange(0, BLOCK_P)
        pm = r_ok[:, None] & (p < D)[None, :]
        tl.store(y_row[:, None] + p[None, :], tl.load(x_row[:, None] + p[None, :], mask=pm),
                 mask=pm)


@triton.jit
def kv_append_kernel(
    kn_ptr, vn_ptr, start_ptr, kc_ptr, vc_ptr,
    n_rows, Hkv, T, CAP,
    sknb, sknh, sknt, svnb, svnh, svnt, skcb, skch, skct, svcb, svch, svct,
    DK: tl.constexpr, DV: tl.constexpr, BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr,
    ROWS: tl.constexpr,
):
    """Row (b, h, t) of the new K / V goes to cache row start[b] + t (if < capacity)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    t = rows % T
    bh = rows // T
    h = bh % Hkv
    b = bh // Hkv
    st = tl.load(start_ptr + b, mask=rows < n_rows, other=0).to(tl.int64)
    dst = st + t
    ok = (rows < n_rows) & (dst < CAP) & (dst >= 0)
    dk = tl.arange(0, BLOCK_DK)
    mk = ok[:, None] & (dk < DK)[None, :]
    kv = tl.load(kn_ptr + (b * sknb + h * sknh + t * sknt)[:, None] + dk[None, :], mask=mk)
    tl.store(kc_ptr + (b * skcb + h * skch + dst * skct)[:, None] + dk[None, :], kv, mask=mk)
    dv = tl.arange(0, BLOCK_DV)
    mv = ok[:, None] & (dv < DV)[None, :]
    vv = tl.load(vn_ptr + (b * svnb + h * svnh + t * svnt)[:, None] + dv[None, :], mask=mv)
    tl.store(vc_ptr + (b * svcb + h * svch + dst * svct)[:, None] + dv[None, :], vv, mask=mv)
