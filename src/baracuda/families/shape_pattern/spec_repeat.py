"""RepeatPlan / RepeatBackwardPlan test cases, malformed inputs, AOT variants and bench rows."""

from __future__ import annotations

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import kernels_repeat as KR
from .descriptors_repeat import (
    RepeatArgs,
    RepeatBackwardArgs,
    RepeatBackwardDescriptor,
    RepeatDescriptor,
)
from .plans_repeat import RepeatBackwardPlan, RepeatPlan, repeat_tile, search_steps

E = ElementKind

# (view shape [outer, rows, inner], repeats or None for counts, layout, element, index)
SMALL = [
    ((3, 7, 33), 2, "contiguous", E.F32, False),
    ((1, 50, 1), None, "strided", E.BF16, False),
    ((4, 9, 5), None, "transposed", E.F64, False),
    ((2, 5, 300), 3, "strided", E.I32, False),
    ((2, 6, 3), 0, "contiguous", E.F32, False),
    ((1, 40, 1), None, "contiguous", E.I64, True),
]
REAL = [((1, 65536, 2048), 2, "contiguous", E.BF16, False),
        ((64, 4096, 256), None, "contiguous", E.F32, False)]


def _counts(n, gen, device):
    c = torch.randint(0, 4, (n,), generator=gen)
    return c.to(device)


def _expected(x, rep, counts):
    reps = counts.cpu() if rep is None else rep
    return torch.repeat_interleave(x, reps, 1)


def _forward_case(shape, rep, layout, element, index) -> Case:
    n = shape[1]
    gen0 = torch.Generator().manual_seed(11)
    counts0 = torch.randint(0, 4, (n,), generator=gen0)
    total = int(counts0.sum()) if rep is None else rep * n
    desc = RepeatDescriptor(shape, rep, total, element, E.I64, index)

    def make(device, gen):
        counts = counts0.to(device) if rep is None else None
        y = poisoned(desc.output_shape, element.torch_dtype, device)
        if index:
            return RepeatArgs(y=y, counts=counts)
        x = randn(shape, torch.float64, "cpu", gen, std=3.0)
        if not element.is_float:
            x = (x * 5).round()
        x = with_layout(x.to(device, element.torch_dtype), layout)
        return RepeatArgs(y=y, x=x, counts=counts)

    def expect(args):
        if index:
            return {"y": torch.repeat_interleave(args.counts.cpu()).view(1, -1, 1)}
        return {"y": _expected(args.x.cpu(), rep, args.counts)}

    return Case(f"repeat {shape} {rep} {layout} {element.value} index={index}", desc, make,
                expect)


def repeat_cases(scale):
    for row in SMALL if scale == "small" else REAL:
        yield _forward_case(*row)


class RepeatSpec(PlanSpec):
    plan = RepeatPlan

    def cases(self, scale):
        return repeat_cases(scale)

    def malformed_descriptors(self):
        yield Malformed("rank 2 view", lambda: RepeatDescriptor((3, 4), 2, 8, E.F32),
                        Unsupported)
        yield Malformed("wrong total", lambda: RepeatDescriptor((1, 3, 4), 2, 7, E.F32),
                        InvalidProblem)
        yield Malformed("negative repeats", lambda: RepeatDescriptor((1, 3, 4), -1, 0, E.F32),
                        InvalidProblem)
        yield Malformed("float counts",
                        lambda: RepeatDescriptor((1, 3, 4), None, 5, E.F32, E.F32),
                        Unsupported)
        yield Malformed("indices of floats",
                        lambda: RepeatDescriptor((1, 3, 1), None, 5, E.F32, E.I64, True),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        if d.index or d.repeats is None:
            return
        x = lambda: torch.zeros(d.input_shape, dtype=d.element.torch_dtype,  # noqa: E731
                                device=device)
        y = lambda: torch.zeros(d.output_shape, dtype=d.element.torch_dtype,  # noqa: E731
                                device=device)
        yield Malformed("counts with a constant",
                        lambda: RepeatArgs(y=y(), x=x(), counts=torch.zeros(
                            d.input_shape[1], dtype=torch.int64, device=device)),
                        InvalidProblem)
        yield Malformed("x missing", lambda: RepeatArgs(y=y()), InvalidProblem)

    def aot_variants(self):
        yield from aot_variants()


def _backward_case(fw: Case) -> Case:
    d = fw.desc
    desc = RepeatBackwardDescriptor(d.input_shape, d.repeats, d.output_rows, d.element)

    def make(device, gen):
        fargs = fw.make_args(device, gen)
        dy = with_layout(randn(desc.output_shape, d.element.torch_dtype, device, gen),
                         "strided")
        return RepeatBackwardArgs(dy=dy, dx=poisoned(d.input_shape, d.element.torch_dtype,
                                                     device), counts=fargs.counts)

    def expect(args):
        x = torch.zeros(d.input_shape, dtype=torch.float64, requires_grad=True)
        y = _expected(x, d.repeats, args.counts)
        y.backward(args.dy.cpu().double())
        return {"dx": x.grad}

    return Case(fw.name.replace("repeat", "repeat_backward", 1), desc, make, expect)


class RepeatBackwardSpec(PlanSpec):
    plan = RepeatBackwardPlan

    def cases(self, scale):
        for fw in repeat_cases(scale):
            if fw.desc.element.is_float and not fw.desc.index:
                yield _backward_case(fw)

    def malformed_descriptors(self):
        yield Malformed("integer element",
                        lambda: RepeatBackwardDescriptor((1, 3, 4), 2, 6, E.I32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        dx = lambda: torch.zeros(d.input_shape, dtype=dt, device=device)  # noqa: E731
        counts = None if d.repeats is not None else torch.zeros(d.input_shape[1],
                                                                 dtype=torch.int64,
                                                                 device=device)
        yield Malformed("dy wrong shape",
                        lambda: RepeatBackwardArgs(dy=dx()[:, :0], dx=dx(), counts=counts)
                        if d.output_rows else RepeatBackwardArgs(dy=dx(), dx=dx(),
                                                                 counts=counts),
                        InvalidProblem)


register_spec(RepeatSpec())
register_spec(RepeatBackwardSpec())


def aot_variants():
    """The gather with a constant and with counts (wide and column inner runs), the indices
    overload, the running total, the backward both ways."""
    for element in (E.BF16, E.F32, E.F64):
        ptr = "*" + triton_dtype(element.torch_dtype)
        for counts, inner in ((False, 2048), (True, 2048), (True, 1)):
            rows, bi = repeat_tile(inner, element.itemsize)
            yield AotVariant.auto(
                f"repeat_kernel {element.value} counts={counts} {rows}x{bi}", KR.repeat_kernel,
                {"x_ptr": ptr, "y_ptr": ptr, "total_ptr": "*i64"},
                dict(STEPS=search_steps(65536), COUNTS=counts, INDEX=False, ROWS=rows,
                     BLOCK_I=bi, xs_i=1, ys_i=1))
            yield AotVariant.auto(
                f"repeat_backward_kernel {element.value} counts={counts} {rows}x{bi}",
                KR.repeat_backward_kernel,
                {"dy_ptr": ptr, "dx_ptr": ptr, "total_ptr": "*i64", "rep_ptr": "*i64"},
                dict(COUNTS=counts, ACC=acc_type(element), ROWS=rows, BLOCK_I=bi, dys_i=1,
                     dxs_i=1))
    rows, bi = repeat_tile(1, 8)
    yield AotVariant.auto("repeat_kernel indices", KR.repeat_kernel,
                          {"x_ptr": "*i64", "y_ptr": "*i64", "total_ptr": "*i64"},
                          dict(STEPS=search_steps(65536), COUNTS=True, INDEX=True, ROWS=rows,
                               BLOCK_I=bi, ys_r=1))
    for counts in ("*i32", "*i64"):
        yield AotVariant.auto(f"running_total_kernel {counts}", KR.running_total_kernel,
                              {"rep_ptr": counts, "total_ptr": "*i64"}, dict(BLOCK=1024, rs=1))


def repeat_benches() -> list[BenchCase]:
    from .torch_repeat import repeat_interleave

    shape = (65536, 2048)
    dtype = torch.bfloat16
    moved = 3 * shape[0] * shape[1] * dtype.itemsize  # read once, written twice

    def setup(device):
        return {"x": torch.randn(shape, device=device, dtype=dtype)}

    def grad_setup(device):
        x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
        return {"x": x, "dy": torch.randn(2 * shape[0], shape[1], device=device, dtype=dtype)}

    label = f"{list(shape)} bf16 repeats=2 dim=0"
    return [BenchCase("repeat_interleave fwd", label, setup,
                      ours=lambda x: repeat_interleave(x, 2, 0),
                      torch_eager=lambda x: torch.repeat_interleave(x, 2, 0), bytes=moved),
            BenchCase("repeat_interleave fwd+bwd", label, grad_setup,
                      ours=lambda x, dy: torch.autograd.grad(repeat_interleave(x, 2, 0), x, dy),
                      torch_eager=lambda x, dy: torch.autograd.grad(
                          torch.repeat_interleave(x, 2, 0), x, dy),
                      bytes=2 * moved, quick=False)]
