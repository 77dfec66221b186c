"""Scan kernels: one source for every kind, forward and backward; the kind, direction and pass
are constexprs.

A launch sees each tensor as [outer rows, inner lines, N] (the scan axis last, whatever its
stride): a program owns LINES neighbouring inner lines of one outer row and walks the scan
axis in BLOCK-wide steps, scanning each [LINES, BLOCK] tile with `tl.associative_scan` and
combining it with the running carry of the steps before. With the scan axis innermost
(LINES small, BLOCK long) each line is read along its contiguous axis; with the scan axis
outer (LINES = a run of contiguous lines) the tile's loads are rows of the kept inner axis,
coalesced.

Lines too few to fill the GPU are cut into CHUNKS along the scan axis (three passes, all
deterministic: no atomics, fixed combination order):
- PHASE 1: each (tile, chunk) program scans its chunk and stores only its total;
- PHASE 0 then folds the totals of the chunks before its own, in order, into its starting
  carry and rescans its chunk, storing the result.
One chunk is PHASE 0 alone.

Every element is a pair (u, v) so that kinds with two components share the loop: cummax /
cummin carry (value, scan position); the backward kinds carry the state of their recurrence.
Single-valued kinds leave v a constant the compiler drops. Pairwise kinds read neighbours
(x_i, x_{i+1}) and write one element fewer along the axis: diff and its adjoint carry
nothing (their chunks need no totals); cumulative_trapezoid and its gradients are sums.

The scan order is position p = 0..N-1; REVERSE maps p to the line position N-1-p, so a reverse
scan is a forward scan over a mirrored walk (combine functions always see (earlier, later)).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton_support import INTERP, line_offset, round_to

# kind codes (the host passes `.value`): forward kinds, then the backward ones (cumsum's
# backward is a CUMSUM the other way)
CUMSUM = tl.constexpr(0)
CUMPROD = tl.constexpr(1)
CUMMAX = tl.constexpr(2)
CUMMIN = tl.constexpr(3)
LOGCUMSUMEXP = tl.constexpr(4)
CUMPROD_BWD = tl.constexpr(5)
EXTREME_BWD = tl.constexpr(6)
LOGCUMSUMEXP_BWD = tl.constexpr(7)
# no carry: the forward difference and its adjoint
DIFF = tl.constexpr(8)
DIFF_BWD = tl.constexpr(9)
# sums: cumulative_trapezoid, its gradient for the values and for the spacings
TRAPEZOID = tl.constexpr(10)
TRAPEZOID_BWD = tl.constexpr(11)
TRAPEZOID_SPACING_BWD = tl.constexpr(12)

_INF = tl.constexpr(float("inf"))
_I64_MAX = tl.constexpr(9223372036854775807)
_I64_MIN = tl.constexpr(-9223372036854775807 - 1)


@triton.jit
def tile_lines(tile, n_lines, LINES: tl.constexpr):
    """(outer row, its LINES inner lines, which of them exist) of a program's line tile."""
    n_tiles = tl.cdiv(n_lines, LINES)
    row = tile // n_tiles
    lines = (tile % n_tiles) * LINES + tl.arange(0, LINES).to(tl.int64)
    return row, lines, lines < n_lines


# -- combine functions: (earlier, later) -> combined ------------------------------------------
@triton.jit
def _logaddexp(a, b):
    """log(exp(a) + exp(b)) as torch's _log_add_exp_helper: NaN propagates; two equal
    infinities give themselves (not inf - inf). log1p(t) is log(1 + t) t / ((1 + t) - 1), exact
    for small t without a libdevice log1p."""
    hi = tl.maximum(a, b)
    lo = tl.minimum(a, b)
    t = tl.exp(lo - hi)
    one_t = 1.0 + t
    r = hi + tl.where(one_t == 1.0, t, tl.log(one_t) * (t / (one_t - 1.0)))
    r = tl.where((lo == hi) & (tl.abs(hi) == _INF), hi, r)
    return tl.where((a != a) | (b != b), a + b, r)


@triton.jit
def _combine(au, av, bu, bv, KIND: tl.constexpr):
    """The kind's combine of (earlier, later) pairs, on broadcastable operands.

    cummax / cummin: torch's rule as a commutative pick under a total order: NaN above every
    value (it propagates; the latest NaN is kept), then the larger (smaller) value, then the
    later scan position (ties go to the last occurrence). CUMPROD_BWD composes state maps
    R -> v + u R (earlier applied first); EXTREME_BWD is a sum that restarts at a flagged
    element (u the flag)."""
    if KIND == CUMSUM or KIND >= TRAPEZOID:
        return au + bu, bv
    elif KIND == CUMPROD:
        return au * bu, bv
    elif KIND == CUMMAX or KIND == CUMMIN:
        a_nan = au != au
        b_nan = bu != bu
        if KIND == CUMMAX:
            better = bu > au
        else:
            better = bu < au
        tie = (bu == au) | b_nan
        take = (b_nan & ~a_nan) | ((b_nan == a_nan) & (better | (tie & (bv > av))))
        return tl.where(take, bu, au), tl.where(take, bv, av)
    elif KIND == LOGCUMSUMEXP:
        return _logaddexp(au, bu), bv
    elif KIND == CUMPROD_BWD:
        return au * bu, bv + bu * av
    elif KIND == EXTREME_BWD:
        return au | bu, tl.where(bu != 0, bv, av + bv)
    elif KIND == LOGCUMSUMEXP_BWD:
        return _logaddexp(au, bu), _logaddexp(av, bv)
    else:  # DIFF kinds carry nothing
        return bu, bv


@triton.jit
def _max_pair(au, av, bu, bv):
    return _combine(au, av, bu, bv, CUMMAX)


@triton.jit
def _min_pair(au, av, bu, bv):
    return _combine(au, av, bu, bv, CUMMIN)


@triton.jit
def _affine(au, av, bu, bv):
    return _combine(au, av, bu, bv, CUMPROD_BWD)


@triton.jit
def _segmented_add(au, av, bu, bv):
    return _combine(au, av, bu, bv, EXTREME_BWD)


@triton.jit
def _logaddexp_pair(au, av, bu, bv):
    return _combine(au, av, bu, bv, LOGCUMSUMEXP_BWD)


@triton.jit
def _shift_scan(u, v, KIND: tl.constexpr, LINES: tl.constexpr, BLOCK: tl.constexpr):
    """The interpreter's scan of a [LINES, BLOCK] tile: log2(BLOCK) vectorized doubling
    steps (its own associative_scan calls the combine once per element)."""
    k = tl.arange(0, BLOCK)[None, :]
    for i in tl.static_range(0, 24):
        if (1 << i) < BLOCK:
            src = tl.broadcast_to(tl.maximum(k - (1 << i), 0), [LINES, BLOCK])
            cu, cv = _combine(tl.gather(u, src, 1), tl.gather(v, src, 1), u, v, KIND)
            u = tl.where(k >= (1 << i), cu, u)
            v = tl.where(k >= (1 << i), cv, v)
    return u, v


@triton.jit
def _scan(u, v, KIND: tl.constexpr, LINES: tl.constexpr, BLOCK: tl.constexpr):
    """Inclusive scan of a [LINES, BLOCK] tile along its axis 1."""
    if KIND == CUMSUM or KIND >= TRAPEZOID:
        return tl.cumsum(u, 1), v
    elif KIND == DIFF or KIND == DIFF_BWD:
        return u, v
    elif KIND == CUMPROD:
        return tl.cumprod(u, 1), v
    elif INTERP:
        return _shift_scan(u, v, KIND, LINES, BLOCK)
    elif KIND == CUMMAX:
        return tl.associative_scan((u, v), 1, _max_pair)
    elif KIND == CUMMIN:
        return tl.associative_scan((u, v), 1, _min_pair)
    elif KIND == LOGCUMSUMEXP:
        return tl.associative_scan(u, 1, _logaddexp), v
    elif KIND == CUMPROD_BWD:
        return tl.associative_scan((u, v), 1, _affine)
    elif KIND == EXTREME_BWD:
        return tl.associative_scan((u, v), 1, _segmented_add)
    else:
        return tl.associative_scan((u, v), 1, _logaddexp_pair)


@triton.jit
def _identity(LINES: tl.constexpr, KIND: tl.constexpr, ACC: tl.constexpr, INT: tl.constexpr):
    """The kind's neutral pair, one per line: what padding elements and a fresh carry hold
    (cummax / cummin padding has scan position -1, so it never wins a tie)."""
    if KIND == CUMSUM:
        return tl.zeros([LINES], ACC), tl.zeros([LINES], tl.int32)
    elif KIND == CUMPROD:
        return tl.full([LINES], 1, ACC), tl.zeros([LINES], tl.int32)
    elif KIND == CUMMAX:
        if INT:
            low = tl.full([LINES], _I64_MIN, ACC)
        else:
            low = tl.full([LINES], -_INF, ACC)
        return low, tl.full([LINES], -1, tl.int64)
    elif KIND == CUMMIN:
        if INT:
            high = tl.full([LINES], _I64_MAX, ACC)
        else:
            high = tl.full([LINES], _INF, ACC)
        return high, tl.full([LINES], -1, tl.int64)
    elif KIND == LOGCUMSUMEXP:
        return tl.full([LINES], -_INF, ACC), tl.zeros([LINES], tl.int32)
    elif KIND == CUMPROD_BWD:
        return tl.full([LINES], 1, ACC), tl.zeros([LINES], ACC)
    elif KIND == EXTREME_BWD:
        return tl.zeros([LINES], tl.int32), tl.zeros([LINES], ACC)
    elif KIND == LOGCUMSUMEXP_BWD:
        return tl.full([LINES], -_INF, ACC), tl.full([LINES], -_INF, ACC)
    else:
        return tl.zeros([LINES], ACC), tl.zeros([LINES], tl.int32)


@triton.jit
def _last(u, v, p_in_block, BLOCK: tl.constexpr):
    """Column BLOCK - 1 of a pair of [LINES, BLOCK] tiles (the inclusive total: padding is
    neutral). A sum of one value and zeros: exact, and it keeps NaN and infinities."""
    at = p_in_block == BLOCK - 1
    return (tl.sum(tl.where(at, u, tl.zeros_like(u)), 1),
            tl.sum(tl.where(at, v, tl.zeros_like(v)), 1))


@triton.jit
def _element(in0, in1, in2, o0, o1, o2, pos, p, mask, sn0, sn1, sn2, N,
             KIND: tl.constexpr, ACC: tl.constexpr, REVERSE: tl.constexpr):
    """The (u, v) pair of the elements at line positions `pos` (scan positions `p`); o0..o2
    are the lines' offsets ([LINES, 1]) in in0..in2, sn0..sn2 the scan-axis strides.

    Backward kinds walk against the forward op (REVERSE is the backward's own direction), so
    the forward op's next element is the previous scan position and its previous element the
    next one: `step` is the line offset of one scan position forward."""
    if REVERSE:
        step = -1
    else:
        step = 1
    if KIND <= LOGCUMSUMEXP:
        u = tl.load(in0 + o0 + pos * sn0, mask=mask, other=0).to(ACC)
        if KIND == CUMMAX or KIND == CUMMIN:
            v = p
        else:
            v = tl.zeros_like(p).to(tl.int32)
        return u, v
    elif KIND == CUMPROD_BWD:
        # R_q = g_q + x_{q+1} R_{q+1} (q in forward order): the state map of scan position p
        # is R -> g + x[p - 1] R, with x[p - 1] the forward op's next element
        g = tl.load(in0 + o0 + pos * sn0, mask=mask, other=0).to(ACC)
        prev = pos - step
        c = tl.load(in1 + o1 + prev * sn1, mask=mask & (p > 0), other=0).to(ACC)
        return c, g
    elif KIND == EXTREME_BWD:
        # dx_j = sum of dy_k over the k whose index is j: the k run from j (whose own index
        # is j) up to the next position that indexes itself; a run restarts (scanning
        # against the forward op) where the forward op's next element indexes itself
        g = tl.load(in0 + o0 + pos * sn0, mask=mask, other=0).to(ACC)
        nxt = pos - step
        head = tl.load(in2 + o2 + nxt * sn2, mask=mask & (p > 0), other=-1)
        return ((head == nxt) | (p == 0)).to(tl.int32), g
    elif KIND == DIFF:
        # integers (and bools) subtract in int64: stored back they wrap (are nonzero) as torch's
        has = mask & (p < N - 1)
        a = tl.load(in0 + o0 + pos * sn0, mask=has, other=0).to(ACC)
        b = tl.load(in0 + o0 + (pos + step) * sn0, mask=has, other=0).to(ACC)
        return b - a, tl.zeros_like(p).to(tl.int32)
    elif KIND == TRAPEZOID:
        has = mask & (pos < N - 1)
        a = tl.load(in0 + o0 + pos * sn0, mask=has, other=0).to(ACC)
        b = tl.load(in0 + o0 + (pos + 1) * sn0, mask=has, other=0).to(ACC)
        w = tl.load(in1 + o1 + pos * sn1, mask=has, other=0).to(ACC)
        return w * (a + b) * 0.5, tl.zeros_like(p).to(tl.int32)
    elif KIND == TRAPEZOID_BWD or KIND == TRAPEZOID_SPACING_BWD:
        # G_j = sum_{i >= j} dy_i (dy one shorter than the values)
        g = tl.load(in0 + o0 + pos * sn0, mask=mask & (pos < N - 1), other=0).to(ACC)
        return g, tl.zeros_like(p).to(tl.int32)
    elif KIND == DIFF_BWD:
        # dx_j = dy_{j-1} - dy_j, dy one shorter than dx
        cur = tl.load(in0 + o0 + pos * sn0, mask=mask & (pos < N - 1), other=0).to(ACC)
        prev = tl.load(in0 + o0 + (pos - 1) * sn0, mask=mask & (pos > 0), other=0).to(ACC)
        return prev - cur, tl.zeros_like(p).to(tl.int32)
    else:
        # torch's formula: dx = exp(x + rev_lcse(log(dy+) - y)) - exp(x + rev_lcse(log(dy-) - y))
        g = tl.load(in0 + o0 + pos * sn0, mask=mask, other=0).to(ACC)
        y = tl.load(in2 + o2 + pos * sn2, mask=mask, other=0).to(ACC)
        lg = tl.log(tl.abs(g)) - y
        pos_part = tl.where(g > 0, lg, -_INF)
        neg_part = tl.where(g < 0, lg, -_INF)
        return pos_part, neg_part


@triton.jit
def _finish(u, v, in0, in1, in2, o0, o1, o2, pos, p, mask, sn0, sn1, sn2, N,
            KIND: tl.constexpr, ACC: tl.constexpr, REVERSE: tl.constexpr):
    """What a scanned pair stores: the value (and, cummax / cummin, the line position)."""
    if REVERSE:
        step = -1
    else:
        step = 1
    if KIND == CUMMAX or KIND == CUMMIN:
        if REVERSE:
            v = (N - 1) - v
        return u, v
    elif KIND == CUMPROD_BWD:
        # dx_q = (x_0 ... x_{q-1}) R_q = y_{q-1} R_q: no division, exact with zeros
        before = pos + step
        has = mask & (p < N - 1)
        # (`other=1` would be read as raw bits for bf16 by the interpreter)
        e = tl.where(has, tl.load(in2 + o2 + before * sn2, mask=has, other=0).to(ACC), 1.0)
        return e * v, v
    elif KIND == EXTREME_BWD:
        own = tl.load(in2 + o2 + pos * sn2, mask=mask, other=-1)
        return tl.where(own == pos, v, tl.zeros_like(v)), v
    elif KIND == LOGCUMSUMEXP_BWD:
        x = tl.load(in1 + o1 + pos * sn1, mask=mask, other=0).to(ACC)
        return tl.exp(u + x) - tl.exp(v + x), v
    elif KIND == TRAPEZOID_BWD:
        # dx_j = (w_j G_j + w_{j-1} G_{j-1}) / 2 with G_{j-1} = dy_{j-1} + G_j
        cur = mask & (pos < N - 1)
        prev = mask & (pos > 0)
        w = tl.load(in1 + o1 + pos * sn1, mask=cur, other=0).to(ACC)
        w_prev = tl.load(in1 + o1 + (pos - 1) * sn1, mask=prev, other=0).to(ACC)
        g_prev = tl.load(in0 + o0 + (pos - 1) * sn0, mask=prev, other=0).to(ACC)
        return (w * u + w_prev * (u + g_prev)) * 0.5, v
    elif KIND == TRAPEZOID_SPACING_BWD:
        # dw_k = G_k (x_k + x_{k+1}) / 2
        has = mask & (pos < N - 1)
        a = tl.load(in2 + o2 + pos * sn2, mask=has, other=0).to(ACC)
        b = tl.load(in2 + o2 + (pos + 1) * sn2, mask=has, other=0).to(ACC)
        return u * (a + b) * 0.5, v
    else:
        return u, v


@triton.jit
def scan_kernel(
    in0, in1, in2, out0, out1, tot0, tot1,
    n_lines, N, n_chunks, chunk_len,
    S1, S2, S3,
    a0, a1, a2, a3, ai, an,
    b0, b1, b2, b3, bi, bn,
    c0, c1, c2, c3, ci, cn,
    d0, d1, d2, d3, di, dn,
    e0, e1, e2, e3, ei, en,
    KIND: tl.constexpr, ACC: tl.constexpr, INT: tl.constexpr, REVERSE: tl.constexpr,
    LINES: tl.constexpr, BLOCK: tl.constexpr, PHASE: tl.constexpr, TOTALS: tl.constexpr,
):
    """Tensors: in0 (x, or dy), in1 (x, or the trapezoid's spacings), in2 (y, the indices, or
    the values a spacings' gradient reads), out0 (y or dx), out1 (the indices); strides
    a* .. e* in that order (outer 0..3, inner line, scan axis); tot0/tot1: the chunk totals
    (n_rows * n_lines * n_chunks pairs). N is the input's extent along the axis."""
    pid = tl.program_id(0).to(tl.int64)
    chunk = pid % n_chunks
    tile = pid // n_chunks
    row, lines, line_ok = tile_lines(tile, n_lines, LINES)
    o0 = (line_offset(row, S1, S2, S3, a0, a1, a2, a3) + lines * ai)[:, None]
    o1 = (line_offset(row, S1, S2, S3, b0, b1, b2, b3) + lines * bi)[:, None]
    o2 = (line_offset(row, S1, S2, S3, c0, c1, c2, c3) + lines * ci)[:, None]
    q0 = (line_offset(row, S1, S2, S3, d0, d1, d2, d3) + lines * di)[:, None]
    q1 = (line_offset(row, S1, S2, S3, e0, e1, e2, e3) + lines * ei)[:, None]
    total_at = (row * n_lines + lines) * n_chunks  # [LINES]

    idu, idv = _identity(LINES, KIND, ACC, INT)
    idu = idu[:, None]
    idv = idv[:, None]
    cu, cv = _identity(LINES, KIND, ACC, INT)
    if PHASE == 0 and KIND != DIFF and KIND != DIFF_BWD:
        # fold the totals of the chunks before this one, in order
        j = tl.arange(0, TOTALS)
        for t0 in range(0, chunk, TOTALS):
            jt = t0 + j
            ok = line_ok[:, None] & (jt < chunk)[None, :]
            at = total_at[:, None] + jt[None, :]
            tu = tl.where(ok, tl.load(tot0 + at, mask=ok, other=0).to(idu.dtype), idu)
            tv = tl.where(ok, tl.load(tot1 + at, mask=ok, other=0).to(idv.dtype), idv)
            su, sv = _scan(tu, tv, KIND, LINES, TOTALS)
            bu, bv = _last(su, sv, j[None, :], TOTALS)
            cu, cv = _combine(cu, cv, bu, bv, KIND)

    k = tl.arange(0, BLOCK)
    start = chunk * chunk_len
    end = tl.minimum(start + chunk_len, N)
    if PHASE == 1:
        end = tl.where(chunk == n_chunks - 1, start, end)  # the last total starts no chunk
    # a sum's chunk total needs no scan: lanes add their elements, one reduction at the end
    # (the totals pass then streams at a reduction's rate)
    LANE_SUM: tl.constexpr = PHASE == 1 and (KIND == CUMSUM or KIND >= TRAPEZOID)
    lane_u = tl.zeros([LINES, BLOCK], idu.dtype)
    for b in range(start, end, BLOCK):
        p = (b + k).to(tl.int64)[None, :]
        mask = line_ok[:, None] & (p < end)
        if REVERSE:
            pos = (N - 1) - p
        else:
            pos = p
        u, v = _element(in0, in1, in2, o0, o1, o2, pos, p, mask, an, bn, cn, N,
                        KIND, ACC, REVERSE)
        u = tl.where(mask, u, idu)
        v = tl.where(mask, v, idv)
        if LANE_SUM:
            lane_u += u
        else:
            su, sv = _scan(u, v, KIND, LINES, BLOCK)
            su, sv = _combine(cu[:, None], cv[:, None], su, sv, KIND)
            cu, cv = _last(su, sv, k[None, :], BLOCK)
        if PHASE == 0:
            r0, r1 = _finish(su, sv, in0, in1, in2, o0, o1, o2, pos, p, mask, an, bn, cn, N,
                             KIND, ACC, REVERSE)
            if KIND == DIFF or KIND == TRAPEZOID or KIND == TRAPEZOID_SPACING_BWD:
                keep = mask & (pos < N - 1)  # the result is one shorter
            else:
                keep = mask
            tl.store(out0 + q0 + pos * dn, round_to(r0, out0.dtype.element_ty), mask=keep)
            if KIND == CUMMAX or KIND == CUMMIN:
                tl.store(out1 + q1 + pos * en, r1, mask=mask)
    if LANE_SUM:
        cu = cu + tl.sum(lane_u, 1)
    if PHASE == 1:
        keep = line_ok & (chunk < n_chunks - 1)
        tl.store(tot0 + total_at + chunk, cu, mask=keep)
        tl.store(tot1 + total_at + chunk, cv, mask=keep)
