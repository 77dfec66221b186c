"""GradientPlan / GradientBackwardPlan test cases, malformed inputs and AOT variants."""

from __future__ import annotations

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, randn, with_layout
from ...core.vocab import ElementKind
from . import kernels_stencil as K
from . import reference as ref
from .descriptors_gradient import (
    GradientArgs,
    GradientBackwardArgs,
    GradientBackwardDescriptor,
    GradientDescriptor,
    table_element,
)
from .plans_gradient import GradientBackwardPlan, GradientPlan, launch_config
from .torch_gradient import _coordinate_table, _uniform_table

E = ElementKind
FLOATS = (E.F32, E.BF16, E.F64, E.F16)
# (shape, axis, layout, table, special): ragged and tiny lines (2 and 3 points: the end rows
# share taps), every layout, inner and outer axes, NaN / inf, empty and rank-8 problems;
# tables: uniform spacing of edge order 1 / 2, or coordinates of edge order 1 / 2
SMALL = [
    ((3, 777), 1, "contiguous", "uniform1", None),
    ((2, 100, 4), 1, "strided", "coords2", None),
    ((300,), 0, "contiguous", "uniform2", "nan_inf"),
    ((6, 33), -1, "transposed", "coords1", None),
    ((40, 24), 0, "contiguous", "uniform2", None),
    ((5, 2), 1, "contiguous", "uniform1", None),
    ((3, 4), 0, "strided", "coords2", None),
    ((2, 0, 5), 2, "contiguous", "uniform1", None),
    ((2, 1, 3, 2, 2, 1, 2, 5), 0, "contiguous", "coords1", None),
    ((7, 3), 0, "broadcast", "uniform1", None),
    ((4, 5000), 1, "contiguous", "uniform2", None),
]


def make_table(kind: str, n: int, element: ElementKind, device, gen) -> torch.Tensor:
    """A coefficient table: uniform spacing (a random h) or random increasing coordinates
    (spacings 0.5 .. 2: the weights stay of order one)."""
    dtype = table_element(element).torch_dtype
    edge = int(kind[-1])
    if kind.startswith("uniform"):
        h = float(rand((), torch.float64, "cpu", gen, 0.5, 2.0))
        return _uniform_table(n, h, edge, dtype, device)
    coords = rand((n,), torch.float64, "cpu", gen, 0.5, 2.0).cumsum(0)
    return _coordinate_table(coords, n, edge).to(device, dtype)


def _input(shape, element, device, gen, special, layout):
    x = randn(shape, torch.float64, "cpu", gen, std=2.0)
    if special == "nan_inf" and x.numel():
        x.view(-1)[17::53] = float("inf")
        x.view(-1)[29::71] = -float("inf")
        x.view(-1)[101::97] = float("nan")
    return with_layout(x.to(device, element.torch_dtype), layout)


def _case(shape, axis, layout, table, special, element, backward: bool) -> Case:
    cls = GradientBackwardDescriptor if backward else GradientDescriptor
    desc = cls(shape, axis, element)
    n = shape[axis]

    def make(device, gen):
        t = make_table(table, n, element, device, gen)
        x = _input(shape, element, device, gen, None if backward else special, layout)
        out = poisoned(shape, element.torch_dtype, device)
        if backward:
            return GradientBackwardArgs(dy=x, dx=out, table=t)
        return GradientArgs(x=x, y=out, table=t)

    def expect(args):
        ax = desc.axis
        if backward:
            return {"dx": ref.stencil_backward(args.dy.cpu(), args.table.cpu(), ax)}
        return {"y": ref.stencil(ref._wide(args.x), args.table.cpu(), ax)}

    name = (f"gradient{'_bwd' if backward else ''} {shape} ax{axis} {layout} {table} "
            f"{special} {element.value}")
    return Case(name, desc, make, expect)


def cases(scale: str, backward: bool):
    if scale != "small":
        rows = [((4096, 4096), 1, "contiguous", "uniform1", None),
                ((16384, 4096), 0, "contiguous", "coords2", None),
                ((1 << 24,), 0, "contiguous", "uniform2", "nan_inf")]
        for i, row in enumerate(rows):
            yield _case(*row, (E.F32, E.BF16)[i % 2], backward)
        return
    for i, row in enumerate(SMALL):
        yield _case(*row, FLOATS[i % len(FLOATS)], backward)


class GradientSpec(PlanSpec):
    plan = GradientPlan

    def cases(self, scale):
        return cases(scale, backward=False)

    def malformed_descriptors(self):
        yield Malformed("axis out of range", lambda: GradientDescriptor((4, 8), 2, E.F32),
                        InvalidProblem)
        yield Malformed("integer element", lambda: GradientDescriptor((4, 8), 1, E.I32),
                        Unsupported)
        yield Malformed("rank 0", lambda: GradientDescriptor((), 0, E.F32), Unsupported)
        yield Malformed("negative extent", lambda: GradientDescriptor((4, -1), 1, E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        shape, n = d.input_shape, d.input_shape[d.axis]
        good = lambda: randn(shape, dt, device, torch.Generator().manual_seed(1))  # noqa: E731
        tdt = table_element(d.element).torch_dtype
        table = lambda: torch.ones(n, 4, dtype=tdt, device=device)  # noqa: E731
        out = lambda: torch.empty(shape, dtype=dt, device=device)  # noqa: E731
        yield Malformed("table wrong shape",
                        lambda: GradientArgs(good(), out(), torch.ones(n, 3, dtype=tdt,
                                                                       device=device)),
                        InvalidProblem)
        yield Malformed("table wrong dtype",
                        lambda: GradientArgs(good(), out(), table().to(torch.float16)),
                        InvalidProblem)
        yield Malformed("y aliases x", lambda: (lambda x: GradientArgs(x, x, table()))(good()),
                        InvalidProblem)
        yield Malformed("y wrong shape",
                        lambda: GradientArgs(good(), torch.empty(tuple(s + 1 for s in shape),
                                                                 dtype=dt, device=device),
                                             table()), InvalidProblem)

    def aot_variants(self):
        yield from aot_variants()


class GradientBackwardSpec(PlanSpec):
    plan = GradientBackwardPlan

    def cases(self, scale):
        return cases(scale, backward=True)

    def malformed_descriptors(self):
        yield Malformed("integer element",
                        lambda: GradientBackwardDescriptor((4, 8), 1, E.I64), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        shape, n = d.input_shape, d.input_shape[d.axis]
        mk = lambda: randn(shape, dt, device, torch.Generator().manual_seed(2))  # noqa: E731
        tdt = table_element(d.element).torch_dtype
        yield Malformed("missing table", lambda: GradientBackwardArgs(mk(), mk(), None),
                        InvalidProblem)
        yield Malformed("dx overlaps dy",
                        lambda: (lambda g: GradientBackwardArgs(
                            g, g, torch.ones(n, 4, dtype=tdt, device=device)))(mk()),
                        InvalidProblem)


register_spec(GradientSpec())
register_spec(GradientBackwardSpec())


def aot_variants():
    """Forward and backward, line tiles (innermost axis) and column tiles (outer axis), f32,
    bf16 and f64."""
    rows = [((64, 65536), 1, E.BF16), ((16384, 4096), 0, E.F32), ((64, 65536), 1, E.F64)]
    for shape, axis, el in rows:
        for cls in (GradientDescriptor, GradientBackwardDescriptor):
            desc = cls(shape, axis, el)
            cfg = launch_config(desc)
            io = "*" + triton_dtype(el.torch_dtype)
            tab = "*" + triton_dtype(table_element(el).torch_dtype)
            backward = cls is GradientBackwardDescriptor
            const = dict(ACC=acc_type(el), BACKWARD=backward, LINES=cfg["LINES"],
                         BLOCK=cfg["BLOCK"], tk=1)
            # as the JIT specializes contiguous tensors: the unit strides are constants
            const.update({k: 1 for k in (("an", "dn") if axis == len(shape) - 1 else
                                         ("ai", "di"))})
            yield AotVariant.auto(
                f"stencil_kernel {'bwd' if backward else 'fwd'} {el.value} "
                f"L={cfg['LINES']} B={cfg['BLOCK']}",
                K.stencil_kernel, {"src": io, "table": tab, "dst": io}, const,
                num_warps=cfg["num_warps"], divisible=("N", "a0", "d0"))
