"""Gated-activation and scalar-weight lerp test cases (see `spec.py`)."""

from __future__ import annotations

import math

import torch

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import Case, Malformed, PlanSpec
from . import reference as ref
from .descriptors import (
    BinaryArgs,
    BinaryKind,
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamDescriptor,
    GatedArgs,
    GatedBackwardArgs,
    GatedBackwardDescriptor,
    GatedDescriptor,
    GatedKind,
)
from .kernels import binary_bwd_kernel, binary_kernel
from .plans import BinaryParamBackwardPlan, BinaryParamPlan
from .plans_more import GatedActivationBackwardPlan, GatedActivationPlan
from .spec_inputs import E, N, aot_variant, float_input, poison, rand_dy
from .table import FLOATS, GATED

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
                        return {"y": ref.forward(lambda x: ref.gated(GATED[desc.kind].ref, x,
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
            for kernel, extra in (
                    (binary_kernel, {}),
                    (binary_bwd_kernel, dict(LOAD_A=True, LOAD_B=True, WRITE_A=True,
                                             WRITE_B=True))):
                v = aot_variant(kernel, E.BF16, GATED[kind], kind.value, **extra)
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
                return GatedBackwardArgs(dy=rand_dy(d.out_shape, d.element, gen, device), x=x,
                                         dx=poison(d.shape, d.element.torch_dtype, device))

            def expect(args, d=d):
                fn = lambda x: ref.gated(GATED[d.kind].ref, x, d.axis)  # noqa: E731
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
                return BinaryParamBackwardArgs(dy=rand_dy(d.shape, d.element, gen, device),
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


for _spec in (GatedSpec(), GatedBackwardSpec(), LerpSpec(), LerpBackwardSpec()):
    register_spec(_spec)
