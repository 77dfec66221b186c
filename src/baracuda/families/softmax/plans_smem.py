"""The Hopper candidate of SoftmaxPlan: 16-bit lines longer than a register tile, exchanged
chunk by chunk with each chunk held in shared memory (kernels_smem.py).

Selected on sm_90 for f16 / bf16 lines of more than MAX_SINGLE_BLOCK elements, a multiple of
256 (whole 16-byte copies). A call whose lines are not contiguous rows (a strided line, an
axis other than the last, a base not 16-byte aligned) runs the Triton candidate's launch
instead, inside the same workspace: the plan never refuses what it selected.
"""

from __future__ import annotations

import torch

from ...backends.triton_exchange import SPIN_LIMIT, exchange_bytes, split_workspace, zero
from ...backends.triton_support import next_pow2
from ...core import validate as V
from ...core.plan import Candidate
from ...core.registry import register_candidate
from ...core.vocab import ArchSku, ElementKind
from .descriptors import SoftmaxKind
from .kernels import softmax_fwd_kernel
from .kernels_smem import softmax_fwd_smem_kernel  # imported here: enable_fast_launch sees it
from .plans import MAX_SINGLE_BLOCK, SoftmaxPlan, _launch, workspace_bytes

#: Columns of one chunk row (kernels_smem.LANE); lines are a multiple of it.
LANE = 256
#: Most chunks per line (the partial merge holds them in one vector).
MAX_CHUNKS = 1024


def smem_config(extent: int) -> dict:
    """(R, SL, num_warps): chunk rows of 256, slice rows, warps. H100 sweep, bf16, GB/s
    (softmax/PERF_NOTES.md, session 9; counters zeroed by a fill launch as here):
    [1024, 65536] R=32 SL=4 4 warps 2618 (R=64 SL=8 8 warps 2496); [256, 262144] R=64 SL=8
    8 warps 2496 (R=32: 2206)."""
    if extent <= 65536:
        return {"R": 32, "SL": 4, "num_warps": 4}
    return {"R": 64, "SL": 8, "num_warps": 8}


def _line(desc) -> tuple[int, int]:
    """(lines, extent) of a descriptor."""
    extent = desc.input_shape[desc.axis]
    lines = 1
    for i, d in enumerate(desc.input_shape):
        if i != desc.axis:
            lines *= d
    return lines, extent


def _chunks(extent: int) -> int:
    cfg = smem_config(extent)
    return -(-extent // (cfg["R"] * LANE))


def _rows_ready(desc, x: torch.Tensor, y: torch.Tensor) -> bool:
    """Lines are contiguous, 16-byte aligned rows of x and y (whole 16-byte copies)."""
    return (desc.axis == x.dim() - 1 and x.is_contiguous() and y.is_contiguous()
            and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0)


def launch_smem(desc, x: torch.Tensor, y: torch.Tensor, workspace: torch.Tensor,
                spin: int = SPIN_LIMIT) -> None:
    """One launch of kernels_smem over contiguous lines (spin=0: the no-wait path)."""
    lines, extent = _line(desc)
    cfg = smem_config(extent)
    nch = _chunks(extent)
    partials, counters = split_workspace(workspace, torch.float32, lines * nch * 2, lines)
    zero(counters)
    softmax_fwd_smem_kernel[(lines * nch,)](
        x, y, partials, counters, extent, extent, extent, spin,
        NCH=nch, NCH_P2=next_pow2(nch), LOG=desc.kind is SoftmaxKind.LOG_SOFTMAX, **cfg)


@register_candidate(SoftmaxPlan)
class SmemExchangeSoftmaxForward(Candidate):
    """bf16 / f16 long lines on Hopper: chunks in shared memory (cp.async), partials
    exchanged."""

    name = "gluon_smem_exchange_softmax"
    replayable = True  # a counter fill and the kernel, both Triton launches with pointer args
    priority = -10  # before the Triton candidate, where it supports the line

    def supports(self, desc, pref, arch):
        if arch not in (ArchSku.SM90, ArchSku.SM90A):
            return f"needs Hopper TMA (sm_90), got {arch.value}"
        if desc.element not in (ElementKind.BF16, ElementKind.F16):
            return f"16-bit elements only, got {desc.element.value}"
        lines, extent = _line(desc)
        if extent <= MAX_SINGLE_BLOCK or extent % LANE:
            return (f"lines of more than {MAX_SINGLE_BLOCK} elements, a multiple of {LANE}, "
                    f"got {extent}")
        if _chunks(extent) > MAX_CHUNKS or lines == 0:
            return f"at most {MAX_CHUNKS} chunks per line and at least one line"
        return None

    def workspace_size(self, desc) -> int:
        lines, extent = _line(desc)
        own = exchange_bytes(torch.float32, lines * _chunks(extent) * 2, lines)
        return max(own, workspace_bytes(desc))  # the Triton launch runs in it when delegated

    def can_implement(self, desc, args) -> None:
        V.check_nonnegative_strides(type(self).__name__, "x", args.x)
        V.check_nonnegative_strides(type(self).__name__, "y", args.y)

    def launch(self, desc, args, workspace) -> None:
        if _rows_ready(desc, args.x, args.y):
            launch_smem(desc, args.x, args.y, workspace)
        else:
            _launch(softmax_fwd_kernel, desc, [args.x, args.y], workspace)
