"""The fused deterministic Triton backward of SdpaBackwardPlan (kernels_fused.py).

One pass computes dK, dV and dQ: 5 tile matmuls per (query tile, key tile) pair instead of the
two-kernel backward's 8, with dQ summed in a fixed order through an f32 accumulator in the
workspace (deterministic and bit-stable, no race). f16 / bf16 only: the exact f32 / f64 paths
keep the two-kernel backward.

**Workspace**: delta (B·H·Sq f32), the dQ accumulator (B·H·n_q·BLOCK_M·BLOCK_DK f32, n_q =
query tiles) and one int32 arrival counter per query tile and head; the accumulator and the
counters are zeroed by a Triton fill each call.

**Limit**: the lockstep order needs a head's key tiles resident together, so the candidate
declines when Sk / BLOCK_N exceeds the multiprocessor count (the two-kernel backward runs).
"""

from __future__ import annotations

import torch

from ...backends.triton_exchange import FILL_BLOCK, SPIN_LIMIT, fill_kernel
from ...backends.triton_support import INTERPRET, sm_count
from ...core.registry import register_candidate
from ...core.vocab import ElementKind
from .kernels_fused import sdpa_bwd_dq_store_kernel, sdpa_bwd_fused_kernel
from .plans import (
    HALF,
    Launch,
    SdpaBackwardPlan,
    TritonFlashBackward,
    _even,
    _strides3,
    backward_parts,
    delta_launch,
    head_blocks,
    tile_config,
)

#: Rows of the dQ store pass.
STORE_ROWS = 64
#: The lockstep order (kernels_fused.py); the interpreter runs programs one after another in id
#: order, so it takes the ascending order, which never waits there (tests flip this to run the
#: staggered order's index arithmetic on the CPU: its waits then give up at once, SPIN = 0).
STAGGER = not INTERPRET
#: The dQ term formed transposed (kernels_fused._dq_term); a tuning knob.
DQ_T = False


def _layout(desc):
    """(tile config, query tiles, accumulator rows per head, workspace offsets in bytes)."""
    cfg = tile_config(desc, "fused")
    n_q = -(-desc.query_len // cfg["BLOCK_M"])
    bh = desc.batch * desc.num_heads
    bdk = head_blocks(desc)[0]
    acc_bytes = 8 if desc.element is ElementKind.F64 else 4
    delta_end = bh * desc.query_len * acc_bytes
    acc_start = -(-delta_end // 16) * 16
    acc_end = acc_start + bh * n_q * cfg["BLOCK_M"] * bdk * acc_bytes
    count_end = acc_end + bh * n_q * 4
    return cfg, n_q, n_q * cfg["BLOCK_M"], (acc_start, acc_end, count_end)


def fused_backward_launches(d, a, workspace, tf32: bool) -> list[Launch]:
    p = backward_parts(d, a, workspace, tf32)
    cfg, n_q, acc_rows, (acc_start, acc_end, count_end) = _layout(d)
    raw = workspace.view(torch.uint8)
    acc_dtype = torch.float64 if d.element is ElementKind.F64 else torch.float32
    dq_acc = raw[acc_start:acc_end].view(acc_dtype)
    counts = raw[acc_start:count_end].view(torch.int32)  # accumulator and counters: one fill
    bh = d.batch * d.num_heads
    out = []
    if bh * d.query_len:
        out.append(delta_launch(d, a, p))
        out.append(Launch(fill_kernel, (-(-counts.numel() // FILL_BLOCK),),
                          (counts, counts.numel()), dict(VALUE=0, BLOCK=FILL_BLOCK)))
    if d.key_len and d.batch * d.num_kv_heads:
        cfg = dict(cfg)
        cfg.update(EVEN=_even(d, cfg, p.cc), STAGGER=STAGGER, SPIN=SPIN_LIMIT, DQ_T=DQ_T)
        grid = (-(-d.key_len // cfg["BLOCK_N"]), d.batch * d.num_kv_heads)
        out.append(Launch(sdpa_bwd_fused_kernel, grid, (
            a.q, a.k, a.v, a.dout, a.lse, p.delta, a.dk, a.dv, p.mask_ptr, p.rng,
            dq_acc, counts[(acc_end - acc_start) // 4:], *p.common, *_strides3(a.dk),
            *_strides3(a.dv), *p.mask_strides), dict(**cfg, **p.cc)))
    if bh * d.query_len:
        c = p.common
        out.append(Launch(sdpa_bwd_dq_store_kernel, (-(-d.query_len // STORE_ROWS), bh), (
            dq_acc, a.dq, d.num_heads, d.query_len, acc_rows, c[6], c[7], *_strides3(a.dq)),
            dict(DK=d.head_dim, BLOCK_DK=p.cc["BLOCK_DK"], BLOCK_M=STORE_ROWS,
                 ACC=p.cc["ACC"], IDX=p.cc["IDX"])))
    return out


@register_candidate(SdpaBackwardPlan)
class TritonFlashBackwardFused(TritonFlashBackward):
    name = "triton_flash_bwd_fused"
    priority = -1

    def supports(self, desc, pref, arch):
        if desc.element not in HALF:
            return "fused backward: f16 / bf16 (f32 and f64 take the exact two-kernel path)"
        n_k = -(-desc.key_len // tile_config(desc, "fused")["BLOCK_N"])
        if not INTERPRET and n_k > sm_count():
            return (f"fused backward: {n_k} key tiles per head exceed the {sm_count()} "
                    "multiprocessors its ordered dQ sum needs resident at once")
        return None

    def workspace_size(self, desc) -> int:
        return _layout(desc)[3][2]

    def launch(self, desc, args, workspace) -> None:
        for launch in fused_backward_launches(desc, args, workspace, self.tf32):
            launch()
