"""Reduction test cases, malformed inputs and AOT variants (benchmarks: spec_bench.py)."""

from __future__ import annotations

import torch

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import Tolerance, tolerance_for
from ...core.vocab import ElementKind
from . import reference as ref
from . import spec_ext
from .descriptors import (
    CORRECTED,
    DIFFERENTIABLE,
    NO_IDENTITY,
    ReductionArgs,
    ReductionBackwardArgs,
    ReductionBackwardDescriptor,
    ReductionDescriptor,
    default_out_element,
    needs_x,
    needs_y,
    needs_y2,
)
from .descriptors import ReductionKind as K
from .plans import ReductionBackwardPlan, ReductionPlan
from .spec_aot import aot_variants

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
I8, I32, I64, U8, BOOL = (ElementKind.I8, ElementKind.I32, ElementKind.I64, ElementKind.U8,
                          ElementKind.BOOL)

# (shape, axes, keepdim, layout): rows, columns, several axes, strided / transposed /
# broadcast inputs, lines split over programs, rank 0 and 8, empty reduced axes and outputs
ROW = ((5, 777), (1,), False, "contiguous")
COLUMN = ((300, 24), (0,), True, "contiguous")
MULTI = ((3, 100, 4), (0, 2), False, "strided")
TRANSPOSED = ((6, 33), (1,), False, "transposed")
SPLIT = ((2, 9000), (1,), False, "contiguous")
BROADCAST = ((7, 9), (0,), False, "broadcast")
SCALAR = ((), (0,), False, "contiguous")
RANK8 = ((2, 1, 3, 2, 2, 1, 2, 5), (1, 3, 6), True, "transposed")
FULL_T = ((4, 50), (0, 1), False, "transposed")
EMPTY_R = ((2, 0, 5), (1,), False, "contiguous")
EMPTY_OUT = ((0, 5), (1,), False, "contiguous")
FULL_SPLIT = ((3, 70, 41), (0, 1, 2), False, "channels_last")

EVERY = (ROW, COLUMN, MULTI, TRANSPOSED, SPLIT, BROADCAST, SCALAR, RANK8, FULL_T, EMPTY_R,
         EMPTY_OUT, FULL_SPLIT)

# (kinds, layouts, elements, special input); the interpreter runs every small case, so each
# layout meets each pattern of the kernels once or twice rather than every kind and dtype
FORWARD_TABLE = [
    ((K.SUM,), EVERY, (F32, BF16), None),
    ((K.SUM, K.MEAN, K.VAR, K.LOGSUMEXP), (ROW,), (F16, F64), None),
    ((K.SUM, K.PROD, K.AMAX), (ROW,), (I32, BOOL), None),
    ((K.SUM, K.AMIN), (MULTI,), (U8,), None),
    ((K.MEAN, K.NANSUM, K.NANMEAN), (ROW, MULTI, SPLIT, EMPTY_R), (F32,), "nan"),
    ((K.NANMEAN,), (ROW,), (BF16,), "nan"),
    ((K.PROD,), (ROW, SPLIT, EMPTY_R), (F32,), "near_one"),
    ((K.PROD,), (ROW,), (BF16, F64), "near_one"),
    ((K.AMAX, K.AMIN, K.MAX_ALL), (ROW, COLUMN, FULL_T), (F32, BF16), "nan"),
    ((K.AMAX, K.AMINMAX), (ROW, RANK8), (F16, I8), "ties"),
    ((K.MAX, K.MIN), (ROW, TRANSPOSED, SPLIT, SCALAR), (F32,), "nan"),
    ((K.MAX, K.ARGMIN), (COLUMN,), (BF16, I64), "ties"),
    ((K.ARGMAX, K.ARGMIN), (ROW, FULL_T, FULL_SPLIT), (F32,), "nan"),
    ((K.ALL, K.ANY, K.COUNT_NONZERO), (ROW, MULTI), (F32, BOOL), "zeros"),
    ((K.ALL, K.ANY, K.COUNT_NONZERO), (EMPTY_R,), (F32,), "zeros"),
    ((K.VAR, K.STD), (ROW, COLUMN, MULTI, SPLIT, SCALAR, EMPTY_R), (F32,), None),
    ((K.VAR, K.STD), (ROW, RANK8), (BF16,), None),
    ((K.VAR_MEAN, K.STD_MEAN), (ROW, MULTI, SPLIT), (F32,), "offset"),
    ((K.VAR_MEAN,), (ROW,), (F16,), "offset"),
    ((K.LOGSUMEXP,), (ROW, COLUMN, TRANSPOSED, SPLIT, EMPTY_R), (F32,), "inf"),
    ((K.LOGSUMEXP,), (ROW,), (BF16, I32), None),
]

BACKWARD_TABLE = [
    ((K.SUM, K.MEAN, K.LOGSUMEXP), (ROW, MULTI, TRANSPOSED, SCALAR, RANK8), (F32,), None),
    ((K.SUM, K.MEAN, K.LOGSUMEXP), (ROW,), (BF16, F64), None),
    ((K.NANSUM, K.NANMEAN), (ROW, FULL_T), (F32,), "nan"),
    ((K.NANSUM, K.NANMEAN), (ROW,), (F64,), "nan"),
    ((K.PROD,), (ROW, SPLIT), (F32,), "zeros"),
    ((K.PROD,), (ROW,), (F64,), "zeros"),
    ((K.AMAX, K.AMIN, K.MAX_ALL, K.MIN_ALL, K.AMINMAX), (ROW, FULL_T), (F32,), "ties"),
    ((K.AMAX, K.MAX_ALL), (SPLIT,), (BF16,), "ties"),
    ((K.MAX_ALL, K.AMAX), (ROW,), (F64,), "nan"),
    ((K.MAX, K.MIN), (ROW, COLUMN, TRANSPOSED), (F32,), None),
    ((K.MAX,), (ROW,), (BF16,), None),
    ((K.VAR, K.STD, K.VAR_MEAN, K.STD_MEAN), (ROW, MULTI, FULL_T), (F32,), None),
    ((K.VAR, K.STD_MEAN), (SPLIT,), (F32,), None),
    ((K.VAR, K.STD, K.VAR_MEAN, K.STD_MEAN), (ROW,), (BF16, F64), None),
]

INT_KINDS = frozenset({I8, I32, I64, U8, BOOL})


def _axes(shape, axes):
    return axes if shape else (0,)


def _input(shape, element: ElementKind, device, gen, special, layout) -> torch.Tensor:
    dt = element.torch_dtype
    if element is BOOL:
        x = torch.rand(shape, generator=gen) > 0.3
    elif element in INT_KINDS:
        lo = 0 if element is U8 else -3
        x = torch.randint(lo, 4, shape, generator=gen).to(dt)
    elif special in ("near_one", "zeros"):
        # long products that neither overflow nor underflow (a real-size line of N(0, 4)
        # values multiplies past float64's range); the zeros' lines with either sign
        x = torch.exp(randn(shape, torch.float64, "cpu", gen, std=0.02))
        if special == "zeros":
            x = torch.where(torch.rand(shape, generator=gen) < 0.5, -x, x)
    elif special == "offset":  # a mean far from zero: var's cancellation
        x = randn(shape, torch.float64, "cpu", gen) + 40.0
    else:
        x = randn(shape, torch.float64, "cpu", gen, std=2.0)
    if x.is_floating_point() and x.numel():
        if special == "nan":
            x.view(-1)[::7] = float("nan")
            x.view(-1)[:x.shape[-1] if x.dim() else 1] = float("nan")  # a NaN-only line
        elif special == "inf":
            x.view(-1)[::5] = float("inf")
            x.view(-1)[::3] = -float("inf")
        elif special == "ties":
            x = x.round()
        elif special == "zeros":
            x.view(-1)[::4] = 0.0
    if element not in INT_KINDS:
        x = x.to(dt)
    elif special == "zeros":
        x.view(-1)[::4] = 0
    return with_layout(x.to(device), layout)


def _tolerance(kind: K, element: ElementKind, out: ElementKind) -> Tolerance | None:
    if kind in (K.PROD, K.LOGSUMEXP) and out.is_float:
        # a product's rounding grows with its length (f32 accumulation of 20000 terms)
        return tolerance_for(out).scaled(8)
    return None


def _error_scale(kind: K, axes, keepdim):
    """Sums cancel: their error follows the size of the summed terms, not of the sum."""
    if kind not in (K.SUM, K.MEAN, K.NANSUM, K.NANMEAN, K.VAR, K.STD, K.VAR_MEAN, K.STD_MEAN):
        return None

    def scale(args, axes=axes):
        x = args.x.detach().cpu().double()
        if not x.numel() or not x.is_floating_point():
            return {}
        mag = x.nan_to_num(0.0).abs()
        total = mag.sum(axes if x.dim() else ()) if x.dim() else mag
        if kind in (K.SUM, K.NANSUM):
            return {"y": float(total.max()) if total.numel() else 0.0}
        n = max(1, x.numel() // max(1, total.numel()))
        mean_mag = float((total / n).max()) if total.numel() else 0.0
        if kind in (K.MEAN, K.NANMEAN):
            return {"y": mean_mag}
        return {"y2": mean_mag} if kind in (K.VAR_MEAN, K.STD_MEAN) else {}

    return scale


def forward_cases():
    for kinds, layouts, elements, special in FORWARD_TABLE:
        for kind in kinds:
            for (shape, axes, keepdim, layout) in layouts:
                for element in elements:
                    if kind in (K.MAX, K.MIN) and len(axes) > 1:
                        continue
                    if kind in NO_IDENTITY and any(shape[a] == 0 for a in axes if shape):
                        continue
                    yield _forward_case(kind, shape, axes, keepdim, layout, element, special)


def _forward_case(kind, shape, axes, keepdim, layout, element, special) -> Case:
    out = default_out_element(kind, element)
    corr = 1.0 if kind in CORRECTED else 0.0
    desc = ReductionDescriptor(kind, shape, _axes(shape, axes), keepdim, element, out, corr)
    out_shape = desc.output_shape

    def make(device, gen, d=desc):
        x = _input(shape, element, device, gen, special, layout)
        y2 = None
        if d.aux_element is not None:
            y2 = poisoned(out_shape, d.aux_element.torch_dtype, device)
        y_el = I64 if kind in (K.ARGMAX, K.ARGMIN) else out
        return ReductionArgs(x=x, y=poisoned(out_shape, y_el.torch_dtype, device), y2=y2)

    def expect(args, d=desc):
        want = ref.reduction_forward(args.x, kind, d.axes, keepdim, corr, out.torch_dtype)
        return {k: v.to(torch.float64) if v.is_floating_point() else v for k, v in want.items()}

    tol = _tolerance(kind, element, out)
    name = f"{kind.value} {shape} ax{axes} kd{int(keepdim)} {layout} {special} {element.value}"
    return Case(name, desc, make, expect, tol={"y": tol} if tol else {},
                error_scale=_error_scale(kind, desc.axes, keepdim))


def backward_cases():
    for kinds, layouts, elements, special in BACKWARD_TABLE:
        for kind in kinds:
            for (shape, axes, keepdim, layout) in layouts:
                for element in elements:
                    if kind in (K.MAX, K.MIN) and len(axes) > 1:
                        continue
                    yield _backward_case(kind, shape, axes, keepdim, layout, element, special)


def _backward_case(kind, shape, axes, keepdim, layout, element, special) -> Case:
    corr = 1.0 if kind in CORRECTED else 0.0
    desc = ReductionBackwardDescriptor(kind, shape, _axes(shape, axes), keepdim, element,
                                       element, corr)
    out_shape = desc.output_shape
    dt = element.torch_dtype

    def make(device, gen, d=desc):
        x = _input(shape, element, device, gen, special, layout)
        fw = ref.reduction_forward(x, kind, d.axes, keepdim, corr)
        dy = with_layout(randn(out_shape, dt, device, gen), "strided")
        two = kind in (K.VAR_MEAN, K.STD_MEAN, K.AMINMAX)
        y2 = fw.get("y2") if needs_y2(kind) else None
        return ReductionBackwardArgs(
            dy=dy, dx=poisoned(shape, dt, device), x=x if needs_x(kind) else None,
            y=fw["y"].to(device, dt) if needs_y(kind) else None,
            dy2=randn(out_shape, dt, device, gen) if two else None,
            y2=None if y2 is None else y2.to(device, y2.dtype if kind in (K.MAX, K.MIN)
                                              else dt))

    def expect(args, d=desc):
        x = args.x
        if x is None:
            x = torch.zeros(shape, dtype=torch.float64)
        dx = ref.reduction_backward(kind, x, args.dy, args.dy2, shape, d.axes, keepdim, corr,
                                    indices=args.y2 if kind in (K.MAX, K.MIN) else None,
                                    y=args.y if kind is K.LOGSUMEXP else None)
        return {"dx": dx}

    name = f"{kind.value}_bwd {shape} ax{axes} kd{int(keepdim)} {layout} {special} " \
           f"{element.value}"
    return Case(name, desc, make, expect)


class ReductionSpec(PlanSpec):
    plan = ReductionPlan

    def cases(self, scale):
        if scale == "small":
            yield from forward_cases()
            yield from spec_ext.forward_cases()
        else:
            yield from real_cases(backward=False)

    def malformed_descriptors(self):
        D = ReductionDescriptor
        yield Malformed("axis out of range", lambda: D(K.SUM, (4, 8), (2,), False, F32, F32),
                        InvalidProblem)
        yield Malformed("repeated axes", lambda: D(K.SUM, (4, 8), (1, 1), False, F32, F32),
                        InvalidProblem)
        yield Malformed("unsorted axes", lambda: D(K.SUM, (4, 8), (1, 0), False, F32, F32),
                        InvalidProblem)
        yield Malformed("no axes", lambda: D(K.SUM, (4, 8), (), False, F32, F32),
                        InvalidProblem)
        yield Malformed("negative extent", lambda: D(K.SUM, (4, -1), (1,), False, F32, F32),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: D(K.SUM, (1,) * 9, (0,), False, F32, F32),
                        Unsupported)
        yield Malformed("var of integers", lambda: D(K.VAR, (4, 8), (1,), False, I32, I32, 1.0),
                        Unsupported)
        yield Malformed("amax changes element", lambda: D(K.AMAX, (4, 8), (1,), False, F32,
                                                          F64), InvalidProblem)
        yield Malformed("max over two axes", lambda: D(K.MAX, (4, 8), (0, 1), False, F32, F32),
                        InvalidProblem)
        yield Malformed("amax of an empty axis", lambda: D(K.AMAX, (4, 0), (1,), False, F32,
                                                           F32), InvalidProblem)
        yield Malformed("correction on sum", lambda: D(K.SUM, (4, 8), (1,), False, F32, F32,
                                                       1.0), InvalidProblem)
        yield Malformed("infinite correction", lambda: D(K.VAR, (4, 8), (1,), False, F32, F32,
                                                         float("inf")), InvalidProblem)
        yield Malformed("bad kind", lambda: D("no_such_kind", (4, 8), (1,), False, F32, F32),
                        InvalidProblem)
        yield Malformed("order on sum", lambda: D(K.SUM, (4, 8), (1,), False, F32, F32, 0.0,
                                                  2.0), InvalidProblem)
        yield Malformed("NaN order", lambda: D(K.NORM, (4, 8), (1,), False, F32, F32, 0.0,
                                               float("nan")), InvalidProblem)
        yield Malformed("inf norm of an empty axis",
                        lambda: D(K.NORM, (4, 0), (1,), False, F32, F32, 0.0, float("inf")),
                        InvalidProblem)
        yield Malformed("norm narrows", lambda: D(K.NORM, (4, 8), (1,), False, F32, F16),
                        InvalidProblem)
        yield Malformed("mask on xor", lambda: D(K.XOR, (4, 8), (1,), False, I32, I32, 0.0,
                                                 0.0, True), InvalidProblem)
        yield Malformed("xor of floats", lambda: D(K.XOR, (4, 8), (1,), False, F32, F32),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        good = lambda: randn(d.input_shape, dt, device, torch.Generator().manual_seed(1))  # noqa: E731
        out = lambda s=d.output_shape: torch.empty(s, dtype=d.out_element.torch_dtype,  # noqa: E731
                                                   device=device)
        other = torch.float64 if dt != torch.float64 else torch.float32
        bad_shape = tuple(s + 1 for s in d.output_shape)
        yield Malformed("y wrong shape", lambda: ReductionArgs(good(), out(bad_shape)),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: ReductionArgs(good().to(other), out()),
                        InvalidProblem)
        yield Malformed("y2 given to a one-output kind",
                        lambda: ReductionArgs(good(), out(), out()), InvalidProblem)
        yield Malformed("not a tensor", lambda: ReductionArgs([1.0], out()), InvalidProblem)
        yield Malformed("y overlaps x", lambda: _into_itself(good(), d.output_shape),
                        InvalidProblem)

    def aot_variants(self):
        return aot_variants()


def _into_itself(x: torch.Tensor, out_shape) -> ReductionArgs:
    """Args whose output is a view of the input's first elements."""
    n = 1
    for e in out_shape:
        n *= e
    return ReductionArgs(x, x.reshape(-1)[:n].reshape(out_shape))


class ReductionBackwardSpec(PlanSpec):
    plan = ReductionBackwardPlan

    def cases(self, scale):
        if scale == "small":
            yield from backward_cases()
            yield from spec_ext.backward_cases()
        else:
            yield from real_cases(backward=True)

    def malformed_descriptors(self):
        D = ReductionBackwardDescriptor
        yield Malformed("argmax has no gradient",
                        lambda: D(K.ARGMAX, (4, 8), (1,), False, F32, I64), InvalidProblem)
        yield Malformed("integer gradient", lambda: D(K.SUM, (4, 8), (1,), False, I32, I64),
                        Unsupported)
        yield Malformed("axis out of range", lambda: D(K.SUM, (4, 8), (-3,), False, F32, F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(2))  # noqa: E731
        ins, outs = d.input_shape, d.output_shape
        yield Malformed("dy wrong shape",
                        lambda: ReductionBackwardArgs(dy=mk(ins + (2,)), dx=mk(ins)),
                        InvalidProblem)
        other = torch.float64 if dt != torch.float64 else torch.float32
        yield Malformed("dx wrong dtype",
                        lambda: ReductionBackwardArgs(dy=mk(outs), dx=mk(ins).to(other)),
                        InvalidProblem)
        yield Malformed("x given where the formula takes none",
                        lambda: ReductionBackwardArgs(dy=mk(outs), dx=mk(ins), x=mk(ins)),
                        InvalidProblem)


def real_cases(backward: bool):
    """GPU sizes: rows and columns of the bench shapes, full reductions of 2**24."""
    shapes = [((4096, 16384), (1,)), ((16384, 4096), (0,)), ((1 << 24,), (0,)),
              ((64, 262144), (1,)), ((512, 128, 33), (0, 2))]
    table = BACKWARD_TABLE if backward else FORWARD_TABLE
    for kinds, _, elements, special in table:
        for kind in kinds:
            for shape, axes in shapes:
                if kind in (K.MAX, K.MIN) and len(axes) > 1:
                    continue
                element = elements[0]
                if backward:
                    if kind in DIFFERENTIABLE:
                        yield _backward_case(kind, shape, axes, False, "contiguous", element,
                                             special)
                else:
                    yield _forward_case(kind, shape, axes, False, "contiguous", element,
                                        special)


register_spec(ReductionSpec())
register_spec(ReductionBackwardSpec())

from . import spec_bench  # noqa: E402,F401 - registers the bench rows
