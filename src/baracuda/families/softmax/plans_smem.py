"""The Hopper candidate of SoftmaxPlan: 16-bit lines longer than a register tile, exchanged
chunk by chunk with each chunk held in shared memory (kernels_smem.py).

Selected on sm_90 for f16 / bf16 lines of more than MAX_SINGLE_BLOCK elements, a multiple of
256 (whole 16-byte copies). A call whose lines are not contiguous rows (a strided line, an
axis other than the last, a base not 16-byte aligned) runs the Triton candidate's launch
instead, inside the same workspace: the plan never refuses what it selected.
"""

from __future__ import annotations

import torch

from ...backends.gluon_chunks import (
    chunk_config,
    contiguous_rows,
    exchange_workspace_bytes,
    fresh_exchange,
    n_chunks,
    unsupported,
)
from ...backends.triton_exchange import SPIN_LIMIT
from ...backends.triton_support import next_pow2
from ...core import validate as V
from ...core.plan import Candidate
from ...core.registry import register_candidate
from .descriptors import SoftmaxKind
from .kernels import softmax_fwd_kernel
from .kernels_smem import softmax_fwd_smem_kernel  # imported here: enable_fast_launch sees it
from .plans import MAX_SINGLE_BLOCK, SoftmaxPlan, _launch, lines_and_extent, workspace_bytes


def launch_smem(desc, x: torch.Tensor, y: torch.Tensor, workspace: torch.Tensor,
                spin: int = SPIN_LIMIT, cfg: dict | None = None) -> None:
    """One launch of kernels_smem over contiguous lines (spin=0: the no-wait path;
    cfg: a chunk config other than gluon_chunks.chunk_config, for sweeps)."""
    lines, extent = lines_and_extent(desc)
    cfg = cfg or chunk_config(extent)
    nch = n_chunks(extent, cfg)
    partials, counters = fresh_exchange(workspace, lines, nch)
    softmax_fwd_smem_kernel[(lines * nch,)](
        x, y, partials, counters, extent, extent, extent, spin,
        NCH=nch, NCH_P2=next_pow2(nch), LOG=desc.kind is SoftmaxKind.LOG_SOFTMAX,
        **cfg,
        launch_pdl=True)  # the kernel's copies overlap the counter fill (wait_prior_grid)


@register_candidate(SoftmaxPlan)
class SmemExchangeSoftmaxForward(Candidate):
    """bf16 / f16 long lines on Hopper: chunks in shared memory (cp.async), partials
    exchanged."""

    name = "gluon_smem_exchange_softmax"
    replayable = True  # a counter fill and the kernel, both Triton launches with pointer args
    priority = -10  # before the Triton candidate, where it supports the line

    def supports(self, desc, pref, arch):
        return unsupported(arch, desc.element, lines_and_extent(desc)[1], MAX_SINGLE_BLOCK)

    def workspace_size(self, desc) -> int:
        lines, extent = lines_and_extent(desc)
        own = exchange_workspace_bytes(lines, n_chunks(extent))
        return max(own, workspace_bytes(desc))  # the Triton launch runs in it when delegated

    def can_implement(self, desc, args) -> None:
        V.check_nonnegative_strides(type(self).__name__, "x", args.x)
        V.check_nonnegative_strides(type(self).__name__, "y", args.y)

    def launch(self, desc, args, workspace) -> None:
        if desc.axis == args.x.dim() - 1 and contiguous_rows(args.x, args.y):
            launch_smem(desc, args.x, args.y, workspace)
        else:
            _launch(softmax_fwd_kernel, desc, [args.x, args.y], workspace)
