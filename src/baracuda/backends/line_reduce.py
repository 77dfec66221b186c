"""Line reductions shared by the row-wise kernels (Triton): the online (max, sum of exp) pair
of softmax-like lines, its merge across lanes or chunks, and the variance clamp of the norms.

A (max, sum) pair holds a line's max m and sum of exp(x - m); pairs merge by rescaling each
sum to the larger max. Lanes or chunks that saw only -inf hold (-inf, 0), so no -inf - -inf
NaN appears; a line that is -inf everywhere gives a NaN sum, as torch's softmax does.
The Gluon twins of these helpers (chunks in shared memory) live in gluon_chunks.py.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def merge_max_sum(m_vec, s_vec, AXIS: tl.constexpr):
    """Combine per-lane (max, sum of exp relative to that max) pairs; lanes at -inf hold 0."""
    m = tl.max(m_vec, AXIS)
    if AXIS == 0:
        scaled = tl.where(m_vec > -float("inf"), s_vec * tl.exp(m_vec - m), 0.0)
    else:
        scaled = tl.where(m_vec > -float("inf"), s_vec * tl.exp(m_vec - m[:, None]), 0.0)
    s = tl.sum(scaled, AXIS)
    return m, tl.where(m == -float("inf"), float("nan"), s)  # all -inf line: NaN, as torch


@triton.jit
def chunk_exp(x):
    """A chunk's max and exp(x - max) (0 where x = -inf, also for an all -inf chunk)."""
    m = tl.max(x, 0)
    return m, tl.exp(x - tl.where(m == -float("inf"), 0.0, m))


@triton.jit
def chunk_max_sum(x):
    """A chunk's partial: its max and sum of exp relative to it (0 for an all -inf chunk)."""
    m, e = chunk_exp(x)
    return m, tl.sum(e, 0)


@triton.jit
def loop_max_sum(x_row, lo, hi, N, stride, cols, BLOCK: tl.constexpr, ACC: tl.constexpr,
                 KEEP: tl.constexpr):
    """(max, sum of exp relative to it) of elements [lo, hi) of a line, BLOCK at a time:
    per-lane running pairs (no cross-lane reduction inside the loop), merged at the end."""
    NEG: tl.constexpr = -float("inf")
    m_vec = tl.full([BLOCK], NEG, ACC)
    s_vec = tl.zeros([BLOCK], ACC)
    for start in range(lo, hi, BLOCK):
        c = start + cols
        x = tl.load(x_row + c * stride, mask=c < N, other=NEG, eviction_policy=KEEP).to(ACC)
        m_new = tl.maximum(m_vec, x)
        alive = m_new > NEG  # lanes still at -inf keep s = 0 (avoids -inf - -inf = NaN)
        s_vec = s_vec * tl.where(alive, tl.exp(m_vec - m_new), 1.0) + tl.where(
            alive, tl.exp(x - m_new), 0.0)
        m_vec = m_new
    return merge_max_sum(m_vec, s_vec, 0)


@triton.jit
def clamped_variance(v):
    """max(v, 0) that keeps NaN, so a row with NaN gets NaN statistics, as torch's: the GPU's
    max returns the number, the interpreter's the NaN. Every norm kernel's E[d^2] - E[d]^2
    goes through it (Gluon's too)."""
    return tl.where(v < 0.0, 0.0, v)
