"""Row distance (pairwise_distance, dist) and cosine similarity test cases, malformed inputs
and AOT variants."""

from __future__ import annotations

import itertools
import math

import torch

from ...backends.triton_support import acc_type
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import tolerance_for
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import (
    CosineArgs,
    CosineBackwardArgs,
    CosineBackwardDescriptor,
    CosineDescriptor,
    RowDistArgs,
    RowDistBackwardArgs,
    RowDistBackwardDescriptor,
    RowDistDescriptor,
    no_identity,
    p_kind,
)
from .kernels import M_NORM, cosine_bwd_kernel, cosine_fwd_kernel, rows_grad_kernel, rows_kernel
from .plans import (
    COMB,
    IDENT,
    CosineBackwardPlan,
    CosinePlan,
    RowDistBackwardPlan,
    RowDistPlan,
    row_config,
)
from .spec import aot_variant

F32, F64, F16, BF16 = ElementKind.F32, ElementKind.F64, ElementKind.F16, ElementKind.BF16
FLOATS = (F32, F64, F16, BF16)
INF = math.inf

# -- row distances -------------------------------------------------------------------------------

#: (rows, cols, layout of x, layout of y, special)
ROW_SMALL = [(5, 33, "contiguous", "broadcast", None), (7, 1, "strided", "contiguous", None),
             (0, 4, "contiguous", "contiguous", None), (3, 0, "contiguous", "contiguous", None),
             (2, 1500, "transposed", "strided", None), (6, 9, "contiguous", "contiguous",
                                                        "ties")]
ROW_REAL = [(65536, 1024, "contiguous", "contiguous", None),
            (4096, 4096, "strided", "broadcast", None), (1 << 20, 7, "contiguous",
                                                         "contiguous", None)]
ROW_P = (0.0, 1.0, 2.0, 3.5, 0.5, INF, -INF, -1.5)


def _row_inputs(shape, element, layouts, special, device, gen):
    dt = element.torch_dtype
    x = randn(shape, torch.float64, device, gen, std=2.0)
    y = randn(shape, torch.float64, device, gen)
    if special == "ties":  # small integers: many equal |x - y| in a row (+-inf ties)
        x, y = x.round(), y.round()
    return with_layout(x.to(dt), layouts[0]), with_layout(y.to(dt), layouts[1])


def _row_cases(scale):
    table = ROW_SMALL if scale == "small" else ROW_REAL
    ps = ROW_P if scale == "small" else (1.0, 2.0, INF)
    for i, ((rows, cols, lx, ly, special), p) in enumerate(itertools.product(table, ps)):
        element = FLOATS[i % 4] if scale == "small" else (BF16, F32)[i % 2]
        reduce_all = i % 3 == 1
        eps = 0.0 if reduce_all or special == "ties" else 1e-6
        if no_identity(p) and (cols == 0 or (reduce_all and rows == 0)):
            continue
        yield RowDistDescriptor(rows, cols, p, eps, element, reduce_all), (lx, ly), special


class RowDistSpec(PlanSpec):
    plan = RowDistPlan

    def cases(self, scale):
        for desc, layouts, special in _row_cases(scale):
            def make(device, gen, desc=desc, layouts=layouts, special=special):
                x, y = _row_inputs(desc.row_shape, desc.element, layouts, special, device, gen)
                out = poisoned(desc.out_shape, desc.element.torch_dtype, device)
                return RowDistArgs(x=x, y=y, out=out)

            def expect(args, d=desc):
                return {"out": ref.row_distance(args.x, args.y, d.p, d.eps, d.reduce_all)}

            kind = "dist" if desc.reduce_all else "pairwise_distance"
            yield Case(f"{kind} {desc.row_shape} p={desc.p} {layouts} {special} "
                       f"{desc.element.value}", desc, make, expect, tol=_row_tol(desc))

    def malformed_descriptors(self):
        yield Malformed("inf eps", lambda: RowDistDescriptor(4, 5, 2.0, INF, F32),
                        InvalidProblem)
        yield Malformed("-inf norm of empty rows",
                        lambda: RowDistDescriptor(4, 0, -INF, 0.0, F32), InvalidProblem)
        yield Malformed("inf norm of nothing",
                        lambda: RowDistDescriptor(0, 5, INF, 0.0, F32, True), InvalidProblem)
        yield Malformed("string p", lambda: RowDistDescriptor(4, 5, "2", 0.0, F32),
                        InvalidProblem)
        yield Malformed("reduce_all not a bool",
                        lambda: RowDistDescriptor(4, 5, 2.0, 0.0, F32, 1), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(6))  # noqa: E731
        yield Malformed("y wrong shape", lambda: RowDistArgs(
            x=mk(d.row_shape), y=mk((d.rows, d.cols + 1)), out=mk(d.out_shape)), InvalidProblem)
        yield Malformed("out not a tensor", lambda: RowDistArgs(
            x=mk(d.row_shape), y=mk(d.row_shape), out=1.0), InvalidProblem)

    def aot_variants(self):
        for element, p in itertools.product((BF16, F32), (1.0, 2.0, 3.0, INF)):
            kind = p_kind(p)
            cfg = dict(row_config(1024, element))
            warps = cfg.pop("num_warps")
            comb = COMB.get(kind, 0)
            const = dict(cfg, KIND=kind, MODE=M_NORM, COMB=comb, IDENT=IDENT[comb], HAS_Y=True,
                         ACC=acc_type(element))
            yield aot_variant(f"rows_kernel {element.value} p={p}", rows_kernel, element,
                       ("x_ptr", "y_ptr", "ref_ptr", "out_ptr"), const, warps)


def _row_tol(desc):
    """Low orders (p < 1) raise each |d| to p and the sum to 1 / p: a sum's rounding grows by
    1 / p in the result; the f32 exp2 / log2 powers add a few ulps of the exponent."""
    tol = tolerance_for(desc.element)
    if p_kind(desc.p) == 5:
        return {"out": tol.scaled(4.0), "gx": tol.scaled(4.0), "gy": tol.scaled(4.0)}
    return {}


class RowDistBackwardSpec(PlanSpec):
    plan = RowDistBackwardPlan

    def cases(self, scale):
        for fw in RowDistSpec().cases(scale):
            d = fw.desc
            desc = RowDistBackwardDescriptor(d.rows, d.cols, d.p, d.eps, d.element, d.reduce_all)

            def make(device, gen, fw=fw, d=d):
                a = fw.make_args(device, gen)
                dt = a.x.dtype
                out = fw.reference(a)["out"].to(device, dt)
                return RowDistBackwardArgs(grad=randn(d.out_shape, dt, device, gen), x=a.x,
                                           y=a.y, out=out, gx=poisoned(d.row_shape, dt, device),
                                           gy=poisoned(d.row_shape, dt, device))

            def expect(args, d=d):
                gx, gy = ref.row_distance_backward(args.grad, args.x, args.y, d.p, d.eps,
                                                   d.reduce_all)
                zero = torch.zeros(d.row_shape, dtype=torch.float64)
                return {"gx": zero if gx is None else gx, "gy": zero if gy is None else gy}

            yield Case(fw.name + " bwd", desc, make, expect, tol=_row_tol(d))

    def malformed_descriptors(self):
        yield Malformed("nan p", lambda: RowDistBackwardDescriptor(4, 5, math.nan, 0.0, F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(7))  # noqa: E731
        yield Malformed("gy wrong dtype", lambda: RowDistBackwardArgs(
            grad=mk(d.out_shape), x=mk(d.row_shape), y=mk(d.row_shape), out=mk(d.out_shape),
            gx=mk(d.row_shape), gy=mk(d.row_shape).to(torch.float64 if dt != torch.float64
                                                         else torch.float32)), InvalidProblem)

    def aot_variants(self):
        for element, p in itertools.product((BF16, F32), (1.0, 2.0, 3.0, INF)):
            cfg = dict(row_config(1024, element))
            warps = cfg.pop("num_warps")
            const = dict(cfg, KIND=p_kind(p), ACC=acc_type(element))
            yield aot_variant(f"rows_grad_kernel {element.value} p={p}", rows_grad_kernel, element,
                       ("g_ptr", "x_ptr", "y_ptr", "d_ptr", "cnt_ptr", "gx_ptr", "gy_ptr"),
                       const, warps)


# -- cosine similarity -----------------------------------------------------------------------

#: (rows, cols, layout of x, layout of y, special)
COS_SMALL = [(5, 33, "contiguous", "broadcast", None), (7, 1, "strided", "contiguous", None),
             (0, 4, "contiguous", "contiguous", None), (3, 0, "contiguous", "contiguous", None),
             (2, 1500, "transposed", "strided", None), (4, 6, "contiguous", "contiguous",
                                                        "tiny")]
COS_REAL = [(65536, 1024, "contiguous", "contiguous", None),
            (4096, 4096, "strided", "broadcast", None)]


def _cos_inputs(desc, layouts, special, device, gen):
    x, y = _row_inputs(desc.row_shape, desc.element, layouts, None, device, gen)
    if special == "tiny" and x.numel():  # rows under eps (the clamp) and a zero row
        x = (x.double() * 1e-9).to(x.dtype)
        x[0] = 0
    return x, y


class CosineSpec(PlanSpec):
    plan = CosinePlan

    def cases(self, scale):
        table = COS_SMALL if scale == "small" else COS_REAL
        for rows, cols, lx, ly, special in table:
            for element in (FLOATS if scale == "small" else (BF16, F32)):
                # tiny rows: the clamp at eps (1e-8 is below the 16-bit kinds' smallest normals)
                eps = 1e-8 if special != "tiny" or element in (F32, F64) else 1e-3
                desc = CosineDescriptor(rows, cols, eps, element)

                def make(device, gen, desc=desc, layouts=(lx, ly), special=special):
                    x, y = _cos_inputs(desc, layouts, special, device, gen)
                    out = poisoned(desc.out_shape, desc.element.torch_dtype, device)
                    return CosineArgs(x=x, y=y, out=out)

                def expect(args, d=desc):
                    return {"out": ref.cosine(args.x, args.y, d.eps)}

                yield Case(f"cosine {desc.row_shape} {(lx, ly)} {special} {element.value}",
                           desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("nan eps", lambda: CosineDescriptor(4, 5, math.nan, F32), InvalidProblem)
        yield Malformed("integer element",
                        lambda: CosineDescriptor(4, 5, 1e-8, ElementKind.I64), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(8))  # noqa: E731
        yield Malformed("out wrong shape", lambda: CosineArgs(
            x=mk(d.row_shape), y=mk(d.row_shape), out=mk((d.rows + 1,))), InvalidProblem)

    def aot_variants(self):
        for element in (BF16, F32):
            cfg = dict(row_config(1024, element))
            warps = cfg.pop("num_warps")
            const = dict(cfg, ACC=acc_type(element))
            yield aot_variant(f"cosine_fwd_kernel {element.value}", cosine_fwd_kernel, element,
                       ("x_ptr", "y_ptr", "out_ptr"), const, warps)
            yield aot_variant(f"cosine_bwd_kernel {element.value}", cosine_bwd_kernel, element,
                       ("g_ptr", "x_ptr", "y_ptr", "gx_ptr", "gy_ptr"), const, warps)


class CosineBackwardSpec(PlanSpec):
    plan = CosineBackwardPlan

    def cases(self, scale):
        for fw in CosineSpec().cases(scale):
            d = fw.desc
            desc = CosineBackwardDescriptor(d.rows, d.cols, d.eps, d.element)

            def make(device, gen, fw=fw, d=d):
                a = fw.make_args(device, gen)
                dt = a.x.dtype
                return CosineBackwardArgs(grad=randn(d.out_shape, dt, device, gen), x=a.x,
                                          y=a.y, gx=poisoned(d.row_shape, dt, device),
                                          gy=poisoned(d.row_shape, dt, device))

            def expect(args, d=d):
                gx, gy = ref.cosine_backward(args.grad, args.x, args.y, d.eps)
                return {"gx": gx, "gy": gy}

            yield Case(fw.name + " bwd", desc, make, expect,
                       error_scale=lambda a, eps=d.eps: _cos_scale(a, eps))

    def malformed_descriptors(self):
        yield Malformed("negative rows", lambda: CosineBackwardDescriptor(-1, 5, 1e-8, F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(10))  # noqa: E731
        yield Malformed("grad wrong shape", lambda: CosineBackwardArgs(
            grad=mk((d.rows + 1,)), x=mk(d.row_shape), y=mk(d.row_shape), gx=mk(d.row_shape),
            gy=mk(d.row_shape)), InvalidProblem)


def _cos_scale(args, eps: float) -> dict[str, float]:
    """Each gradient is g / max(|row|, eps) times a difference of unit-size terms (it
    cancels to 0 on rows of one element): its error follows that factor."""
    g = args.grad.detach().double().abs()
    if not g.numel():
        return {"gx": 1.0, "gy": 1.0}
    out = {}
    for name, t in (("gx", args.x), ("gy", args.y)):
        n = t.detach().double().norm(dim=-1).clamp_min(eps)
        out[name] = float((g / n).max())
    return out


for _spec in (RowDistSpec, RowDistBackwardSpec, CosineSpec, CosineBackwardSpec):
    register_spec(_spec())
