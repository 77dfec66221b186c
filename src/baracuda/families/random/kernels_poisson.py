"""Poisson kernel: element i draws from rate lam_i. lam < 10: the multiplication method
(count uniforms until their product falls to exp(-lam)); lam >= 10: PTRS, Hormann's
transformed rejection with squeeze (1993), as torch's CPU sampler. Iteration t of element i
takes the words of Philox group i + t * 2^40 (a 64-bit counter: the draws of one element never
meet another's for tensors below 2^40 elements), so a value is a function of (seed, offset,
i) alone; all arithmetic is float64."""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.philox import load_state, philox_words, unit_f64
from ...backends.triton_support import round_to

#: Philox group stride per rejection iteration
ITER_STRIDE = 1 << 40
#: log(k!) for k < 10 (beyond: Stirling's series, error below 1e-11)
LOG_FACT = (0.0, 0.0, 0.6931471805599453, 1.791759469228055, 3.1780538303479458,
            4.787491742782046, 6.579251212010101, 8.525161361065415, 10.60460290274525,
            12.801827480081469)


@triton.jit
def log_factorial(k):
    """log(k!) of a float64 block of non-negative integers."""
    x = k + 1.0
    big = (x - 0.5) * tl.log(x) - x + 0.9189385332046728 + 1.0 / (12.0 * x) - \
        1.0 / (360.0 * x * x * x) + 1.0 / (1260.0 * x * x * x * x * x)
    small = tl.where(k < 1.5, 0.0, tl.where(k < 2.5, 0.6931471805599453, tl.where(
        k < 3.5, 1.791759469228055, tl.where(k < 4.5, 3.1780538303479458, tl.where(
            k < 5.5, 4.787491742782046, tl.where(k < 6.5, 6.579251212010101, tl.where(
                k < 7.5, 8.525161361065415, tl.where(k < 8.5, 10.60460290274525,
                                                     12.801827480081469))))))))
    return tl.where(k < 9.5, small, big)


@triton.jit
def poisson_kernel(rate_ptr, y_ptr, rng_ptr, n, BLOCK: tl.constexpr):
    """y_i ~ Poisson(rate_i) over contiguous rate / y of n elements."""
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    inside = i < n
    lam = tl.load(rate_ptr + i, mask=inside, other=0).to(tl.float64)
    seed, offset = load_state(rng_ptr)
    small = lam < 10.0
    # multiplication method state
    enlam = tl.exp(-lam)
    prod = tl.zeros_like(lam) + 1.0
    # PTRS constants (a large-rate element only; guarded so small rates stay finite)
    lb = tl.where(small, 10.0, lam)
    slam = tl.sqrt(lb)
    loglam = tl.log(lb)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_ia = tl.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    k_out = tl.zeros_like(lam)
    done = (~inside) | (lam == 0.0)
    t = tl.full((), 0, tl.int64)
    while tl.max((~done).to(tl.int32), axis=0) > 0:
        w0, w1, w2, w3 = philox_words(seed, offset, i + (t << 40))
        u1 = unit_f64(w0, w1)
        u2 = unit_f64(w2, w3)
        # small: one more uniform in the product; the count so far is the answer once the
        # product reaches exp(-lam)
        prod = tl.where(small & ~done, prod * u1, prod)
        small_stop = small & ~done & (prod <= enlam)
        # PTRS: U in [-0.5, 0.5), V in [0, 1)
        uu = u1 - 0.5
        us = 0.5 - tl.abs(uu)
        us_safe = tl.maximum(us, 1e-300)
        kk = tl.floor((2.0 * a / us_safe + b) * uu + lb + 0.43)
        quick = (us >= 0.07) & (u2 <= vr)
        reject = (kk < 0) | ((us < 0.013) & (u2 > us))
        kpos = tl.maximum(kk, 0.0)
        lhs = tl.log(tl.maximum(u2, 1e-300)) + log_ia - tl.log(a / (us_safe * us_safe) + b)
        rhs = -lb + kpos * loglam - log_factorial(kpos)
        big_stop = (~small) & (~done) & (quick | ((~reject) & (lhs <= rhs)))
        k_out = tl.where(big_stop, kk, k_out)
        k_out = tl.where(small & ~done & ~small_stop, k_out + 1.0, k_out)
        done = done | small_stop | big_stop
        t += 1
    tl.store(y_ptr + i, round_to(k_out, y_ptr.dtype.element_ty), mask=inside)
