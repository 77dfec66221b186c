"""Pad kernels: one gather forward for every mode and the gather-form backward of the
reflect / replicate / circular / symmetric modes.

A program owns ROWS rows of its output and walks their last dim in [ROWS, BLOCK_W] tiles (the
contiguous run: coalesced stores): every outer dim's index is worked out once per row, the
last dim's once per column, so the per-element cost is two adds and a select.
"""

from __future__ import annotations

import triton
import triton.language as tl

#: the modes' codes (descriptors.MODE_CODES)
CONSTANT: tl.constexpr = tl.constexpr(0)
REFLECT: tl.constexpr = tl.constexpr(1)
REPLICATE: tl.constexpr = tl.constexpr(2)
CIRCULAR: tl.constexpr = tl.constexpr(3)
SYMMETRIC: tl.constexpr = tl.constexpr(4)


@triton.jit
def _source(o, lo, n, MODE: tl.constexpr):
    """The input index output index `o` reads along one dim, and whether it reads one (in
    constant mode the outside is the fill)."""
    t = o - lo
    if MODE == CONSTANT:
        ok = (t >= 0) & (t < n)
    else:
        ok = o >= 0
        if MODE == REFLECT:
            t = tl.abs(t)
            t = tl.where(t >= n, 2 * (n - 1) - t, t)
        elif MODE == REPLICATE:
            t = tl.minimum(tl.maximum(t, 0), n - 1)
        elif MODE == SYMMETRIC:  # the mirror including the edge (pads at most n)
            t = tl.where(t < 0, -t - 1, t)
            t = tl.where(t >= n, 2 * n - 1 - t, t)
        else:
            t = t % n
            t = tl.where(t < 0, t + n, t)
    return t, ok


@triton.jit
def _outer(r, S, N, L, XS, YS, xo, yo, ok, MODE: tl.constexpr):
    """Peel one outer dim (output extent S, input extent N, low pad L) off the row index."""
    o = r % S
    t, v = _source(o, L, N, MODE)
    return r // S, xo + t.to(tl.int64) * XS, yo + o.to(tl.int64) * YS, ok & v


@triton.jit
def pad_kernel(x_ptr, y_ptr, value_bits, x_shift, rows, W, NW, LW, xsw, ysw,
               S1, S2, S3, S4, S5, S6, S7,
               N1, N2, N3, N4, N5, N6, N7,
               L1, L2, L3, L4, L5, L6, L7,
               XS1, XS2, XS3, XS4, XS5, XS6, XS7,
               YS1, YS2, YS3, YS4, YS5, YS6, YS7,
               MODE: tl.constexpr, BITS: tl.constexpr, ROWS: tl.constexpr,
               BLOCK_W: tl.constexpr):
    """y[rows..., W] from x: outer dims 1 (outermost) .. 7 and the last dim W, each with
    its own source map; extents of unused outer dims are 1."""
    # row and dim indices in int32 (the host keeps every extent and the row count below
    # 2**31): 64-bit division is a slow subroutine; offsets are int64
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = r < rows
    xo = tl.zeros([ROWS], tl.int64) + x_shift
    yo = tl.zeros([ROWS], tl.int64)
    ok = rmask
    r, xo, yo, ok = _outer(r, S7, N7, L7, XS7, YS7, xo, yo, ok, MODE)
    r, xo, yo, ok = _outer(r, S6, N6, L6, XS6, YS6, xo, yo, ok, MODE)
    r, xo, yo, ok = _outer(r, S5, N5, L5, XS5, YS5, xo, yo, ok, MODE)
    r, xo, yo, ok = _outer(r, S4, N4, L4, XS4, YS4, xo, yo, ok, MODE)
    r, xo, yo, ok = _outer(r, S3, N3, L3, XS3, YS3, xo, yo, ok, MODE)
    r, xo, yo, ok = _outer(r, S2, N2, L2, XS2, YS2, xo, yo, ok, MODE)
    r, xo, yo, ok = _outer(r, S1, N1, L1, XS1, YS1, xo, yo, ok, MODE)
    # the row math is done once; the program then walks its rows' columns
    for c0 in range(0, W, BLOCK_W):
        w = c0 + tl.arange(0, BLOCK_W)
        wmask = w < W
        tw, okw = _source(w, LW, NW, MODE)
        store = rmask[:, None] & wmask[None, :]
        reads = store & ok[:, None] & okw[None, :]
        # [ROWS, BLOCK_W]
        x = tl.load(x_ptr + xo[:, None] + (tw.to(tl.int64) * xsw)[None, :], mask=reads,
                    other=0)
        if MODE == CONSTANT:
            # the fill travels as the bits of the element, converted on the host as torch
            # converts it (BITS: the same-width integer type; None for integer elements)
            bits = tl.full([1, 1], value_bits, tl.int64)
            if BITS is None:
                v = bits.to(x.dtype)
            else:
                v = bits.to(BITS).to(x.dtype, bitcast=True)
            x = tl.where(reads, x, v)
        tl.store(y_ptr + yo[:, None] + (w.to(tl.int64) * ysw)[None, :], x, mask=store)


@triton.jit
def _image(i, j, lo, n, n_out, shift, MODE: tl.constexpr):
    """The j-th output index that reads input index i along one dim (j = 0: the direct one),
    and whether it exists. reflect: the direct, low-mirror and high-mirror images; circular:
    the direct and the two wrapped ones of the part [shift, shift + n) its negative pads
    leave; replicate: the band [start, end] of outputs clamped onto i (more than one only at
    the edges)."""
    if MODE == REFLECT:
        o = tl.where(j == 0, i + lo, tl.where(j == 1, lo - i, 2 * (n - 1) - i + lo))
        ok = (j == 0) | ((j == 1) & (i > 0)) | ((j == 2) & (i < n - 1))
    elif MODE == SYMMETRIC:
        o = tl.where(j == 0, i + lo, tl.where(j == 1, lo - 1 - i, 2 * n - 1 - i + lo))
        ok = j < 3
    elif MODE == REPLICATE:
        start = tl.where(i == 0, 0, i + lo)
        end = tl.where(i == n - 1, n_out - 1, i + lo)
        o = start + j
        ok = o <= end
    else:
        k = tl.where(j == 2, 1, -j)
        o = i - shift + lo + k * n
        ok = (i >= shift) & (i < shift + n)
    return o, ok & (o >= 0) & (o < n_out)


@triton.jit
def pad_backward_kernel(dy_ptr, dx_ptr, rows, W, NW, WO, LW, CW, SW, dys_w, dxs_w,
                        B2, D, H, ND, NH, DO, HO, LD, LH, CD, CH, SD, SH,
                        dys_b1, dys_b2, dys_d, dys_h, dxs_b1, dxs_b2, dxs_d, dxs_h,
                        IWA, IWB, IHA, IHB, IDA, IDB,
                        MODE: tl.constexpr, ACC: tl.constexpr, ROWS: tl.constexpr,
                        BLOCK_W: tl.constexpr):
    """dx[b1, b2, d, h, w] = the sum of dy over the (at most CD x CH x CW) outputs that read
    it, in a fixed order (deterministic, no atomics). D, H, W are dx's extents; ND, NH, NW
    and SD, SH, SW the extents and starts of the part the pads read (circular pads that crop
    read less; every other mode reads all of dx: N = the extent, S = 0). [IWA, IWB) and
    likewise for H and D: the interior, indices read by their direct image only; a tile
    inside it takes one image per element instead of CD x CH x CW masked ones."""
    r0 = tl.program_id(0) * ROWS
    h0 = r0 % H
    cd = tl.where((h0 + ROWS <= H) & ((r0 // H) % D >= IDA) & ((r0 // H) % D < IDB), 1, CD)
    ch = tl.where((h0 >= IHA) & (h0 + ROWS <= IHB), 1, CH)
    r = r0 + tl.arange(0, ROWS)  # int32: extents below 2**31 (host)
    rmask = r < rows
    h = r % H
    r = r // H
    d = r % D
    r = r // D
    b2 = r % B2
    b1 = r // B2
    base = b1.to(tl.int64) * dys_b1 + b2.to(tl.int64) * dys_b2
    out = b1.to(tl.int64) * dxs_b1 + b2.to(tl.int64) * dxs_b2 + d.to(tl.int64) * dxs_d + \
        h.to(tl.int64) * dxs_h
    for c0 in range(0, W, BLOCK_W):
        w = c0 + tl.arange(0, BLOCK_W)
        wmask = w < W
        acc = tl.zeros([ROWS, BLOCK_W], ACC)
        cw = tl.where((c0 >= IWA) & (c0 + BLOCK_W <= IWB), 1, CW)
        # one flat loop over the (jd, jh, jw) images in a fixed order (deterministic), the
        # counters stepped by selects (no division; a single loop-carried accumulator)
        jw = 0
        jh = 0
        jd = 0
        for _ in range(cd * ch * cw):
            od, okd = _image(d, jd, LD, ND, DO, SD, MODE)
            oh, okh = _image(h, jh, LH, NH, HO, SH, MODE)
            ow, okw = _image(w, jw, LW, NW, WO, SW, MODE)
            row = base + od.to(tl.int64) * dys_d + oh.to(tl.int64) * dys_h
            rok = rmask & okd & okh
            g = tl.load(dy_ptr + row[:, None] + (ow.to(tl.int64) * dys_w)[None, :],
                        mask=rok[:, None] & (okw & wmask)[None, :], other=0)
            acc += g.to(ACC)
            jw += 1
            wrap_w = jw == cw
            jw = tl.where(wrap_w, 0, jw)
            jh = tl.where(wrap_w, jh + 1, jh)
            wrap_h = jh == ch
            jh = tl.where(wrap_h, 0, jh)
            jd = tl.where(wrap_h, jd + 1, jd)
        tl.store(dx_ptr + out[:, None] + (w.to(tl.int64) * dxs_w)[None, :],
                 acc.to(dx_ptr.dtype.element_ty), mask=rmask[:, None] & wmask[None, :])
