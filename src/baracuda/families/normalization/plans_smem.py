"""The Hopper candidates of RMSNormPlan / LayerNormPlan: 16-bit rows longer than a register
tile, normalized by chunk exchange with each chunk held in shared memory (kernels_smem.py).

Selected on sm_90 for f16 / bf16 rows of more than SINGLE_TILE elements, a multiple of 256,
without the fused residual. A call whose tensors are not contiguous 16-byte aligned rows (or
whose saved statistics / parameters are strided) runs the Triton candidate's launch instead,
inside the same workspace: the plan never refuses what it selected.
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
from ...core.registry import register_candidate
from .kernels_smem import row_norm_fwd_smem_kernel  # imported here: enable_fast_launch sees it
from .plans import (
    LayerNormPlan,
    RMSNormPlan,
    _forward_ops,
    _launch_forward,
    _RowNormCandidate,
    forward_workspace,
)

#: Rows up to this many elements are held in one program's registers (layout.fwd_config).
SINGLE_TILE = 16384


def launch_smem(desc, args, workspace: torch.Tensor, rms: bool,
                spin: int = SPIN_LIMIT, cfg: dict | None = None) -> None:
    """One launch of kernels_smem over contiguous rows (spin=0: the no-wait path;
    cfg: a chunk config other than gluon_chunks.chunk_config, for sweeps)."""
    m, rows = desc.norm_total_extent, desc.rows
    mean, beta = _forward_ops(args)
    cfg = cfg or chunk_config(m)
    nch = n_chunks(m, cfg)
    partials, counters = fresh_exchange(workspace, rows, nch)
    x = args.x
    row_norm_fwd_smem_kernel[(rows * nch,)](
        x, args.y, x if args.gamma is None else args.gamma, x if beta is None else beta,
        args.rstd if mean is None else mean, args.rstd, partials, counters,
        m, m, m, desc.eps, spin,
        NCH=nch, NCH_P2=next_pow2(nch), RMS=rms, HAS_W=args.gamma is not None,
        HAS_B=beta is not None, **cfg,
        launch_pdl=True)  # the kernel's copies overlap the counter fill (wait_prior_grid)


class _SmemRowNorm(_RowNormCandidate):
    """bf16 / f16 long rows on Hopper: chunks in shared memory (cp.async), sums exchanged."""

    replayable = True  # a counter fill and the kernel, both Triton launches with pointer args
    priority = -10  # before the Triton candidate, where it supports the row

    def supports(self, desc, pref, arch):
        if desc.has_residual:
            return "the fused residual variant runs on the Triton candidate"
        return unsupported(arch, desc.element, desc.norm_total_extent, SINGLE_TILE)

    def workspace_size(self, desc) -> int:
        own = exchange_workspace_bytes(desc.rows, n_chunks(desc.norm_total_extent))
        return max(own, forward_workspace(desc))  # the Triton launch runs in it if delegated

    def launch(self, desc, args, workspace) -> None:
        mean, beta = _forward_ops(args)
        if contiguous_rows(args.x, args.y, args.gamma, beta) and args.rstd.is_contiguous() \
                and (mean is None or mean.is_contiguous()):
            launch_smem(desc, args, workspace, self.rms)
        else:
            _launch_forward(desc, args, self.rms, workspace)


@register_candidate(RMSNormPlan)
class SmemExchangeRMSNorm(_SmemRowNorm):
    name = "gluon_smem_exchange_rms_norm"
    rms, backward = True, False


@register_candidate(LayerNormPlan)
class SmemExchangeLayerNorm(_SmemRowNorm):
    name = "gluon_smem_exchange_layer_norm"
    rms, backward = False, False
