"""Host-side layout of a reduction: the input as [kept dims..., reduced dims...] with each
group's dims merged where memory allows (no copies), in at most four dims per group.

Kept dims are ordered by the input's strides before merging (the output is addressed by its
own strides, so their order is free); reduced dims are too, except for kinds that return an
index (argmax over several dims counts in the row-major order of the reduced dims, so their
order stays logical). Kept dims beyond four are walked on the host, one launch per leading
index; reduced dims that stay more than four after merging are refused (`Unsupported`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ...backends.triton_support import MAX_OUTER_DIMS, pad_outer, shifted_view
from ...core.layout import collapse_dims

#: dims a kernel addresses per group
MAX_DIMS = MAX_OUTER_DIMS


@dataclass(frozen=True)
class Launch:
    """One launch: tensors (views where a leading kept index was applied), kept and reduced
    shapes padded to four dims (leading units), per-operand strides of each."""

    full: tuple[torch.Tensor, ...]
    kept: tuple[torch.Tensor, ...]
    K: int
    R: int
    kept_shape: tuple[int, ...]
    kept_strides: tuple[tuple[int, ...], ...]  # full operands first, then kept operands
    reduced_shape: tuple[int, ...]
    reduced_strides: tuple[tuple[int, ...], ...]  # full operands
    k_dims: int
    r_dims: int


def _order(dims: list[int], strides: Sequence[int]) -> list[int]:
    return sorted(dims, key=lambda i: -abs(strides[i]))


def merged_dims(shape: Sequence[int], axes: Sequence[int], strides: Sequence[int],
                ordered: bool, others: Sequence[Sequence[int]] = ()) -> tuple[int, int]:
    """(kept dims, reduced dims) after merging for the input's strides and those of the other
    input-shaped operands (a mask): the launch plan's estimate; outputs may keep more kept
    dims apart."""
    kept = [i for i in range(len(shape)) if i not in axes]
    red = list(axes) if ordered else _order(list(axes), strides)
    every = [strides, *others]
    kshape, _ = collapse_dims([shape[i] for i in _order(kept, strides)],
                              [[st[i] for i in _order(kept, strides)] for st in every])
    rshape, _ = collapse_dims([shape[i] for i in red], [[st[i] for i in red] for st in every])
    return len(kshape), len(rshape)


def launches(shape: Sequence[int], axes: Sequence[int], keepdim: bool,
             full: Sequence[torch.Tensor], kept: Sequence[torch.Tensor],
             ordered: bool) -> list[Launch]:
    """The launches covering a reduction of `full` operands (input-shaped: x, dx) with
    `kept` operands (output-shaped: y, dy, ...)."""
    if not shape:  # a 0-d input reduces its one element
        shape, axes = (1,), (0,)
        full = [t.reshape(1) for t in full]
        kept = [t.reshape(1) for t in kept]
        keepdim = True
    kept_dims = [i for i in range(len(shape)) if i not in axes]
    x_strides = full[0].stride()

    def out_stride(t: torch.Tensor, dim: int) -> int:
        return t.stride(dim if keepdim else kept_dims.index(dim))

    korder = _order(kept_dims, x_strides)
    k_strides = [[t.stride(i) for i in korder] for t in full]
    k_strides += [[out_stride(t, i) for i in korder] for t in kept]
    kshape, kst = collapse_dims([shape[i] for i in korder], k_strides)
    rorder = list(axes) if ordered else _order(list(axes), x_strides)
    rshape, rst = collapse_dims([shape[i] for i in rorder],
                                [[t.stride(i) for i in rorder] for t in full])
    R = math.prod(rshape)
    r_dims = len(rshape)
    rshape4, rst4 = pad_outer(rshape, rst, MAX_DIMS, last=False)
    extra = len(kshape) - MAX_DIMS
    lead, rest = (kshape[:extra], kshape[extra:]) if extra > 0 else ((), kshape)
    out = []
    for idx in itertools.product(*[range(d) for d in lead]):
        offs = [sum(i * s[j] for j, i in enumerate(idx)) for s in kst]
        tensors = list(full) + list(kept)
        if idx:
            tensors = [shifted_view(t, o) for t, o in zip(tensors, offs)]
        sub = [s[len(lead):] for s in kst]
        kshape4, kst4 = pad_outer(rest, sub, MAX_DIMS, last=False)
        out.append(Launch(tuple(tensors[:len(full)]), tuple(tensors[len(full):]),
                          math.prod(rest), R, tuple(kshape4), tuple(map(tuple, kst4)),
                          tuple(rshape4), tuple(map(tuple, rst4)),
                          min(len(rest), MAX_DIMS), r_dims))
    return out


def _contiguous_strides(shape: Sequence[int]) -> list[int]:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return out[::-1]


@functools.lru_cache(maxsize=4096)
def _plans_take(shape: tuple[int, ...], strides: tuple[int, ...],
                dims: tuple[int, ...]) -> bool:
    """Whether the reduced axes merge into at most MAX_DIMS runs for x's strides and for a
    contiguous gradient's (cached: an eager call pays a dict lookup, not the merge)."""
    return all(merged_dims(shape, dims, st, True)[1] <= MAX_DIMS
               for st in (strides, _contiguous_strides(shape)))


def gathering(op, dims_at: int, mask_at: int | None = None):
    """`op`, a reduction custom op taking x first, its dims at `dims_at` and keepdim right
    after, that reduces a copy with the reduced axes gathered last where x's reduced axes
    stay more than MAX_DIMS runs apart after merging (for x's strides or for a contiguous
    gradient's): torch reduces any set of axes, the plans refuse those layouts. A mask at
    `mask_at` moves with x."""

    def call(*args):
        x, dims = args[0], [int(d) for d in args[dims_at]]
        if x.dim() == 0 or _plans_take(tuple(x.shape), x.stride(), tuple(dims)):
            return op(*args)
        kept = [d for d in range(x.dim()) if d not in dims]
        perm = kept + sorted(dims)
        args = list(args)
        args[0] = x.permute(perm).contiguous()
        if mask_at is not None and args[mask_at] is not None:
            args[mask_at] = args[mask_at].expand(x.shape).permute(perm).contiguous()
        keepdim = args[dims_at + 1]
        args[dims_at] = list(range(len(kept), x.dim()))
        args[dims_at + 1] = False
        out = op(*args)
        if not keepdim:
            return out
        shape = [1 if i in dims else d for i, d in enumerate(x.shape)]
        if isinstance(out, tuple):
            return tuple(t.reshape(shape) for t in out)
        return out.reshape(shape)

    return call
