"""Float64 reference of the Poisson sampler: the same two methods as kernels_poisson.py on
the host twin of the stream (backends/philox.py), element by element in numpy."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...backends.philox import philox_host, state_values
from .kernels_poisson import ITER_STRIDE, LOG_FACT


def _u53(hi, lo) -> float:
    return float(hi >> 5) * 2.0 ** -27 + float(lo >> 6) * 2.0 ** -53


def _log_fact(k: float) -> float:
    if k < 9.5:
        return LOG_FACT[int(k)]
    x = k + 1.0
    return (x - 0.5) * math.log(x) - x + 0.9189385332046728 + 1 / (12 * x) - \
        1 / (360 * x ** 3) + 1 / (1260 * x ** 5)


def _one(seed: int, offset: int, i: int, lam: float) -> float:
    if lam == 0.0:
        return 0.0
    small = lam < 10.0
    enlam, prod, k = math.exp(-lam), 1.0, 0.0
    lb = 10.0 if small else lam
    slam, loglam = math.sqrt(lb), math.log(lb)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_ia = math.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    t = 0
    while True:
        w = [int(v[0]) for v in philox_host(seed, offset, np.array([i + t * ITER_STRIDE]))]
        u1, u2 = _u53(w[0], w[1]), _u53(w[2], w[3])
        t += 1
        if small:
            prod *= u1
            if prod <= enlam:
                return k
            k += 1.0
            continue
        uu = u1 - 0.5
        us = 0.5 - abs(uu)
        us_safe = max(us, 1e-300)
        kk = math.floor((2 * a / us_safe + b) * uu + lb + 0.43)
        if us >= 0.07 and u2 <= vr:
            return kk
        if kk < 0 or (us < 0.013 and u2 > us):
            continue
        lhs = math.log(max(u2, 1e-300)) + log_ia - math.log(a / (us_safe * us_safe) + b)
        if lhs <= -lb + kk * loglam - _log_fact(kk):
            return kk


def poisson(rate: torch.Tensor, rng_state: torch.Tensor) -> dict[str, torch.Tensor]:
    seed, offset = state_values(rng_state)
    lam = rate.detach().cpu().double().tolist()
    y = [_one(seed, offset, i, v) for i, v in enumerate(lam)]
    return {"y": torch.tensor(y, dtype=torch.float64).reshape(rate.shape)}
