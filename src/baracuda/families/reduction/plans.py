"""ReductionPlan / ReductionBackwardPlan and their Triton candidates.

**Formulas**: sum, mean = sum / N, prod, nansum / nanmean (NaN skipped), amax / amin (NaN
propagates), max / min over one axis (values and the first extreme index; a NaN's index when
the line holds NaN), argmax / argmin, all / any, count_nonzero, var = M2 / max(N - correction,
0) (Welford per lane, Chan's merge), std = sqrt(var), var_mean / std_mean, logsumexp = m +
log(sum(exp(x - m))) (m the line's max; +-inf lines give m), aminmax. Gradients as torch:
sum / mean broadcast; nansum / nanmean zero at NaNs; prod exact with one or more zeros;
amax / amin split dy evenly among ties (a NaN line's gradient is NaN); max() / min() without a
dim split it among the maximal elements, NaN ones included; max / min (dim) route dy to the
index; var / std with correction (std's is 0 where std is 0); logsumexp dy exp(x - y);
aminmax both halves. The vector norm of any order p ((sum |x|^p)^(1/p); 0 counts nonzeros,
+-inf the largest / smallest |x|) with torch's linalg_vector_norm_backward; logmeanexp =
logsumexp - log N; ptp = max - min (dy to the max ties, -dy to the min ties); xor / and / or
of integers and hash_tensor's xor of 64-bit patterns (no gradient). A mask operand
(torch.masked) replaces masked-out elements by the identity, or leaves them out of mean /
var / std's count; their gradient is zero.

**Dtypes / shape**: input f32 f16 bf16 f64 and integers / bool as torch allows per kind
(`descriptors.ELEMENTS`); sum / prod of integers in int64; f16 / bf16 accumulate in f32, f64 in
f64. Rank 0..8, any set of axes, any non-negative strides (dims merged on the host; reduced
dims that stay more than four apart after merging are refused).

**Workspace**: lines split over several programs keep each chunk's state (two accumulators
and one int64 per line and chunk); gradients that read a line statistic keep one accumulator
and two int64 per line and chunk.

**Precision**: deterministic and bit-stable on the same hardware: each lane reduces its
elements in order, lanes merge in a fixed tree, chunks in chunk order; no atomics. The chunk
count follows from the shape and the GPU's SM count only.
"""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.triton_support import (
    INTERPRET,
    acc_type,
    next_pow2,
    sm_count,
    split_f64,
)
from ...core import validate as V
from ...core.errors import Unsupported
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from . import kernels as KN
from . import kernels_backward as KB
from .descriptors import (
    MASK_EXCLUDES,
    RETURNS_INDEX,
    ReductionArgs,
    ReductionBackwardArgs,
    ReductionBackwardDescriptor,
    ReductionDescriptor,
)
from .descriptors import ReductionKind as K
from .layout import MAX_DIMS, launches, merged_dims

#: kind -> (state OP, input transform PRE, output POST) of reduce_kernel
FORWARD_CODES = {
    K.SUM: (KN.OP_SUM, KN.PRE_NONE, KN.POST_VALUE),
    K.MEAN: (KN.OP_SUM, KN.PRE_NONE, KN.POST_MEAN),
    K.NANSUM: (KN.OP_SUM, KN.PRE_SKIP_NAN, KN.POST_VALUE),
    K.NANMEAN: (KN.OP_SUM, KN.PRE_SKIP_NAN, KN.POST_NANMEAN),
    K.COUNT_NONZERO: (KN.OP_SUM, KN.PRE_NONZERO, KN.POST_VALUE),
    K.ALL: (KN.OP_SUM, KN.PRE_ZERO, KN.POST_ALL),
    K.ANY: (KN.OP_SUM, KN.PRE_NONZERO, KN.POST_ANY),
    K.PROD: (KN.OP_PROD, KN.PRE_NONE, KN.POST_VALUE),
    K.AMAX: (KN.OP_MAX, KN.PRE_NONE, KN.POST_VALUE),
    K.MAX_ALL: (KN.OP_MAX, KN.PRE_NONE, KN.POST_VALUE),
    K.AMIN: (KN.OP_MIN, KN.PRE_NONE, KN.POST_VALUE),
    K.MIN_ALL: (KN.OP_MIN, KN.PRE_NONE, KN.POST_VALUE),
    K.MAX: (KN.OP_MAX, KN.PRE_NONE, KN.POST_VALUE_INDEX),
    K.MIN: (KN.OP_MIN, KN.PRE_NONE, KN.POST_VALUE_INDEX),
    K.ARGMAX: (KN.OP_MAX, KN.PRE_NONE, KN.POST_INDEX),
    K.ARGMIN: (KN.OP_MIN, KN.PRE_NONE, KN.POST_INDEX),
    K.VAR: (KN.OP_VAR, KN.PRE_NONE, KN.POST_VAR),
    K.STD: (KN.OP_VAR, KN.PRE_NONE, KN.POST_STD),
    K.VAR_MEAN: (KN.OP_VAR, KN.PRE_NONE, KN.POST_VAR_MEAN),
    K.STD_MEAN: (KN.OP_VAR, KN.PRE_NONE, KN.POST_STD_MEAN),
    K.LOGSUMEXP: (KN.OP_LSE, KN.PRE_NONE, KN.POST_LSE),
    K.AMINMAX: (KN.OP_MINMAX, KN.PRE_NONE, KN.POST_MINMAX),
    K.LOGMEANEXP: (KN.OP_LSE, KN.PRE_NONE, KN.POST_LME),
    K.PTP: (KN.OP_MINMAX, KN.PRE_NONE, KN.POST_PTP),
    K.XOR: (KN.OP_XOR, KN.PRE_NONE, KN.POST_VALUE),
    K.AND: (KN.OP_AND, KN.PRE_NONE, KN.POST_VALUE),
    K.OR: (KN.OP_OR, KN.PRE_NONE, KN.POST_VALUE),
    K.HASH: (KN.OP_XOR, KN.PRE_BITS, KN.POST_VALUE),
    # order 2 (the default); forward_codes picks the norm's codes by its order
    K.NORM: (KN.OP_SUM, KN.PRE_SQUARE, KN.POST_SQRT),
}
#: kind -> reduce_bwd_kernel's formula
BACKWARD_CODES = {
    K.SUM: KB.BK_SUM, K.MEAN: KB.BK_MEAN, K.NANSUM: KB.BK_NANSUM, K.NANMEAN: KB.BK_NANMEAN,
    K.PROD: KB.BK_PROD, K.AMAX: KB.BK_TIES, K.AMIN: KB.BK_TIES, K.MAX_ALL: KB.BK_EVEN,
    K.MIN_ALL: KB.BK_EVEN, K.MAX: KB.BK_INDEX, K.MIN: KB.BK_INDEX, K.VAR: KB.BK_VAR,
    K.STD: KB.BK_STD, K.VAR_MEAN: KB.BK_VAR_MEAN, K.STD_MEAN: KB.BK_STD_MEAN,
    K.LOGSUMEXP: KB.BK_LSE, K.AMINMAX: KB.BK_MINMAX, K.LOGMEANEXP: KB.BK_LME,
    K.PTP: KB.BK_PTP, K.NORM: KB.BK_NORM2,
}


def forward_codes(desc) -> tuple[int, int, int]:
    """(OP, PRE, POST) of a descriptor: the kind's, the norm's by its order, a masked mean's
    divided by its count of kept elements."""
    if desc.kind is K.NORM:
        p = desc.order
        if p == 0:
            return KN.OP_SUM, KN.PRE_NONZERO, KN.POST_VALUE
        if p == 1:
            return KN.OP_SUM, KN.PRE_ABS, KN.POST_VALUE
        if p == 2:
            return KN.OP_SUM, KN.PRE_SQUARE, KN.POST_SQRT
        if p == float("inf"):
            return KN.OP_MAX, KN.PRE_ABS, KN.POST_VALUE
        if p == -float("inf"):
            return KN.OP_MIN, KN.PRE_ABS, KN.POST_VALUE
        return KN.OP_SUM, KN.PRE_POW, KN.POST_ROOT
    if desc.kind is K.MEAN and desc.masked:
        return KN.OP_SUM, KN.PRE_NONE, KN.POST_NANMEAN
    return FORWARD_CODES[desc.kind]


def backward_code(desc) -> int:
    """reduce_bwd_kernel's formula for a descriptor (the norm's by its order)."""
    if desc.kind is not K.NORM:
        return BACKWARD_CODES[desc.kind]
    p = desc.order
    if p == 0:
        return KB.BK_ZERO
    if p == 1:
        return KB.BK_SGN
    if p == 2:
        return KB.BK_NORM2
    if p in (float("inf"), -float("inf")):
        return KB.BK_NORM_INF
    return KB.BK_NORM_LT1 if p < 1 else KB.BK_NORM_LT2 if p < 2 else KB.BK_NORM_GE2


def backward_stats(desc) -> bool:
    """The gradient reads a line statistic first (a masked mean: its count of kept ones)."""
    return (backward_code(desc) in KB.NEEDS_STATS
            or (desc.masked and desc.kind in MASK_EXCLUDES))


def mask_codes(desc, acc: torch.dtype) -> dict:
    """MASK and IDENT: what a masked-out element reads as (torch.masked's identities, in the
    input's range: an int8 amax of a fully masked line is -128)."""
    if not desc.masked:
        return dict(MASK=KN.MASK_NONE, IDENT=0)
    if desc.kind in MASK_EXCLUDES:
        return dict(MASK=KN.MASK_EXCLUDE, IDENT=0)
    dt = desc.element.torch_dtype
    if dt.is_floating_point:
        lo, hi = -float("inf"), float("inf")
    elif dt == torch.bool:
        lo, hi = 0, 1
    else:
        lo, hi = torch.iinfo(dt).min, torch.iinfo(dt).max
    ident = {K.SUM: 0, K.PROD: 1, K.AMAX: lo, K.ARGMAX: lo, K.AMIN: hi, K.ARGMIN: hi,
             K.LOGSUMEXP: lo,
             K.NORM: float("inf") if desc.order == -float("inf") else 0}[desc.kind]
    if acc.is_floating_point:
        ident = float(ident)
    return dict(MASK=KN.MASK_SUBSTITUTE, IDENT=ident)

#: elements per program tile (BLOCK_K x BLOCK_R); long lines that fill the GPU alone, and
#: column tiles, take half (measured on H200: 4 warps of 2048 elements keep more programs per
#: SM in flight than 8 of 4096, 1.05-1.15x on such rows and columns, while split lines run
#: best at 4096); TILE_WARPS the most warps a tile gets
TILE_ELEMS = 4096
TILE_WARPS = 8
#: a column reduction's kept lines per program (coalesced along them)
COLUMN_BLOCK_K = 128
#: lines are split over programs when their tiles alone give fewer than WARPS_PER_SM / warps
#: programs per SM, each program keeping at least this many elements (the interpreter's small
#: test shapes reach the split path too), at most MAX_SPLIT chunks a line
MIN_PROGRAM_ELEMS = 4096 if INTERPRET else 65536
#: warps per SM a split aims for (enough bytes in flight to cover the memory latency)
WARPS_PER_SM = 32
MAX_SPLIT = 1024
#: a single line (a full reduction) splits finer: shorter chunks read faster (H200, 2**28
#: elements: bf16 sum 2016 -> 2490 GB/s, amax 2016 -> 2250, f32 sum 3693 -> 3840, going from
#: 528 to 4096 chunks; every 4096-element tile of a row reduction, one trip each, reads at
#: ~4080: the chunk loop's trips are the cost)
FULL_WARPS_PER_SM = 256
FULL_MAX_SPLIT = 4096
#: elements of the chunk combine's tile (lines x chunks)
COMBINE_ELEMS = 2048


def combine_block(K_lines: int, n_split: int) -> int:
    """Lines per program of the chunk combine (all of a line's chunks in one tile)."""
    return max(1, min(next_pow2(max(K_lines, 1)), COMBINE_ELEMS // next_pow2(n_split)))


def accumulator(kind: K, element: ElementKind, out_element: ElementKind) -> torch.dtype:
    """The torch dtype states are kept in: f64 for f64, f32 for other floats, int64 for
    integer sums, products, extremes and every count."""
    if kind in (K.ALL, K.ANY, K.COUNT_NONZERO, K.XOR, K.AND, K.OR, K.HASH):
        return torch.int64
    if kind in (K.SUM, K.PROD, K.NANSUM, K.MEAN, K.LOGSUMEXP, K.LOGMEANEXP):
        basis = out_element
    else:
        basis = element
    if not basis.is_float:
        return torch.int64
    if ElementKind.F64 in (element, out_element) and kind not in (K.SUM, K.PROD, K.NANSUM):
        return torch.float64
    return torch.float64 if basis is ElementKind.F64 else torch.float32


def _acc_kind(dtype: torch.dtype) -> ElementKind:
    return ElementKind.of(dtype)


def state_type(acc: torch.dtype):
    """The kernels' `tl` type of an accumulator: int64 states stay int64 (integer sums,
    extremes and bitwise reductions are exact), floats as `acc_type`."""
    return tl.int64 if acc == torch.int64 else acc_type(_acc_kind(acc))


def split_count(K_lines: int, R: int, block_k: int, block_r: int) -> int:
    """Chunks per line (1: one program per tile of lines) for a tile of block_k lines."""
    min_chunk = max(block_r, MIN_PROGRAM_ELEMS // block_k)
    if K_lines == 0 or R <= min_chunk:
        return 1
    tiles = cdiv(K_lines, block_k)
    full = K_lines == 1
    per_sm, most = (FULL_WARPS_PER_SM, FULL_MAX_SPLIT) if full else (WARPS_PER_SM, MAX_SPLIT)
    target = per_sm // tile_warps(block_k, block_r) * sm_count()
    if tiles >= target:
        return 1
    return max(1, min(cdiv(target, tiles), cdiv(R, min_chunk), most))


def max_split_count(K_lines: int, R: int) -> int:
    """The most chunks any layout's tile gives (the tile follows from the strides, the
    workspace from the descriptor): more lines per tile only split further."""
    return max(split_count(K_lines, R, 1 << i, 1) for i in range(COLUMN_BLOCK_K.bit_length()))


def tile_config(K_lines: int, R: int, row: bool, column: bool,
                wide: bool = False) -> tuple[int, int]:
    """(BLOCK_K, BLOCK_R): long tiles along a contiguous reduced axis (row), wide ones along a
    contiguous kept axis (column), square-ish otherwise; half the tile for 8-byte states
    (`wide`: f64 holds two registers per value)."""
    elems = TILE_ELEMS // 2 if wide else TILE_ELEMS
    kp, rp = next_pow2(max(K_lines, 1)), next_pow2(max(R, 1))
    if row or not column:
        block_r = min(rp, elems if row else 256)
        block_k = max(1, min(kp, elems // block_r))
        if row and block_k == 1 and block_r > 1024 and K_lines >= WARPS_PER_SM // 4 * sm_count():
            # one long line per program and lines enough to fill the GPU: half a line per
            # step, 4 warps (short lines keep several per 4096-element tile, as softmax's)
            block_r //= 2
        return block_k, block_r
    block_k = min(kp, COLUMN_BLOCK_K)
    return block_k, max(1, min(rp, elems // 2 // block_k))


def tile_warps(block_k: int, block_r: int) -> int:
    """Warps of a tile: one per 512 elements, 4 to TILE_WARPS (16 f32 values a thread)."""
    return max(4, min(TILE_WARPS, block_k * block_r // 512))


def _extent(desc) -> tuple[int, int]:
    """(kept lines, reduced elements) of a descriptor."""
    out = 1
    for d in desc.output_shape:
        out *= d
    return out, desc.reduced_extent


def _region(workspace, offset: int, dtype: torch.dtype, count: int) -> torch.Tensor:
    return workspace[offset:offset + count * dtype.itemsize].view(dtype)


def _align(n: int) -> int:
    return (n + 15) // 16 * 16


def forward_workspace(desc) -> int:
    K_lines, R = _extent(desc)
    n_split = max_split_count(K_lines, R)
    if n_split <= 1:
        return 0
    acc = accumulator(desc.kind, desc.element, desc.out_element)
    return _align(2 * n_split * K_lines * acc.itemsize) + n_split * K_lines * 8


def backward_workspace(desc) -> int:
    if not backward_stats(desc):
        return 0
    K_lines, R = _extent(desc)
    if K_lines == 0:
        return 0
    n_split = max_split_count(K_lines, R)
    acc = accumulator(desc.kind, desc.element, desc.out_element)
    return _align(n_split * K_lines * acc.itemsize) + 2 * n_split * K_lines * 8


def _u8(t: torch.Tensor | None) -> torch.Tensor | None:
    """Bool tensors travel as uint8 (same bytes): the kernels never see 1-bit pointers."""
    return t.view(torch.uint8) if t is not None and t.dtype == torch.bool else t


def _common(desc, acc: torch.dtype, launch) -> tuple[dict, int, int, int]:
    """Tile constexprs, the chunk length and the chunk count of one launch."""
    row = launch.reduced_strides[0][-1] == 1 and launch.R > 1
    column = launch.kept_strides[0][-1] == 1 and launch.K > 1
    block_k, block_r = tile_config(launch.K, launch.R, row, column,
                                   wide=acc.is_floating_point and acc.itemsize == 8)
    # the descriptor's lines (not this launch's share) keep the workspace bound valid
    split = split_count(_extent(desc)[0], launch.R, block_k, block_r)
    chunk = cdiv(cdiv(max(launch.R, 1), split), block_r) * block_r
    n_split = cdiv(max(launch.R, 1), chunk)
    const = dict(ACC=state_type(acc), BLOCK_K=block_k, BLOCK_R=block_r,
                 K_DIMS=launch.k_dims, R_DIMS=launch.r_dims,
                 num_warps=tile_warps(block_k, block_r))
    return const, chunk, n_split, block_k


def _flat(strides) -> list[int]:
    return [s for st in strides for s in st]


def _check_layout(who: str, desc, tensor: torch.Tensor, name: str,
                  mask: torch.Tensor | None = None) -> None:
    V.check_nonnegative_strides(who, name, tensor)
    ordered = desc.kind in RETURNS_INDEX
    if mask is not None:
        V.check_nonnegative_strides(who, "mask", mask)
    if tensor.dim():
        others = [mask.stride()] if mask is not None else []
        _, r_dims = merged_dims(tensor.shape, desc.axes, tensor.stride(), ordered, others)
        if r_dims > MAX_DIMS:
            raise Unsupported(f"{who}: {name}'s reduced axes {desc.axes} stay {r_dims} dims "
                              f"apart after merging (strides {tensor.stride()}); expected at "
                              f"most {MAX_DIMS}: pass a tensor whose reduced axes merge")


@register_plan
class ReductionPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.REDUCTION
    descriptor_type = ReductionDescriptor
    args_type = ReductionArgs
    partner = "ReductionBackwardPlan"


@register_plan
class ReductionBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.REDUCTION
    descriptor_type = ReductionBackwardDescriptor
    args_type = ReductionBackwardArgs
    partner = "ReductionPlan"
    is_backward = True


def _bounds(acc: torch.dtype) -> tuple:
    if acc.is_floating_point:
        return -float("inf"), float("inf")
    return -(2**63), 2**63 - 1


@register_candidate(ReductionPlan)
class TritonReduction(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_reduction"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        acc = accumulator(desc.kind, desc.element, desc.out_element)
        return PrecisionGuarantee.for_element(_acc_kind(acc))

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        _check_layout(who, desc, args.x, "x", args.mask)
        for name in ("y", "y2"):
            if getattr(args, name) is not None:
                V.check_nonnegative_strides(who, name, getattr(args, name))

    def workspace_size(self, desc) -> int:
        return forward_workspace(desc)

    def launch(self, desc, args, workspace) -> None:
        acc = accumulator(desc.kind, desc.element, desc.out_element)
        op, pre, post = forward_codes(desc)
        lowest, highest = _bounds(acc)
        corr = split_f64(desc.order if desc.kind is K.NORM else desc.correction)
        y = _u8(args.y)
        y2 = _u8(args.y2) if args.y2 is not None else y
        masks = mask_codes(desc, acc)
        kinds = dict(OP=op, PRE=pre, POST=post, INDEX=desc.kind in RETURNS_INDEX,
                     IS_FLOAT=acc.is_floating_point, LOWEST=lowest, HIGHEST=highest)
        count = masks["MASK"] == KN.MASK_EXCLUDE and op == KN.OP_SUM
        x_in = _u8(args.x)
        m_in = _u8(args.mask) if args.mask is not None else x_in  # (never read unmasked)
        steps = launches(desc.input_shape, desc.axes, desc.keepdim, [x_in, m_in], [y, y2],
                         ordered=desc.kind in RETURNS_INDEX)
        for step in steps:
            const, chunk, n_split, block_k = _common(desc, acc, step)
            (x, m), (yv, y2v) = step.full, step.kept
            if n_split > 1:
                wsf = _region(workspace, 0, acc, 2 * n_split * step.K)
                wsi = _region(workspace, _align(2 * n_split * step.K * acc.itemsize),
                              torch.int64, n_split * step.K)
            else:
                wsf = wsi = x  # never dereferenced
            ks = step.kept_shape[1:]
            grid = (cdiv(step.K, block_k), n_split)
            KN.reduce_kernel[grid](
                x, m, yv, y2v, wsf, wsi, step.K, step.R, chunk, n_split, *ks,
                *_flat(step.kept_strides), *step.reduced_shape[1:],
                *_flat(step.reduced_strides), *corr, PARTIAL=n_split > 1, COUNT=count,
                **masks, **kinds, **const)
            if n_split > 1:
                lines = combine_block(step.K, n_split)
                KN.reduce_combine_kernel[(cdiv(step.K, lines),)](
                    wsf, wsi, yv, y2v, step.K, step.R, n_split, *ks,
                    *_flat(step.kept_strides[2:]), *corr, OP=op, POST=post,
                    INDEX=kinds["INDEX"], ACC=const["ACC"], IS_FLOAT=kinds["IS_FLOAT"],
                    LOWEST=lowest, HIGHEST=highest, BLOCK_K=lines,
                    SPLIT_P=next_pow2(n_split), K_DIMS=const["K_DIMS"], num_warps=4)


@register_candidate(ReductionBackwardPlan)
class TritonReductionBackward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_reduction_backward"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        _check_layout(who, desc, args.dx, "dx", args.mask)
        if args.x is not None:
            _check_layout(who, desc, args.x, "x", args.mask)
        for name in ("dy", "dy2", "y", "y2"):
            if getattr(args, name) is not None:
                V.check_nonnegative_strides(who, name, getattr(args, name))

    def workspace_size(self, desc) -> int:
        return backward_workspace(desc)

    def launch(self, desc, args, workspace) -> None:
        kind = backward_code(desc)
        acc = accumulator(desc.kind, desc.element, desc.out_element)
        stats = backward_stats(desc)
        x = args.x if args.x is not None else args.dx
        m = _u8(args.mask) if args.mask is not None else x  # (never read unmasked)
        per_line = [args.dy, args.dy2, args.y, args.y2]
        per_line = [t if t is not None else args.dy for t in per_line]
        steps = launches(desc.input_shape, desc.axes, desc.keepdim, [x, args.dx, m], per_line,
                         ordered=desc.kind in RETURNS_INDEX)
        flags = dict(KIND=kind, HAS_X=args.x is not None, HAS_Y=args.y is not None,
                     HAS_Y2=args.y2 is not None, HAS_G2=args.dy2 is not None, STATS=stats,
                     **mask_codes(desc, acc))
        corr = split_f64(desc.order if desc.kind is K.NORM else desc.correction)
        for step in steps:
            const, chunk, n_split, block_k = _common(desc, acc, step)
            xs, dxs, ms = step.full
            if stats:
                wsf = _region(workspace, 0, acc, n_split * step.K)
                wsi = _region(workspace, _align(n_split * step.K * acc.itemsize), torch.int64,
                              2 * n_split * step.K)
            else:
                wsf = wsi = dxs  # never dereferenced
            k_strides = [*step.kept_strides[3:], *step.kept_strides[:3]]
            ints = (step.K, step.R, chunk, n_split, *step.kept_shape[1:], *_flat(k_strides),
                    *step.reduced_shape[1:], *_flat(step.reduced_strides), *corr)
            grid = (cdiv(step.K, block_k), n_split)
            modes = (KB.MODE_STATS, KB.MODE_APPLY) if stats else (KB.MODE_APPLY,)
            for mode in modes:
                KB.reduce_bwd_kernel[grid](*step.kept, xs, dxs, ms, wsf, wsi, *ints, MODE=mode,
                                           SPLIT_P=next_pow2(n_split), **flags, **const)
