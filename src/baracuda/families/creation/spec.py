"""Creation test cases, malformed inputs, AOT variants; the bench rows are in spec_bench.py."""

from __future__ import annotations

import torch

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, with_layout
from ...core.tolerance import Tolerance
from ...core.vocab import ElementKind
from . import kernels as K
from . import reference as ref
from . import spec_bench  # noqa: F401 - registers the bench rows
from .descriptors import (
    ALL_ELEMENTS,
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
)
from .plans import (
    BAND_MAX_COLS,
    FILL_WARPS,
    INDEX_BLOCK,
    RANGE_BLOCK,
    RANGE_STEPS,
    STRIDED_FILL_BLOCK,
    BandPlan,
    FillPlan,
    RangePlan,
    TriIndicesPlan,
    fill_block,
)

E = ElementKind
#: a prefix slice of every other dim: six dims no collapse can merge (several launches)
SIX_DIMS = ((2, 3, 4, 5, 6, 7), (slice(None), slice(0, 2), slice(None), slice(0, 3),
                                 slice(None), slice(0, 5)))


def _output(shape, dtype, device, layout):
    if layout == "six_dims":
        big = poisoned(SIX_DIMS[0], dtype, device)
        return big[SIX_DIMS[1]]
    return with_layout(poisoned(shape, dtype, device), layout)


def _six_shape():
    full, cut = SIX_DIMS
    return tuple(len(range(d)[s]) for d, s in zip(full, cut))


# (shape, layout): ragged sizes, every layout, empty, 0-d, more dims than one launch takes
FILL_SMALL = [((777,), "contiguous"), ((6, 100), "transposed"), ((5, 33), "strided"),
              ((3, 5, 7), "channels_last"), ((2, 0, 5), "contiguous"), ((), "contiguous"),
              (_six_shape(), "six_dims"), ((70000,), "contiguous")]
FILL_REAL = [((1 << 28,), "contiguous"), ((8192, 8191), "transposed"),
             ((4096, 4096), "strided")]


def _fill_value(element: ElementKind, gen: torch.Generator):
    if element is E.BOOL:
        return True
    if not element.is_float:
        return int(rand((), torch.float64, "cpu", gen, 1, 100))
    return float(rand((), torch.float64, "cpu", gen, -7, 7))


def fill_cases(scale: str):
    table = FILL_SMALL if scale == "small" else FILL_REAL
    elements = ALL_ELEMENTS if scale == "small" else (E.BF16, E.F32)
    for i, (shape, layout) in enumerate(table):
        for j in range(2):
            element = elements[(2 * i + j) % len(elements)]
            tensor_value = j == 1 and element is not E.BOOL
            yield _fill_case(shape, layout, element, tensor_value, i)


def _fill_case(shape, layout, element, tensor_value, seed):
    value = _fill_value(element, torch.Generator().manual_seed(seed))
    value_element = E.F64 if element.is_float else E.I64
    desc = FillDescriptor(shape, element, None if tensor_value else value,
                          value_element if tensor_value else None)

    def make(device, gen):
        v = torch.tensor(value, dtype=value_element.torch_dtype, device=device) \
            if tensor_value else None
        return FillArgs(y=_output(shape, element.torch_dtype, device, layout), value=v)

    def expect(args):
        return {"y": ref.fill(shape, value, element.torch_dtype)}

    name = f"fill {shape} {layout} {element.value} {'tensor' if tensor_value else 'scalar'}"
    return Case(name, desc, make, expect)


class FillSpec(PlanSpec):
    plan = FillPlan

    def cases(self, scale):
        return fill_cases(scale)

    def malformed_descriptors(self):
        yield Malformed("negative extent", lambda: FillDescriptor((4, -1), E.F32, 1.0),
                        InvalidProblem)
        yield Malformed("value not a number", lambda: FillDescriptor((4,), E.F32, "1"),
                        InvalidProblem)
        yield Malformed("tensor value without its element",
                        lambda: FillDescriptor((4,), E.F32, None), InvalidProblem)
        yield Malformed("rank 9", lambda: FillDescriptor((1,) * 9, E.F32, 0.0), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        other = torch.float64 if dt != torch.float64 else torch.float32
        wrong = tuple(s + 1 for s in d.shape)
        value = (lambda: torch.tensor(1, dtype=d.value_element.torch_dtype, device=device)) \
            if d.value is None else (lambda: None)
        yield Malformed("y wrong shape", lambda: FillArgs(
            torch.empty(wrong, dtype=dt, device=device), value()), InvalidProblem)
        yield Malformed("y wrong dtype", lambda: FillArgs(
            torch.empty(d.shape, dtype=other, device=device), value()), InvalidProblem)
        yield Malformed("not a tensor", lambda: FillArgs([1.0], value()), InvalidProblem)

    def aot_variants(self):
        for element in (E.BF16, E.F32, E.F64, E.U8):
            ity = {1: "*i8", 2: "*i16", 4: "*i32", 8: "*i64"}[element.itemsize]
            for dense in (True, False):
                yield AotVariant.auto(
                    f"fill {element.value} dense={dense}", K.fill_kernel,
                    {"y_ptr": ity, "value_ptr": ity},
                    dict(FROM_TENSOR=False, DENSE=dense,
                         BLOCK=fill_block(element) if dense else STRIDED_FILL_BLOCK),
                    scalars={"bits": "i64"} if element.itemsize == 8 else {},
                    num_warps=FILL_WARPS if dense else 4, divisible=("n",) if dense else ())
        for element, src in ((E.BF16, "*i64"), (E.F32, "*fp64"), (E.BOOL, "*fp32")):
            yield AotVariant.auto(
                f"fill {element.value} from a tensor", K.fill_kernel,
                {"y_ptr": f"*{triton_dtype(element.torch_dtype)}", "value_ptr": src},
                dict(FROM_TENSOR=True, DENSE=True, BLOCK=fill_block(element)),
                num_warps=FILL_WARPS, divisible=("n",))


# -- ranges ---------------------------------------------------------------------------------
#: (kind, n, element, start, stop_or_step, base)
RANGE_SMALL = [
    (RangeKind.ARANGE, 777, E.F32, -3.25, 0.37, 10.0),
    (RangeKind.ARANGE, 1000, E.I64, -20, 3, 10.0),
    (RangeKind.ARANGE, 100, E.I32, 50, -1, 10.0),
    (RangeKind.ARANGE, 257, E.BF16, 0.0, 0.5, 10.0),
    (RangeKind.ARANGE, 300, E.F64, 1.0e-3, 1.0e-4, 10.0),
    (RangeKind.LINSPACE, 1001, E.F32, -2.0, 3.3, 10.0),
    (RangeKind.LINSPACE, 100, E.F64, 0.1, 7.7, 10.0),
    (RangeKind.LINSPACE, 33, E.F16, -5.0, 5.0, 10.0),
    (RangeKind.LINSPACE, 77, E.I64, -10, 31, 10.0),
    (RangeKind.LINSPACE, 1, E.F32, 2.5, 9.0, 10.0),
    (RangeKind.LINSPACE, 0, E.F32, 0.0, 1.0, 10.0),
    (RangeKind.LOGSPACE, 50, E.F32, -3.0, 3.0, 10.0),
    (RangeKind.LOGSPACE, 40, E.F64, -1.5, 2.5, 2.0),
    (RangeKind.LOGSPACE, 31, E.I64, 0, 30, 2.0),
    (RangeKind.LOGSPACE, 9, E.BF16, 0.0, 2.0, 3.0),
]
RANGE_REAL = [(RangeKind.ARANGE, 1 << 28, E.F32, 0.0, 1.0, 10.0),
              (RangeKind.ARANGE, 1 << 28, E.I64, 0, 1, 10.0),
              (RangeKind.LINSPACE, 1 << 28, E.F32, -1.0, 1.0, 10.0)]


def _range_case(kind, n, element, start, stop_or_step, base, layout):
    desc = RangeDescriptor(kind, n, element, start, stop_or_step, base)

    def make(device, gen):
        return RangeArgs(y=_output((n,), element.torch_dtype, device, layout))

    def expect(args):
        return {"y": ref.range_values(kind, n, start, stop_or_step, base, element.torch_dtype)}

    tol = {}
    if kind is RangeKind.LOGSPACE and element is E.F32:
        # exp2(x log2 b) in f32: the exponent's rounding is relative to |x log2 b| (~10)
        tol = {"y": Tolerance(2e-6, 1e-5 * 16)}
    name = f"{kind.value} n={n} {element.value} {start}..{stop_or_step} {layout}"
    return Case(name, desc, make, expect, tol=tol)


class RangeSpec(PlanSpec):
    plan = RangePlan

    def cases(self, scale):
        table = RANGE_SMALL if scale == "small" else RANGE_REAL
        for i, row in enumerate(table):
            yield _range_case(*row, "strided" if i % 4 == 3 else "contiguous")

    def malformed_descriptors(self):
        yield Malformed("arange step 0",
                        lambda: RangeDescriptor(RangeKind.ARANGE, 4, E.F32, 0.0, 0), InvalidProblem)
        yield Malformed("negative length",
                        lambda: RangeDescriptor(RangeKind.LINSPACE, -1, E.F32, 0.0, 1.0),
                        InvalidProblem)
        yield Malformed("bool range",
                        lambda: RangeDescriptor(RangeKind.ARANGE, 4, E.BOOL, 0, 1), Unsupported)
        yield Malformed("bad kind", lambda: RangeDescriptor("no_such", 4, E.F32, 0.0, 1.0),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        yield Malformed("y wrong length", lambda: RangeArgs(
            torch.empty(d.n + 1, dtype=d.element.torch_dtype, device=device)), InvalidProblem)
        yield Malformed("y 2-d", lambda: RangeArgs(
            torch.empty((1, d.n), dtype=d.element.torch_dtype, device=device)), InvalidProblem)

    def aot_variants(self):
        for kind in (K.ARANGE, K.LINSPACE, K.LOGSPACE):
            for element, acc in ((E.F32, "fp32"), (E.BF16, "fp32"), (E.F64, "fp64"),
                                 (E.I64, "fp64")):
                if kind == K.ARANGE and element is E.I64:
                    continue
                yield _range_variant(kind, element, acc, False)
        yield _range_variant(K.ARANGE, E.I64, "fp64", True)
        yield _range_variant(K.ARANGE, E.I32, "fp64", True)


def _range_variant(kind, element, acc, integer):
    import triton.language as tl

    return AotVariant.auto(
        f"range {kind} {element.value} acc={acc} int={integer}", K.range_kernel,
        {"y_ptr": f"*{triton_dtype(element.torch_dtype)}"},
        dict(KIND=kind, ACC=tl.float64 if acc == "fp64" else tl.float32,
             INT_ARANGE=integer, BLOCK=RANGE_BLOCK, STEPS=RANGE_STEPS,
             HALF_OPS=kind == K.LINSPACE and element in (E.F16, E.BF16)),
        scalars={"n": "i64", "a_hi": "i64" if integer else "i32",
                 "c_hi": "i64" if integer else "i32"}, num_warps=4)


# -- band matrices ----------------------------------------------------------------------------
BAND_SMALL = [(7, 7, 0, 0, E.F32, "contiguous"), (100, 33, -100, 3, E.BF16, "transposed"),
              (33, 1500, 0, 0, E.BOOL, "contiguous"), (20, 30, -2, 5, E.I64, "strided"),
              (0, 5, 0, 0, E.F32, "contiguous"), (9, 4, -9, -2, E.F64, "contiguous")]
BAND_REAL = [(32768, 32768, 0, 0, E.F32, "contiguous"), (8192, 8192, -8192, 0, E.BF16,
                                                          "transposed")]


def _band_case(rows, cols, lower, upper, element, layout):
    desc = BandDescriptor(rows, cols, element, lower, upper)

    def make(device, gen):
        return BandArgs(y=_output((rows, cols), element.torch_dtype, device, layout))

    def expect(args):
        return {"y": ref.band(rows, cols, lower, upper, element.torch_dtype)}

    return Case(f"band {rows}x{cols} [{lower}, {upper}] {element.value} {layout}", desc, make,
                expect)


class BandSpec(PlanSpec):
    plan = BandPlan

    def cases(self, scale):
        for row in BAND_SMALL if scale == "small" else BAND_REAL:
            yield _band_case(*row)

    def malformed_descriptors(self):
        yield Malformed("negative rows", lambda: BandDescriptor(-1, 4, E.F32), InvalidProblem)
        yield Malformed("float band edge", lambda: BandDescriptor(4, 4, E.F32, 0.5, 1),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        yield Malformed("y transposed shape", lambda: BandArgs(
            torch.empty((d.cols + 1, d.rows), dtype=d.element.torch_dtype, device=device)),
            InvalidProblem)

    def aot_variants(self):
        for element in (E.F32, E.BF16, E.BOOL, E.F64):
            block_c = BAND_MAX_COLS
            yield AotVariant.auto(
                f"band {element.value}", K.band_kernel,
                {"y_ptr": f"*{triton_dtype(element.torch_dtype)}"},
                dict(BLOCK_R=8192 // block_c, BLOCK_C=block_c),
                scalars={"s1": "i32"}, num_warps=8, divisible=("cols", "s0"))


# -- triangle indices -----------------------------------------------------------------------
TRI_SMALL = [(TriangleKind.TRIL, 30, 40, 0), (TriangleKind.TRIU, 40, 30, -3),
             (TriangleKind.TRIL, 50, 7, -10), (TriangleKind.TRIU, 7, 50, 10),
             (TriangleKind.TRIL, 0, 5, 0), (TriangleKind.TRIU, 25, 25, 30),
             (TriangleKind.TRIL, 9, 9, -20), (TriangleKind.TRIU, 60, 60, 1)]
TRI_REAL = [(TriangleKind.TRIL, 16384, 16384, 0), (TriangleKind.TRIU, 20000, 15000, -7)]


def _tri_case(kind, rows, cols, offset, element):
    desc = TriIndicesDescriptor(kind, rows, cols, offset, element)

    def make(device, gen):
        return TriIndicesArgs(y=poisoned(desc.shape, element.torch_dtype, device))

    def expect(args):
        return {"y": ref.tri_indices(kind, rows, cols, offset, element.torch_dtype)}

    return Case(f"{kind.value}_indices {rows}x{cols} offset {offset} {element.value}", desc,
                make, expect)


class TriIndicesSpec(PlanSpec):
    plan = TriIndicesPlan

    def cases(self, scale):
        for i, row in enumerate(TRI_SMALL if scale == "small" else TRI_REAL):
            yield _tri_case(*row, E.I32 if i % 3 == 2 else E.I64)

    def malformed_descriptors(self):
        yield Malformed("negative rows",
                        lambda: TriIndicesDescriptor(TriangleKind.TRIL, -1, 3, 0), InvalidProblem)
        yield Malformed("float indices",
                        lambda: TriIndicesDescriptor(TriangleKind.TRIU, 3, 3, 0, E.F32),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        yield Malformed("y one row", lambda: TriIndicesArgs(
            torch.empty((1, d.count), dtype=d.element.torch_dtype, device=device)),
            InvalidProblem)

    def aot_variants(self):
        for tril in (True, False):
            for element in (E.I64, E.I32):
                yield AotVariant.auto(
                    f"{'tril' if tril else 'triu'}_indices {element.value}",
                    K.tri_indices_kernel, {"y_ptr": f"*{triton_dtype(element.torch_dtype)}"},
                    dict(TRIL=tril, BLOCK=INDEX_BLOCK), scalars={"s1": "i32"}, num_warps=4)


for _spec in (FillSpec(), RangeSpec(), BandSpec(), TriIndicesSpec()):
    register_spec(_spec)
