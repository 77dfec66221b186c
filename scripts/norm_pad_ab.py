"""Norm kernels with the outer dims padded first (the plans' layout) against padded last
(the unit extents then fold into the JIT's constants; softmax's TILE does this), kernel only
(normalization/tune.py's CUDA-graph timing), forward and backward, x + y / dy + x + dx GB/s.
The pad-last layout is patched in here, not in the library.

    python scripts/norm_pad_ab.py [fwd,bwd]
"""

from __future__ import annotations

import functools
import sys

import torch

from baracuda.families.normalization import layout as L
from baracuda.families.normalization import tune as T

SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536)]
_FIRST = L.RowLayout.__dict__["_single"]


def _pad_last(self):
    pad = L.MAX_OUTER - len(self.outer_shape)
    rest = list(self.outer_shape) + [1] * pad
    strides = tuple(tuple(list(st) + [0] * pad) for st in self.outer)
    return rest[0] * rest[1] * rest[2], rest[1], rest[2], strides


def _use_layout(last: bool) -> None:
    prop = functools.cached_property(_pad_last) if last else _FIRST
    if last:
        prop.__set_name__(L.RowLayout, "_single")
    L.RowLayout._single = prop
    L._row_layout.cache_clear()
    T._use("fwd", None)  # clears the launch recipes keyed on the old layouts
    T._use("bwd", None)


def main(kinds) -> None:
    for kind in kinds:
        for dtype in (torch.bfloat16, torch.float32):
            for layer in (False, True):
                cells = [f"{kind} {'layer' if layer else 'rms'} {str(dtype)[6:]}"]
                for shape in SHAPES:
                    plan_cls, desc, args, nbytes = T._problem(kind, shape, dtype, layer)
                    rates = []
                    for last in (False, True):
                        _use_layout(last)
                        T._time(plan_cls, desc, args)
                        rates.append(nbytes / T._time(plan_cls, desc, args) / 1e6)
                    _use_layout(False)
                    cells.append(f"{list(shape)} {rates[0]:5.0f} -> {rates[1]:5.0f}")
                print("  ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["fwd", "bwd"])
