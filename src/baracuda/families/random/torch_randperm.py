"""torch.randperm on the random family's stream: one random 64-bit key per position drawn
by RandomPlan (Dist.BITS, backends/philox.py), then a stable sort of the keys; the
permutation is the sorting order. The sort is torch.argsort for now (the sorting family of a
later issue replaces it). Deterministic for a given generator state: the keys are a function
of (seed, offset, i) and equal keys (probability about n^2 / 2^65) keep their index order."""

from __future__ import annotations

import torch

from ...core.errors import Unsupported
from .descriptors import Dist
from .torch_common import check_options, fill_into, new_tensor, on_host

__all__ = ["randperm"]

#: the largest n whose positions a float dtype holds exactly (torch's bound)
_FLOAT_MAX = {torch.float16: 2049, torch.bfloat16: 257, torch.float32: (1 << 24) + 1,
              torch.float64: (1 << 53) + 1}


def _check_n(n, dtype: torch.dtype) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        if isinstance(n, torch.Tensor) and n.dim() == 0 and not n.is_floating_point():
            n = int(n)
        else:
            raise TypeError(f"randperm(): argument 'n' must be int, got {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dtype == torch.bool:
        raise NotImplementedError('"randperm" not implemented for \'Bool\'')
    if dtype.is_floating_point:
        limit = _FLOAT_MAX.get(dtype)
        if limit is None:
            raise Unsupported(f"randperm: dtype {dtype} is not supported")
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {dtype} type.")
    elif dtype.is_complex:
        raise Unsupported(f"randperm: dtype {dtype} is not supported")
    elif n > 0 and n - 1 > torch.iinfo(dtype).max:
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow: "
                           f"randperm({n}) needs positions up to {n - 1}")
    return n


def randperm(n, *, generator=None, out=None, dtype=torch.int64, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> torch.Tensor:
    """torch.randperm: a uniformly random permutation of 0 .. n - 1 (see the module
    docstring for how it is drawn)."""
    check_options("randperm", layout, pin_memory)
    dtype = torch.int64 if dtype is None else dtype
    n = _check_n(n, dtype)
    if device is None:
        device = out.device if out is not None else torch.get_default_device()
    device = torch.device(device)
    y = new_tensor((n,), dtype, device, out)
    if on_host(device):
        y = torch.randperm(n, generator=generator, dtype=dtype, device=device, out=y)
    elif n:
        keys = fill_into(torch.empty(n, dtype=torch.int64, device=device), Dist.BITS, 0, 1,
                         generator)
        y.copy_(torch.argsort(keys, stable=True))
    return y.requires_grad_(requires_grad) if requires_grad else y
