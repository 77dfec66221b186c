"""Elementwise test cases: unary, unary with parameters and cast here; gated and lerp in
`spec_more.py`, binary, comparison and ternary in `spec_nary.py`, benchmarks in
`spec_bench.py` (each registers its specs on import).

Cases are small (1000 elements, one program under the interpreter); every float case plants
the special values (+-0, +-inf, NaN, a subnormal, integers, halves) at the front.
"""

from __future__ import annotations

import math
import zlib

import torch

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import Case, Malformed, PlanSpec
from ...core.tolerance import Tolerance, tolerance_for
from . import reference as ref
from . import spec_bench, spec_bits, spec_more, spec_nary  # noqa: F401 - they register on import
from .descriptors import (
    CastDescriptor,
    UnaryArgs,
    UnaryBackwardArgs,
    UnaryBackwardDescriptor,
    UnaryDescriptor,
    UnaryKind,
    UnaryParamBackwardDescriptor,
    UnaryParamDescriptor,
    UnaryParamKind,
)
from .kernels import unary_bwd_kernel, unary_kernel
from .plans import (
    CastPlan,
    UnaryBackwardPlan,
    UnaryParamBackwardPlan,
    UnaryParamPlan,
    UnaryPlan,
)
from .spec_inputs import (
    LAYOUTS,
    SKIP_SPECIALS,
    E,
    N,
    aot_variant,
    bwd_input,
    make_input,
    poison,
    rand_dy,
)
from .table import FLOATS, INTS, UNARY, UNARY_PARAM, unary_out_element, unary_param_out_element

# -- unary ----------------------------------------------------------------------------------------


def _unary_cases(scale, kinds, row_of, desc_of, out_of, fn_of):
    """(kind, element, shape, layout) combinations: every kind x float at N elements, a few
    layouts and integer elements for sample kinds."""
    if scale == "small":
        floats = [k for k in kinds if row_of(k).ints != "int"]
        for kind in floats:
            for el in FLOATS:
                yield kind, el, (N,), "contiguous"
        sample = floats[:: max(len(floats) // 6, 1)]
        for i, (shape, layout) in enumerate(LAYOUTS):
            yield sample[i % len(sample)], FLOATS[i % 4], shape, layout
        for kind in kinds:
            if row_of(kind).ints == "int":
                for el in (E.I8, E.I32, E.I64, E.U8):
                    yield kind, el, (N,), "contiguous"
            if row_of(kind).ints == "predicate":
                yield kind, E.BOOL, (N,), "contiguous"
            if row_of(kind).ints in ("exact", "promote", "predicate"):
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
                # predicate, exponent and bit-level kinds: the reference sees the input's own
                # type (not the float64 copy, nor a cast to the result type)
                own = args.x.dtype if row.native or not out.is_float else None
                return {"y": ref.forward(row.ref, [args.x], out, exact=not out.is_float,
                                         native=own)}

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
        yield Malformed("bad kind", lambda: UnaryDescriptor("no_kind", (4,), E.F32),
                        InvalidProblem)

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
                for kernel in (unary_kernel, unary_bwd_kernel):
                    yield aot_variant(kernel, el, UNARY[kind], kind.value)
        yield from spec_bits.row_variants()


class UnaryBackwardSpec(PlanSpec):
    plan = UnaryBackwardPlan

    def cases(self, scale):
        for fw in UnarySpec().cases(scale):
            d = fw.desc
            if d.element not in FLOATS or not UNARY[d.kind].diff:
                continue
            desc = UnaryBackwardDescriptor(d.kind, d.shape, d.element)

            def make(device, gen, fw=fw, d=d):
                x = bwd_input(fw.make_args(device, gen).x, d.kind)
                return UnaryBackwardArgs(dy=rand_dy(d.shape, d.element, gen, device), x=x,
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
    fn = UNARY_PARAM[kind].ref
    return lambda x: fn(x, *params)


class UnaryParamSpec(PlanSpec):
    plan = UnaryParamPlan

    def _combos(self, scale):
        if scale != "small":
            yield UnaryParamKind.LEAKY_RELU, (0.1,), E.BF16, (1 << 22,)
            return
        for kind, row in UNARY_PARAM.items():
            for el in FLOATS:
                yield kind, row.params, el, (N,)
        for kind, params, el in PARAM_EXTRA:
            yield kind, params, el, (N,)

    def cases(self, scale):
        for kind, params, el, shape in self._combos(scale):
            desc = UnaryParamDescriptor(kind, shape, el, params)
            out = unary_param_out_element("", kind, el, params)

            def make(device, gen, el=el, shape=shape, out=out, kind=kind):
                x = make_input(shape, el, gen, device, *UNARY_PARAM[kind].domain)
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
                x = bwd_input(fw.make_args(device, gen).x, d.kind)
                return UnaryBackwardArgs(dy=rand_dy(d.shape, d.element, gen, device), x=x,
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


for _spec in (UnarySpec(), UnaryBackwardSpec(), UnaryParamSpec(), UnaryParamBackwardSpec(),
              CastSpec()):
    register_spec(_spec)
