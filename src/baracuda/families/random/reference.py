"""Float64 references: the same draws as the kernels, from the host twin of the stream
(backends/philox.py), the formulas of `Dist` in float64, then rounded to the dtype."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...backends.philox import DIGITS, state_values, unit_host, words_host
from .descriptors import Dist, RandomDescriptor


def _normals(seed: int, offset: int, n: int, wide: bool) -> np.ndarray:
    """Box-Muller on the element's pair: words (0, 1) and (2, 3) of a group (f64: the two
    53-bit uniforms of a group), cos for the even element of a pair, sin for the odd."""
    i = np.arange(n)
    if wide:
        w = words_host(seed, offset, 2 * ((n + 1) // 2), 2)  # [m, 2]: two f64 uniforms/group
        u = unit_host(w, 53).reshape(-1, 2)[i // 2]
    else:
        w = words_host(seed, offset, 4 * ((n + 3) // 4), 4)
        u = unit_host(w, 24).reshape(-1, 2)[i // 2]
    r = np.sqrt(-2.0 * np.log(1.0 - u[:, 0]))
    t = 2 * math.pi * u[:, 1]
    return np.where(i % 2 == 0, r * np.cos(t), r * np.sin(t))


def draws(desc: RandomDescriptor, rng_state: torch.Tensor, a=None, b=None) -> torch.Tensor:
    """y (float64 for floats, int64 for integers and bool) in y's logical shape. a / b: the
    tensor parameters (already broadcast), when the descriptor has them."""
    seed, offset = state_values(rng_state)
    n, d = desc.numel, desc.dist
    per = 2 if desc.wide else 4
    av = a.detach().double().cpu().reshape(-1).numpy() if a is not None else float(desc.a)
    bv = b.detach().double().cpu().reshape(-1).numpy() if b is not None else float(desc.b)
    if d in (Dist.RANDINT, Dist.BITS):
        w = words_host(seed, offset, n, per)
        v = w[:, 0].astype(np.uint64) | (w[:, 1].astype(np.uint64) << np.uint64(32)) \
            if per == 2 else w.astype(np.uint64)
        if d is Dist.BITS:
            out = v.view(np.int64) if per == 2 else v.astype(np.uint32).view(np.int32)
            out = torch.from_numpy(out.astype(np.int64))
            return out.to(desc.element.torch_dtype).reshape(desc.shape)
        span = int(desc.b)
        vals = [int(x) % span + int(desc.a) for x in v.tolist()] if span != 1 << 64 else \
            [(int(x) + int(desc.a)) for x in v.tolist()]
        vals = [((x + (1 << 63)) % (1 << 64)) - (1 << 63) for x in vals]
        out = torch.tensor(vals, dtype=torch.int64).reshape(desc.shape)
        return out.to(desc.element.torch_dtype).double() if desc.element.is_float else out
    if d in (Dist.NORMAL, Dist.LOG_NORMAL):
        x = av + bv * _normals(seed, offset, n, desc.wide)
        if d is Dist.LOG_NORMAL:
            x = np.exp(x)
        return torch.from_numpy(np.asarray(x, np.float64)).reshape(desc.shape)
    if d is Dist.UNIFORM:
        digits = DIGITS[desc.element.torch_dtype]
    else:
        digits = 53 if desc.wide else 24
    u = unit_host(words_host(seed, offset, n, per), digits)
    if d is Dist.UNIFORM:
        # rounded to the dtype, a value that reaches b becomes a (the range is [a, b))
        x = torch.from_numpy(av + (bv - av) * u).to(desc.element.torch_dtype).double().numpy()
        x = np.where(x >= bv, torch.tensor(av).to(desc.element.torch_dtype).item(), x)
    elif d is Dist.BERNOULLI:
        x = (u < av).astype(np.float64)
    elif d is Dist.EXPONENTIAL:
        x = -np.log(1.0 - u) / av
    elif d is Dist.CAUCHY:
        x = av + bv * np.tan(math.pi * (u - 0.5))
    else:  # GEOMETRIC
        x = np.maximum(np.ceil(np.log(1.0 - u) / math.log1p(-av)), 1.0)
    return torch.from_numpy(np.asarray(x, np.float64) + np.zeros(n)).reshape(desc.shape)


def multinomial(desc, probs: torch.Tensor, rng_state: torch.Tensor) -> torch.Tensor:
    """int64 [rows, samples]: the kernel's inversion (f32 row sums, sequential) or its
    exponential race, from the same uniforms."""
    seed, offset = state_values(rng_state)
    p = probs.detach().cpu().float()
    rows, cats, s = desc.rows, desc.categories, desc.samples
    out = torch.zeros(rows, s, dtype=torch.int64)
    if desc.replacement:
        u = torch.from_numpy(unit_host(words_host(seed, offset, rows * s, 4), 24)).float()
        u = u.reshape(rows, s) * p.sum(1, keepdim=True)
        cdf = p.cumsum(1)
        last = torch.where(p > 0, torch.arange(cats), 0).amax(1, keepdim=True)
        idx = (cdf[:, None, :] <= u[:, :, None]).sum(-1)
        return torch.minimum(idx, last)
    u = torch.from_numpy(unit_host(words_host(seed, offset, rows * cats, 4), 24))
    clock = -torch.log(1.0 - u.reshape(rows, cats).float()) / p
    order = torch.sort(clock, dim=1, stable=True).indices
    return order[:, :s] if rows else out
