"""Float64 references: the keep mask from the host twin of the stream (backends/philox.py),
then the dropout formula in float64."""

from __future__ import annotations

import numpy as np
import torch

from ...backends.philox import state_values, unit_host, words_host
from .descriptors import DropoutDescriptor, DropoutMode
from .plans import keep_threshold


def keep_mask(desc: DropoutDescriptor, rng_state: torch.Tensor) -> torch.Tensor:
    """The bool keep mask in x's logical shape: element i (or its feature map i // inner)
    keeps when its uniform is below 1 - p (as f32)."""
    seed, offset = state_values(rng_state)
    n = desc.numel
    i = np.arange(n, dtype=np.int64)
    j = i // desc.inner if desc.inner > 0 else i
    m = int(j.max()) + 1 if n else 0
    u = unit_host(words_host(seed, offset, m, 4), 24)[j] if n else np.zeros(0)
    return torch.from_numpy(u < keep_threshold(desc.p)).reshape(desc.shape)


def dropout(desc: DropoutDescriptor, x: torch.Tensor, rng_state: torch.Tensor | None,
            mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """{"y": float64 result, "mask": the keep mask (when the descriptor writes it)}."""
    keep = mask.cpu() if desc.mode is DropoutMode.FROM_MASK else keep_mask(desc, rng_state)
    s, c_keep, c_drop = desc.constants()
    xd = x.detach().cpu().double()
    f64 = dict(dtype=torch.float64)
    zero = torch.zeros((), **f64)
    y = xd * torch.where(keep, torch.tensor(s, **f64), zero) + \
        torch.where(keep, torch.tensor(c_keep, **f64), torch.tensor(c_drop, **f64))
    out = {"y": y}
    if desc.write_mask:
        out["mask"] = keep
    return out
