"""SoftmaxPlan / SoftmaxBackwardPlan and their Triton candidate.

**Formulas**: softmax y = exp(x - max) / sum(exp(x - max)); log_softmax y = x - max - log(sum).
Backward (from the saved y only): softmax dx = y (dy - sum(y dy)); log_softmax
dx = dy - exp(y) sum(dy).

**Dtypes / shape**: {f32, f16, bf16, f64}, rank 1..8, any axis, any non-negative strides
(outer dims collapsed on the host). f16/bf16 compute in f32, f64 in f64.

**Workspace**: none, except for lines longer than a block (cut into chunks, one program
each): one (max, sum) pair (forward) or one partial dot (backward) per chunk, and one int32
arrival counter per line.

**Precision**: deterministic and bit-stable on the same hardware: each line is reduced by one
program in a fixed order, or (chunked lines) per chunk and then over the chunks' partials in
chunk order, the same bits in every program of the line; no float atomics (the chunk
programs count in with integer atomics, backends/triton_exchange.py).
"""

from __future__ import annotations

import math

import torch

from ...backends.triton_exchange import (
    SPIN_LIMIT,
    chunk_length,
    exchange_bytes,
    split_workspace,
    zero,
)
from ...backends.triton_support import (
    MAX_OUTER_DIMS,
    RecipeCache,
    acc_type,
    maxnreg_option,
    next_pow2,
    outer_launch_groups,
)
from ...core import validate as V
from ...core.layout import axis_view
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory
from .descriptors import (
    SoftmaxArgs,
    SoftmaxBackwardArgs,
    SoftmaxBackwardDescriptor,
    SoftmaxDescriptor,
    SoftmaxKind,
)
from .kernels import (
    EXCHANGE,
    LOOP,
    TILE,
    softmax_bwd_kernel,
    softmax_fwd_kernel,
)

#: Longest line held in registers in one pass (TILE); longer lines LOOP or are chunked.
MAX_SINGLE_BLOCK = 16384
#: EXCHANGE chunk: bytes of one tensor's chunk, and warps (backward) or elements per thread
#: (forward). The backward exchanges (one DRAM read beats the loop); the f32 forward
#: exchanges at any line count, the bf16 forward of many lines LOOPs (below).
EXCHANGE_BYTES = 16384
EXCHANGE_BWD_WARPS = 4
EXCHANGE_FWD_PER_THREAD = 32
#: Register cap of the forward exchange of f32 lines (both kinds) and of log_softmax's 16-bit
#: ones. log_softmax's chunk reduction keeps x and exp(x - max) alive together: the cap
#: brings it down without spills to one more program per SM. softmax's 4096 x 4 chunk fits
#: uncapped and runs slower capped; its 8192 x 8 chunk needs the cap (below).
EXCHANGE_FWD_MAXNREG = 64
#: f32 forward exchanges take chunks of 8192 x 8 warps (still 32 values per thread, capped as
#: above), half the programs per line: half the partials to swap and combine.
EXCHANGE_F32_FWD_BYTES = 32768
#: The 16-bit forward LOOP (second read partly from L2, hints) stays ahead of the exchange
#: when calls run back to back; the exchange takes the forward of lines too few to fill the
#: GPU one program per line.
LOOP_MIN_ROWS = 256
#: Forward LOOP lines up to this many bytes loop whole, one program each (LOOP_CFG); longer
#: lines are cut into segments of LOOP_SEGMENT_BYTES (LOOP_SEGMENT_CFG), one program each,
#: that swap their (max, sum): what the SMs read at once then stays in L2 for the second read
#: (256 lines of 512 KB in flight overflow it); lines that fit loop whole, which no
#: segmentation beats.
LOOP_LINE_BYTES = 131072
LOOP_SEGMENT_BYTES = 32768
LOOP_CFG = {"MODE": LOOP, "BLOCK": 8192, "ROWS": 1, "num_warps": 16, "PARTS": 1,
            "KEEP": "evict_last", "STREAM": "evict_first"}
LOOP_SEGMENT_CFG = dict(LOOP_CFG, BLOCK=4096, num_warps=8, SPIN=SPIN_LIMIT)


#: Forward lines of 1024 (the one exception to `_tile_shape`'s rule): one line per program,
#: not 4, on these warps per element size (f32 on 8 warps: 4 values per thread).
FORWARD_1024_WARPS = {2: 4, 4: 8, 8: 4}


def _tile_shape(block: int, size: int, backward: bool) -> tuple[int, int]:
    """(lines per program, warps) of a TILE launch on lines of `block` elements (a power of
    two) of `size` bytes."""
    if not backward and block == 1024:
        return 1, FORWARD_1024_WARPS.get(size, 4)
    # short lines: several per program so each program moves >= ~8 KB
    rows_per = max(1, min(16, 4096 // block)) if block <= 2048 else 1
    elems = block * rows_per
    if size == 4 and rows_per > 1:  # f32 short lines: 32 elements per thread
        return rows_per, max(1, elems // 1024)
    return rows_per, 4 if elems <= 1024 else 8 if elems <= 4096 else 16


def launch_config(extent: int, element: ElementKind, rows: int = 1 << 20,
                  backward: bool = False) -> dict:
    """Tile table: MODE (kernels.TILE / LOOP / EXCHANGE), block, warps, lines per program,
    the same for softmax and log_softmax (their register caps differ: `register_cap`)."""
    size = element.torch_dtype.itemsize
    limit = MAX_SINGLE_BLOCK // (2 if size == 8 else 1)
    if extent <= limit:
        block = next_pow2(extent)
        rows_per, warps = _tile_shape(block, size, backward)
        return {"MODE": TILE, "BLOCK": block, "ROWS": rows_per, "num_warps": warps, "PARTS": 1}
    if not backward and rows >= LOOP_MIN_ROWS and size != 4:
        whole = extent * size <= LOOP_LINE_BYTES
        cfg = LOOP_CFG if whole else LOOP_SEGMENT_CFG
        block = cfg["BLOCK"] * 2 // max(size, 2)  # (block sizes are set in bf16 elements)
        if whole:
            return dict(cfg, BLOCK=block)
        seg = chunk_length(LOOP_SEGMENT_BYTES // size, extent, block)
        return dict(cfg, BLOCK=block, SEG=seg, PARTS=next_pow2(cdiv(extent, seg)))
    chunk_bytes = EXCHANGE_F32_FWD_BYTES if size == 4 and not backward else EXCHANGE_BYTES
    block = chunk_bytes // max(size, 2)
    warps = EXCHANGE_BWD_WARPS if backward else max(1, block // (32 * EXCHANGE_FWD_PER_THREAD))
    block = chunk_length(block, extent)
    parts = next_pow2(cdiv(extent, block))
    return {"MODE": EXCHANGE, "BLOCK": block, "ROWS": 1, "num_warps": warps, "PARTS": parts,
            "SPIN": SPIN_LIMIT}


def register_cap(mode: int, log: bool, backward: bool, element: ElementKind) -> int | None:
    """Triton's `maxnreg` for a launch (None: uncapped): the forward exchange of f32 lines and
    of log_softmax's 16-bit ones (f64 values take two registers each: uncapped)."""
    size = element.torch_dtype.itemsize
    if mode == EXCHANGE and not backward and (size == 4 or (log and size < 4)):
        return EXCHANGE_FWD_MAXNREG
    return None


def _chunk_len(extent: int, cfg: dict, backward: bool) -> int:
    """Elements of a line per program: EXCHANGE's chunk, the forward LOOP's segment (SEG),
    else the whole line."""
    if cfg["MODE"] == EXCHANGE:
        return cfg["BLOCK"]
    if cfg["MODE"] == LOOP and not backward and cfg.get("SEG"):
        return cfg["SEG"]
    return max(extent, 1)


def _chunks(extent: int, cfg: dict, backward: bool) -> int:
    """Programs per line; more than one swap partials through the workspace."""
    return cdiv(extent, _chunk_len(extent, cfg, backward))


def _partials_per_chunk(desc) -> int:
    return 1 if desc_is_backward(desc) else 2


def lines_and_extent(desc) -> tuple[int, int]:
    """(lines, elements per line) of a descriptor: the lines run along the softmax axis."""
    extent = desc.input_shape[desc.axis]
    lines = math.prod(d for i, d in enumerate(desc.input_shape) if i != desc.axis)
    return lines, extent


def workspace_bytes(desc) -> int:
    """Chunked lines keep per-chunk partials ((max, sum) forward, one dot backward) and one
    arrival counter per line (EXCHANGE)."""
    rows, extent = lines_and_extent(desc)
    cfg = launch_config(extent, desc.element, rows, desc_is_backward(desc))
    chunks = _chunks(extent, cfg, desc_is_backward(desc))
    if chunks <= 1 or rows == 0:  # (0 chunks: empty lines, nothing to exchange)
        return 0
    acc = desc.element.compute_kind.torch_dtype
    # groups of outer dims are launched one after another and reuse the same partials
    n_partials = rows * chunks * _partials_per_chunk(desc)
    return exchange_bytes(acc, n_partials, rows)


def desc_is_backward(desc) -> bool:
    return isinstance(desc, SoftmaxBackwardDescriptor)


@register_plan
class SoftmaxPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SOFTMAX
    descriptor_type = SoftmaxDescriptor
    args_type = SoftmaxArgs
    partner = "SoftmaxBackwardPlan"


@register_plan
class SoftmaxBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SOFTMAX
    descriptor_type = SoftmaxBackwardDescriptor
    args_type = SoftmaxBackwardArgs
    partner = "SoftmaxPlan"
    is_backward = True


#: Lines whose element offsets can pass 2**31 get 64-bit column indices (WIDE).
WIDE_LIMIT = 2**31

#: (kernel, desc, strides) -> launches (layouts with views per outer group are not kept)
_STEPS = RecipeCache()


def _steps(kernel, desc, tensors, cfg):
    """[(tensors or None, grid, int args, mode, constexprs)] for one call."""
    view = axis_view(desc.input_shape, tensors, desc.axis)
    backward = desc_is_backward(desc)
    log = desc.kind is SoftmaxKind.LOG_SOFTMAX
    cfg = dict(cfg or launch_config(view.extent, desc.element, view.rows, backward))
    seg_len = _chunk_len(view.extent, cfg, backward)
    n_chunks = cdiv(view.extent, seg_len)
    if cfg.pop("SEG", None) is not None or cfg["MODE"] == LOOP:
        cfg["PARTS"] = next_pow2(n_chunks)  # LOOP swaps partials only between segments
    rows_per_prog = cfg.pop("ROWS")
    warps = cfg.pop("num_warps")
    mode = cfg.pop("MODE")
    wide = view.extent * max(abs(s) for s in view.axis_strides) >= WIDE_LIMIT
    # (a sweep's cfg may set its own cap; None: uncapped)
    cap = cfg.pop("maxnreg", register_cap(mode, log, backward, desc.element))
    common = dict(LOG=log, ACC=acc_type(desc.element), ROWS=rows_per_prog, num_warps=warps,
                  WIDE=wide, **cfg, **maxnreg_option(cap))
    single = len(view.outer_shape) <= MAX_OUTER_DIMS
    out = []
    for group, shape, strides in outer_launch_groups(view, tensors, pad_last=mode == TILE):
        n_rows = math.prod(shape)
        stride_args = []
        for k, st in enumerate(strides):
            stride_args += [*st, view.axis_strides[k]]
        ints = (n_rows, view.extent, n_chunks, seg_len, *shape[1:], *stride_args)
        views = None if single else group
        # TILE: ROWS lines per program; else n_chunks programs per line
        grid = (n_rows * n_chunks,) if mode != TILE else (cdiv(n_rows, rows_per_prog),)
        out.append((views, grid, ints, mode, common))
    return out, single


def _cacheable_steps(kernel, desc, tensors):
    steps, single = _steps(kernel, desc, tensors, None)
    return steps if single else None


def _launch(kernel, desc, tensors: list[torch.Tensor], workspace, cfg: dict | None = None) -> None:
    steps = None
    if cfg is None:
        key = (kernel, desc, *(t.stride() for t in tensors))
        steps = _STEPS.get(key, lambda: _cacheable_steps(kernel, desc, tensors))
    if steps is None:
        steps, _ = _steps(kernel, desc, tensors, cfg)
    if workspace is None:
        ws = counters = tensors[-1]  # never dereferenced: only chunked launches use them
    else:
        acc_t = torch.float64 if desc.element is ElementKind.F64 else torch.float32
        n_rows = steps[0][2][0]
        n_partials = n_rows * steps[0][2][2] * _partials_per_chunk(desc)
        ws, counters = split_workspace(workspace, acc_t, n_partials, n_rows)
    for views, grid, ints, mode, common in steps:
        if mode == EXCHANGE or ints[2] > 1:  # chunked lines count their programs in
            zero(counters)
        kernel[grid](*(tensors if views is None else views), ws, counters, *ints, MODE=mode,
                     **common)


@register_candidate(SoftmaxPlan)
class TritonSoftmaxForward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_line_softmax"

    def can_implement(self, desc, args) -> None:
        V.check_nonnegative_strides(type(self).__name__, "x", args.x)
        V.check_nonnegative_strides(type(self).__name__, "y", args.y)

    def workspace_size(self, desc) -> int:
        return workspace_bytes(desc)

    def launch(self, desc, args, workspace) -> None:
        _launch(softmax_fwd_kernel, desc, [args.x, args.y], workspace)


@register_candidate(SoftmaxBackwardPlan)
class TritonSoftmaxBackward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_line_softmax_backward"

    def can_implement(self, desc, args) -> None:
        for n in ("dy", "y", "dx"):
            V.check_nonnegative_strides(type(self).__name__, n, getattr(args, n))

    def workspace_size(self, desc) -> int:
        return workspace_bytes(desc)

    def launch(self, desc, args, workspace) -> None:
        _launch(softmax_bwd_kernel, desc, [args.dy, args.y, args.dx], workspace)
