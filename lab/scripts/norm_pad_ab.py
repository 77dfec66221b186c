"""Norm kernels with the outer dims padded first against padded last (the unit extents then
fold into the JIT's constants; softmax's TILE does this), kernel only (normalization/tune.py's
CUDA-graph timing), forward and backward, x + y / dy + x + dx GB/s. Every launch's padding is
forced here (the plans read layout.pads_last); * marks the one the library's rule picks.

    python lab/scripts/norm_pad_ab.py [fwd,bwd]
"""

from __future__ import annotations

import sys

import torch
from lab.normalization import tune as T

from baracuda.families.normalization import layout as L
from baracuda.families.normalization import plans as P

SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536)]


def _use_layout(last: bool | None) -> None:
    """Every launch padded first (False) or last (True); None: the library's rule."""
    P.pads_last = L.pads_last if last is None else (lambda *a: last)
    T._use("fwd", None)  # clears the launch recipes and the backward's cached choice
    T._use("bwd", None)


def main(kinds) -> None:
    for kind in kinds:
        for dtype in (torch.bfloat16, torch.float32):
            for layer in (False, True):
                cells = [f"{kind} {'layer' if layer else 'rms'} {str(dtype)[6:]}"]
                for shape in SHAPES:
                    plan_cls, desc, args, nbytes = T._problem(kind, shape, dtype, layer)
                    table = (P.fwd_config if kind == "fwd" else P.bwd_config)(
                        shape[1], shape[0], desc.element, layer)
                    rule = L.pads_last(table, desc.element, layer, kind == "bwd")
                    rates = []
                    for last in (False, True):
                        _use_layout(last)
                        T._time(plan_cls, desc, args)
                        rates.append(nbytes / T._time(plan_cls, desc, args) / 1e6)
                    _use_layout(None)
                    marks = ["*" if last == rule else "" for last in (False, True)]
                    cells.append(f"{list(shape)} {rates[0]:5.0f}{marks[0]} -> "
                                 f"{rates[1]:5.0f}{marks[1]}")
                print("  ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["fwd", "bwd"])
