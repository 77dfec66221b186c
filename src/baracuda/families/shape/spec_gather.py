"""Table gather (combinations) test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn
from ...core.tolerance import tolerance_for
from ...core.vocab import ElementKind
from . import kernels_gather as K
from .descriptors_gather import (
    GatherArgs,
    GatherDescriptor,
    GatherSumArgs,
    GatherSumDescriptor,
)
from .plans_gather import GATHER_BLOCK, SUM_BLOCK, TableGatherPlan, TableGatherSumPlan

E = ElementKind


def _source(n, element, device, gen, stride=1) -> torch.Tensor:
    x = randn((n * stride,), torch.float64, "cpu", gen, std=3.0)
    if not element.is_float:
        x = x.round().abs() if element in (E.U8, E.BOOL) else x.round()
    return x.to(device, element.torch_dtype)[::stride]


def _table(n, r, wr):
    idx = torch.combinations(torch.arange(n, dtype=torch.int64), r, wr)
    return idx, idx.reshape(-1)


def gather_case(n, r, wr, element, stride=1) -> Case:
    rows, flat = _table(n, r, wr)
    desc = GatherDescriptor(n, flat.numel(), element)

    def make(device, gen):
        return GatherArgs(x=_source(n, element, device, gen, stride), idx=flat.to(device),
                          y=poisoned((desc.m,), element.torch_dtype, device))

    def expect(args):
        return {"y": args.x.cpu()[flat]}

    return Case(f"table_gather combinations n={n} r={r} wr={wr} {element.value} "
                f"stride={stride}", desc, make, expect, tol={"y": tolerance_for(element)})


class TableGatherSpec(PlanSpec):
    plan = TableGatherPlan

    def cases(self, scale):
        if scale == "small":
            yield gather_case(11, 2, False, E.F32)
            yield gather_case(7, 3, True, E.BF16, stride=3)
            yield gather_case(9, 4, False, E.I64)
            yield gather_case(5, 1, False, E.BOOL)
            yield gather_case(3, 5, False, E.F64)  # no rows
            return
        yield gather_case(4096, 2, False, E.BF16)
        yield gather_case(256, 3, True, E.F32)

    def malformed_descriptors(self):
        yield Malformed("negative n", lambda: GatherDescriptor(-1, 4, E.F32), InvalidProblem)
        yield Malformed("rows from nothing", lambda: GatherDescriptor(0, 4, E.F32),
                        InvalidProblem)
        yield Malformed("element not a kind", lambda: GatherDescriptor(3, 4, 42),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        x = lambda: torch.zeros((d.n,), dtype=dt, device=device)  # noqa: E731
        idx = lambda: torch.zeros((d.m,), dtype=torch.int64, device=device)  # noqa: E731
        y = lambda: torch.empty((d.m,), dtype=dt, device=device)  # noqa: E731
        yield Malformed("int32 table", lambda: GatherArgs(x(), idx().int(), y()),
                        InvalidProblem)
        yield Malformed("y too long", lambda: GatherArgs(
            x(), idx(), torch.empty((d.m + 1,), dtype=dt, device=device)), InvalidProblem)

    def aot_variants(self):
        for el in (E.BF16, E.F32, E.F64, E.I64):
            io = "*" + triton_dtype(el.torch_dtype)
            yield AotVariant.auto(f"table_gather_kernel {el.value}", K.table_gather_kernel,
                                  {"x_ptr": io, "idx_ptr": "*i64", "y_ptr": io},
                                  {"BLOCK": GATHER_BLOCK}, scalars={"M": "i64"},
                                  num_warps=4)


def sum_case(n, r, wr, element, layout="contiguous") -> Case:
    rows, flat = _table(n, r, wr)
    pos = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=n)
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    degree = int(counts.max()) if n and flat.numel() else 0
    desc = GatherSumDescriptor(n, rows.shape[0], r, degree, element)

    def make(device, gen):
        if layout == "transposed":
            dy = randn((r, rows.shape[0]), torch.float64, "cpu", gen).t()
        else:
            dy = randn((rows.shape[0], r), torch.float64, "cpu", gen)
        return GatherSumArgs(dy=dy.to(device, element.torch_dtype), ptr=ptr.to(device),
                             pos=pos.to(device),
                             dx=poisoned((n,), element.torch_dtype, device))

    def expect(args):
        dx = torch.zeros(n, dtype=torch.float64)
        return {"dx": dx.index_add_(0, flat, args.dy.cpu().double().reshape(-1))}

    tol = tolerance_for(element).scaled(max(1.0, (degree / 64) ** 0.5))
    return Case(f"table_gather_sum combinations n={n} r={r} wr={wr} {element.value} "
                f"{layout}", desc, make, expect, tol={"dx": tol})


class TableGatherSumSpec(PlanSpec):
    plan = TableGatherSumPlan

    def cases(self, scale):
        if scale == "small":
            yield sum_case(11, 2, False, E.F32)
            yield sum_case(7, 3, True, E.BF16, "transposed")
            yield sum_case(9, 4, False, E.F64)
            yield sum_case(6, 1, False, E.F16)
            return
        yield sum_case(4096, 2, False, E.BF16)
        yield sum_case(256, 3, True, E.F32, "transposed")

    def malformed_descriptors(self):
        yield Malformed("integer", lambda: GatherSumDescriptor(3, 3, 2, 2, E.I32), Unsupported)
        yield Malformed("degree too large", lambda: GatherSumDescriptor(3, 3, 2, 7, E.F32),
                        InvalidProblem)
        yield Malformed("negative rows", lambda: GatherSumDescriptor(3, -3, 2, 2, E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        i64 = dict(dtype=torch.int64, device=device)
        dy = lambda: torch.zeros((d.rows, d.cols), dtype=dt, device=device)  # noqa: E731
        dx = lambda: torch.empty((d.n,), dtype=dt, device=device)  # noqa: E731
        yield Malformed("ptr too short", lambda: GatherSumArgs(
            dy(), torch.zeros((d.n,), **i64), torch.zeros((d.rows * d.cols,), **i64), dx()),
            InvalidProblem)
        yield Malformed("dx wrong dtype", lambda: GatherSumArgs(
            dy(), torch.zeros((d.n + 1,), **i64), torch.zeros((d.rows * d.cols,), **i64),
            dx().to(torch.int32)), InvalidProblem)

    def aot_variants(self):
        for el in (E.BF16, E.F32, E.F16, E.F64):
            io = "*" + triton_dtype(el.torch_dtype)
            yield AotVariant.auto(f"table_gather_sum_kernel {el.value}",
                                  K.table_gather_sum_kernel,
                                  {"dy_ptr": io, "ptr_ptr": "*i64", "pos_ptr": "*i64",
                                   "dx_ptr": io}, {"BLOCK": SUM_BLOCK, "ACC": acc_type(el)},
                                  scalars={"N": "i64"}, num_warps=4)


register_spec(TableGatherSpec())
register_spec(TableGatherSumSpec())


@register_bench("shape")
def gather_benches(quick: bool):
    from .torch_gather import combinations, count

    out = []
    for n, r, wr in ((4096, 2, False), (256, 3, True)):
        c = count(n, r, wr)

        def setup(device, n=n):
            return {"x": torch.randn(n, device=device, dtype=torch.bfloat16)}

        out.append(BenchCase("combinations", f"n={n} r={r} with_replacement={wr} bf16", setup,
                             ours=lambda x, r=r, wr=wr: combinations(x, r, wr),
                             torch_eager=lambda x, r=r, wr=wr: torch.combinations(x, r, wr),
                             bytes=c * r * (2 + 8) + n * 2))
    return out
