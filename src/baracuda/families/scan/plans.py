"""ScanPlan / ScanBackwardPlan and their Triton candidate.

**Formulas**: along the scan axis (from its end when `reverse`), y_i = x_0 op ... op x_i with
op = + (cumsum), * (cumprod), max / min (cummax / cummin: also the index of the running
extreme, the last of equal values, NaN propagating as torch), logaddexp (logcumsumexp).
Pairwise kinds (one shorter along the axis, no direction): diff y_i = x_{i+1} - x_i;
cumulative_trapezoid y_i = sum_{k <= i} w_k (x_k + x_{k+1}) / 2 for spacings w.
Backward (dy -> dx, walking the other way): cumsum dx = reverse cumsum(dy); cumprod
dx_q = y_{q-1} R_q with R_q = dy_q + x_{q+1} R_{q+1} (no division: exact with zeros);
cummax / cummin dx_j = the sum of dy_k over the k whose index is j; logcumsumexp as torch
(reverse logcumsumexp of log(dy+) - y and of log(dy-) - y, each plus x, exponentiated);
diff dx_j = dy_{j-1} - dy_j; cumulative_trapezoid, with G_j = sum_{i >= j} dy_i,
dx_j = (w_j G_j + w_{j-1} G_{j-1}) / 2 and (`spacing_grad`) dw_k = G_k (x_k + x_{k+1}) / 2.

**Dtypes / shape**: forward {f32, f16, bf16, f64} and {i8, i16, i32, i64, u8, bool} (not
logcumsumexp nor cumulative_trapezoid); sums and products of integers give int64, as torch.
Backward: floats. Rank 1..8, any axis, any non-negative strides (non-scanned dims collapsed
on the host). f16/bf16 compute in f32, f64 in f64, integers in int64.

**Workspace**: none when the lines fill the GPU; otherwise lines are cut into chunks along
the scan axis and each chunk's total (one pair per line and chunk) is kept.

**Precision**: deterministic and bit-stable on the same hardware: each tile is scanned in a
fixed tree order and blocks are carried in order; chunked lines fold the chunk totals before
them in order (no atomics).
"""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import (
    RecipeCache,
    acc_type,
    next_pow2,
    outer_launch_groups,
    sm_count,
)
from ...core.layout import AxisView, axis_view
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels as K
from .descriptors import (
    INTEGER_KINDS,
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanDescriptor,
    ScanKind,
)


@register_plan
class ScanPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SCAN
    descriptor_type = ScanDescriptor
    args_type = ScanArgs
    partner = "ScanBackwardPlan"


@register_plan
class ScanBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SCAN
    descriptor_type = ScanBackwardDescriptor
    args_type = ScanBackwardArgs
    partner = "ScanPlan"
    is_backward = True


FORWARD_CODES = {ScanKind.CUMSUM: K.CUMSUM.value, ScanKind.CUMPROD: K.CUMPROD.value,
                 ScanKind.CUMMAX: K.CUMMAX.value, ScanKind.CUMMIN: K.CUMMIN.value,
                 ScanKind.LOGCUMSUMEXP: K.LOGCUMSUMEXP.value, ScanKind.DIFF: K.DIFF.value,
                 ScanKind.CUMULATIVE_TRAPEZOID: K.TRAPEZOID.value}
BACKWARD_CODES = {ScanKind.CUMSUM: K.CUMSUM.value, ScanKind.CUMPROD: K.CUMPROD_BWD.value,
                  ScanKind.CUMMAX: K.EXTREME_BWD.value, ScanKind.CUMMIN: K.EXTREME_BWD.value,
                  ScanKind.LOGCUMSUMEXP: K.LOGCUMSUMEXP_BWD.value,
                  ScanKind.DIFF: K.DIFF_BWD.value,
                  ScanKind.CUMULATIVE_TRAPEZOID: K.TRAPEZOID_BWD.value}
#: kinds without a carry: chunks of their lines are independent (one pass, no totals)
CARRYLESS = frozenset({ScanKind.DIFF})

#: Elements of one [LINES, BLOCK] tile (halved for 8-byte elements: registers).
TILE_ELEMS = 2048
#: Contiguous lines a tile takes when the scan axis is not the innermost one: 64 f32 lines are
#: 256-byte rows, whole sectors per load.
COLUMN_LINES = 64
#: Lines too few for this many programs per SM are cut into chunks along the scan axis.
PROGRAMS_PER_SM = 4
#: A chunk spans at least this many tile steps (fewer: the extra pass costs more than it buys).
MIN_CHUNK_BLOCKS = 4
#: Chunk totals folded per step of a chunk's carry.
MAX_TOTALS_BLOCK = 1024
WARPS = 8


def code_of(desc) -> int:
    if getattr(desc, "spacing_grad", False):
        return K.TRAPEZOID_SPACING_BWD.value
    table = BACKWARD_CODES if isinstance(desc, ScanBackwardDescriptor) else FORWARD_CODES
    return table[desc.kind]


def walk_reversed(desc) -> bool:
    """The kernel's direction: the forward's own; every backward walks against its forward."""
    return desc.reverse != isinstance(desc, ScanBackwardDescriptor)


def _acc(desc):
    if desc.element in INTEGER_KINDS:
        return torch.int64
    return torch.float64 if desc.element is ElementKind.F64 else torch.float32


def _acc_tl(desc):
    import triton.language as tl

    return tl.int64 if desc.element in INTEGER_KINDS else acc_type(desc.element)


def total_dtypes(desc) -> tuple[torch.dtype, torch.dtype]:
    """dtypes of the (u, v) chunk totals of the kernel's kind."""
    code, acc = code_of(desc), _acc(desc)
    if code in (K.CUMMAX.value, K.CUMMIN.value):
        return acc, torch.int64
    if code in (K.CUMPROD_BWD.value, K.LOGCUMSUMEXP_BWD.value):
        return acc, acc
    if code == K.EXTREME_BWD.value:
        return torch.int32, acc
    return acc, torch.int32


def lines_and_extent(desc) -> tuple[int, int, int]:
    """(all lines, the scan extent, the lines after the axis: the inner run of a contiguous
    tensor)."""
    shape, axis = desc.input_shape, desc.axis
    lines = math.prod(d for i, d in enumerate(shape) if i != axis)
    return lines, shape[axis], math.prod(shape[axis + 1:])


def launch_config(desc) -> dict:
    """LINES, BLOCK and the chunking of a descriptor (its layout decides only the addressing):
    a scan along the innermost axis takes whole lines per tile, one along an outer axis a run
    of COLUMN_LINES neighbouring lines."""
    lines, n, inner = lines_and_extent(desc)
    elems = TILE_ELEMS // (2 if desc.element.itemsize == 8 or _acc(desc).itemsize == 8 else 1)
    if inner > 1:
        per_tile = min(next_pow2(inner), COLUMN_LINES)
        block = max(1, min(next_pow2(n), elems // per_tile))
    else:
        block = min(next_pow2(n), elems)
        per_tile = max(1, min(next_pow2(lines), elems // block))
    programs = cdiv(lines, per_tile)
    chunks = 1
    want = PROGRAMS_PER_SM * sm_count()
    if programs < want and n >= 2 * MIN_CHUNK_BLOCKS * block:
        chunks = min(cdiv(want, max(programs, 1)), n // (MIN_CHUNK_BLOCKS * block))
    chunk_len = cdiv(cdiv(n, chunks), block) * block if n else block
    chunks = cdiv(n, chunk_len) if n else 1
    return {"LINES": per_tile, "BLOCK": block, "chunks": chunks, "chunk_len": chunk_len,
            "TOTALS": min(next_pow2(chunks), MAX_TOTALS_BLOCK), "num_warps": WARPS}


def _section(nbytes: int) -> int:
    return cdiv(nbytes, 16) * 16


def workspace_bytes(desc) -> int:
    cfg = launch_config(desc)
    if cfg["chunks"] <= 1 or desc.kind in CARRYLESS:
        return 0
    lines = lines_and_extent(desc)[0]
    d0, d1 = total_dtypes(desc)
    n = lines * cfg["chunks"]
    return _section(n * d0.itemsize) + _section(n * d1.itemsize)


def _inner_first(view: AxisView, strides_of_first: tuple[int, ...]) -> tuple[AxisView, int]:
    """The collapsed non-scanned dim with the smallest stride in the first tensor becomes the
    kernel's inner line dim (neighbouring lines: coalesced column scans); the others stay
    outer. Returns the outer view and the inner dim's index."""
    dims = list(range(len(view.outer_shape)))
    inner = min(dims, key=lambda i: (strides_of_first[i], -i))
    rest = [i for i in dims if i != inner]
    if rest:
        shape = tuple(view.outer_shape[i] for i in rest)
        strides = tuple(tuple(st[i] for i in rest) for st in view.outer_strides)
    else:
        shape, strides = (1,), tuple((0,) for _ in view.outer_strides)
    return AxisView(shape, strides, view.extent, view.axis_strides), inner


#: (desc, strides) -> launches
_STEPS = RecipeCache()


def _steps(desc, tensors):
    """[(views or None, grid, int args, lines per tile)] of one call over `tensors` (in0, in1,
    in2, out0, out1)."""
    cfg = launch_config(desc)
    view = axis_view(desc.input_shape, tensors, desc.axis)
    outer, inner = _inner_first(view, view.outer_strides[0])
    n_lines = view.outer_shape[inner]
    # (a layout whose inner run is shorter than the descriptor's tile takes a narrower one)
    lines_per_tile = min(cfg["LINES"], next_pow2(n_lines))
    inner_strides = [st[inner] for st in view.outer_strides]
    single = True
    out = []
    for group, shape, strides in outer_launch_groups(outer, tensors, pad_last=True):
        single = single and group is tensors
        n_rows = math.prod(shape)
        stride_args = []
        for k, st in enumerate(strides):
            stride_args += [*st, inner_strides[k], view.axis_strides[k]]
        grid = (n_rows * cdiv(n_lines, lines_per_tile) * cfg["chunks"],)
        ints = (n_lines, view.extent, cfg["chunks"], cfg["chunk_len"], *shape[1:],
                *stride_args)
        out.append((None if group is tensors else group, grid, ints, lines_per_tile))
    return out, single


def _cacheable(desc, tensors):
    steps, single = _steps(desc, tensors)
    return steps if single else None


def launch(desc, tensors: list[torch.Tensor], workspace: torch.Tensor | None) -> None:
    """Run the scan kernel (one or two passes) over in0, in1, in2, out0, out1."""
    key = (desc, *(t.stride() for t in tensors))
    steps = _STEPS.get(key, lambda: _cacheable(desc, tensors))
    if steps is None:
        steps, _ = _steps(desc, tensors)
    cfg = launch_config(desc)
    d0, d1 = total_dtypes(desc)
    if cfg["chunks"] > 1 and desc.kind not in CARRYLESS:
        n = lines_and_extent(desc)[0] * cfg["chunks"]
        split = _section(n * d0.itemsize)
        tot0 = workspace[:n * d0.itemsize].view(d0)
        tot1 = workspace[split:split + n * d1.itemsize].view(d1)
        phases = (1, 0)
    else:
        tot0 = tot1 = tensors[3]  # never dereferenced by one-chunk launches
        phases = (0,)
    const = dict(KIND=code_of(desc), ACC=_acc_tl(desc), INT=desc.element in INTEGER_KINDS,
                 REVERSE=walk_reversed(desc), BLOCK=cfg["BLOCK"], TOTALS=cfg["TOTALS"],
                 num_warps=cfg["num_warps"])
    for views, grid, ints, lines_per_tile in steps:
        ptrs = tensors if views is None else views
        for phase in phases:
            K.scan_kernel[grid](*ptrs, tot0, tot1, *ints, PHASE=phase, LINES=lines_per_tile,
                                **const)


def _guarantee(desc) -> PrecisionGuarantee:
    if desc.element in INTEGER_KINDS:
        return PrecisionGuarantee(MathPrecision.EXACT, ElementKind.I64)
    return PrecisionGuarantee.for_element(desc.element)


@register_candidate(ScanPlan)
class TritonScanForward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_blocked_scan"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return _guarantee(desc)

    def workspace_size(self, desc) -> int:
        return workspace_bytes(desc)

    def launch(self, desc, args, workspace) -> None:
        extra = args.indices if args.indices is not None else args.y
        spacing = args.spacing if args.spacing is not None else args.x
        launch(desc, [args.x, spacing, args.x, args.y, extra], workspace)


@register_candidate(ScanBackwardPlan)
class TritonScanBackward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_blocked_scan_backward"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return _guarantee(desc)

    def workspace_size(self, desc) -> int:
        return workspace_bytes(desc)

    def launch(self, desc, args, workspace) -> None:
        # in1: x (cumprod, logcumsumexp) or the spacings; in2: y, the indices, or the values
        # a spacings' gradient reads
        first = next(t for t in (args.spacing, args.x, args.dy) if t is not None)
        second = next(t for t in (args.y, args.indices, args.x, args.dy) if t is not None)
        launch(desc, [args.dy, first, second, args.dx, args.dx], workspace)
