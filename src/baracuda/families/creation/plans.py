"""FillPlan, RangePlan, BandPlan and TriIndicesPlan, each with one Triton candidate.

**Formulas**: fill y = value (a Python scalar, or a 0-d tensor read on the device);
arange y_i = start + step i; linspace y_i = start + step i for i < n // 2 and
end - step (n - 1 - i) from there (step = (end - start) / (n - 1)), as torch's CUDA kernel,
so both endpoints are exact; logspace base ** (the linspace value); band (eye, tri)
y[r, c] = (lower <= c - r <= upper); tril / triu_indices the (row, col) pairs of the triangle
in row-major order, each computed in closed form from its position.

**Dtypes / shape**: fill and band: every ElementKind, any rank (fill) and any non-negative
strides; ranges: every kind but bool, floats computed in f32 (f16, bf16, f32: the endpoints
rounded to the dtype first, as torch) or f64, integer arange in int64 and integer linspace /
logspace in f64 (torch's CPU arithmetic), then converted to the dtype; indices: int32 or int64.

**Workspace**: none.

**Precision**: exact for fill, band, indices and integer arange; ranges as the formulas in the
compute type (a float arange or linspace matches torch's CUDA kernel's formula; logspace's
pow is exact for integral exponents and exp2(x log2 base) otherwise). Deterministic: every
element comes from its own index.
"""

from __future__ import annotations

import itertools
import math
import struct

import numpy as np
import torch

from ...backends.triton_support import RecipeCache, next_pow2, shifted_view
from ...core.layout import collapse_dims
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels as K
from .descriptors import (
    INT_VIEW,
    INTEGER_KINDS,
    BandArgs,
    BandDescriptor,
    FillArgs,
    FillDescriptor,
    RangeArgs,
    RangeDescriptor,
    RangeKind,
    TriangleKind,
    TriIndicesArgs,
    TriIndicesDescriptor,
    triangle_parts,
)


@register_plan
class FillPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = FillDescriptor
    args_type = FillArgs


@register_plan
class RangePlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = RangeDescriptor
    args_type = RangeArgs


@register_plan
class BandPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = BandDescriptor
    args_type = BandArgs


@register_plan
class TriIndicesPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = TriIndicesDescriptor
    args_type = TriIndicesArgs


#: bytes one fill program stores: 32 KB is 8 16-byte stores per thread at 8 warps
FILL_BYTES = 32768
FILL_WARPS = 8
#: a range program: RANGE_STEPS blocks of RANGE_BLOCK (8192 elements; 8 per thread a step)
RANGE_BLOCK = 1024
RANGE_STEPS = 8
#: a strided fill: elements per program (64-bit index math per element costs registers)
STRIDED_FILL_BLOCK = 1024
BAND_ELEMS = 8192
BAND_MAX_COLS = 1024
INDEX_BLOCK = 512
MAX_DIMS = 4


def _exact(desc) -> PrecisionGuarantee:
    return PrecisionGuarantee(MathPrecision.EXACT, desc.element)


# -- fill -------------------------------------------------------------------------------------
def fill_block(element: ElementKind) -> int:
    return FILL_BYTES // element.itemsize


def _fill_layout(y: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """y's dims ordered by decreasing stride and collapsed: a dense tensor in any dim order
    becomes one run of stride 1 (a fill does not care which element is which)."""
    order = sorted(range(y.dim()), key=lambda d: -y.stride(d))
    shape, (strides,) = collapse_dims([y.shape[d] for d in order],
                                      [[y.stride(d) for d in order]])
    return shape, strides


_FILL_STEPS = RecipeCache()


def _fill_steps(shape, strides):
    """[(element offset, n, S1..S3, st0..st3, dense)] launches covering the layout."""
    if len(shape) == 1 and strides[0] == 1:
        return [(0, shape[0], 1, 1, 1, 0, 0, 0, 1, True)]
    lead = max(len(shape) - MAX_DIMS, 0)
    rest = [1] * (MAX_DIMS - len(shape[lead:])) + list(shape[lead:])
    rest_st = [0] * (MAX_DIMS - len(shape[lead:])) + list(strides[lead:])
    out = []
    for idx in itertools.product(*[range(d) for d in shape[:lead]]):
        off = sum(i * s for i, s in zip(idx, strides))
        out.append((off, math.prod(rest), *rest[1:], *rest_st, False))
    return out


def launch_fill(desc: FillDescriptor, y: torch.Tensor, value: torch.Tensor | None) -> None:
    if y.numel() == 0:
        return
    shape, strides = _fill_layout(y)
    steps = _FILL_STEPS.get((shape, strides), lambda: _fill_steps(shape, strides))
    from_tensor = value is not None
    if from_tensor:
        bits, target = 0, y
    else:
        bits = desc.bits
        target = y.view(INT_VIEW[desc.element.itemsize]) if y.dtype != torch.bool \
            else y.view(torch.int8)
    for off, n, s1, s2, s3, st0, st1, st2, st3, dense in steps:
        base = target if off == 0 else shifted_view(target, off)
        block = fill_block(desc.element) if dense else STRIDED_FILL_BLOCK
        K.fill_kernel[(cdiv(n, block),)](
            base, value if from_tensor else base, bits, n, s1, s2, s3, st0, st1, st2, st3,
            FROM_TENSOR=from_tensor, DENSE=dense, BLOCK=block,
            num_warps=FILL_WARPS if dense else 4)


@register_candidate(FillPlan)
class TritonFill(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_fill"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return _exact(desc)

    def launch(self, desc, args, workspace) -> None:
        launch_fill(desc, args.y, args.value)


# -- ranges -----------------------------------------------------------------------------------
def _halves(x: float) -> tuple[int, int]:
    """(high, low) 32-bit halves of a float64's bits, as signed ints."""
    (u,) = struct.unpack("<q", struct.pack("<d", float(x)))
    hi, lo = u >> 32, u & 0xFFFFFFFF
    return hi, lo - (1 << 32) if lo >= 1 << 31 else lo


def range_acc(desc: RangeDescriptor) -> torch.dtype:
    if desc.element is ElementKind.F64 or desc.element in INTEGER_KINDS:
        return torch.float64
    return torch.float32


def _as_element(value, element: ElementKind):
    """`value` converted to the element's type, as torch's `Scalar.to<scalar_t>()`."""
    if element in INTEGER_KINDS:
        return int(value)  # C++'s conversion: toward zero
    return float(torch.tensor(float(value), dtype=torch.float64).to(element.torch_dtype))


def range_params(desc: RangeDescriptor) -> dict:
    """The kernel's scalar arguments: start, end, step, base and log2(base) rounded to the
    compute type as torch rounds them, as float64 bit halves (or ints: integer arange)."""
    n, el = desc.n, desc.element
    if desc.kind is RangeKind.ARANGE and el in INTEGER_KINDS:
        return dict(a=(int(desc.start), 0), b=(0, 0), c=(int(desc.stop_or_step), 0),
                    base=(0, 0), lb=(0, 0), half=0, INT_ARANGE=True)
    acc = np.float64 if range_acc(desc) == torch.float64 else np.float32
    if desc.kind is RangeKind.ARANGE:
        a, b, c = acc(desc.start), acc(0), acc(desc.stop_or_step)
        half = 0
    else:
        a = acc(_as_element(desc.start, el))
        b = acc(_as_element(desc.stop_or_step, el))
        with np.errstate(all="ignore"):
            c = (np.float64(b) - np.float64(a)) / np.float64(n - 1) if el in INTEGER_KINDS \
                else (b - a) / acc(max(n - 1, 1))
        if half_ops(desc):  # torch's CUDA step: (end - start) / (steps - 1), each rounded
            h = el.torch_dtype
            c = acc(float((torch.tensor(float(b), dtype=h) - torch.tensor(float(a), dtype=h))
                          / torch.tensor(float(max(n - 1, 1)), dtype=h)))
        half = max(n // 2, 1)  # one step: the start, as torch
    base = float(desc.base)  # (integer results keep a fractional base, as torch's)
    with np.errstate(all="ignore"):
        lb = np.log2(np.float64(base)) if base > 0 else (-np.inf if base == 0 else np.nan)
    return dict(a=_halves(a), b=_halves(b), c=_halves(c), base=_halves(acc(base)),
                lb=_halves(acc(lb)), half=half, INT_ARANGE=False)


def half_ops(desc: RangeDescriptor) -> bool:
    """A half-precision linspace computes in its own type on CUDA (see range_kernel)."""
    return desc.kind is RangeKind.LINSPACE and desc.element in (ElementKind.F16,
                                                                ElementKind.BF16)


def range_code(desc: RangeDescriptor) -> int:
    return {RangeKind.ARANGE: K.ARANGE, RangeKind.LINSPACE: K.LINSPACE,
            RangeKind.LOGSPACE: K.LOGSPACE}[desc.kind]


def _tl(dtype: torch.dtype):
    import triton.language as tl

    return tl.float64 if dtype == torch.float64 else tl.float32


def launch_range(desc: RangeDescriptor, y: torch.Tensor) -> None:
    if desc.n == 0:
        return
    p = range_params(desc)
    K.range_kernel[(cdiv(desc.n, RANGE_BLOCK * RANGE_STEPS),)](
        y, y.stride(0), desc.n, *p["a"], *p["b"], *p["c"], *p["base"], *p["lb"], p["half"],
        KIND=range_code(desc), ACC=_tl(range_acc(desc)), INT_ARANGE=p["INT_ARANGE"],
        BLOCK=RANGE_BLOCK, STEPS=RANGE_STEPS, HALF_OPS=half_ops(desc), num_warps=4)


@register_candidate(RangePlan)
class TritonRange(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_range"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        if desc.kind is RangeKind.ARANGE and desc.element in INTEGER_KINDS:
            return _exact(desc)
        return PrecisionGuarantee.for_element(desc.element)

    def launch(self, desc, args, workspace) -> None:
        launch_range(desc, args.y)


# -- band matrices ----------------------------------------------------------------------------
def band_tile(desc: BandDescriptor) -> tuple[int, int]:
    """(BLOCK_R, BLOCK_C): up to 1024 columns, BAND_ELEMS elements per program."""
    block_c = min(next_pow2(max(desc.cols, 1)), BAND_MAX_COLS)
    block_r = min(max(BAND_ELEMS // block_c, 1), next_pow2(max(desc.rows, 1)))
    return block_r, block_c


def launch_band(desc: BandDescriptor, y: torch.Tensor) -> None:
    if desc.rows == 0 or desc.cols == 0:
        return
    block_r, block_c = band_tile(desc)
    grid = (cdiv(desc.rows, block_r) * cdiv(desc.cols, block_c),)
    # band edges past the matrix's diagonals change nothing: clamped, they stay int32
    span = (-desc.rows - 1, desc.cols + 1)
    lower = min(max(desc.lower, span[0]), span[1])
    upper = min(max(desc.upper, span[0]), span[1])
    K.band_kernel[grid](y, desc.rows, desc.cols, y.stride(0), y.stride(1), lower, upper,
                        BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)


@register_candidate(BandPlan)
class TritonBand(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_band"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return _exact(desc)

    def launch(self, desc, args, workspace) -> None:
        launch_band(desc, args.y)


# -- triangle indices -------------------------------------------------------------------------
def launch_tri_indices(desc: TriIndicesDescriptor, y: torch.Tensor) -> None:
    count = desc.count
    if count == 0:
        return
    first, trap, length, before = triangle_parts(desc.kind, desc.rows, desc.cols, desc.offset)
    K.tri_indices_kernel[(cdiv(count, INDEX_BLOCK),)](
        y, y.stride(0), y.stride(1), count, desc.cols, desc.offset, first, trap, length,
        before, TRIL=desc.kind is TriangleKind.TRIL, BLOCK=INDEX_BLOCK, num_warps=4)


@register_candidate(TriIndicesPlan)
class TritonTriIndices(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_tri_indices"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return _exact(desc)

    def launch(self, desc, args, workspace) -> None:
        launch_tri_indices(desc, args.y)
