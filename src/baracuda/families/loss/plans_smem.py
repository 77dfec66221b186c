"""The Hopper candidate of CrossEntropyLossFusedPlan: 16-bit class lines longer than a register
tile, loss and gradient by chunk exchange with each chunk held in shared memory
(kernels_smem.py).

Selected on sm_90 for f16 / bf16 (N, C) logits with C > MAX_SINGLE_BLOCK a multiple of 256,
class-index targets and no label smoothing. A call whose tensors are not contiguous 16-byte
aligned rows (or a strided target / weight) runs the Triton candidate's launch instead, in
the same workspace: the plan never refuses what it selected.

Workspace: ce_kernel's (the total weight and the per-sample losses), then the exchange's
(max, sum) per chunk and one arrival counter per sample.
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
from ...backends.rows import ASSERT_LAUNCH
from ...backends.triton_exchange import SPIN_LIMIT
from ...backends.triton_support import next_pow2
from ...core.plan import Candidate
from ...core.registry import register_candidate
from .descriptors import LossReduction
from .kernels_smem import ce_fused_smem_kernel  # imported here: enable_fast_launch sees it
from .plans import (
    MAX_SINGLE_BLOCK,
    CrossEntropyLossFusedPlan,
    _finalize,
    _weight_total,
    _ws_view,
    ce_workspace,
    launch_ce,
)

#: The chunk table row of gluon_chunks.CHUNK_TABLE this kernel uses.
KIND = "cross_entropy"


def _head_bytes(desc) -> int:
    """ce_kernel's workspace part, rounded up to 16 bytes."""
    return -(-ce_workspace(desc, loss=True, grad=True) // 16) * 16


def _chunks(classes: int) -> int:
    return n_chunks(classes, chunk_config(classes, KIND))


def launch_smem(desc, a, workspace: torch.Tensor, spin: int = SPIN_LIMIT,
                cfg: dict | None = None) -> None:
    """Loss and gradient of contiguous (N, C) logits (spin=0: the no-wait path;
    cfg: a chunk config other than gluon_chunks.chunk_config, for sweeps)."""
    rows, classes = desc.rows, desc.input_shape[1]
    head = _head_bytes(desc)
    ws = _ws_view(desc, workspace[:head]) if head else workspace
    cfg = cfg or chunk_config(classes, KIND)
    nch = n_chunks(classes, cfg)
    mean = desc.reduction is LossReduction.MEAN
    if mean:
        _weight_total(desc, a.target, a.weight, ws, False)
    partials, counters = fresh_exchange(workspace[head:], rows, nch)
    reduce = desc.reduction is not LossReduction.NONE
    ce_fused_smem_kernel[(rows * nch,)](
        a.input, a.target, a.input if a.weight is None else a.weight, a.grad_input, a.loss,
        ws, partials, counters, classes, classes, classes, desc.ignore_index, spin,
        NCH=nch, NCH_P2=next_pow2(nch), HAS_W=a.weight is not None, LOSS=2 if reduce else 1,
        MEAN=mean, **cfg, **ASSERT_LAUNCH,
        launch_pdl=True)  # the kernel's copies overlap the counter fill (wait_prior_grid)
    if reduce:
        _finalize(desc, ws, a.loss)


@register_candidate(CrossEntropyLossFusedPlan)
class SmemExchangeCrossEntropyFused(Candidate):
    """bf16 / f16 long class lines on Hopper: chunks in shared memory, (max, sum) exchanged."""

    name = "gluon_smem_exchange_cross_entropy_fused"
    replayable = True  # Triton launches only (fills, the kernel, the reduction stages)
    priority = -10  # before the Triton candidate, where it supports the problem

    def supports(self, desc, pref, arch):
        if len(desc.input_shape) != 2:
            return f"(N, C) logits only, got rank {len(desc.input_shape)}"
        if desc.probability_target or desc.label_smoothing:
            return "class-index targets without label smoothing only"
        return unsupported(arch, desc.element, desc.input_shape[1], MAX_SINGLE_BLOCK, KIND)

    def workspace_size(self, desc) -> int:
        return _head_bytes(desc) + exchange_workspace_bytes(desc.rows,
                                                           _chunks(desc.input_shape[1]))

    def launch(self, desc, a, workspace) -> None:
        if contiguous_rows(a.input, a.grad_input, a.target, a.weight) and a.loss.is_contiguous():
            launch_smem(desc, a, workspace)
        else:
            launch_ce(desc, a.input, a.target, a.weight, loss=a.loss, grad_input=a.grad_input,
                      workspace=workspace)
