"""The Hopper candidates of RMSNormPlan / LayerNormPlan and their backward plans: 16-bit rows
longer than a register tile, by chunk exchange with each chunk held in shared memory
(kernels_smem.py).

Selected on sm_90 for f16 / bf16 rows of more than SINGLE_TILE (backward: BWD_SINGLE_TILE)
elements, a multiple of 256, without the fused residual (and f32 rows of layer_norm's forward,
F32_FORWARD). A call whose tensors are not contiguous 16-byte aligned rows (or whose saved
statistics / parameters are strided) runs the Triton candidate's launch instead, inside the
same workspace: the plan never refuses what it selected.
"""

from __future__ import annotations

import torch

from ...backends.gluon_chunks import (
    LANE,
    chunk_config,
    contiguous_rows,
    exchange_workspace_bytes,
    fresh_counted_slots,
    fresh_exchange,
    fresh_slots,
    n_chunks,
    slots_workspace_bytes,
    unsupported,
)
from ...backends.triton_exchange import SPIN_LIMIT
from ...backends.triton_support import maxnreg_option, next_pow2, sm_count
from ...core.runtime import cdiv
from ...core.vocab import ElementKind
from .descriptors import LayerNormBackwardDescriptor
from .kernels_smem import (  # imported here: enable_fast_launch sees them
    row_norm_bwd_smem_kernel,
    row_norm_fwd_smem_kernel,
)
from .plans import (
    _bwd_layout,
    _forward_ops,
    _RowNormCandidate,
    reduce_param_partials,
    register_row_candidates,
)

#: Rows up to this many elements are held in one program's registers (layout.fwd_config).
SINGLE_TILE = 16384


def launch_smem(desc, args, workspace: torch.Tensor, rms: bool,
                spin: int = SPIN_LIMIT, cfg: dict | None = None) -> None:
    """One launch of kernels_smem over contiguous rows (spin=0: the no-wait path;
    cfg: a chunk config other than gluon_chunks.chunk_config, for sweeps)."""
    m, rows = desc.norm_total_extent, desc.rows
    mean, beta = _forward_ops(args)
    cfg = dict(cfg or fwd_chunk_config(m, desc.element, rms))
    even = cfg.pop("EVEN", fwd_even(m, desc.element, cfg))  # (a sweep may force either)
    slots = bool(cfg.pop("SLOTS", fwd_slots(m, desc.element, rms)))
    nch = n_chunks(m, cfg)
    # the same workspace bytes either way (exchange_workspace_bytes)
    partials, counters = (fresh_counted_slots if slots else fresh_exchange)(workspace, rows, nch)
    x = args.x
    row_norm_fwd_smem_kernel[(rows * nch,)](
        x, args.y, x if args.gamma is None else args.gamma, x if beta is None else beta,
        args.rstd if mean is None else mean, args.rstd, partials, counters,
        m, m, m, desc.eps, spin,
        NCH=nch, NCH_P2=next_pow2(nch), RMS=rms, HAS_W=args.gamma is not None,
        HAS_B=beta is not None, EVEN=even, SLOTS=slots, **cfg,
        launch_pdl=True)  # the kernel's copies overlap the fill (wait_prior_grid)


#: layer_norm's forward also takes f32 rows (it beats the Triton exchange there, which loses
#: on beta's reads); rms_norm f32 stays on its Triton exchange, which is as fast.
F32_FORWARD = {True: False, False: True}  # rms? -> f32 rows in shared memory


def fwd_even(extent: int, element, cfg: dict) -> bool:
    """The forward's EVEN constexpr: 16-bit rows of whole chunks drop their masks (a small
    gain); f32 keeps the masks, which it runs faster with."""
    return extent % (cfg["R"] * int(LANE)) == 0 and element is not ElementKind.F32


#: The forward's exchange per CHUNK_TABLE row: the fenceless counted slots
#: (gluon_chunks.counted_slot_pairs) or the counter protocol (exchange_pairs), as
#: (longest row or None: the rest, slots?), first match: the slots pay for layer_norm (f32
#: up to 64K columns only); rms_norm runs as fast or faster on the counters.
COUNTED_SLOTS = {
    "layer_line": ((None, True),),
    "line": ((None, False),),
    "line_f32": ((65536, True), (None, False)),
}


def fwd_slots(extent: int, element, rms: bool) -> bool:
    """The forward's SLOTS constexpr for rows of `extent` (the launch and the AOT variants)."""
    for longest, slots in COUNTED_SLOTS[_fwd_kind(element, rms)]:
        if longest is None or extent <= longest:
            return slots
    raise AssertionError("every COUNTED_SLOTS row ends with a catch-all")


def _fwd_kind(element, rms: bool) -> str:
    """The forward's row of gluon_chunks.CHUNK_TABLE: f32 rows and layer_norm's 16-bit rows
    take their own."""
    if element is ElementKind.F32:
        return "line_f32"
    return "line" if rms else "layer_line"


def fwd_chunk_config(extent: int, element, rms: bool) -> dict:
    """The forward's chunk config for rows of `extent` elements."""
    return chunk_config(extent, _fwd_kind(element, rms))


#: Backward rows up to this many elements stay in registers (layout._bwd_config: 16K for
#: rms_norm, 8K for layer_norm, whose dbeta partial makes a 16K row spill).
BWD_SINGLE_TILE = {False: 16384, True: 8192}

#: The backward's config per kind (layer_norm?): chunk of R rows of LANE columns, shared
#: stages per tensor, rows published ahead of the one finished, warps, programs per SM (the
#: row groups G fill them; every program of a group must be resident) and a register cap
#: that lets that many fit. Rows up to 65536 take 512-column chunks of one warp, 16 per SM
#: under a 128-register cap (the register file's limit); longer rows take 2048-column chunks
#: on 4 warps (at 1024 columns a 262144-element row's partials vector needs too many
#: registers for layer_norm's programs per SM). Two rows ahead and 4 stages were the best
#: of their sweeps.
#: ((layer_norm?, longest row or None: the rest), config), first match.
_SHORT_ROWS = {"R": 2, "NS": 4, "AHEAD": 2, "num_warps": 1, "PER_SM": 16, "maxnreg": 128}
BWD_TABLE = (
    ((False, 65536), _SHORT_ROWS),
    ((False, None), {"R": 8, "NS": 4, "AHEAD": 2, "num_warps": 4, "PER_SM": 4, "maxnreg": 128}),
    ((True, 65536), _SHORT_ROWS),
    ((True, None), {"R": 8, "NS": 4, "AHEAD": 2, "num_warps": 4, "PER_SM": 3, "maxnreg": None}),
)
#: Most chunks per row (262144 elements): a group's chunks must all be resident at once
#: (PER_SM per SM on a Hopper of at least 43 SMs); longer rows take the Triton candidates.
BWD_MAX_CHUNKS = 256


def smem_bwd_config(layer: bool, extent: int) -> dict:
    """The BWD_TABLE row of a layer_norm (or rms_norm) backward of rows of `extent`."""
    for (kind, longest), cfg in BWD_TABLE:
        if kind == layer and (longest is None or extent <= longest):
            return cfg
    raise AssertionError("the table ends with a catch-all row per kind")


def _desc_config(desc) -> dict:
    return smem_bwd_config(isinstance(desc, LayerNormBackwardDescriptor), desc.norm_total_extent)


def bwd_shape(desc, cfg: dict | None = None) -> tuple[int, int]:
    """(chunks per row, row groups) of the backward launch."""
    cfg = cfg or _desc_config(desc)
    nch = n_chunks(desc.norm_total_extent, cfg)
    return nch, max(1, min(desc.rows, cfg["PER_SM"] * sm_count() // nch))


def ring_constexprs(nch: int, cfg: dict) -> dict:
    """NCH and NCH_P2 of the backward kernel: the pairs vector holds at least one element per
    thread (gluon_chunks.published_pairs asserts it; the launch and the AOT variants take
    both from here)."""
    return {"NCH": nch, "NCH_P2": max(next_pow2(nch), 32 * cfg["num_warps"])}


def _partials_bytes(desc, groups: int) -> int:
    """The [G, M] f32 dgamma (then dbeta) partials at the head of the workspace."""
    parts = int(desc.has_gamma) + int(getattr(desc, "has_beta", False))
    return 4 * parts * groups * desc.norm_total_extent


def bwd_smem_workspace(desc) -> int:
    """The dgamma / dbeta partials, then the slots of the rows' partial pairs."""
    nch, groups = bwd_shape(desc)
    return _partials_bytes(desc, groups) + slots_workspace_bytes(desc.rows, nch)


def launch_smem_backward(desc, args, workspace: torch.Tensor, rms: bool,
                         spin: int = SPIN_LIMIT, cfg: dict | None = None) -> None:
    """One launch of the shared-memory backward over contiguous rows, then the fixed-order sum
    of the dgamma / dbeta partials (spin=0: the no-wait path; cfg: another BWD_TABLE row, for
    sweeps; the workspace must then fit it). Returns the compiled kernel (None for no rows)."""
    cfg = dict(cfg or _desc_config(desc))
    m, rows = desc.norm_total_extent, desc.rows
    nch, groups = bwd_shape(desc, cfg)
    cfg.pop("PER_SM")
    cap = maxnreg_option(cfg.pop("maxnreg", None))
    n_part = _partials_bytes(desc, groups)
    part = workspace[:n_part].view(torch.float32)
    dbeta = getattr(args, "dbeta", None)
    mean = getattr(args, "mean", None)
    if rows:
        slots = fresh_slots(workspace[n_part:], rows, nch)
        x = args.x
        kernel = row_norm_bwd_smem_kernel[(groups * nch,)](
            args.dy, x, x if args.gamma is None else args.gamma,
            args.rstd if mean is None else mean, args.rstd, args.dx, part, slots,
            rows, m, groups, cdiv(rows, groups), spin, **ring_constexprs(nch, cfg),
            RMS=rms, HAS_W=desc.has_gamma,
            HAS_DB=getattr(desc, "has_beta", False), **cfg, **cap,
            launch_pdl=True)  # the first copies overlap the slot fill (wait_prior_grid)
    if args.dgamma is not None or dbeta is not None:
        who = "RMSNormBackwardPlan" if rms else "LayerNormBackwardPlan"
        reduce_param_partials(desc, args, part, groups if rows else 0,
                              _bwd_layout(who, desc, args))
    return kernel if rows else None


class _SmemRowNorm(_RowNormCandidate):
    """bf16 / f16 long rows on Hopper (and f32 for layer_norm's forward, F32_FORWARD), chunks
    through shared memory (cp.async): the forward exchanges sums (launch_smem), the backward
    walks row groups through a ring of stages (launch_smem_backward). A call whose rows are
    not contiguous and 16-byte aligned, or whose statistics are strided, runs the Triton
    candidate's launch in the same workspace."""

    replayable = True  # fills, the kernel and (backward) the partial sums: Triton launches
    priority = -10  # before the Triton candidate, where it supports the row

    def supports(self, desc, pref, arch):
        if desc.has_residual:
            return "the fused residual variant runs on the Triton candidate"
        in_registers = BWD_SINGLE_TILE[not self.rms] if self.backward else SINGLE_TILE
        f32 = not self.backward and F32_FORWARD[self.rms]
        why = unsupported(arch, desc.element, desc.norm_total_extent, in_registers,
                          _fwd_kind(desc.element, self.rms), f32)
        if why is None and self.backward:
            nch, _ = bwd_shape(desc)
            if nch > BWD_MAX_CHUNKS:
                why = (f"at most {BWD_MAX_CHUNKS} chunks of "
                       f"{_desc_config(desc)['R'] * int(LANE)} elements per row, got {nch}")
        return why

    def workspace_size(self, desc) -> int:
        own = (bwd_smem_workspace(desc) if self.backward else exchange_workspace_bytes(
            desc.rows, n_chunks(desc.norm_total_extent,
                                fwd_chunk_config(desc.norm_total_extent, desc.element,
                                                 self.rms))))
        return max(own, super().workspace_size(desc))  # the Triton launch may run in it

    def launch(self, desc, args, workspace) -> None:
        mean = getattr(args, "mean", None)
        rows = ((args.dy, args.x, args.dx, args.gamma) if self.backward
                else (args.x, args.y, args.gamma, getattr(args, "beta", None)))
        if contiguous_rows(*rows) and args.rstd.is_contiguous() \
                and (mean is None or mean.is_contiguous()):
            (launch_smem_backward if self.backward else launch_smem)(desc, args, workspace,
                                                                     self.rms)
        else:
            super().launch(desc, args, workspace)


(SmemExchangeRMSNorm, SmemExchangeRMSNormBackward, SmemExchangeLayerNorm,
 SmemExchangeLayerNormBackward) = register_row_candidates(_SmemRowNorm, "SmemExchange",
                                                          "gluon_smem_exchange")
