"""Elementwise test cases (unary, unary-with-params, cast, gated, lerp), malformed inputs,
AOT variants and benchmarks. Binary, comparison and ternary specs are in `spec_nary.py`.

Cases are small (1000 elements, one program under the interpreter); every float case plants
the special values (+-0, +-inf, NaN, a subnormal, integers, halves) at the front.
"""

from __future__ import annotations

import math
import zlib

import torch

from ...backends.triton_support import INTERPRET, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, with_layout
from ...core.tolerance import Tolerance, tolerance_for
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import (
    BinaryArgs,
    BinaryKind,
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamDescriptor,
    CastDescriptor,
    GatedArgs,
    GatedBackwardArgs,
    GatedBackwardDescriptor,
    GatedDescriptor,
    GatedKind,
    UnaryArgs,
    UnaryBackwardArgs,
    UnaryBackwardDescriptor,
    UnaryDescriptor,
    UnaryKind,
    UnaryParamBackwardDescriptor,
    UnaryParamDescriptor,
    UnaryParamKind,
)
from .kernels import binary_bwd_kernel, binary_kernel, unary_bwd_kernel, unary_kernel
from .launch import HEAVY_OPS, acc_type
from .plans import (
    BinaryParamBackwardPlan,
    BinaryParamPlan,
    CastPlan,
    UnaryBackwardPlan,
    UnaryParamBackwardPlan,
    UnaryParamPlan,
    UnaryPlan,
)
from .plans_more import GatedActivationBackwardPlan, GatedActivationPlan
from .table import FLOATS, INTS, UNARY, UNARY_PARAM, unary_out_element, unary_param_out_element

E = ElementKind
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40, 1.0, -1.0, 2.0, -2.0,
            0.5, -0.5, 1e-5, 35.0, -40.0, 100.0]
#: Specials a kind leaves out, with the reason: torch's trigamma at negative integers returns
#: large finite garbage (ours: inf); cbrt has no torch op and our reference's derivative at 0
#: is pow's NaN rather than +inf.
SKIP_SPECIALS = {UnaryKind.DIGAMMA: {-1.0, -2.0, -40.0}, UnaryKind.CBRT: {0.0}}
N = 1000
LAYOUTS = [((3, 100, 4), "strided"), ((6, 33), "transposed"), ((7, 5), "broadcast"),
           ((), "contiguous"), ((2, 0, 5), "contiguous"), ((2, 1, 3, 2, 2, 1, 2, 5), "transposed")]


def poison(shape, dtype, device):
    """Poisoned output (core's integer poison does not fit int8)."""
    if dtype == torch.int8:
        return torch.full(tuple(shape), -91, dtype=dtype, device=device)
    return poisoned(shape, dtype, device)


def keeps_subnormals(element: ElementKind) -> bool:
    """Whether kernels see subnormal inputs of `element`: Triton flushes f32 subnormals to zero
    on the GPU (and the interpreter flushes bf16 ones when widening); f64 keeps them."""
    if element is ElementKind.F64:
        return True
    return INTERPRET and element is not ElementKind.BF16


def specials_for(element: ElementKind, skip=()) -> list[float]:
    out = [s for s in SPECIALS if s not in skip or math.isnan(s)]
    if not keeps_subnormals(element):
        out = [s for s in out if abs(s) != 1e-40]
    return out


def float_input(shape, element, gen, lo, hi, device, layout="contiguous", skip=()):
    n = math.prod(shape)
    x = torch.rand(n, generator=gen, dtype=torch.float64) * (hi - lo) + lo
    sp = torch.tensor(specials_for(element, skip), dtype=torch.float64)[:n]
    x[: len(sp)] = sp
    x = x.reshape(shape).to(device=device, dtype=element.torch_dtype)
    return with_layout(x, layout)


def int_input(shape, element, gen, device, lo=-20, hi=20, layout="contiguous"):
    if element is ElementKind.U8:
        lo, hi = max(lo, 0), max(hi, 1)
    if element is ElementKind.BOOL:
        x = torch.randint(0, 2, shape, generator=gen).bool()
    else:
        x = torch.randint(lo, hi, shape, generator=gen).to(element.torch_dtype)
    return with_layout(x.to(device), layout)


def make_input(shape, element, gen, device, lo=-3.0, hi=3.0, layout="contiguous", skip=()):
    if element.is_float:
        return float_input(shape, element, gen, lo, hi, device, layout, skip)
    return int_input(shape, element, gen, device, layout=layout)


def _bwd_input(x, kind):
    """Gradient cases drop NaN inputs: torch's CPU kernels give NaN or the incoming gradient
    depending on the element's position (vectorized body vs scalar tail). cbrt drops zeros
    (the float64 reference's pow derivative is NaN there; ours is +-inf, JAX's convention)."""
    x = torch.nan_to_num(x, nan=0.25, posinf=math.inf, neginf=-math.inf)
    if kind in (UnaryKind.CBRT, UnaryKind.LOGIT):  # logit: torch's sign of dy * inf at -0
        x = torch.where(x == 0, torch.full_like(x, 0.25), x)
    if kind is UnaryKind.DIGAMMA:  # torch's trigamma at negative integers is finite garbage
        x = torch.where((x <= 0) & (x == torch.round(x)), x + 0.25, x)
    return x


def _rand_dy(shape, element, gen, device):
    g = torch.randn(shape, generator=gen, dtype=torch.float64)
    return with_layout(g.to(device=device, dtype=element.torch_dtype), "strided")


# -- unary ----------------------------------------------------------------------------------------


def _unary_cases(scale, kinds, row_of, desc_of, out_of, fn_of):
    """(kind, element, shape, layout) combinations: every kind x float at N elements, a few
    layouts and integer elements for sample kinds."""
    if scale == "small":
        for kind in kinds:
            for el in FLOATS:
                yield kind, el, (N,), "contiguous"
        sample = list(kinds)[:: max(len(kinds) // 6, 1)]
        for i, (shape, layout) in enumerate(LAYOUTS):
            yield sample[i % len(sample)], FLOATS[i % 4], shape, layout
        for kind in kinds:
            if row_of(kind).ints in ("exact", "promote"):
                # a stable (not hash-seeded) pick, so every test worker collects the same cases
                int_kind = (E.I32, E.I64, E.I8, E.U8)[zlib.crc32(kind.value.encode()) % 4]
                yield kind, int_kind, (N,), "contiguous"
    else:
        for kind in list(kinds)[::14]:
            for el in (E.BF16, E.F32):
                yield kind, el, (1 << 22,), "contiguous"
                yield kind, el, (2048, 2049), "transposed"


class UnarySpec(PlanSpec):
    plan = UnaryPlan

    def cases(self, scale):
        for kind, el, shape, layout in _unary_cases(scale, UnaryKind, UNARY.get, None, None, None):
            row = UNARY[kind]
            desc = UnaryDescriptor(kind, shape, el)
            out = unary_out_element("", kind, el)

            def make(device, gen, kind=kind, el=el, shape=shape, layout=layout, out=out):
                row = UNARY[kind]
                x = make_input(shape, el, gen, device, *row.domain, layout,
                               SKIP_SPECIALS.get(kind, ()))
                return UnaryArgs(x=x, y=poison(shape, out.torch_dtype, device))

            def expect(args, row=row, out=out):
                return {"y": ref.forward(row.ref, [args.x], out, exact=not out.is_float)}

            yield Case(f"{kind.value} {el.value} {shape} {layout}", desc, make, expect,
                       tol={"y": tolerance_for(out)})

    def malformed_descriptors(self):
        yield Malformed("negative extent", lambda: UnaryDescriptor(UnaryKind.EXP, (4, -1), E.F32),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: UnaryDescriptor(UnaryKind.EXP, (1,) * 9, E.F32),
                        Unsupported)
        yield Malformed("int gelu", lambda: UnaryDescriptor(UnaryKind.GELU, (4,), E.I32),
                        Unsupported)
        yield Malformed("bool neg", lambda: UnaryDescriptor(UnaryKind.NEG, (4,), E.BOOL),
                        Unsupported)
        yield Malformed("bad kind", lambda: UnaryDescriptor("exp", (4,), E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        good = lambda s=d.shape: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        bad_shape = tuple(s + 1 for s in d.shape) or (2,)
        other = torch.float64 if dt != torch.float64 else torch.float32
        yield Malformed("y wrong shape", lambda: UnaryArgs(good(), good(bad_shape)),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: UnaryArgs(good().to(other), good()),
                        InvalidProblem)
        yield Malformed("y overlaps x", lambda: (lambda t: UnaryArgs(t[:-1], t[1:]))(
            torch.ones(d.shape[0] + 1, dtype=dt, device=device)), InvalidProblem)
        yield Malformed("broadcast output", lambda: UnaryArgs(
            good(), torch.ones(1, dtype=dt, device=device).expand(d.shape)), InvalidProblem)

    def aot_variants(self):
        for el in (E.BF16, E.F32):
            for kind in (UnaryKind.SILU, UnaryKind.GELU, UnaryKind.EXP, UnaryKind.I0,
                         UnaryKind.LGAMMA):
                for kernel, ptrs in ((unary_kernel, ("x_ptr", "y_ptr")),
                                     (unary_bwd_kernel, ("dy_ptr", "x_ptr", "dx_ptr"))):
                    yield _aot(kernel, ptrs, el, UNARY[kind].code, f"{kind.value}")


def _aot(kernel, ptrs, el, code, label, **extra):
    t = "*" + triton_dtype(el.torch_dtype)
    const = dict(OP=code, ACC=acc_type(el), MODE=0, BIG=False,
                 BLOCK=512 if code in HEAVY_OPS else 1024, **extra)
    sig = {}
    for n in kernel.arg_names:
        if n in const:
            continue
        if n.endswith("_ptr"):
            sig[n] = t
        elif n.startswith("p") and n[-1] in "hl":  # scalar params, passed as f32
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
    sig.update({n: "constexpr" for n in const})
    return AotVariant(f"{kernel.__name__} {label} {el.value}", kernel, sig, const, num_warps=4)


class UnaryBackwardSpec(PlanSpec):
    plan = UnaryBackwardPlan

    def cases(self, scale):
        for fw in UnarySpec().cases(scale):
            d = fw.desc
            if d.element not in FLOATS:
                continue
            desc = UnaryBackwardDescriptor(d.kind, d.shape, d.element)

            def make(device, gen, fw=fw, d=d):
                x = _bwd_input(fw.make_args(device, gen).x, d.kind)
                return UnaryBackwardArgs(dy=_rand_dy(d.shape, d.element, gen, device), x=x,
                                         dx=poison(d.shape, d.element.torch_dtype, device))

            def expect(args, d=d):
                g = ref.gradients(UNARY[d.kind].ref, [args.x], args.dy, [True], [d.element])
                return {"dx": g[0]}

            tol = {}
            if d.kind is UnaryKind.HARDSIGMOID and d.element is E.F64:
                tol = {"dx": Tolerance(1e-12, 1e-7)}  # torch's CPU kernel uses 1/6 in f32
            if d.kind is UnaryKind.SINC and d.element is E.F64:
                tol = {"dx": Tolerance(1e-11, 1e-6)}  # torch's formula cancels near 0
            yield Case(fw.name + " bwd", desc, make, expect, tol=tol)

    def malformed_descriptors(self):
        yield Malformed("negative extent",
                        lambda: UnaryBackwardDescriptor(UnaryKind.EXP, (-1,), E.F32),
                        InvalidProblem)
        yield Malformed("integer gradient",
                        lambda: UnaryBackwardDescriptor(UnaryKind.NEG, (4,), E.I32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.shape: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("dy wrong shape",
                        lambda: UnaryBackwardArgs(mk(tuple(s + 1 for s in d.shape)), mk(), mk()),
                        InvalidProblem)
        yield Malformed("dx aliases x", lambda: (lambda x: UnaryBackwardArgs(mk(), x, x))(mk()),
                        InvalidProblem)


# -- unary with parameters ------------------------------------------------------------------------

PARAM_EXTRA = [  # (kind, params, element): exponent and bound variants, integer elements
    (UnaryParamKind.POW, (2.0,), E.F32), (UnaryParamKind.POW, (-3.0,), E.F64),
    (UnaryParamKind.POW, (0.5,), E.F32), (UnaryParamKind.POW, (3.0,), E.I32),
    (UnaryParamKind.POW, (2.5,), E.I64), (UnaryParamKind.CLAMP, (-math.inf, 1.0), E.F32),
    (UnaryParamKind.CLAMP, (-5.0, 7.0), E.I32), (UnaryParamKind.ADD, (3.0,), E.I64),
    (UnaryParamKind.MUL, (0.5,), E.I32), (UnaryParamKind.CLAMP, (0.5, math.inf), E.BF16),
]


def _param_ref(kind, params):
    fn = UNARY_PARAM[kind][0].ref
    return lambda x: fn(x, *params)


class UnaryParamSpec(PlanSpec):
    plan = UnaryParamPlan

    def _combos(self, scale):
        if scale != "small":
            yield UnaryParamKind.LEAKY_RELU, (0.1,), E.BF16, (1 << 22,)
            return
        for kind, (_, params) in UNARY_PARAM.items():
            for el in FLOATS:
                yield kind, params, el, (N,)
        for kind, params, el in PARAM_EXTRA:
            yield kind, params, el, (N,)

    def cases(self, scale):
        for kind, params, el, shape in self._combos(scale):
            desc = UnaryParamDescriptor(kind, shape, el, params)
            out = unary_param_out_element("", kind, el, params)

            def make(device, gen, el=el, shape=shape, out=out, kind=kind):
                x = make_input(shape, el, gen, device, *UNARY_PARAM[kind][0].domain)
                return UnaryArgs(x=x, y=poison(shape, out.torch_dtype, device))

            def expect(args, kind=kind, params=params, out=out, el=el):
                exact = not out.is_float
                return {"y": ref.forward(_param_ref(kind, params), [args.x], out, exact=exact,
                                         native=None if el.is_float or exact else torch.float64)}

            yield Case(f"{kind.value}{params} {el.value}", desc, make, expect,
                       tol={"y": tolerance_for(out)})

    def malformed_descriptors(self):
        K = UnaryParamKind
        yield Malformed("wrong param count",
                        lambda: UnaryParamDescriptor(K.HARDTANH, (4,), E.F32, (1.0,)),
                        InvalidProblem)
        yield Malformed("min > max",
                        lambda: UnaryParamDescriptor(K.HARDTANH, (4,), E.F32, (2.0, 1.0)),
                        InvalidProblem)
        yield Malformed("nan param",
                        lambda: UnaryParamDescriptor(K.ELU, (4,), E.F32, (math.nan,)),
                        InvalidProblem)
        yield Malformed("int negative power",
                        lambda: UnaryParamDescriptor(K.POW, (4,), E.I32, (-2.0,)),
                        InvalidProblem)
        yield Malformed("int elu", lambda: UnaryParamDescriptor(K.ELU, (4,), E.I32, (1.0,)),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.shape: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("y wrong shape", lambda: UnaryArgs(mk(), mk((d.shape[0] + 1,))),
                        InvalidProblem)
        yield Malformed("y aliases x", lambda: (lambda x: UnaryArgs(x, x))(mk()),
                        InvalidProblem)


class UnaryParamBackwardSpec(PlanSpec):
    plan = UnaryParamBackwardPlan

    def cases(self, scale):
        for fw in UnaryParamSpec().cases(scale):
            d = fw.desc
            if d.element not in FLOATS:
                continue
            desc = UnaryParamBackwardDescriptor(d.kind, d.shape, d.element, d.params)

            def make(device, gen, fw=fw, d=d):
                x = _bwd_input(fw.make_args(device, gen).x, d.kind)
                return UnaryBackwardArgs(dy=_rand_dy(d.shape, d.element, gen, device), x=x,
                                         dx=poison(d.shape, d.element.torch_dtype, device))

            def expect(args, d=d):
                g = ref.gradients(_param_ref(d.kind, d.params), [args.x], args.dy, [True],
                                  [d.element])
                return {"dx": g[0]}

            # torch's f64 celu backward is accurate to ~1e-8 only
            tol = ({"dx": Tolerance(1e-11, 1e-6)}
                   if d.kind is UnaryParamKind.CELU and d.element is E.F64 else {})
            yield Case(fw.name + " bwd", desc, make, expect, tol=tol)

    def malformed_descriptors(self):
        yield Malformed("integer gradient", lambda: UnaryParamBackwardDescriptor(
            UnaryParamKind.POW, (4,), E.I32, (2.0,)), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.shape: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("dx wrong dtype", lambda: UnaryBackwardArgs(
            mk(), mk(), mk().to(torch.float64 if dt != torch.float64 else torch.float32)),
            InvalidProblem)


# -- cast -----------------------------------------------------------------------------------------

ALL = FLOATS + INTS + (E.BOOL,)


class CastSpec(PlanSpec):
    plan = CastPlan

    def cases(self, scale):
        shape = (N,) if scale == "small" else (1 << 22,)
        # every element into and out of f32 and bf16, plus the integer/bool pairs that wrap
        hubs = (E.F32, E.BF16, E.F64, E.I32, E.BOOL)
        for src in ALL:
            for dst in ALL:
                if scale != "small" and (src, dst) not in ((E.F32, E.BF16), (E.BF16, E.F32)):
                    continue
                if src not in hubs and dst not in hubs:
                    continue
                desc = CastDescriptor(shape, src, dst)

                def make(device, gen, src=src, dst=dst):
                    if src.is_float and not dst.is_float:
                        # out-of-range float -> int conversions are undefined in C and CUDA
                        lo, hi = (0.0, 120.0) if dst in (E.U8, E.BOOL, E.I8) else (-100.0, 100.0)
                        x = (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo)
                             + lo).to(device=device, dtype=src.torch_dtype)
                        x[:3] = torch.tensor([0.0, -0.0, 1.0])
                    else:
                        x = make_input(shape, src, gen, device, -100.0, 100.0)
                    return UnaryArgs(x=x, y=poison(shape, dst.torch_dtype, device))

                def expect(args, dst=dst):
                    return {"y": args.x.detach().cpu().to(dst.torch_dtype)
                            if not dst.is_float else ref.rounded(args.x.cpu().double(), dst)}

                yield Case(f"cast {src.value}->{dst.value}", desc, make, expect,
                           tol={"y": tolerance_for(dst)})

    def malformed_descriptors(self):
        yield Malformed("bad out", lambda: CastDescriptor((4,), E.F32, "f8"), InvalidProblem)
        yield Malformed("negative", lambda: CastDescriptor((-4,), E.F32, E.F16), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        mk = lambda el, s=d.shape: torch.zeros(s, dtype=el.torch_dtype, device=device)  # noqa
        yield Malformed("y wrong dtype", lambda: UnaryArgs(mk(d.element), mk(d.element)
                                                           if d.element != d.out_element
                                                           else mk(E.F64 if d.element != E.F64
                                                                   else E.F32)),
                        InvalidProblem)


# -- gated activations ----------------------------------------------------------------------------

GATED_SHAPES = [((4, 250), -1, "contiguous"), ((6, 10, 3), 1, "strided"), ((8, 2), 0,
                                                                          "transposed")]


class GatedSpec(PlanSpec):
    plan = GatedActivationPlan

    def cases(self, scale):
        table = GATED_SHAPES if scale == "small" else [((4096, 8192), -1, "contiguous")]
        for (shape, axis, layout) in table:
            for kind in GatedKind if scale == "small" else (GatedKind.SWIGLU, GatedKind.GEGLU):
                for el in FLOATS if scale == "small" else (E.BF16, E.F32):
                    desc = GatedDescriptor(kind, shape, axis, el)

                    def make(device, gen, desc=desc, layout=layout):
                        x = float_input(desc.shape, desc.element, gen, -4.0, 4.0, device, layout)
                        return GatedArgs(x=x, y=poison(desc.out_shape,
                                                         desc.element.torch_dtype, device))

                    def expect(args, desc=desc):
                        return {"y": ref.forward(lambda x: ref.gated(desc.kind.value, x,
                                                                     desc.axis),
                                                 [args.x], desc.element)}

                    yield Case(f"{kind.value} {el.value} {shape} ax{axis} {layout}", desc,
                               make, expect)

    def malformed_descriptors(self):
        yield Malformed("odd axis", lambda: GatedDescriptor(GatedKind.SWIGLU, (4, 7), 1, E.F32),
                        InvalidProblem)
        yield Malformed("int", lambda: GatedDescriptor(GatedKind.GLU, (4, 8), 1, E.I32),
                        Unsupported)
        yield Malformed("axis", lambda: GatedDescriptor(GatedKind.GLU, (4, 8), 2, E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        yield Malformed("y full size", lambda: GatedArgs(
            torch.ones(d.shape, dtype=dt, device=device),
            torch.ones(d.shape, dtype=dt, device=device)), InvalidProblem)

    def aot_variants(self):
        for kind in (GatedKind.SWIGLU, GatedKind.GEGLU):
            for kernel, ptrs, extra in (
                    (binary_kernel, ("a_ptr", "b_ptr", "y_ptr"), {}),
                    (binary_bwd_kernel, ("dy_ptr", "a_ptr", "b_ptr", "da_ptr", "db_ptr"),
                     dict(LOAD_A=True, LOAD_B=True, WRITE_A=True, WRITE_B=True))):
                v = _aot(kernel, ptrs, E.BF16, 31 if kind is GatedKind.SWIGLU else 32,
                         kind.value, **extra)
                v.constexprs["MODE"] = 1
                yield v


class GatedBackwardSpec(PlanSpec):
    plan = GatedActivationBackwardPlan

    def cases(self, scale):
        for fw in GatedSpec().cases(scale):
            d = fw.desc
            desc = GatedBackwardDescriptor(d.kind, d.shape, d.axis, d.element)

            def make(device, gen, fw=fw, d=d):
                x = fw.make_args(device, gen).x
                return GatedBackwardArgs(dy=_rand_dy(d.out_shape, d.element, gen, device), x=x,
                                         dx=poison(d.shape, d.element.torch_dtype, device))

            def expect(args, d=d):
                fn = lambda x: ref.gated(d.kind.value, x, d.axis)  # noqa: E731
                return {"dx": ref.gradients(fn, [args.x], args.dy, [True], [d.element])[0]}

            yield Case(fw.name + " bwd", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("odd axis", lambda: GatedBackwardDescriptor(
            GatedKind.REGLU, (3,), 0, E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("dy full size", lambda: GatedBackwardArgs(mk(d.shape), mk(d.shape),
                                                                  mk(d.shape)), InvalidProblem)


# -- lerp with a scalar weight (the seed) ---------------------------------------------------------

LERP_SMALL = [((N,), "contiguous", 0.3), ((N,), "contiguous", 0.7), ((3, 100, 4), "strided", 1.5),
              ((6, 33), "transposed", -0.25), ((2, 0, 3), "contiguous", 0.5), ((), "contiguous",
                                                                              0.25)]


class LerpSpec(PlanSpec):
    plan = BinaryParamPlan

    def cases(self, scale):
        table = LERP_SMALL if scale == "small" else [((1 << 24,), "contiguous", 0.3)]
        for shape, layout, w in table:
            for el in FLOATS:
                desc = BinaryParamDescriptor(BinaryKind.LERP, shape, el, w)

                def make(device, gen, shape=shape, el=el, layout=layout):
                    a = float_input(shape, el, gen, -3.0, 3.0, device, layout)
                    b = float_input(shape, el, gen, -3.0, 3.0, device)
                    return BinaryArgs(a=a, b=b, y=poison(shape, el.torch_dtype, device))

                def expect(args, el=el, w=w):
                    fn = lambda a, b: ref.lerp_scalar(a, b, w)  # noqa: E731
                    return {"y": ref.forward(fn, [args.a, args.b], el)}

                yield Case(f"lerp w={w} {el.value} {shape} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("not lerp", lambda: BinaryParamDescriptor(BinaryKind.ADD, (4,), E.F32,
                                                                  0.5), Unsupported)
        yield Malformed("inf weight", lambda: BinaryParamDescriptor(BinaryKind.LERP, (4,), E.F32,
                                                                    math.inf), InvalidProblem)
        yield Malformed("int", lambda: BinaryParamDescriptor(BinaryKind.LERP, (4,), E.I32, 0.5),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.shape: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("b wrong shape", lambda: BinaryArgs(mk(), mk((d.shape[0] + 1,)), mk()),
                        InvalidProblem)
        yield Malformed("y aliases a", lambda: (lambda a: BinaryArgs(a, mk(), a))(mk()),
                        InvalidProblem)


class LerpBackwardSpec(PlanSpec):
    plan = BinaryParamBackwardPlan

    def cases(self, scale):
        for fw in LerpSpec().cases(scale):
            d = fw.desc
            desc = BinaryParamBackwardDescriptor(d.kind, d.shape, d.element, d.param)

            def make(device, gen, d=d):
                dt = d.element.torch_dtype
                return BinaryParamBackwardArgs(dy=_rand_dy(d.shape, d.element, gen, device),
                                               da=poison(d.shape, dt, device),
                                               db=poison(d.shape, dt, device))

            def expect(args, d=d):
                dy = ref.to64(args.dy)
                return {"da": ref.rounded(dy * (1 - d.param), d.element),
                        "db": ref.rounded(dy * d.param, d.element)}

            yield Case(fw.name + " bwd", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("f8", lambda: BinaryParamBackwardDescriptor(BinaryKind.LERP, (4,), "f8",
                                                                    0.5), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.shape: torch.ones(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("da aliases db", lambda: (lambda g: BinaryParamBackwardArgs(mk(), g, g))(
            mk()), InvalidProblem)


for _spec in (UnarySpec(), UnaryBackwardSpec(), UnaryParamSpec(), UnaryParamBackwardSpec(),
              CastSpec(), GatedSpec(), GatedBackwardSpec(), LerpSpec(), LerpBackwardSpec()):
    register_spec(_spec)

from . import bench, spec_nary  # noqa: E402,F401 - benchmarks; binary/compare/ternary specs
