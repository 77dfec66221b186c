"""Test cases and malformed inputs of the mask plans (imported by spec.py)."""

from __future__ import annotations

import torch

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import INT_POISON, poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import descriptors as D
from .kernels_mask import (
    compact_count_kernel,
    compact_write_kernel,
    masked_fill_kernel,
    one_hot_kernel,
    scatter_keys_kernel,
)
from .plans_mask import MaskedFillPlan, MaskedScatterPlan, MaskedSelectPlan, NonzeroPlan, OneHotPlan

E = ElementKind
# (shape, element, layout)
SHAPES = [
    ((5, 7, 3), E.F32, "contiguous"),
    ((40, 30), E.BF16, "transposed"),
    ((1000,), E.I64, "strided"),
    ((0, 4), E.F16, "contiguous"),
    ((), E.F64, "contiguous"),
]
REAL = [((4096, 8192), E.BF16, "contiguous"), ((3000, 500, 3), E.F32, "strided")]


def _x(shape, el, device, gen, layout):
    x = randn(shape, torch.float64, "cpu", gen, std=3.0)
    if not el.is_float:
        x = x.round()
    if x.numel():
        x.view(-1)[::3] = 0
    return with_layout(x.to(device, el.torch_dtype), layout)


def _mask(shape, device, gen, broadcast):
    if broadcast and len(shape) >= 2:
        small = list(shape)
        small[-2] = 1
        return (torch.rand(small, generator=gen) > 0.5).to(device).expand(shape)
    return (torch.rand(shape, generator=gen) > 0.5).to(device)


def _table(scale):
    return SHAPES if scale == "small" else REAL


class MaskedFillSpec(PlanSpec):
    plan = MaskedFillPlan

    def aot_variants(self):
        return mask_aot_variants()

    def cases(self, scale):
        for shape, el, layout in _table(scale):
            desc = D.MaskedFillDescriptor(shape, el)

            def make(device, gen, shape=shape, el=el, layout=layout):
                return D.MaskedFillArgs(_x(shape, el, device, gen, layout),
                                      _mask(shape, device, gen, True),
                                      poisoned(shape, el.torch_dtype, device), -0.1)

            def expect(args):
                x = args.input.detach().cpu()
                out = x.masked_fill(args.mask.cpu(), args.value)
                return {"out": out.double() if out.is_floating_point() else out}

            yield Case(f"{shape} {el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("negative extent", lambda: D.MaskedFillDescriptor((2, -1), E.F32),
                        InvalidProblem)
        yield Malformed("bool data", lambda: D.MaskedFillDescriptor((2,), E.BOOL), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("float mask", lambda: D.MaskedFillArgs(
            a.input, a.mask.to(a.input.dtype), a.out, 1.0), InvalidProblem)
        yield Malformed("value not a number", lambda: D.MaskedFillArgs(
            a.input, a.mask, a.out, "x"), InvalidProblem)


class OneHotSpec(PlanSpec):
    plan = OneHotPlan

    def cases(self, scale):
        table = [(100, 7, E.I64), (33, 200, E.I32), (0, 5, E.I64)] if scale == "small" else [
            (65536, 1000, E.I64)]
        for n, c, el in table:
            desc = D.OneHotDescriptor(n, c, el)

            def make(device, gen, n=n, c=c, el=el):
                x = torch.randint(0, c, (n,), generator=gen).to(device, el.torch_dtype)
                return D.OneHotArgs(x, poisoned((n, c), torch.int64, device))

            def expect(args, c=c):
                return {"out": torch.nn.functional.one_hot(args.input.cpu().long(), c)}

            yield Case(f"N={n} C={c} {el.value}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("negative classes", lambda: D.OneHotDescriptor(3, -1), InvalidProblem)
        yield Malformed("float input", lambda: D.OneHotDescriptor(3, 2, E.F32), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("out int32", lambda: D.OneHotArgs(a.input, a.out.int()), InvalidProblem)


class _CompactSpec(PlanSpec):
    def _expect_count(self, n):
        return torch.tensor([n], dtype=torch.int64)


class NonzeroSpec(_CompactSpec):
    plan = NonzeroPlan

    def cases(self, scale):
        for shape, el, layout in _table(scale):
            desc = D.CompactDescriptor(shape, el)
            rank = max(len(shape), 1)

            def make(device, gen, shape=shape, el=el, layout=layout, rank=rank):
                n = 1
                for d in shape:
                    n *= d
                return D.NonzeroArgs(_x(shape, el, device, gen, layout),
                                   torch.full((n, rank), INT_POISON, dtype=torch.int64,
                                              device=device),
                                   torch.full((1,), INT_POISON, dtype=torch.int64,
                                              device=device))

            def expect(args):
                x = args.input.cpu()
                nz = torch.nonzero(x.reshape(1) if x.dim() == 0 else x)
                out = args.out.cpu().clone()
                out[: nz.shape[0]] = nz  # rows past the count are unspecified capacity
                return {"out": out, "count": self._expect_count(nz.shape[0])}

            yield Case(f"{shape} {el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("rank 9", lambda: D.CompactDescriptor((1,) * 9, E.F32), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("count int32", lambda: D.NonzeroArgs(a.input, a.out, a.count.int()),
                        InvalidProblem)
        yield Malformed("out too narrow", lambda: D.NonzeroArgs(
            a.input, a.out[:, :0], a.count), InvalidProblem)


class MaskedSelectSpec(_CompactSpec):
    plan = MaskedSelectPlan

    def cases(self, scale):
        for shape, el, layout in _table(scale):
            desc = D.MaskedDataDescriptor(shape, el)

            def make(device, gen, shape=shape, el=el, layout=layout):
                n = 1
                for d in shape:
                    n *= d
                return D.MaskedSelectArgs(_x(shape, el, device, gen, layout),
                                        _mask(shape, device, gen, True),
                                        poisoned((n,), el.torch_dtype, device),
                                        torch.full((1,), INT_POISON, dtype=torch.int64,
                                                   device=device))

            def expect(args):
                sel = torch.masked_select(args.input.cpu(), args.mask.cpu())
                out = args.out.cpu().clone()
                out[: sel.numel()] = sel
                out = out.double() if out.is_floating_point() else out
                return {"out": out, "count": self._expect_count(sel.numel())}

            yield Case(f"{shape} {el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("bool data", lambda: D.MaskedDataDescriptor((3,), E.BOOL), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("mask not bool", lambda: D.MaskedSelectArgs(
            a.input, a.mask.to(torch.uint8), a.out, a.count), InvalidProblem)


class MaskedScatterSpec(PlanSpec):
    plan = MaskedScatterPlan

    def cases(self, scale):
        for shape, el, layout in _table(scale):
            desc = D.MaskedDataDescriptor(shape, el)

            def make(device, gen, shape=shape, el=el, layout=layout):
                n = 1
                for d in shape:
                    n *= d
                return D.MaskedScatterArgs(_x(shape, el, device, gen, layout),
                                         _mask(shape, device, gen, False),
                                         _x((n + 3,), el, device, gen, "contiguous"),
                                         poisoned(shape, el.torch_dtype, device))

            def expect(args):
                out = args.input.cpu().masked_scatter(args.mask.cpu(), args.source.cpu())
                return {"out": out.double() if out.is_floating_point() else out}

            yield Case(f"{shape} {el.value} {layout}", desc, make, expect)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("source 2-D", lambda: D.MaskedScatterArgs(
            a.input, a.mask, a.source[None], a.out), InvalidProblem)


def _sig(kernel, ptrs, const):
    return {n: ("constexpr" if n in const else ptrs.get(n, "i64")) for n in kernel.arg_names}


def mask_aot_variants():
    """sm_90a compile checks of the mask and sorted-scatter kernels."""
    k = masked_fill_kernel
    for wide in (False, True):
        ints = "i64" if wide else "i32"
        sig = {n: ("constexpr" if n in ("IS_FLOAT", "BLOCK", "WIDE") else ints)
               for n in k.arg_names}
        sig.update({"x_ptr": "*bf16", "m_ptr": "*i1", "out_ptr": "*bf16", "value_bits": "i64"})
        yield AotVariant(f"masked_fill bf16 wide={wide}", k, sig,
                         dict(IS_FLOAT=True, BLOCK=1024, WIDE=wide))
    k = one_hot_kernel
    yield AotVariant("one_hot", k, _sig(k, {"x_ptr": "*i64", "out_ptr": "*i64"},
                                        c := dict(BLOCK_N=8, BLOCK_C=256)), c)
    k = compact_count_kernel
    yield AotVariant("compact_count", k, _sig(k, {"m_ptr": "*i1", "counts_ptr": "*i32"},
                                              c := dict(BLOCK=1024)), c)
    for mode in (0, 1, 2):
        k = compact_write_kernel
        ptrs = {"m_ptr": "*i1", "x_ptr": "*fp32", "src_ptr": "*fp32",
                "out_ptr": "*i64" if mode == 0 else "*fp32", "count_ptr": "*i64",
                "offsets_ptr": "*i32"}
        yield AotVariant(f"compact_write mode={mode}", k, _sig(
            k, ptrs, c := dict(RANK=2, MODE=mode, BLOCK=1024)), c)
    k = scatter_keys_kernel
    yield AotVariant("scatter_keys", k, _sig(k, {"idx_ptr": "*i64", "keys_ptr": "*i32"},
                                             c := dict(BLOCK=1024)), c)


for _spec in (MaskedFillSpec(), OneHotSpec(), NonzeroSpec(), MaskedSelectSpec(),
              MaskedScatterSpec()):
    register_spec(_spec)
