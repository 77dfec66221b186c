"""Elementwise kernels: one source per arity (forward and backward) plus one row-sum kernel
for the deterministic reduction of broadcast gradients.

Every kernel walks the (collapsed) output shape [S0, S1, S2, S3] (S0 implied) and addresses
each operand through its own strides; stride 0 is a broadcast. MODE (a constexpr) picks the
index scheme: 0 = one collapsed dim (flat index; unit strides, specialized to the constant 1
by Triton, give vectorized 16-byte accesses), 1 = two dims walked row by row (no per-element
division: the gated halves and row-broadcast operands), 2 = up to four dims. The op kind OP
and the compute type ACC are constexprs; formulas live in `ops.py`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import join_f64, round_to
from .codes import T_WHERE
from .ops import apply_unary, grad_unary
from .ops_nary import apply_binary, apply_ternary, grad_binary, grad_ternary


@triton.jit
def _coords(i, S1, S2, S3):
    i3 = i % S3
    r = i // S3
    i2 = r % S2
    r = r // S2
    return r // S1, r % S1, i2, i3


@triton.jit
def _position(N, S1, S2, S3, BLOCK: tl.constexpr, BIG: tl.constexpr, MODE: tl.constexpr):
    """(c0, c1, c2, c3, mask) of this program's BLOCK elements.

    MODE 0: one collapsed dim (flat index, c3 only). MODE 1: two dims, each program a BLOCK
    of one row (c2 = row: no per-element division, unit-stride rows vectorize). MODE 2: up
    to four dims from a flat index."""
    pid = tl.program_id(0)
    if BIG:
        pid = pid.to(tl.int64)
    if MODE == 0:
        i = pid * BLOCK + tl.arange(0, BLOCK)
        return pid, pid, pid, i, i < N
    elif MODE == 1:
        nblk = tl.cdiv(S3, BLOCK)
        r = pid // nblk
        c3 = (pid - r * nblk) * BLOCK + tl.arange(0, BLOCK)
        return pid, pid, r, c3, c3 < S3
    else:
        i = pid * BLOCK + tl.arange(0, BLOCK)
        c0, c1, c2, c3 = _coords(i, S1, S2, S3)
        return c0, c1, c2, c3, i < N


@triton.jit
def _off(c0, c1, c2, c3, s0, s1, s2, s3, MODE: tl.constexpr):
    if MODE == 0:
        return c3 * s3
    elif MODE == 1:
        return c2 * s2 + c3 * s3
    else:
        return c0 * s0 + c1 * s1 + c2 * s2 + c3 * s3


@triton.jit
def _out(v, ptr):
    """v as the output's element type (floats rounded once, to nearest even: `round_to`)."""
    ty = ptr.dtype.element_ty
    if ty == tl.int1:
        return v != 0
    elif v.dtype.is_floating() and ty.is_floating():
        return round_to(v, ty)
    else:
        return v.to(ty)


@triton.jit
def _to_acc(v, ACC: tl.constexpr):
    """v in the compute type; an integer or bool into a half (ACC of a `native` kind) goes
    through f32 (the interpreter reads an integer cast to bf16 as its bits)."""
    if (ACC == tl.float16 or ACC == tl.bfloat16) and not v.dtype.is_floating():
        return v.to(tl.float32).to(ACC)
    else:
        return v.to(ACC)


@triton.jit
def unary_kernel(
    x_ptr, y_ptr, N, S1, S2, S3,
    xs0, xs1, xs2, xs3, ys0, ys1, ys2, ys3,
    p0h, p0l, p1h, p1l, p2h, p2l,
    OP: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    xo = _off(c0, c1, c2, c3, xs0, xs1, xs2, xs3, MODE)
    yo = _off(c0, c1, c2, c3, ys0, ys1, ys2, ys3, MODE)
    x = tl.load(x_ptr + xo, mask=m, other=0).to(ACC)
    y = apply_unary(x, join_f64(p0h, p0l, ACC), join_f64(p1h, p1l, ACC),
                    join_f64(p2h, p2l, ACC), OP)
    tl.store(y_ptr + yo, _out(y, y_ptr), mask=m)


@triton.jit
def unary_bwd_kernel(
    dy_ptr, x_ptr, dx_ptr, N, S1, S2, S3,
    gs0, gs1, gs2, gs3, xs0, xs1, xs2, xs3, ds0, ds1, ds2, ds3,
    p0h, p0l, p1h, p1l, p2h, p2l,
    OP: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    go = _off(c0, c1, c2, c3, gs0, gs1, gs2, gs3, MODE)
    xo = _off(c0, c1, c2, c3, xs0, xs1, xs2, xs3, MODE)
    do = _off(c0, c1, c2, c3, ds0, ds1, ds2, ds3, MODE)
    g = tl.load(dy_ptr + go, mask=m, other=0).to(ACC)
    x = tl.load(x_ptr + xo, mask=m, other=0).to(ACC)
    dx = grad_unary(x, g, join_f64(p0h, p0l, ACC), join_f64(p1h, p1l, ACC),
                    join_f64(p2h, p2l, ACC), OP)
    tl.store(dx_ptr + do, _out(dx, dx_ptr), mask=m)


@triton.jit
def binary_kernel(
    a_ptr, b_ptr, y_ptr, N, S1, S2, S3,
    as0, as1, as2, as3, bs0, bs1, bs2, bs3, ys0, ys1, ys2, ys3,
    p0h, p0l, p1h, p1l,
    OP: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    ao = _off(c0, c1, c2, c3, as0, as1, as2, as3, MODE)
    bo = _off(c0, c1, c2, c3, bs0, bs1, bs2, bs3, MODE)
    yo = _off(c0, c1, c2, c3, ys0, ys1, ys2, ys3, MODE)
    a = _to_acc(tl.load(a_ptr + ao, mask=m, other=1), ACC)
    b = _to_acc(tl.load(b_ptr + bo, mask=m, other=1), ACC)
    y = apply_binary(a, b, join_f64(p0h, p0l, ACC), join_f64(p1h, p1l, ACC), OP,
                     y_ptr.dtype.element_ty)
    tl.store(y_ptr + yo, _out(y, y_ptr), mask=m)


@triton.jit
def binary_bwd_kernel(
    dy_ptr, a_ptr, b_ptr, da_ptr, db_ptr, N, S1, S2, S3,
    gs0, gs1, gs2, gs3, as0, as1, as2, as3, bs0, bs1, bs2, bs3,
    das0, das1, das2, das3, dbs0, dbs1, dbs2, dbs3,
    p0h, p0l, p1h, p1l,
    OP: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr, LOAD_A: tl.constexpr, LOAD_B: tl.constexpr,
    WRITE_A: tl.constexpr, WRITE_B: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    go = _off(c0, c1, c2, c3, gs0, gs1, gs2, gs3, MODE)
    ao = _off(c0, c1, c2, c3, as0, as1, as2, as3, MODE)
    bo = _off(c0, c1, c2, c3, bs0, bs1, bs2, bs3, MODE)
    dao = _off(c0, c1, c2, c3, das0, das1, das2, das3, MODE)
    dbo = _off(c0, c1, c2, c3, dbs0, dbs1, dbs2, dbs3, MODE)
    g = tl.load(dy_ptr + go, mask=m, other=0).to(ACC)
    if LOAD_A:
        a = tl.load(a_ptr + ao, mask=m, other=1).to(ACC)
    else:
        a = tl.zeros_like(g)
    if LOAD_B:
        b = tl.load(b_ptr + bo, mask=m, other=1).to(ACC)
    else:
        b = tl.zeros_like(g)
    ga, gb = grad_binary(a, b, g, join_f64(p0h, p0l, ACC), join_f64(p1h, p1l, ACC), OP,
                         dy_ptr.dtype.element_ty)
    if WRITE_A:
        tl.store(da_ptr + dao, _out(ga, da_ptr), mask=m)
    if WRITE_B:
        tl.store(db_ptr + dbo, _out(gb, db_ptr), mask=m)


@triton.jit
def ternary_kernel(
    a_ptr, b_ptr, c_ptr, y_ptr, N, S1, S2, S3,
    as0, as1, as2, as3, bs0, bs1, bs2, bs3, cs0, cs1, cs2, cs3, ys0, ys1, ys2, ys3,
    p0h, p0l,
    OP: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    ao = _off(c0, c1, c2, c3, as0, as1, as2, as3, MODE)
    bo = _off(c0, c1, c2, c3, bs0, bs1, bs2, bs3, MODE)
    co = _off(c0, c1, c2, c3, cs0, cs1, cs2, cs3, MODE)
    yo = _off(c0, c1, c2, c3, ys0, ys1, ys2, ys3, MODE)
    # where's condition keeps its own type (bool); the other operands compute in ACC.
    if OP == T_WHERE:
        a = tl.load(a_ptr + ao, mask=m, other=0)
    else:
        a = tl.load(a_ptr + ao, mask=m, other=1).to(ACC)
    b = tl.load(b_ptr + bo, mask=m, other=1).to(ACC)
    c = tl.load(c_ptr + co, mask=m, other=1).to(ACC)
    y = apply_ternary(a, b, c, join_f64(p0h, p0l, ACC), OP)
    tl.store(y_ptr + yo, _out(y, y_ptr), mask=m)


@triton.jit
def ternary_bwd_kernel(
    dy_ptr, a_ptr, b_ptr, c_ptr, da_ptr, db_ptr, dc_ptr, N, S1, S2, S3,
    gs0, gs1, gs2, gs3, as0, as1, as2, as3, bs0, bs1, bs2, bs3, cs0, cs1, cs2, cs3,
    das0, das1, das2, das3, dbs0, dbs1, dbs2, dbs3, dcs0, dcs1, dcs2, dcs3,
    p0h, p0l,
    OP: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr, WRITE_A: tl.constexpr, WRITE_B: tl.constexpr, WRITE_C: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    go = _off(c0, c1, c2, c3, gs0, gs1, gs2, gs3, MODE)
    ao = _off(c0, c1, c2, c3, as0, as1, as2, as3, MODE)
    bo = _off(c0, c1, c2, c3, bs0, bs1, bs2, bs3, MODE)
    co = _off(c0, c1, c2, c3, cs0, cs1, cs2, cs3, MODE)
    dao = _off(c0, c1, c2, c3, das0, das1, das2, das3, MODE)
    dbo = _off(c0, c1, c2, c3, dbs0, dbs1, dbs2, dbs3, MODE)
    dco = _off(c0, c1, c2, c3, dcs0, dcs1, dcs2, dcs3, MODE)
    g = tl.load(dy_ptr + go, mask=m, other=0).to(ACC)
    if OP == T_WHERE:
        a = tl.load(a_ptr + ao, mask=m, other=0)
    else:
        a = tl.load(a_ptr + ao, mask=m, other=1).to(ACC)
    b = tl.load(b_ptr + bo, mask=m, other=1).to(ACC)
    c = tl.load(c_ptr + co, mask=m, other=1).to(ACC)
    ga, gb, gc = grad_ternary(a, b, c, g, join_f64(p0h, p0l, ACC), OP,
                              b_ptr.dtype.element_ty, c_ptr.dtype.element_ty,
                              dy_ptr.dtype.element_ty)
    if WRITE_A:
        tl.store(da_ptr + dao, _out(ga, da_ptr), mask=m)
    if WRITE_B:
        tl.store(db_ptr + dbo, _out(gb, db_ptr), mask=m)
    if WRITE_C:
        tl.store(dc_ptr + dco, _out(gc, dc_ptr), mask=m)


@triton.jit
def rowsum_kernel(src_ptr, dst_ptr, K, R, sk, sr, CHUNK, C,
                  BK: tl.constexpr, BR: tl.constexpr):
    """dst[k, c] = sum over r in chunk c of src[k * sk + r * sr] (dst is [K, C] contiguous).

    Each program owns BK rows and one chunk of CHUNK (a multiple of BR) reduced elements and
    sums them in a fixed order: the broadcast-gradient reduction is bit-reproducible."""
    kb = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1).to(tl.int64)
    ks = kb * BK + tl.arange(0, BK)
    rs = tl.arange(0, BR)
    acc = tl.zeros([BR, BK], dst_ptr.dtype.element_ty)
    start = c * CHUNK
    for off in range(0, CHUNK, BR):
        r = start + off + rs
        mask = (r[:, None] < R) & (ks[None, :] < K)
        ptrs = src_ptr + r[:, None] * sr + ks[None, :] * sk
        acc += tl.load(ptrs, mask=mask, other=0).to(acc.dtype)
    tl.store(dst_ptr + ks * C + c, tl.sum(acc, 0), mask=ks < K)
