"""Scan test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import itertools
import math

import torch

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, randn, with_layout
from ...core.tolerance import tolerance_for
from ...core.vocab import ElementKind
from . import kernels as K
from . import reference as ref
from .descriptors import (
    FLOAT_ONLY_KINDS,
    INDEXED_KINDS,
    PAIRWISE_KINDS,
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanDescriptor,
    ScanKind,
)
from .plans import (
    ScanBackwardPlan,
    ScanPlan,
    _acc_tl,
    code_of,
    launch_config,
    total_dtypes,
)

E = ElementKind
FLOATS = (E.F32, E.BF16, E.F64, E.F16)

# (shape, axis, layout, special, reverse): ragged extents, every layout, inner and outer axes,
# lines cut into chunks (20000), NaN / inf specials, empty and rank-8 problems.
SMALL = [
    ((3, 777), 1, "contiguous", None, False),
    ((2, 100, 4), 1, "strided", None, False),
    ((300,), 0, "contiguous", "nan_inf", False),
    ((6, 33), -1, "transposed", None, True),
    ((40, 24), 0, "contiguous", "ties", False),
    ((2, 0, 5), 2, "contiguous", None, False),
    ((2, 1, 3, 2, 2, 1, 2, 5), 0, "contiguous", None, False),
    ((7, 3), 0, "broadcast", None, True),
]
#: a line long enough to be cut into chunks on the interpreter (tests/families/test_scan.py
#: takes every kind through the chunked passes on smaller tiles)
CHUNKED = ((20000,), 0, "contiguous", None, False)
REAL = [
    ((4096, 4096), 1, "contiguous", None, False),
    ((16384, 4096), 0, "contiguous", None, False),
    ((1 << 24,), 0, "contiguous", "nan_inf", False),
    ((512, 128, 33), 1, "strided", None, True),
]
INTEGERS = (E.I32, E.I64, E.U8, E.BOOL, E.I8, E.I16)


def _input(shape, element, kind, device, gen, special, layout):
    if kind is ScanKind.CUMPROD:  # factors near one: long products neither vanish nor blow up
        x = rand(shape, torch.float64, "cpu", gen, 0.85, 1.15)
        if x.numel():
            x.view(-1)[::37] = 0.0  # zeros: the gradient's hard case
    else:
        x = randn(shape, torch.float64, "cpu", gen, std=2.0)
    if not element.is_float:  # small integers; products of ones and twos (they wrap, as torch's)
        x = (x * 3).round() if kind is not ScanKind.CUMPROD else torch.ones_like(x) + \
            (x > 1.1).to(x.dtype)
        if element in (E.U8, E.BOOL):
            x = x.abs()
    if special == "nan_inf" and x.numel():
        x.view(-1)[17::53] = float("inf")
        x.view(-1)[29::71] = -float("inf")
        x.view(-1)[101::97] = float("nan")
    elif special == "ties" and x.numel():
        x = (x * 2).round() / 2
    return with_layout(x.to(device, element.torch_dtype), layout)


def _spacing(desc, device, gen):
    """cumulative_trapezoid's spacings: positive, uneven, every other case one constant
    broadcast with stride 0."""
    if desc.kind is not ScanKind.CUMULATIVE_TRAPEZOID:
        return None
    shape = desc.output_shape
    if sum(shape) % 2:
        return rand((), desc.element.torch_dtype, device, gen, 0.5, 2.0).expand(shape)
    return rand(shape, desc.element.torch_dtype, device, gen, 0.1, 2.0)


def _tolerances(kind, shape, axis, element) -> dict:
    """A scan of n terms rounds like a sum of n terms: f32 / f16 sums and products get
    sqrt(n)-scaled tolerances past 64 terms (the reference is exact in float64)."""
    n = shape[axis] if shape else 1
    factor = max(1.0, math.sqrt(n / 64))
    if kind in INDEXED_KINDS or not element.is_float:
        return {}
    return {"y": tolerance_for(element).scaled(factor), "dx": tolerance_for(element).scaled(
        4 * factor)}


def _forward_case(shape, axis, layout, special, reverse, kind, element) -> Case:
    desc = ScanDescriptor(kind, shape, axis, element, reverse)

    def make(device, gen):
        x = _input(shape, element, kind, device, gen, special, layout)
        out = desc.output_element.torch_dtype
        idx = poisoned(shape, torch.int64, device) if kind in INDEXED_KINDS else None
        return ScanArgs(x=x, y=poisoned(desc.output_shape, out, device), indices=idx,
                        spacing=_spacing(desc, device, gen))

    def expect(args):
        return ref.scan_forward(args.x, axis, kind, reverse, args.spacing)

    name = f"{kind.value} {shape} ax{axis} {layout} {special} rev={reverse} {element.value}"
    tol = {k: v for k, v in _tolerances(kind, shape, axis, element).items() if k == "y"}
    return Case(name, desc, make, expect, tol=tol)


def forward_cases(scale: str, specials: bool = True):
    table = SMALL if scale == "small" else REAL
    if not specials:
        table = [(s, a, lay, sp if sp == "ties" else None, r) for s, a, lay, sp, r in table]
    elements = FLOATS if scale == "small" else (E.F32, E.BF16)
    for i, ((shape, axis, layout, special, reverse), kind) in enumerate(
            itertools.product(table, ScanKind)):
        element = elements[i % len(elements)]  # every dtype meets every kind across the table
        reverse = reverse and kind not in PAIRWISE_KINDS  # (pairs have no direction)
        yield _forward_case(shape, axis, layout, special, reverse, kind, element)
    if scale == "small":
        yield _forward_case(*CHUNKED, ScanKind.CUMSUM, E.F32)
        for i, kind in enumerate(k for k in ScanKind if k not in FLOAT_ONLY_KINDS):
            shape, axis, layout, special, reverse = SMALL[i]
            yield _forward_case(shape, axis, layout, None, reverse and kind not in PAIRWISE_KINDS,
                                kind, INTEGERS[i])


class ScanSpec(PlanSpec):
    plan = ScanPlan

    def cases(self, scale):
        return forward_cases(scale)

    def malformed_descriptors(self):
        K_, F = ScanKind.CUMSUM, E.F32
        yield Malformed("axis out of range", lambda: ScanDescriptor(K_, (4, 8), 2, F),
                        InvalidProblem)
        yield Malformed("negative extent", lambda: ScanDescriptor(K_, (4, -1), 1, F),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: ScanDescriptor(K_, (1,) * 9, 0, F), Unsupported)
        yield Malformed("rank 0", lambda: ScanDescriptor(K_, (), 0, F), Unsupported)
        yield Malformed("integer logcumsumexp",
                        lambda: ScanDescriptor(ScanKind.LOGCUMSUMEXP, (4, 8), 1, E.I32),
                        Unsupported)
        yield Malformed("int32 cumsum into int32",
                        lambda: ScanDescriptor(K_, (4, 8), 1, E.I32, False, E.I32), Unsupported)
        yield Malformed("reverse not a bool", lambda: ScanDescriptor(K_, (4, 8), 1, F, 1),
                        InvalidProblem)
        yield Malformed("bad kind", lambda: ScanDescriptor("no_such_kind", (4, 8), 1, F),
                        InvalidProblem)
        yield Malformed("reverse diff", lambda: ScanDescriptor(ScanKind.DIFF, (4, 8), 1, F, True),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        shape = d.input_shape
        good = lambda: randn(shape, dt, device, torch.Generator().manual_seed(1))  # noqa: E731
        out = lambda s=shape: torch.empty(s, dtype=d.output_element.torch_dtype,  # noqa: E731
                                          device=device)
        idx = (lambda: torch.empty(shape, dtype=torch.int64, device=device)) \
            if d.kind in INDEXED_KINDS else (lambda: None)
        wrong = tuple(s + 1 for s in shape)
        other = torch.float64 if dt != torch.float64 else torch.float32
        yield Malformed("y wrong shape", lambda: ScanArgs(good(), out(wrong), idx()),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: ScanArgs(good().to(other), out(), idx()),
                        InvalidProblem)
        yield Malformed("y aliases x", lambda: (lambda x: ScanArgs(x, x, idx()))(good()),
                        InvalidProblem)
        yield Malformed("not a tensor", lambda: ScanArgs([1.0], out(), idx()), InvalidProblem)
        if d.kind not in INDEXED_KINDS:
            yield Malformed("indices where none are made",
                            lambda: ScanArgs(good(), out(),
                                             torch.empty(shape, dtype=torch.int64,
                                                         device=device)), InvalidProblem)

    def aot_variants(self):
        yield from aot_variants()


def _backward_case(fw: Case, spacing_grad: bool = False) -> Case:
    """The gradient of a forward case (its inputs without NaN / inf: where torch's formulas
    and ours meet a NaN differently is not a contract); cumulative_trapezoid's for its
    spacings with `spacing_grad`."""
    d = fw.desc
    desc = ScanBackwardDescriptor(d.kind, d.input_shape, d.scan_axis, d.element, d.reverse,
                                  spacing_grad)
    saves = d.kind in (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)

    def make(device, gen):
        fargs = fw.make_args(device, gen)
        outs = ref.scan_forward(fargs.x, d.scan_axis, d.kind, d.reverse, fargs.spacing)
        y = outs["y"].to(device, fargs.x.dtype)
        # (strided: past rank 4 its dims do not collapse, launched in groups; slow to interpret)
        layout = "strided" if len(d.input_shape) <= 4 else "contiguous"
        dy = with_layout(randn(d.output_shape, y.dtype, device, gen), layout)
        return ScanBackwardArgs(dy=dy, dx=poisoned(desc.grad_shape, y.dtype, device),
                                x=fargs.x if saves or spacing_grad else None,
                                y=y if saves else None,
                                indices=outs["indices"].to(device) if "indices" in outs
                                else None, spacing=fargs.spacing)

    def expect(args):
        if args.indices is not None:
            return {"dx": ref.scan_backward_indexed(args.dy, args.indices, d.scan_axis)}
        x = args.x  # (these gradients ignore x: any x of the input's shape)
        if x is None:
            x = torch.zeros(d.input_shape, dtype=torch.float64)
        return {"dx": ref.scan_backward(args.dy, x, d.scan_axis, d.kind, d.reverse,
                                        args.spacing, spacing_grad)}

    tol = _tolerances(d.kind, d.input_shape, d.axis, d.element)
    tol = {"dx": tol["dx"]} if "dx" in tol else {}
    suffix = "_spacing_bwd" if spacing_grad else "_bwd"
    return Case(fw.name.replace(d.kind.value, d.kind.value + suffix, 1), desc, make, expect,
                tol=tol)


class ScanBackwardSpec(PlanSpec):
    plan = ScanBackwardPlan

    def cases(self, scale):
        spacing_cases = 0
        for fw in forward_cases(scale, specials=False):
            if fw.desc.element.is_float:
                yield _backward_case(fw)
            if fw.desc.kind is ScanKind.CUMULATIVE_TRAPEZOID and spacing_cases < 3:
                spacing_cases += 1
                yield _backward_case(fw, spacing_grad=True)

    def malformed_descriptors(self):
        yield Malformed("integer element",
                        lambda: ScanBackwardDescriptor(ScanKind.CUMSUM, (4, 8), 1, E.I32),
                        Unsupported)
        yield Malformed("axis out of range",
                        lambda: ScanBackwardDescriptor(ScanKind.CUMPROD, (4, 8), -3, E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.input_shape: randn(s, dt, device,  # noqa: E731
                                           torch.Generator().manual_seed(2))
        saves = d.kind in (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)
        idx = (lambda: torch.zeros(d.input_shape, dtype=torch.int64, device=device)) \
            if d.kind in INDEXED_KINDS else (lambda: None)
        sv = (lambda: mk()) if saves else (lambda: None)
        bad = tuple(s + 1 for s in d.input_shape)
        yield Malformed("dy wrong shape",
                        lambda: ScanBackwardArgs(mk(bad), mk(), sv(), sv(), idx()),
                        InvalidProblem)
        yield Malformed("dx overlaps dy",
                        lambda: (lambda g: ScanBackwardArgs(g, g, sv(), sv(), idx()))(mk()),
                        InvalidProblem)
        yield Malformed("missing saved tensors",
                        lambda: ScanBackwardArgs(mk(), mk(), None, None,
                                                 None if d.kind in INDEXED_KINDS else
                                                 torch.zeros(d.input_shape, dtype=torch.int64,
                                                             device=device)),
                        InvalidProblem)


register_spec(ScanSpec())
register_spec(ScanBackwardSpec())


def aot_variants():
    """Every kind, forward and backward, in both tile shapes (a line per tile along the
    innermost axis; a run of neighbouring lines along an outer one), both passes of chunked
    lines, integer and 16-bit elements."""
    line, column = ((64, 65536), 1, E.BF16), ((16384, 4096), 0, E.F32)
    rows = [(ScanDescriptor(k, *line), 0) for k in ScanKind]
    rows += [(ScanDescriptor(k, *column), 0) for k in (ScanKind.CUMSUM, ScanKind.CUMMAX)]
    rows += [(ScanDescriptor(k, (1 << 28,), 0, E.F32), phase)
             for k in (ScanKind.CUMSUM, ScanKind.CUMMAX) for phase in (1, 0)]
    rows += [(ScanDescriptor(k, (64, 65536), 1, el), 0)
             for k, el in ((ScanKind.CUMSUM, E.I32), (ScanKind.CUMMAX, E.I32),
                           (ScanKind.DIFF, E.I64))]
    rows += [(ScanBackwardDescriptor(k, *line), 0) for k in ScanKind]
    rows += [(ScanBackwardDescriptor(ScanKind.CUMPROD, *column), 0),
             (ScanBackwardDescriptor(ScanKind.CUMULATIVE_TRAPEZOID, *line, spacing_grad=True),
              0)]
    seen = set()
    for desc, phase in rows:
        cfg = launch_config(desc)
        backward = isinstance(desc, ScanBackwardDescriptor)
        key = (code_of(desc), desc.element, cfg["LINES"], cfg["BLOCK"], phase)
        if key in seen:
            continue
        seen.add(key)
        io = "*" + triton_dtype(desc.element.torch_dtype)
        out = "*" + triton_dtype(desc.output_element.torch_dtype) if not backward else io
        idx = "*i64" if desc.kind in INDEXED_KINDS else io
        t0, t1 = ("*" + triton_dtype(t) for t in total_dtypes(desc))
        ptrs = {"in0": io, "in1": io, "in2": idx if backward else io, "out0": out,
                "out1": idx if not backward else io, "tot0": t0, "tot1": t1}
        const = dict(KIND=code_of(desc), ACC=_acc_tl(desc), INT=not desc.element.is_float,
                     REVERSE=backward, LINES=cfg["LINES"], BLOCK=cfg["BLOCK"], PHASE=phase,
                     TOTALS=cfg["TOTALS"])
        # as the JIT specializes contiguous tensors: the unit strides are constants
        unit = "an bn cn dn en" if desc.axis == len(desc.input_shape) - 1 else "ai bi ci di ei"
        const.update({n: 1 for n in unit.split()})
        yield AotVariant.auto(
            f"scan_kernel {'bwd' if backward else 'fwd'} {desc.kind.value} "
            f"{desc.element.value} L={cfg['LINES']} B={cfg['BLOCK']} phase={phase}",
            K.scan_kernel, ptrs, const, num_warps=cfg["num_warps"],
            divisible=("N", "chunk_len", "a0", "b0", "c0", "d0", "e0"))


def _bench_rows():
    rows = []
    for dtype, (shape, dim) in itertools.product(
            (torch.bfloat16, torch.float32),
            (((32768, 1024), 1), ((4096, 16384), 1), ((16384, 4096), 0))):
        rows.append(("cumsum", shape, dim, dtype))
    rows.append(("cumsum", (1 << 28,), 0, torch.float32))
    rows += [("cummax", (4096, 16384), 1, torch.bfloat16),
             ("logcumsumexp", (4096, 16384), 1, torch.bfloat16),
             ("cumprod", (16384, 4096), 0, torch.float32)]
    return rows


@register_bench("scan")
def scan_benches(quick: bool):
    from . import torch_api as ours

    out = []
    for name, shape, dim, dtype in _bench_rows():
        nbytes = math.prod(shape) * dtype.itemsize
        extra = 8 * math.prod(shape) if name == "cummax" else 0  # the int64 indices written
        label = f"{list(shape)} dim={dim} {str(dtype).replace('torch.', '')}"

        def setup(device, shape=shape, dtype=dtype):
            x = torch.randn(shape, device=device, dtype=dtype)
            return {"x": x, "dy": torch.randn_like(x)}

        fn, ref_fn = getattr(ours, name), getattr(torch, name)
        out.append(BenchCase(f"{name} fwd", label, setup,
                             ours=lambda x, dy, fn=fn, dim=dim: fn(x, dim),
                             torch_eager=lambda x, dy, f=ref_fn, dim=dim: f(x, dim),
                             bytes=2 * nbytes + extra, quick=name == "cumsum"))
        if name == "cumsum" and len(shape) == 2:
            def fwbw_setup(device, shape=shape, dtype=dtype):
                x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
                return {"x": x, "dy": torch.randn_like(x)}

            out.append(BenchCase(
                "cumsum fwd+bwd", label, fwbw_setup,
                ours=lambda x, dy, dim=dim: torch.autograd.grad(ours.cumsum(x, dim), x, dy),
                torch_eager=lambda x, dy, dim=dim: torch.autograd.grad(torch.cumsum(x, dim),
                                                                       x, dy),
                bytes=4 * nbytes, quick=False))
    out.extend(_generic_benches())
    return out


def _generic_benches() -> list[BenchCase]:
    """`baracuda.associative_scan` with a user's add against torch.cumsum, and torch.gradient
    (central differences: one read, one write) on rows of [4096, 16384]."""
    from .generic import associative_scan
    from .spec_generic import combine_add
    from .torch_gradient import gradient

    shape = (4096, 16384)
    out = []
    for dtype in (torch.bfloat16, torch.float32):
        nbytes = math.prod(shape) * dtype.itemsize
        label = f"{list(shape)} dim=1 {str(dtype).replace('torch.', '')}"

        def setup(device, dtype=dtype):
            return {"x": torch.randn(shape, device=device, dtype=dtype)}

        out.append(BenchCase("associative_scan(add) fwd", label, setup,
                             ours=lambda x: associative_scan(combine_add, x, 1),
                             torch_eager=lambda x: torch.cumsum(x, 1),
                             bytes=2 * nbytes, quick=False))
        out.append(BenchCase("gradient fwd", label, setup,
                             ours=lambda x: gradient(x, dim=1),
                             torch_eager=lambda x: torch.gradient(x, dim=1),
                             bytes=2 * nbytes, quick=False))
    return out


# the stencil's and the user-combine scan's specs register on import (discovery imports spec)
from . import spec_generic, spec_gradient  # noqa: E402,F401
