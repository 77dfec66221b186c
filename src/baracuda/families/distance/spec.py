"""cdist / pdist test cases, malformed inputs and AOT variants (row distances and cosine:
spec_rows.py; bench rows: spec_bench.py)."""

from __future__ import annotations

import itertools
import math

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import (
    CdistArgs,
    CdistBackwardArgs,
    CdistBackwardDescriptor,
    CdistDescriptor,
    EuclidCdistArgs,
    EuclidCdistBackwardArgs,
    EuclidCdistBackwardDescriptor,
    EuclidCdistDescriptor,
    p_kind,
)
from .kernels import (
    M_PARTIAL,
    euclid_tile_kernel,
    pair_bwd_kernel,
    pair_fwd_kernel,
    rows_kernel,
)
from .plans import (
    COMB,
    TILE_CFG,
    CdistBackwardPlan,
    CdistPlan,
    EuclidCdistBackwardPlan,
    EuclidCdistPlan,
    pair_config,
    row_config,
)

F32, F64, F16, BF16 = ElementKind.F32, ElementKind.F64, ElementKind.F16, ElementKind.BF16
FLOATS = (F32, F64, F16, BF16)
INF = math.inf

# -- cdist / pdist -----------------------------------------------------------------------------

#: (batch, rows_x, rows_y, cols, layout of x); condensed (pdist) cases take rows_x only
PAIR_SMALL = [(1, 5, 7, 9, "contiguous"), (2, 33, 17, 3, "strided"), (1, 1, 40, 13, "broadcast"),
              (3, 6, 5, 20, "transposed"), (1, 0, 4, 5, "contiguous"), (1, 3, 4, 0, "contiguous")]
PAIR_REAL = [(1, 4096, 4096, 256, "contiguous"), (4, 1000, 777, 64, "strided"),
             (16, 129, 300, 33, "transposed")]
P_SMALL = (0.0, 1.0, 2.0, 0.5, 3.0, INF)
EUCLID_SMALL = [(1, 30, 7, 9, "contiguous"), (2, 27, 40, 5, "strided"),
                (3, 6, 26, 20, "transposed"), (1, 0, 4, 5, "contiguous"),
                (1, 3, 28, 0, "contiguous")]


def _batch_layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    """with_layout on the matrices of a batch (broadcast: the rows of one matrix repeated)."""
    if layout == "broadcast" and t.dim() >= 2 and t.shape[-2] > 0:
        return t[..., :1, :].expand(t.shape)
    return with_layout(t, layout)


def _pair_inputs(desc, layout, device, gen):
    dt = desc.element.torch_dtype
    x = _batch_layout(randn(desc.x_shape, dt, device, gen), layout)
    y = None if getattr(desc, "condensed", False) else randn(desc.y_shape, dt, device, gen)
    return x, y


class CdistSpec(PlanSpec):
    plan = CdistPlan

    def cases(self, scale):
        table = PAIR_SMALL if scale == "small" else PAIR_REAL
        ps = P_SMALL if scale == "small" else (1.0, 2.0, 3.0, INF)
        for i, ((b, px, py, m, layout), p) in enumerate(itertools.product(table, ps)):
            element = (F32, F64)[i % 2]
            condensed = i % 3 == 2 and scale == "small"
            if condensed:
                b, py = 1, px
            desc = CdistDescriptor(b, px, py, m, p, element, condensed)

            def make(device, gen, desc=desc, layout=layout):
                x, y = _pair_inputs(desc, layout, device, gen)
                out = poisoned(desc.out_shape, desc.element.torch_dtype, device)
                return CdistArgs(x=x, out=out, y=y)

            def expect(args, desc=desc):
                if desc.condensed:
                    return {"out": ref.pdist(args.x, desc.p)}
                return {"out": ref.cdist(args.x, args.y, desc.p)}

            kind = "pdist" if condensed else "cdist"
            yield Case(f"{kind} {(b, px, py, m)} p={p} {layout} {element.value}", desc, make,
                       expect)

    def malformed_descriptors(self):
        yield Malformed("negative p", lambda: CdistDescriptor(1, 4, 5, 3, -1.0, F32),
                        InvalidProblem)
        yield Malformed("nan p", lambda: CdistDescriptor(1, 4, 5, 3, math.nan, F32),
                        InvalidProblem)
        yield Malformed("f16 (torch's direct form: f32, f64)",
                        lambda: CdistDescriptor(1, 4, 5, 3, 1.0, F16), Unsupported)
        yield Malformed("negative rows", lambda: CdistDescriptor(1, -4, 5, 3, 1.0, F32),
                        InvalidProblem)
        yield Malformed("condensed batch 2",
                        lambda: CdistDescriptor(2, 4, 4, 3, 1.0, F32, True), InvalidProblem)
        yield Malformed("condensed rows differ",
                        lambda: CdistDescriptor(1, 4, 5, 3, 1.0, F32, True), InvalidProblem)
        yield Malformed("batch past the grid", lambda: CdistDescriptor(70000, 4, 5, 3, 1.0, F32),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(3))  # noqa: E731
        y = None if d.condensed else mk(d.y_shape)
        bad = tuple(s + 1 for s in d.out_shape)
        yield Malformed("out wrong shape", lambda: CdistArgs(x=mk(d.x_shape), out=mk(bad), y=y),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: CdistArgs(
            x=mk(d.x_shape).to(torch.float16), out=mk(d.out_shape), y=y), InvalidProblem)
        wrong_y = mk(d.y_shape) if d.condensed else None
        yield Malformed("y given iff not condensed", lambda: CdistArgs(
            x=mk(d.x_shape), out=mk(d.out_shape), y=wrong_y), InvalidProblem)

    def aot_variants(self):
        for element, p in itertools.product((F32, F64), (1.0, 2.0, 0.5, INF)):
            cfg = dict(pair_config(element, backward=False))
            warps = cfg.pop("num_warps")
            kind = p_kind(p)
            for condensed in (False, True):
                const = dict(cfg, KIND=kind, COMB=COMB.get(kind, 0), CONDENSED=condensed,
                             ACC=acc_type(element))
                yield aot_variant(f"pair_fwd_kernel {element.value} p={p} condensed={condensed}",
                           pair_fwd_kernel, element, ("x_ptr", "y_ptr", "out_ptr"), const,
                           warps)


def aot_variant(name, kernel, element, ptrs, const, warps, acc_ptrs=(),
         floats=("p", "p_lo", "eps", "eps_lo")):
    t = "*" + triton_dtype(element.torch_dtype)
    acc = "*" + triton_dtype(torch.float64 if element is F64 else torch.float32)
    pointers = {n: (acc if n in acc_ptrs else t) for n in ptrs}
    scalars = {f: "fp32" for f in floats}
    ints = [n for n in kernel.arg_names if n not in pointers and n not in const
            and n not in scalars]
    return AotVariant.auto(name, kernel, pointers, const, scalars=scalars, num_warps=warps,
                           divisible=tuple(ints))


class CdistBackwardSpec(PlanSpec):
    plan = CdistBackwardPlan

    def cases(self, scale):
        for fw in CdistSpec().cases(scale):
            d = fw.desc
            desc = CdistBackwardDescriptor(d.batch, d.rows_x, d.rows_y, d.cols, d.p, d.element,
                                           d.condensed)

            def make(device, gen, fw=fw, d=d):
                a = fw.make_args(device, gen)
                expected = fw.reference(a)["out"].to(device, a.x.dtype)
                dt = a.x.dtype
                grad = randn(d.out_shape, dt, device, gen)
                return CdistBackwardArgs(
                    grad=grad, x=a.x, out=expected, gx=poisoned(d.x_shape, dt, device), y=a.y,
                    gy=None if d.condensed else poisoned(d.y_shape, dt, device))

            def expect(args, d=d):
                if d.condensed:
                    return {"gx": ref.pdist_backward(args.grad, args.x, d.p)}
                gx, gy = ref.cdist_backward(args.grad, args.x, args.y, d.p)
                return {"gx": gx, "gy": gy}

            yield Case(fw.name + " bwd", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("negative p", lambda: CdistBackwardDescriptor(1, 4, 5, 3, -2.0, F64),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        if d.condensed or not math.prod(d.x_shape):
            return
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(4))  # noqa: E731
        yield Malformed("gx aliases x", lambda: (lambda x: CdistBackwardArgs(
            grad=mk(d.out_shape), x=x, out=mk(d.out_shape), gx=x, y=mk(d.y_shape),
            gy=mk(d.y_shape)))(mk(d.x_shape)), InvalidProblem)
        yield Malformed("gy missing", lambda: CdistBackwardArgs(
            grad=mk(d.out_shape), x=mk(d.x_shape), out=mk(d.out_shape), gx=mk(d.x_shape),
            y=mk(d.y_shape), gy=None), InvalidProblem)

    def aot_variants(self):
        for element, p in itertools.product((F32, F64), (1.0, 2.0, 0.5, INF)):
            cfg = dict(pair_config(element, backward=True, kind=p_kind(p)))
            warps = cfg.pop("num_warps")
            for condensed in (False, True):
                const = dict(cfg, KIND=p_kind(p), CONDENSED=condensed, ACC=acc_type(element))
                yield aot_variant(f"pair_bwd_kernel {element.value} p={p} condensed={condensed}",
                           pair_bwd_kernel, element,
                           ("g_ptr", "x_ptr", "y_ptr", "d_ptr", "gx_ptr"), const, warps)


# -- cdist's matmul form -------------------------------------------------------------------------

class EuclidCdistSpec(PlanSpec):
    plan = EuclidCdistPlan

    def cases(self, scale):
        table = EUCLID_SMALL if scale == "small" else PAIR_REAL
        for b, px, py, m, layout in table:
            for element in (FLOATS if scale == "small" else (F32, BF16)):
                desc = EuclidCdistDescriptor(b, px, py, m, element)

                def make(device, gen, desc=desc, layout=layout):
                    x, y = _pair_inputs(desc, layout, device, gen)
                    out = poisoned(desc.out_shape, desc.element.torch_dtype, device)
                    return EuclidCdistArgs(x=x, y=y, out=out)

                def expect(args):
                    return {"out": ref.cdist(args.x, args.y, 2.0, mm=True)}

                yield Case(f"cdist_mm {(b, px, py, m)} {layout} {element.value}", desc, make,
                           expect, error_scale=_gram_scale)

    def malformed_descriptors(self):
        yield Malformed("integer element",
                        lambda: EuclidCdistDescriptor(1, 4, 5, 3, ElementKind.I32), Unsupported)
        yield Malformed("negative cols",
                        lambda: EuclidCdistDescriptor(1, 4, 5, -3, F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(5))  # noqa: E731
        yield Malformed("y wrong shape", lambda: EuclidCdistArgs(
            x=mk(d.x_shape), y=mk((d.batch, d.rows_y, d.cols + 1)), out=mk(d.out_shape)),
            InvalidProblem)

    def aot_variants(self):
        for element, mode in itertools.product((F32, BF16, F16), (0, 1, 2)):
            cfg = dict(TILE_CFG)
            warps = cfg.pop("num_warps")
            yield aot_variant(f"euclid_tile_kernel {element.value} mode={mode}", euclid_tile_kernel,
                       element, ("a_ptr", "u_ptr", "v_ptr", "out_ptr", "b_ptr"),
                       dict(cfg, MODE=mode, ACC=acc_type(element)), warps,
                       acc_ptrs=("a_ptr", "b_ptr") if mode != 1 else ())
        for element in (F32, BF16):
            for mode, kind in ((M_PARTIAL, 2), (4, 2)):
                cfg = dict(row_config(256, element))
                warps = cfg.pop("num_warps")
                const = dict(cfg, KIND=kind, MODE=mode, COMB=0, IDENT=0.0, HAS_Y=False,
                             ACC=acc_type(element))
                yield aot_variant(f"rows_kernel {element.value} norms mode={mode}", rows_kernel,
                           element, ("x_ptr", "y_ptr", "ref_ptr", "out_ptr"), const, warps,
                           acc_ptrs=("out_ptr",))


def _gram_scale(args) -> dict[str, float]:
    """The matmul form cancels |x|^2 + |y|^2 against 2 x . y: its error follows the squared
    norms (over the smallest distance), not the distance."""
    x = args.x.detach().double()
    y = args.y.detach().double()
    if not x.numel() or not y.numel():
        return {"out": 1.0}
    sq = float((x * x).sum(-1).max() + (y * y).sum(-1).max())
    return {"out": sq / max(float(ref.cdist(x, y, 2.0).clamp_min(1e-3).min()), 1e-3) / 2}


class EuclidCdistBackwardSpec(PlanSpec):
    plan = EuclidCdistBackwardPlan

    def cases(self, scale):
        for fw in EuclidCdistSpec().cases(scale):
            d = fw.desc
            desc = EuclidCdistBackwardDescriptor(d.batch, d.rows_x, d.rows_y, d.cols,
                                                 d.element)

            def make(device, gen, fw=fw, d=d):
                a = fw.make_args(device, gen)
                dt = a.x.dtype
                out = fw.reference(a)["out"].to(device, dt)
                return EuclidCdistBackwardArgs(
                    grad=randn(d.out_shape, dt, device, gen), x=a.x, y=a.y, out=out,
                    gx=poisoned(d.x_shape, dt, device), gy=poisoned(d.y_shape, dt, device))

            def expect(args):
                gx, gy = ref.cdist_backward(args.grad, args.x, args.y, 2.0, mm=True)
                return {"gx": gx, "gy": gy}

            yield Case(fw.name + " bwd", desc, make, expect, error_scale=_ratio_scale)

    def malformed_descriptors(self):
        yield Malformed("string batch",
                        lambda: EuclidCdistBackwardDescriptor("2", 4, 5, 3, F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: randn(s, dt, device, torch.Generator().manual_seed(9))  # noqa: E731
        yield Malformed("gy overlaps y", lambda: (lambda y: EuclidCdistBackwardArgs(
            grad=mk(d.out_shape), x=mk(d.x_shape), y=y, out=mk(d.out_shape), gx=mk(d.x_shape),
            gy=y))(mk(d.y_shape)), InvalidProblem)
        yield Malformed("out wrong shape", lambda: EuclidCdistBackwardArgs(
            grad=mk(d.out_shape), x=mk(d.x_shape), y=mk(d.y_shape),
            out=mk((d.batch, d.rows_x + 1, d.rows_y)), gx=mk(d.x_shape), gy=mk(d.y_shape)),
            InvalidProblem)


def _ratio_scale(args) -> dict[str, float]:
    """gx = x rowsum(r) - r y cancels: its error follows |x| sum|r| (r = grad / out)."""
    g, out = args.grad.detach().double(), args.out.detach().double()
    if not g.numel() or not args.x.numel() or not args.y.numel():
        return {"gx": 1.0, "gy": 1.0}
    r = torch.where(out == 0, 0.0, g / out).abs()
    big = float(max(args.x.detach().double().abs().max(), args.y.detach().double().abs().max()))
    return {"gx": float(r.sum(-1).max()) * big, "gy": float(r.sum(-2).max()) * big}


for _spec in (CdistSpec, CdistBackwardSpec, EuclidCdistSpec, EuclidCdistBackwardSpec):
    register_spec(_spec())

from . import spec_rows  # noqa: E402,F401 - row distances and cosine (their specs register)
