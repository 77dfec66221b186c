"""Binary, comparison and ternary test cases: every kind at N elements with the special
values crossed pairwise, broadcasting and layouts for sample kinds, mixed-type promotion,
integer kinds exact, broadcast gradients reduced."""

from __future__ import annotations

import math

import torch

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import Case, Malformed, PlanSpec
from ...core.testing import with_layout
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import (
    BinaryArgs,
    BinaryBackwardArgs,
    BinaryBackwardDescriptor,
    BinaryDescriptor,
    BinaryKind,
    CompareDescriptor,
    CompareKind,
    TernaryArgs,
    TernaryBackwardArgs,
    TernaryBackwardDescriptor,
    TernaryDescriptor,
    TernaryKind,
)
from .plans import BinaryBackwardPlan, BinaryCmpPlan, BinaryPlan
from .plans_more import TernaryBackwardPlan, TernaryPlan
from .spec_inputs import N, keeps_subnormals, poison, rand_dy, specials_for
from .table import BINARY, COMPARE, FLOATS, TERNARY, binary_types, ternary_types

E = ElementKind
PAIR_SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.5, 1e-40]
#: Input domains per kind (a, b): positive bases for pow, positive y for xlogy.
DOMAIN = {BinaryKind.POW: ((0.1, 3.0), (-3.0, 3.0)), BinaryKind.XLOGY: ((-3.0, 3.0), (0.0, 3.0))}
INT_DOMAIN = {BinaryKind.POW: ((-5, 6), (0, 6)),
              BinaryKind.BITWISE_LEFT_SHIFT: ((-20, 20), (0, 12)),
              BinaryKind.BITWISE_RIGHT_SHIFT: ((-20, 20), (0, 12)),
              BinaryKind.SHIFT_RIGHT_LOGICAL: ((-20, 20), (-2, 70)),
              BinaryKind.GCD: ((-60, 60), (-60, 60)), BinaryKind.LCM: ((-60, 60), (-60, 60)),
              BinaryKind.MULHI: ((-(1 << 62), 1 << 62), (-(1 << 62), 1 << 62)),
              BinaryKind.LDEXP: ((-20, 20), (-10, 10)), BinaryKind.BIT_AT: ((-128, 127), (0, 8))}
#: Kinds torch (or jax) defines for operands of one dtype only.
SAME_DTYPE = (BinaryKind.HEAVISIDE, BinaryKind.SHIFT_RIGHT_LOGICAL, BinaryKind.MULHI)
DIVIDES = (BinaryKind.DIV_TRUNC, BinaryKind.DIV_FLOOR, BinaryKind.REMAINDER, BinaryKind.FMOD)
BROADCAST = [((8, 1, 25), (5, 1), "contiguous"), ((4, 25), (25,), "strided"),
             ((30, 7), (), "transposed"), ((2, 0, 3), (3,), "contiguous"),
             ((1, 9000), (3, 1), "contiguous")]


def operand(shape, el, gen, device, lo, hi, layout="contiguous", plant=None, nonzero=False):
    n = math.prod(shape)
    if el.is_float:
        x = torch.rand(n, generator=gen, dtype=torch.float64) * (hi - lo) + lo
        if plant is not None:
            sp = torch.tensor([s for s in plant if keeps_subnormals(el) or abs(s) != 1e-40],
                              dtype=torch.float64)[:n]
            x[: len(sp)] = sp
    elif el is E.BOOL:
        x = torch.randint(0, 2, (n,), generator=gen).bool()
    else:
        lo, hi = int(lo), int(hi)
        if el is E.U8:
            lo, hi = 0, max(hi, 2)
        x = torch.randint(lo, hi, (n,), generator=gen)
        if nonzero:
            x = torch.where(x == 0, torch.ones_like(x), x)
    x = x.reshape(shape).to(device=device, dtype=el.torch_dtype)
    return with_layout(x, layout)


def _pair_plants(el, kind=None, backward=False):
    sp = [s for s in PAIR_SPECIALS if keeps_subnormals(el) or abs(s) != 1e-40]
    if kind in (BinaryKind.POW, BinaryKind.ATAN2) or (
            backward and kind in (BinaryKind.REMAINDER, BinaryKind.FMOD)):
        # subnormals overflow a**(b-1), 1/(a*a+b*b) and (backward of remainder / fmod) the
        # quotient a/b in the compute type, not in float64: -dy * trunc(a/b) is then inf
        # (as torch's backward gives) where the reference may be finite for a small dy
        sp = [s for s in sp if s != 1e-40]
    a = [x for x in sp for _ in sp]
    b = [y for _ in sp for y in sp]
    return a, b


def _binary_combos(scale):
    """(kind, a_el, b_el, a_shape, b_shape, layout) for the binary plans."""
    if scale != "small":
        for kind in (BinaryKind.ADD, BinaryKind.MUL, BinaryKind.DIV):
            yield kind, E.BF16, E.BF16, (1 << 22,), (1 << 22,), "contiguous"
            yield kind, E.F32, E.F32, (2048, 2048), (2048,), "contiguous"
        return
    for kind, row in BINARY.items():
        if kind is BinaryKind.LERP:
            continue
        if row.ints not in ("int",):
            for el in FLOATS:
                yield kind, el, el, (N,), (N,), "contiguous"
        if row.ints in ("exact", "promote", "int", "logical"):
            yield kind, E.I32, E.I32, (N,), (N,), "contiguous"
            if kind in SAME_DTYPE:
                yield kind, E.I8, E.I8, (N,), (N,), "contiguous"
                yield kind, E.I64, E.I64, (N,), (N,), "contiguous"
            else:
                yield kind, E.I64, E.I8, (N,), (N,), "contiguous"
        if row.bool_ok:
            yield kind, E.BOOL, E.BOOL, (N,), (N,), "contiguous"
    sample = [BinaryKind.ADD, BinaryKind.MUL, BinaryKind.DIV, BinaryKind.POW, BinaryKind.MAXIMUM]
    for i, (sa, sb, layout) in enumerate(BROADCAST):
        for kind in sample[i % 2::2]:
            yield kind, FLOATS[i % 4], FLOATS[i % 4], sa, sb, layout
    yield BinaryKind.ADD, E.BF16, E.F32, (N,), (N,), "contiguous"
    yield BinaryKind.MUL, E.F16, E.BF16, (4, 25), (25,), "contiguous"
    yield BinaryKind.DIV, E.I32, E.F32, (4, 25), (1,), "contiguous"
    yield BinaryKind.SUB, E.U8, E.I16, (N,), (N,), "contiguous"


def _make_binary(desc, layout, out_el, backward=False):
    kind = desc.kind

    def make(device, gen):
        (alo, ahi), (blo, bhi) = DOMAIN.get(kind, ((-3.0, 3.0), (-3.0, 3.0)))
        if not desc.a_element.is_float or not desc.b_element.is_float:
            (alo, ahi), (blo, bhi) = INT_DOMAIN.get(kind, ((-20, 20), (-20, 20)))
        pa, pb = _pair_plants(desc.a_element, kind, backward)
        nonzero = kind in DIVIDES
        a = operand(desc.a_shape, desc.a_element, gen, device, alo, ahi, layout, pa)
        b = operand(desc.b_shape, desc.b_element, gen, device, blo, bhi, "contiguous", pb,
                    nonzero=nonzero)
        return BinaryArgs(a=a, b=b, y=poison(desc.shape, out_el.torch_dtype, device))

    return make


def _binary_fn(desc):
    fn = BINARY[desc.kind].ref
    if desc.kind in (BinaryKind.ADD, BinaryKind.SUB):
        alpha = int(desc.alpha) if float(desc.alpha).is_integer() else desc.alpha
        return lambda a, b: fn(a, b, alpha=alpha if a.is_floating_point() else int(alpha))
    return fn


class BinarySpec(PlanSpec):
    plan = BinaryPlan

    def cases(self, scale):
        for kind, ae, be, sa, sb, layout in _binary_combos(scale):
            alpha = 0.5 if kind is BinaryKind.SUB and ae.is_float else 1.0
            desc = BinaryDescriptor(kind, sa, sb, ae, be, alpha=alpha)
            out, compute = binary_types("", desc)

            def expect(args, desc=desc, out=out, compute=compute):
                fn = _binary_fn(desc)
                exact = not out.is_float or (not compute.is_float)
                native = torch.promote_types(desc.a_element.torch_dtype,
                                             desc.b_element.torch_dtype)
                if desc.kind is BinaryKind.NEXTAFTER or (
                        desc.kind is BinaryKind.DIV_TRUNC and out.is_float):
                    # torch truncates the quotient as its own type holds it (rounded first)
                    return {"y": ref.forward(fn, [args.a, args.b], out, native=out.torch_dtype)}
                if exact:
                    return {"y": ref.forward(fn, [args.a, args.b], out, native=native)}
                return {"y": ref.forward(fn, [args.a, args.b], out)}

            yield Case(f"{kind.value} {ae.value}{sa} {be.value}{sb} {layout}", desc,
                       _make_binary(desc, layout, out), expect)

    def malformed_descriptors(self):
        B = BinaryKind
        yield Malformed("not broadcastable",
                        lambda: BinaryDescriptor(B.ADD, (4, 3), (5,), E.F32, E.F32),
                        InvalidProblem)
        yield Malformed("float bitwise",
                        lambda: BinaryDescriptor(B.BITWISE_AND, (4,), (4,), E.F32, E.F32),
                        Unsupported)
        yield Malformed("int hypot", lambda: BinaryDescriptor(B.HYPOT, (4,), (4,), E.I32, E.I32),
                        Unsupported)
        yield Malformed("bool sub", lambda: BinaryDescriptor(B.SUB, (4,), (4,), E.BOOL, E.BOOL),
                        Unsupported)
        yield Malformed("out can't hold", lambda: BinaryDescriptor(
            B.ADD, (4,), (4,), E.F32, E.F32, out_element=E.I32), InvalidProblem)
        yield Malformed("nan alpha", lambda: BinaryDescriptor(
            B.ADD, (4,), (4,), E.F32, E.F32, alpha=math.nan), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        mk = lambda s, el: torch.ones(s, dtype=el.torch_dtype, device=device)  # noqa: E731
        out = binary_types("", d)[0]
        yield Malformed("y wrong shape", lambda: BinaryArgs(mk(d.a_shape, d.a_element),
                                                            mk(d.b_shape, d.b_element),
                                                            mk((7, 7), out)), InvalidProblem)
        yield Malformed("b wrong dtype", lambda: BinaryArgs(
            mk(d.a_shape, d.a_element), mk(d.b_shape, E.F64 if d.b_element != E.F64 else E.F32),
            mk(d.shape, out)), InvalidProblem)


class BinaryBackwardSpec(PlanSpec):
    plan = BinaryBackwardPlan

    def _combos(self, scale):
        if scale != "small":
            yield BinaryKind.MUL, E.BF16, (1 << 22,), (1 << 22,), (True, True)
            yield BinaryKind.ADD, E.F32, (4096, 1024), (1024,), (True, True)
            return
        for kind, row in BINARY.items():
            if row.diff and kind is not BinaryKind.LERP:
                for el in FLOATS:
                    yield kind, el, (N,), (N,), (True, True)
        for i, (sa, sb, _) in enumerate(BROADCAST):
            for kind in (BinaryKind.ADD, BinaryKind.MUL, BinaryKind.DIV):
                yield kind, FLOATS[i % 4], sa, sb, (True, True)
        yield BinaryKind.MUL, E.F32, (3, 5000), (1, 5000), (False, True)
        yield BinaryKind.POW, E.F64, (6, 1), (1, 8), (True, False)

    def cases(self, scale):
        for kind, el, sa, sb, needs in self._combos(scale):
            desc = BinaryBackwardDescriptor(kind, sa, sb, el, el, needs=needs)

            def make(device, gen, desc=desc, el=el):
                fw = _make_binary(desc, "contiguous", el, backward=True)(device, gen)
                dt = el.torch_dtype
                return BinaryBackwardArgs(
                    dy=rand_dy(desc.shape, el, gen, device), a=fw.a, b=fw.b,
                    da=poison(desc.a_shape, dt, device) if desc.needs[0] else None,
                    db=poison(desc.b_shape, dt, device) if desc.needs[1] else None)

            def expect(args, desc=desc, el=el):
                g = ref.gradients(_binary_fn(desc), [args.a, args.b], args.dy, desc.needs,
                                  [el, el])
                return {n: v for n, v in zip(("da", "db"), g) if v is not None}

            yield Case(f"{kind.value} bwd {el.value} {sa} {sb} {needs}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("no gradient", lambda: BinaryBackwardDescriptor(
            BinaryKind.BITWISE_OR, (4,), (4,), E.I32, E.I32), Unsupported)
        yield Malformed("not broadcastable", lambda: BinaryBackwardDescriptor(
            BinaryKind.MUL, (4,), (3,), E.F32, E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        mk = lambda s: torch.ones(s, dtype=d.a_element.torch_dtype, device=device)  # noqa: E731
        yield Malformed("da wrong shape", lambda: BinaryBackwardArgs(
            mk(d.shape), mk(d.a_shape), mk(d.b_shape), mk((3, 3)), mk(d.b_shape)),
            InvalidProblem)
        yield Malformed("da aliases dy", lambda: (lambda g: BinaryBackwardArgs(
            g, mk(d.a_shape), mk(d.b_shape), g, mk(d.b_shape)))(mk(d.shape)), InvalidProblem)


class CompareSpec(PlanSpec):
    plan = BinaryCmpPlan

    def cases(self, scale):
        shape = (N,) if scale == "small" else (1 << 22,)
        combos = [(k, el, el) for k in CompareKind for el in (E.F32, E.BF16, E.F64, E.I32, E.BOOL)]
        combos += [(CompareKind.LT, E.F32, E.I64), (CompareKind.EQ, E.F16, E.BF16),
                   (CompareKind.ISCLOSE, E.F32, E.F64)]
        if scale != "small":
            combos = combos[:3]
        for kind, ae, be in combos:
            for equal_nan in ((False, True) if kind is CompareKind.ISCLOSE else (False,)):
                desc = CompareDescriptor(kind, shape, (shape if ae is not be else (1,)), ae, be,
                                         rtol=1e-3, atol=1e-4, equal_nan=equal_nan)

                def make(device, gen, desc=desc):
                    pa, pb = _pair_plants(desc.a_element)
                    a = operand(desc.a_shape, desc.a_element, gen, device, -2.0, 2.0, plant=pa)
                    b = operand(desc.b_shape, desc.b_element, gen, device, -2.0, 2.0, plant=pb)
                    if desc.a_shape == desc.b_shape and desc.b_element == desc.a_element:
                        b[500:700] = a[500:700]  # equal and nearly equal pairs
                        if desc.a_element.is_float:
                            b[600:700] = a[600:700] * 1.0001
                    return BinaryArgs(a=a, b=b, y=poison(desc.shape, torch.bool, device))

                def expect(args, desc=desc):
                    native = torch.promote_types(desc.a_element.torch_dtype,
                                                 desc.b_element.torch_dtype)
                    a, b = args.a.cpu().to(native), args.b.cpu().to(native)
                    if desc.kind is CompareKind.ISCLOSE:
                        return {"y": torch.isclose(a, b, desc.rtol, desc.atol, desc.equal_nan)}
                    return {"y": COMPARE[desc.kind].ref(a, b)}

                yield Case(f"{kind.value} {ae.value} {be.value} nan={equal_nan}", desc, make,
                           expect)

    def malformed_descriptors(self):
        yield Malformed("negative rtol", lambda: CompareDescriptor(
            CompareKind.ISCLOSE, (4,), (4,), E.F32, E.F32, rtol=-1.0), InvalidProblem)
        yield Malformed("shapes", lambda: CompareDescriptor(
            CompareKind.EQ, (4,), (5,), E.F32, E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        yield Malformed("y not bool", lambda: BinaryArgs(
            torch.ones(d.a_shape, dtype=d.a_element.torch_dtype, device=device),
            torch.ones(d.b_shape, dtype=d.b_element.torch_dtype, device=device),
            torch.ones(d.shape, device=device)), InvalidProblem)


TERNARY_SHAPES = [((N,), (N,), (N,)), ((4, 25), (25,), (4, 1)), ((3, 1, 7), (5, 1), ())]


def _ternary_operands(desc, device, gen):
    k = desc.kind
    shapes = (desc.a_shape, desc.b_shape, desc.c_shape)
    els = (desc.a_element, desc.b_element, desc.c_element)
    sp = specials_for(E.F32)
    out = []
    for i, (s, el) in enumerate(zip(shapes, els)):
        lo, hi = (-3.0, 3.0)
        if k is TernaryKind.LERP and i == 2:
            lo, hi = (-0.5, 1.5)
        if k is TernaryKind.ADDCDIV and i == 2:
            lo, hi = (0.5, 3.0)
        if k is TernaryKind.CLAMP:
            lo, hi = ((-3.0, 3.0), (-2.0, 0.0), (0.0, 2.0))[i]
        plant = sp[i::3] if el.is_float and i == 0 else None
        out.append(operand(s, el, gen, device, lo, hi, "strided" if i == 1 else "contiguous",
                           plant))
    return out


def _ternary_fn(desc):
    fn = TERNARY[desc.kind].ref
    if desc.kind in (TernaryKind.ADDCMUL, TernaryKind.ADDCDIV):
        return lambda a, b, c: fn(a, b, c, value=desc.value)
    return fn


def _ternary_combos(scale):
    if scale != "small":
        yield TernaryKind.LERP, (E.BF16,) * 3, ((1 << 22,),) * 3
        return
    for kind in TernaryKind:
        for el in FLOATS:
            for shapes in TERNARY_SHAPES[:2] if el in (E.F32, E.F64) else TERNARY_SHAPES[:1]:
                els = (E.BOOL, el, el) if kind is TernaryKind.WHERE else (el, el, el)
                yield kind, els, shapes
    yield TernaryKind.WHERE, (E.BOOL, E.I32, E.F32), TERNARY_SHAPES[2]
    yield TernaryKind.CLAMP, (E.I32, E.I32, E.I64), TERNARY_SHAPES[1]
    yield TernaryKind.ADDCMUL, (E.F32, E.BF16, E.F32), TERNARY_SHAPES[2]


class TernarySpec(PlanSpec):
    plan = TernaryPlan

    def cases(self, scale):
        for kind, els, shapes in _ternary_combos(scale):
            value = -0.5 if kind in (TernaryKind.ADDCMUL, TernaryKind.ADDCDIV) else 1.0
            desc = TernaryDescriptor(kind, *shapes, *els, value=value)
            out, _ = ternary_types("", desc)

            def make(device, gen, desc=desc, out=out):
                a, b, c = _ternary_operands(desc, device, gen)
                return TernaryArgs(a=a, b=b, c=c, y=poison(desc.shape, out.torch_dtype, device))

            def expect(args, desc=desc, out=out):
                fn = _ternary_fn(desc)
                if not out.is_float:
                    return {"y": ref.forward(fn, [args.a, args.b, args.c], out,
                                             native=out.torch_dtype)}
                if desc.kind is TernaryKind.WHERE:
                    return {"y": ref.rounded(fn(args.a.cpu(), ref.to64(args.b),
                                                ref.to64(args.c)), out)}
                return {"y": ref.forward(fn, [args.a, args.b, args.c], out)}

            yield Case(f"{kind.value} {[e.value for e in els]} {shapes}", desc, make, expect)

    def malformed_descriptors(self):
        T = TernaryKind
        yield Malformed("where non-bool", lambda: TernaryDescriptor(
            T.WHERE, (4,), (4,), (4,), E.F32, E.F32, E.F32), Unsupported)
        yield Malformed("lerp mixed", lambda: TernaryDescriptor(
            T.LERP, (4,), (4,), (4,), E.F32, E.F32, E.F64), InvalidProblem)
        yield Malformed("shapes", lambda: TernaryDescriptor(
            T.ADDCMUL, (4,), (3,), (4,), E.F32, E.F32, E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        mk = lambda s, el: torch.ones(s, dtype=el.torch_dtype, device=device)  # noqa: E731
        out = ternary_types("", d)[0]
        yield Malformed("c wrong shape", lambda: TernaryArgs(
            mk(d.a_shape, d.a_element), mk(d.b_shape, d.b_element), mk((9, 9), d.c_element),
            mk(d.shape, out)), InvalidProblem)


class TernaryBackwardSpec(PlanSpec):
    plan = TernaryBackwardPlan

    def cases(self, scale):
        for fw in TernarySpec().cases(scale):
            d = fw.desc
            out, _ = ternary_types("", d)
            els = (d.a_element, d.b_element, d.c_element)
            if out not in FLOATS or len(set(els) - {E.BOOL}) != 1:
                continue
            needs = (False, True, True) if d.kind is TernaryKind.WHERE else (True, True, True)
            desc = TernaryBackwardDescriptor(d.kind, d.a_shape, d.b_shape, d.c_shape, *els,
                                             value=d.value, needs=needs)

            def make(device, gen, desc=desc, out=out):
                a, b, c = _ternary_operands(desc, device, gen)
                grads = [poison(getattr(desc, f"{n}_shape"), out.torch_dtype, device)
                         if desc.needs[i] else None for i, n in enumerate("abc")]
                return TernaryBackwardArgs(rand_dy(desc.shape, out, gen, device), a, b, c,
                                           *grads)

            def expect(args, desc=desc, out=out):
                fn = _ternary_fn(desc)
                if desc.kind is TernaryKind.WHERE:
                    cond = args.a.cpu()
                    g = ref.gradients(lambda b, c: fn(cond, b, c), [args.b, args.c], args.dy,
                                      (True, True), [out, out])
                    return {"db": g[0], "dc": g[1]}
                g = ref.gradients(fn, [args.a, args.b, args.c], args.dy, desc.needs, [out] * 3)
                return dict(zip(("da", "db", "dc"), g))

            yield Case(fw.name + " bwd", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("where cond grad", lambda: TernaryBackwardDescriptor(
            TernaryKind.WHERE, (4,), (4,), (4,), E.BOOL, E.F32, E.F32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        out = ternary_types("", d)[0]
        mk = lambda s, el=out: torch.ones(s, dtype=el.torch_dtype, device=device)  # noqa: E731
        yield Malformed("dy wrong shape", lambda: TernaryBackwardArgs(
            mk((9, 9)), mk(d.a_shape, d.a_element), mk(d.b_shape), mk(d.c_shape),
            mk(d.a_shape) if d.needs[0] else None, mk(d.b_shape), mk(d.c_shape)),
            InvalidProblem)


for _spec in (BinarySpec(), BinaryBackwardSpec(), CompareSpec(), TernarySpec(),
              TernaryBackwardSpec()):
    register_spec(_spec)
