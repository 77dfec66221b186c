"""Reduction kernels: one source for every kind, the kind's state and output as constexprs.

A launch sees the input as [kept K, reduced R] after the host merged dims (layout.py): each
program takes BLOCK_K kept lines and runs along their reduced elements BLOCK_R at a time,
every lane of the [BLOCK_K, BLOCK_R] tile keeping its own state (`_update`); the lanes merge
at the end (`_merge`) in a fixed tree. Which axis of the tile is contiguous in memory comes
from the strides (the JIT sees a unit stride as a constant), so a row reduction (contiguous
reduced axis) and a column reduction (contiguous kept axis) both load coalesced from the same
source. Lines too long for one program are cut into `n_split` chunks (grid axis 1) whose
states go to the workspace; `reduce_combine_kernel` merges them in chunk order. No atomics.

States (a, b, n) per OP: SUM (sum, -, count of non-NaN), PROD (product), MAX / MIN (value,
-, index), VAR (Welford mean, M2, count), LSE (max, sum of exp(x - max)), MINMAX (min, max),
XOR / AND / OR (int64 bits). PRE transforms each element before its state takes it (the
norms' |x|, x^2, |x|^p; hash's 64-bit pattern). A mask operand (torch.masked, MASK > 0)
replaces masked-out elements by the kind's identity IDENT (MASK_SUBSTITUTE: what torch.masked
does) or leaves them out of the count too (MASK_EXCLUDE: mean, var, std).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import INTERP, join_f64, line_offset, round_to

# states
OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_VAR, OP_LSE, OP_MINMAX, OP_XOR, OP_AND, OP_OR = range(10)
# input transforms: as is, NaN skipped (and counted out), x != 0, x == 0, |x|, x^2, |x|^p,
# the bits of x widened to 64 (floats through float64)
(PRE_NONE, PRE_SKIP_NAN, PRE_NONZERO, PRE_ZERO, PRE_ABS, PRE_SQUARE, PRE_POW,
 PRE_BITS) = range(8)
# outputs
(POST_VALUE, POST_MEAN, POST_NANMEAN, POST_ALL, POST_ANY, POST_VAR, POST_STD, POST_VAR_MEAN,
 POST_STD_MEAN, POST_LSE, POST_VALUE_INDEX, POST_INDEX, POST_MINMAX, POST_SQRT, POST_ROOT,
 POST_LME, POST_PTP) = range(17)
# mask operand: none, masked-out elements replaced by IDENT, masked-out elements left out
MASK_NONE, MASK_SUBSTITUTE, MASK_EXCLUDE = range(3)

INT64_MAX = tl.constexpr(2**63 - 1)


@triton.jit
def offsets(i, D1, D2, D3, s0, s1, s2, s3, DIMS: tl.constexpr):
    """Element offsets of flat indices `i` over up to four dims [D0, D1, D2, D3] (row-major,
    D0 implied; fewer dims padded in front); one dim is a plain multiply by its stride s3, so
    a unit stride stays visible to the JIT."""
    if DIMS == 1:
        return i * s3
    else:
        return line_offset(i, D1, D2, D3, s0, s1, s2, s3)


@triton.jit
def nan_extreme(a, FILL: tl.constexpr, IS_FLOAT: tl.constexpr, AXIS: tl.constexpr,
                MAX: tl.constexpr):
    """max (MAX) or min along AXIS that returns NaN when a lane holds NaN (the GPU's max and
    min drop NaNs); FILL is the identity that stands in for the NaNs."""
    if IS_FLOAT:
        nan = a != a
        b = tl.where(nan, FILL, a)
        m = tl.max(b, AXIS) if MAX else tl.min(b, AXIS)
        return tl.where(tl.max(nan.to(tl.int32), AXIS) > 0, float("nan"), m)
    elif MAX:
        return tl.max(a, AXIS)
    else:
        return tl.min(a, AXIS)


@triton.jit
def pow_abs(x, p):
    """|x|^p as exp2(p log2 |x|): 0^p is 0 for p > 0 and inf for p < 0, as pow's."""
    return tl.exp2(p * tl.log2(tl.abs(x)))


@triton.jit
def half_as_torch(h):
    """f16 -> f32 as torch converts on the device at hand, NaNs included: the GPU's convert
    makes every NaN the canonical 0x7FFFFFFF (Triton's keeps the payload), the CPU's keeps it;
    a hash sees the difference."""
    if INTERP:
        return h.to(tl.float32)
    else:
        canon = tl.full(h.shape, 0x7FFFFFFF, tl.int32).to(tl.float32, bitcast=True)
        return tl.where(h != h, canon, h.to(tl.float32))


@triton.jit
def load_elements(ptrs, m_ptrs, valid, PRE: tl.constexpr, ACC: tl.constexpr,
                  MASK: tl.constexpr, IDENT: tl.constexpr):
    """A tile of x in the accumulator type (hash: its widened bits), the mask applied; returns
    (x, valid) with `valid` narrowed where MASK_EXCLUDE leaves elements out."""
    raw = tl.load(ptrs, mask=valid, other=0)
    if PRE == 7:
        if raw.dtype == tl.float16:
            x = half_as_torch(raw).to(tl.float64).to(tl.int64, bitcast=True)
        elif raw.dtype.is_floating():
            x = raw.to(tl.float64).to(tl.int64, bitcast=True)
        else:
            x = raw.to(tl.int64)
    elif PRE == 2 or PRE == 3:  # counts are int64: test before converting (0.5 is nonzero)
        x = (raw != 0).to(ACC)
    else:
        x = raw.to(ACC)
    if MASK == 1:
        keep = tl.load(m_ptrs, mask=valid, other=0) != 0
        x = tl.where(keep, x, IDENT)
    elif MASK == 2:
        valid = valid & (tl.load(m_ptrs, mask=valid, other=0) != 0)
    return x, valid


@triton.jit
def transform(x, p, PRE: tl.constexpr):
    """The norms' element transforms (the others are applied inside `_update`)."""
    if PRE == 4:
        return tl.abs(x)
    elif PRE == 5:
        return x * x
    elif PRE == 6:
        return pow_abs(x, p)
    else:
        return x


@triton.jit
def _update(a, b, n, x, valid, r, OP: tl.constexpr, PRE: tl.constexpr, INDEX: tl.constexpr,
            ACC: tl.constexpr, LOWEST: tl.constexpr, HIGHEST: tl.constexpr,
            COUNT: tl.constexpr, step=1.0, STEPPED: tl.constexpr = False):
    """One block of elements into every lane's state; `valid` masks tails and empty lanes
    (and masked-out elements); COUNT keeps SUM's count of valid elements. STEPPED: every
    lane is valid at every step but its chunk's last, so Welford's count is `step` (no
    per-element count, int64 convert and divide; the counts come from the geometry after)."""
    if OP == 0:
        if COUNT:
            n += valid.to(tl.int64)
        if PRE == 1:
            keep = valid & (x == x)
            a += tl.where(keep, x, 0)
            n += keep.to(tl.int64)
        elif PRE == 2:
            a += (valid & (x != 0)).to(ACC)
        elif PRE == 3:
            a += (valid & (x == 0)).to(ACC)
        else:
            a += tl.where(valid, x, 0)
    elif OP == 1:
        a *= tl.where(valid, x, 1)
    elif OP == 2 or OP == 3:
        if OP == 2:
            xv = tl.where(valid, x, LOWEST)
            better = xv > a
        else:
            xv = tl.where(valid, x, HIGHEST)
            better = xv < a
        if INDEX:  # strictly better keeps each lane's first extreme (and its first NaN)
            take = valid & ((n < 0) | better | ((xv != xv) & (a == a)))
            n = tl.where(take, r, n)
        else:  # NaN sticks: nothing compares better than it
            take = better | (xv != xv)
        a = tl.where(take, xv, a)
    elif OP == 4:
        delta = tl.where(valid, x - a, 0)
        if STEPPED:
            a += delta * (1.0 / step)
        else:
            n += valid.to(tl.int64)
            a += delta / tl.maximum(n, 1).to(ACC)
        b += tl.where(valid, delta * (x - a), 0)
    elif OP == 5:
        xv = tl.where(valid, x, -float("inf"))
        m_new = tl.where((xv > a) | (xv != xv), xv, a)
        scale = tl.where(m_new == a, 1.0, tl.exp(a - m_new))
        b = b * scale + tl.where(xv == -float("inf"), 0.0, tl.exp(xv - m_new))
        a = m_new
    elif OP == 7:
        a = a ^ tl.where(valid, x, 0)
    elif OP == 8:
        a = a & tl.where(valid, x, -1)
    elif OP == 9:
        a = a | tl.where(valid, x, 0)
    else:
        lo = tl.where(valid, x, HIGHEST)
        hi = tl.where(valid, x, LOWEST)
        a = tl.where((lo < a) | (lo != lo), lo, a)
        b = tl.where((hi > b) | (hi != hi), hi, b)
    return a, b, n


@triton.jit
def _merge(a, b, n, OP: tl.constexpr, INDEX: tl.constexpr, ACC: tl.constexpr,
           IS_FLOAT: tl.constexpr, LOWEST: tl.constexpr, HIGHEST: tl.constexpr):
    """Lane states [BLOCK_K, L] -> one state per line [BLOCK_K] (a fixed tree: deterministic)."""
    if OP == 0:
        return tl.sum(a, 1), tl.sum(b, 1), tl.sum(n, 1)
    elif OP == 1:
        return prod_lanes(a), tl.sum(b, 1), tl.sum(n, 1)
    elif OP == 2 or OP == 3:
        m = nan_extreme(a, LOWEST if OP == 2 else HIGHEST, IS_FLOAT, 1, OP == 2)
        if INDEX:
            hit = (a == m[:, None]) | ((a != a) & (m != m)[:, None])
            idx = tl.min(tl.where(hit & (n >= 0), n, INT64_MAX), 1)
        else:
            idx = tl.sum(n, 1)
        return m, tl.sum(b, 1), idx
    elif OP == 4:  # Chan et al.: exact for any split of the line
        total = tl.sum(n, 1)
        w = n.to(ACC)
        mean = tl.sum(w * a, 1) / total.to(ACC)
        d = a - mean[:, None]
        m2 = tl.sum(b, 1) + tl.sum(tl.where(n > 0, w * d * d, 0.0), 1)
        return mean, m2, total
    elif OP == 5:
        m = nan_extreme(a, -float("inf"), True, 1, True)
        s = tl.sum(tl.where(a == -float("inf"), 0.0, b * tl.exp(a - m[:, None])), 1)
        return m, s, tl.sum(n, 1)
    elif OP == 7 or OP == 8 or OP == 9:
        return fold_lanes(a, OP), tl.sum(b, 1), tl.sum(n, 1)
    else:
        return (nan_extreme(a, HIGHEST, IS_FLOAT, 1, False),
                nan_extreme(b, LOWEST, IS_FLOAT, 1, True), tl.sum(n, 1))


@triton.jit
def prod_lanes(a):
    """The product along axis 1 of a [rows, lanes] tile (lanes a power of two) as a fixed tree
    of halvings (reshape + split): deterministic, and cheap under the interpreter, which runs
    `tl.reduce` with a combine function element by element."""
    ROWS: tl.constexpr = a.shape[0]
    LANES: tl.constexpr = a.shape[1]
    for i in tl.static_range(16):
        if (LANES >> i) > 1:
            p, q = tl.split(tl.reshape(a, [ROWS, LANES >> (i + 1), 2]))
            a = p * q
    return tl.reshape(a, [ROWS])


@triton.jit
def _bit_and(a, b):
    return a & b


@triton.jit
def _bit_or(a, b):
    return a | b


@triton.jit
def fold_lanes(a, HOW: tl.constexpr):
    """Bitwise xor (HOW 7), and (8) or or (9) along axis 1 (exact in any order). The GPU
    reduces in registers; the interpreter, which runs `tl.reduce`'s combine element by
    element, halves the lanes (reshape + split) instead: on the GPU that tree spills."""
    if INTERP:
        ROWS: tl.constexpr = a.shape[0]
        LANES: tl.constexpr = a.shape[1]
        for i in tl.static_range(16):
            if (LANES >> i) > 1:
                p, q = tl.split(tl.reshape(a, [ROWS, LANES >> (i + 1), 2]))
                if HOW == 7:
                    a = p ^ q
                elif HOW == 8:
                    a = p & q
                else:
                    a = p | q
        return tl.reshape(a, [ROWS])
    elif HOW == 7:
        return tl.xor_sum(a, 1)
    elif HOW == 8:
        return tl.reduce(a, 1, _bit_and)
    else:
        return tl.reduce(a, 1, _bit_or)


@triton.jit
def _finish(y_ptr, y2_ptr, y_off, y2_off, mask, a, b, n, R, corr_hi, corr_lo,
            POST: tl.constexpr, ACC: tl.constexpr):
    """The outputs of one state per line."""
    Y: tl.constexpr = y_ptr.dtype.element_ty
    if POST == 1:
        v = a / tl.full(a.shape, R, tl.int64).to(ACC)
    elif POST == 2:
        v = a / n.to(ACC)
    elif POST == 3:
        v = a == 0
    elif POST == 4:
        v = a > 0
    elif POST == 5 or POST == 6 or POST == 7 or POST == 8:
        dof = tl.maximum(n.to(ACC) - join_f64(corr_hi, corr_lo, ACC), 0.0)
        v = b / dof
        if POST == 6 or POST == 8:
            v = tl.sqrt(v)
    elif POST == 9 or POST == 15:
        v = tl.where((a == float("inf")) | (a == -float("inf")), a, a + tl.log(b))
        if POST == 15:
            v = v - tl.log(tl.full(a.shape, R, tl.int64).to(ACC))
    elif POST == 13:
        v = tl.sqrt(a)
    elif POST == 14:  # a^(1/p): 0 and inf map as pow's (p < 0 swaps them)
        v = tl.exp2(tl.log2(a) / join_f64(corr_hi, corr_lo, ACC))
    elif POST == 16:
        v = b - a
    elif POST == 11:
        v = n
    else:
        v = a
    tl.store(y_ptr + y_off, round_to(v, Y), mask=mask)
    if POST == 7 or POST == 8:
        tl.store(y2_ptr + y2_off, round_to(a, y2_ptr.dtype.element_ty), mask=mask)
    elif POST == 10:
        tl.store(y2_ptr + y2_off, n, mask=mask)
    elif POST == 12:
        tl.store(y2_ptr + y2_off, round_to(b, y2_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _init(BLOCK_K: tl.constexpr, L: tl.constexpr, OP: tl.constexpr, ACC: tl.constexpr,
          LOWEST: tl.constexpr, HIGHEST: tl.constexpr, LANE_N: tl.constexpr):
    """Every lane's empty state. b is one column unless the state has a second value, n
    unless LANE_N (indices, counts) or Welford's count: a state lanes never touch would
    still hold registers (a row sum's int64 n doubles its registers and halves the
    programs an SM keeps in flight)."""
    NB: tl.constexpr = L if (OP == 4 or OP == 5 or OP == 6) else 1
    NN: tl.constexpr = L if LANE_N else 1
    n = tl.zeros([BLOCK_K, NN], tl.int64)
    b = tl.zeros([BLOCK_K, NB], ACC)
    if OP == 1:
        a = tl.full([BLOCK_K, L], 1, ACC)
    elif OP == 2:
        a = tl.full([BLOCK_K, L], LOWEST, ACC)
        n = n - 1
    elif OP == 3:
        a = tl.full([BLOCK_K, L], HIGHEST, ACC)
        n = n - 1
    elif OP == 5:
        a = tl.full([BLOCK_K, L], -float("inf"), ACC)
    elif OP == 6:
        a = tl.full([BLOCK_K, L], HIGHEST, ACC)
        b = tl.full([BLOCK_K, NB], LOWEST, ACC)
    elif OP == 8:
        a = tl.full([BLOCK_K, L], -1, ACC)
    else:
        a = tl.zeros([BLOCK_K, L], ACC)
    return a, b, n


@triton.jit
def reduce_kernel(
    x_ptr, m_ptr, y_ptr, y2_ptr, wsf_ptr, wsi_ptr,
    K, R, chunk, n_split,
    KS1, KS2, KS3,
    xk0, xk1, xk2, xk3,
    mk0, mk1, mk2, mk3,
    yk0, yk1, yk2, yk3,
    zk0, zk1, zk2, zk3,
    RS1, RS2, RS3,
    xr0, xr1, xr2, xr3,
    mr0, mr1, mr2, mr3,
    corr_hi, corr_lo,
    OP: tl.constexpr, PRE: tl.constexpr, POST: tl.constexpr, INDEX: tl.constexpr,
    ACC: tl.constexpr, IS_FLOAT: tl.constexpr, LOWEST: tl.constexpr, HIGHEST: tl.constexpr,
    BLOCK_K: tl.constexpr, BLOCK_R: tl.constexpr, K_DIMS: tl.constexpr, R_DIMS: tl.constexpr,
    PARTIAL: tl.constexpr, MASK: tl.constexpr = 0, IDENT: tl.constexpr = 0,
    COUNT: tl.constexpr = False,
):
    """Program (i, s): kept lines [i BLOCK_K, (i + 1) BLOCK_K), reduced chunk s of `chunk`
    elements; PARTIAL writes the chunk's states (wsf [2, n_split, K], wsi [n_split, K]).
    (corr_hi, corr_lo) carry var/std's correction, or the norm's order p."""
    pid_k = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)
    kmask = k < K
    x_rows = x_ptr + offsets(k, KS1, KS2, KS3, xk0, xk1, xk2, xk3, K_DIMS)
    m_rows = m_ptr + offsets(k, KS1, KS2, KS3, mk0, mk1, mk2, mk3, K_DIMS)
    p = 0.0
    if PRE == 6:
        p = join_f64(corr_hi, corr_lo, ACC)
    STEPPED: tl.constexpr = OP == 4 and MASK != 2
    a, b, n = _init(BLOCK_K, BLOCK_R, OP, ACC, LOWEST, HIGHEST,
                    INDEX or COUNT or PRE == 1 or (OP == 4 and not STEPPED))
    # one contiguous chunk per program (measured faster on H200 than programs taking
    # interleaved blocks, whose every step lands a new page)
    start = split * chunk
    end = tl.minimum(start + chunk, R)
    lanes = tl.arange(0, BLOCK_R).to(tl.int64)
    for r0 in range(start, end, BLOCK_R):
        r = r0 + lanes
        valid = kmask[:, None] & (r < end)[None, :]
        r_off = offsets(r, RS1, RS2, RS3, xr0, xr1, xr2, xr3, R_DIMS)
        m_ptrs = x_rows[:, None]
        if MASK != 0:
            m_ptrs = m_rows[:, None] + offsets(r, RS1, RS2, RS3, mr0, mr1, mr2, mr3,
                                               R_DIMS)[None, :]
        x, valid = load_elements(x_rows[:, None] + r_off[None, :], m_ptrs, valid, PRE, ACC,
                                 MASK, IDENT)
        x = transform(x, p, PRE)
        step = ((r0 - start) // BLOCK_R + 1).to(ACC)
        a, b, n = _update(a, b, n, x, valid, r[None, :], OP, PRE, INDEX, ACC, LOWEST, HIGHEST,
                          COUNT, step, STEPPED)
    if STEPPED:  # each lane's count: the steps at which its offset lay inside the chunk
        n = ((end - start - lanes + BLOCK_R - 1) // BLOCK_R)[None, :] + tl.zeros(
            [BLOCK_K, BLOCK_R], tl.int64)
    a, b, n = _merge(a, b, n, OP, INDEX, ACC, IS_FLOAT, LOWEST, HIGHEST)
    if PARTIAL:
        slot = split * K + k
        tl.store(wsf_ptr + slot, a, mask=kmask)
        tl.store(wsf_ptr + n_split * K + slot, b, mask=kmask)
        tl.store(wsi_ptr + slot, n, mask=kmask)
    else:
        y_off = offsets(k, KS1, KS2, KS3, yk0, yk1, yk2, yk3, K_DIMS)
        y2_off = offsets(k, KS1, KS2, KS3, zk0, zk1, zk2, zk3, K_DIMS)
        _finish(y_ptr, y2_ptr, y_off, y2_off, kmask, a, b, n, R, corr_hi, corr_lo, POST, ACC)


@triton.jit
def reduce_combine_kernel(
    wsf_ptr, wsi_ptr, y_ptr, y2_ptr,
    K, R, n_split,
    KS1, KS2, KS3,
    yk0, yk1, yk2, yk3,
    zk0, zk1, zk2, zk3,
    corr_hi, corr_lo,
    OP: tl.constexpr, POST: tl.constexpr, INDEX: tl.constexpr, ACC: tl.constexpr,
    IS_FLOAT: tl.constexpr, LOWEST: tl.constexpr, HIGHEST: tl.constexpr,
    BLOCK_K: tl.constexpr, SPLIT_P: tl.constexpr, K_DIMS: tl.constexpr,
):
    """The chunks' states of BLOCK_K lines merged in chunk order, then the outputs."""
    pid_k = tl.program_id(0).to(tl.int64)
    k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)
    kmask = k < K
    s = tl.arange(0, SPLIT_P).to(tl.int64)
    m = kmask[:, None] & (s < n_split)[None, :]
    slot = s[None, :] * K + k[:, None]
    a0, b0, n0 = _init(BLOCK_K, SPLIT_P, OP, ACC, LOWEST, HIGHEST, True)
    a = tl.where(m, tl.load(wsf_ptr + slot, mask=m, other=0), a0)
    b = tl.where(m, tl.load(wsf_ptr + n_split * K + slot, mask=m, other=0), b0)
    n = tl.where(m, tl.load(wsi_ptr + slot, mask=m, other=0), n0)
    a, b, n = _merge(a, b, n, OP, INDEX, ACC, IS_FLOAT, LOWEST, HIGHEST)
    y_off = offsets(k, KS1, KS2, KS3, yk0, yk1, yk2, yk3, K_DIMS)
    y2_off = offsets(k, KS1, KS2, KS3, zk0, zk1, zk2, zk3, K_DIMS)
    _finish(y_ptr, y2_ptr, y_off, y2_off, kmask, a, b, n, R, corr_hi, corr_lo, POST, ACC)
