"""Indexing test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.rows import gather_tile
from ...backends.triton_rows import row_gather_kernel
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import descriptors as D
from . import reference as ref
from .kernels import line_gather_kernel, line_scatter_kernel
from .plans import (
    INDEX_GATHER_TILE,
    SCATTER_ID,
    GatherPlan,
    IndexAddPlan,
    IndexCopyPlan,
    IndexSelectBackwardPlan,
    IndexSelectPlan,
    ScatterReducePlan,
)

E = ElementKind


def _data(shape, el, device, gen, layout="contiguous"):
    x = randn(shape, torch.float64, "cpu", gen, std=3.0)
    if not el.is_float:
        x = x.round()
    return with_layout(x.to(device=device, dtype=el.torch_dtype), layout)


def _idx(shape, n, iel, device, gen):
    return torch.randint(0, max(n, 1), tuple(shape), generator=gen).to(device, iel.torch_dtype)


# (input_shape, dim, K, element, index element, layout)
SELECT = [
    ((7, 100), 0, 30, E.F32, E.I64, "contiguous"),
    ((5, 20, 3), 1, 25, E.BF16, E.I32, "strided"),
    ((100,), 0, 0, E.F32, E.I64, "contiguous"),
    ((4, 6), -1, 10, E.F16, E.I64, "transposed"),
    ((6, 9), 1, 7, E.F64, E.I32, "strided"),
]


class IndexSelectSpec(PlanSpec):
    plan = IndexSelectPlan

    def cases(self, scale):
        table = SELECT + [((9, 4), 0, 12, E.I64, E.I64, "contiguous")] if scale == "small" \
            else [((50_000, 1024), 0, 8192, E.BF16, E.I64, "contiguous")]
        for shape, dim, k, el, iel, layout in table:
            desc = D.IndexSelectDescriptor(shape, dim, k, el, iel)

            def make(device, gen, desc=desc, layout=layout):
                x = _data(desc.input_shape, desc.element, device, gen, layout)
                idx = _idx((desc.num_indices,), desc.input_shape[desc.axis], desc.index_element,
                           device, gen)
                return D.IndexSelectArgs(x, idx, poisoned(desc.out_shape, x.dtype, device))

            def expect(args, dim=dim):
                return {"out": ref.index_select(args.input, dim, args.index)}

            yield Case(f"{shape} dim={dim} K={k} {el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("dim out of range",
                        lambda: D.IndexSelectDescriptor((3, 4), 2, 5, E.F32), InvalidProblem)
        yield Malformed("negative K", lambda: D.IndexSelectDescriptor((3, 4), 0, -1, E.F32),
                        InvalidProblem)
        yield Malformed("bool data", lambda: D.IndexSelectDescriptor((3, 4), 0, 2, E.BOOL),
                        Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("out wrong shape", lambda: D.IndexSelectArgs(a.input, a.index, a.out[:-1]),
                        InvalidProblem)
        yield Malformed("index 2-D", lambda: D.IndexSelectArgs(a.input, a.index[None], a.out),
                        InvalidProblem)
        yield Malformed("float index", lambda: D.IndexSelectArgs(a.input, a.index.float(), a.out),
                        InvalidProblem)

    def aot_variants(self):
        k = row_gather_kernel
        # the runtime tile of the bench's rows (1024 bf16)
        block_k, block_d, warps = gather_tile(1024, 2, INDEX_GATHER_TILE)
        const = dict(BLOCK_K=block_k, BLOCK_D=block_d, S1=1, S2=1, ss3=1, ds3=1, FLAT=True,
                     CHECK=True)
        ptr = {"src_ptr": "*bf16", "dst_ptr": "*bf16", "idx_ptr": "*i64"}
        # this tile spills 40 B in the sm_90a compile and still gathers at torch's speed
        # (plans.INDEX_GATHER_TILE)
        yield AotVariant("row_gather bf16", k, _sig(k, ptr, const), const, num_warps=warps,
                         max_spill_bytes=40)


def _sig(kernel, ptrs, const):
    return {n: ("constexpr" if n in const else ptrs.get(n, "i64")) for n in kernel.arg_names}


class IndexSelectBackwardSpec(PlanSpec):
    plan = IndexSelectBackwardPlan

    def cases(self, scale):
        table = SELECT if scale == "small" else [
            ((50_000, 1024), 0, 8192, E.BF16, E.I64, "contiguous"),
            ((64, 4096, 8), 1, 20_000, E.F32, E.I32, "contiguous")]
        for shape, dim, k, el, iel, layout in table:
            desc = D.IndexSelectBackwardDescriptor(shape, dim, k, el, iel)

            def make(device, gen, desc=desc, layout=layout):
                g = _data(desc.out_shape, desc.element, device, gen, layout)
                idx = _idx((desc.num_indices,), desc.input_shape[desc.axis], desc.index_element,
                           device, gen)
                return D.IndexSelectBackwardArgs(g, idx, poisoned(desc.input_shape, g.dtype,
                                                                 device))

            def expect(args, desc=desc):
                return {"grad_input": ref.index_select_backward(
                    args.grad_out, desc.axis, args.index, desc.input_shape)}

            yield Case(f"{shape} dim={dim} K={k} {el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("integer grads",
                        lambda: D.IndexSelectBackwardDescriptor((3, 4), 0, 2, E.I64), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("grad_input wrong shape", lambda: D.IndexSelectBackwardArgs(
            a.grad_out, a.index, a.grad_input[:-1]), InvalidProblem)
        yield Malformed("index wrong length", lambda: D.IndexSelectBackwardArgs(
            a.grad_out, a.index[:-1], a.grad_input), InvalidProblem)


# (input_shape, index_shape, dim, element, index element, layout)
GATHER = [
    ((6, 40), (6, 25), 1, E.F32, E.I64, "contiguous"),
    ((10, 8, 5), (30, 4, 5), 0, E.BF16, E.I32, "strided"),
    ((50,), (0,), 0, E.F32, E.I64, "contiguous"),
    ((7, 9), (5, 12), -1, E.I32, E.I64, "transposed"),
    ((5, 11), (5, 7), 1, E.F16, E.I64, "strided"),
    ((4, 6, 3), (4, 2, 3), 1, E.F64, E.I32, "contiguous"),
]


class GatherSpec(PlanSpec):
    plan = GatherPlan

    def cases(self, scale):
        table = GATHER if scale == "small" else [
            ((4096, 8192), (4096, 1024), 1, E.BF16, E.I64, "contiguous")]
        for shape, ishape, dim, el, iel, layout in table:
            desc = D.GatherDescriptor(shape, ishape, dim, el, iel)

            def make(device, gen, desc=desc, layout=layout):
                x = _data(desc.input_shape, desc.element, device, gen, layout)
                idx = _idx(desc.index_shape, desc.input_shape[desc.axis], desc.index_element,
                           device, gen)
                return D.GatherArgs(x, idx, poisoned(desc.index_shape, x.dtype, device))

            def expect(args, dim=dim):
                return {"out": ref.gather(args.input, dim, args.index)}

            yield Case(f"{shape} idx{ishape} dim={dim} {el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("index larger off dim",
                        lambda: D.GatherDescriptor((3, 4), (4, 4), 1, E.F32), InvalidProblem)
        yield Malformed("rank mismatch",
                        lambda: D.GatherDescriptor((3, 4), (3,), 0, E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("out wrong shape", lambda: D.GatherArgs(a.input, a.index, a.out[:-1]),
                        InvalidProblem)
        yield Malformed("out aliases input", lambda: D.GatherArgs(
            a.input, a.index, a.input.reshape(-1)[: a.out.numel()].view(a.out.shape)),
            InvalidProblem)

    def aot_variants(self):
        k = line_gather_kernel
        const = dict(BLOCK_L=8, BLOCK_J=256, S1=1, S2=1, xsa=1, isa=1, osa=1)
        ptr = {"x_ptr": "*fp32", "out_ptr": "*fp32", "idx_ptr": "*i64"}
        yield AotVariant("line_gather f32", k, _sig(k, ptr, const), const)


# (input_shape, index_shape, src_shape, dim, element, layout)
SCATTER = [
    ((6, 20), (6, 30), (6, 33), 1, E.F32, "contiguous"),
    ((12, 5, 3), (20, 4, 3), (20, 5, 3), 0, E.BF16, "strided"),
    # src of the index's shape, all contiguous: sum / assign take the sorted-key path
    ((8, 6), (11, 6), (11, 6), 0, E.F32, "contiguous"),
    ((4, 5, 6), (3, 9, 6), (3, 9, 6), 1, E.F64, "contiguous"),
    ((7, 9), (7, 12), (7, 12), 1, E.F16, "contiguous"),
]


class ScatterSpec(PlanSpec):
    plan = ScatterReducePlan

    def _table(self, scale):
        if scale != "small":
            for kind in (D.ScatterKind.SUM, D.ScatterKind.AMAX):
                yield ((512, 4096), (512, 4096), (512, 4096), 1, E.F32, "contiguous", kind,
                       True, True)
            return
        for shape, ishape, sshape, dim, el, layout in SCATTER:
            for kind in D.ScatterKind:
                for inc in ((True, False) if kind is not D.ScatterKind.ASSIGN else (True,)):
                    yield shape, ishape, sshape, dim, el, layout, kind, inc, True
        yield ((9, 7), (9, 16), (9, 16), 1, E.F64, "transposed", D.ScatterKind.SUM, False, False)

    def cases(self, scale):
        for shape, ishape, sshape, dim, el, layout, kind, inc, has_self in self._table(scale):
            desc = D.ScatterDescriptor(shape, ishape, dim, el, E.I64, kind, inc, has_self)

            def make(device, gen, desc=desc, sshape=sshape, layout=layout):
                s = _data(desc.input_shape, desc.element, device, gen, layout) \
                    if desc.has_self else None
                src = _data(sshape, desc.element, device, gen)
                idx = _idx(desc.index_shape, desc.input_shape[desc.axis], E.I64, device, gen)
                return D.ScatterArgs(s, idx, src, poisoned(desc.input_shape,
                                                         desc.element.torch_dtype, device))

            def expect(args, desc=desc):
                return {"out": ref.scatter(args.self_, desc.axis, args.index, args.src,
                                           desc.kind.value, desc.include_self,
                                           desc.input_shape)}

            yield Case(f"{kind.value} self={has_self} include_self={inc} {shape} idx{ishape} "
                       f"{el.value} {layout}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("bad kind", lambda: D.ScatterDescriptor(
            (3, 4), (3, 4), 1, E.F32, E.I64, "no_such_kind"), InvalidProblem)
        yield Malformed("integer data", lambda: D.ScatterDescriptor(
            (3, 4), (3, 4), 1, E.I32, E.I64), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("src too small", lambda: D.ScatterArgs(
            a.self_, a.index, a.src[:, :1], a.out), InvalidProblem)
        yield Malformed("out is self", lambda: D.ScatterArgs(a.self_, a.index, a.src, a.self_),
                        InvalidProblem)
        yield Malformed("alpha not a number", lambda: D.ScatterArgs(
            a.self_, a.index, a.src, a.out, alpha="2"), InvalidProblem)

    def aot_variants(self):
        k = line_scatter_kernel
        for kind in (D.ScatterKind.SUM, D.ScatterKind.AMAX, D.ScatterKind.ASSIGN):
            const = dict(KIND=SCATTER_ID[kind], HAS_SELF=True, INCLUDE_SELF=True,
                         ACC=tl.float32, BLOCK_S=64, BLOCK_J=32, S1=1, S2=1)
            ptr = {n: "*fp32" for n in ("self_ptr", "src_ptr", "out_ptr")}
            ptr.update(idx_ptr="*i64", alpha="fp32")
            yield AotVariant(f"line_scatter {kind.value}", k, _sig(k, ptr, const), const)


class _IndexUpdateSpec(PlanSpec):
    ALPHA = 1.0

    def cases(self, scale):
        table = SELECT if scale == "small" else [
            ((50_000, 1024), 0, 8192, E.BF16, E.I64, "contiguous"),
            ((64, 4096, 8), 1, 20_000, E.F32, E.I32, "contiguous")]
        for shape, dim, k, el, iel, layout in table:
            desc = D.IndexUpdateDescriptor(shape, dim, k, el, iel)

            def make(device, gen, desc=desc, layout=layout):
                x = _data(desc.input_shape, desc.element, device, gen, layout)
                src = _data(desc.out_shape, desc.element, device, gen)
                idx = _idx((desc.num_indices,), desc.input_shape[desc.axis], desc.index_element,
                           device, gen)
                return D.IndexUpdateArgs(x, idx, src, poisoned(desc.input_shape, x.dtype, device),
                                       self.ALPHA)

            yield Case(f"{shape} dim={dim} K={k} {el.value} {layout}", desc, make,
                       lambda args, desc=desc: {"out": self.expect(args, desc)})

    def malformed_descriptors(self):
        yield Malformed("integer data",
                        lambda: D.IndexUpdateDescriptor((3, 4), 0, 2, E.I32), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("source wrong shape", lambda: D.IndexUpdateArgs(
            a.input, a.index, a.input, a.out), InvalidProblem)
        yield Malformed("out is input", lambda: D.IndexUpdateArgs(
            a.input, a.index, a.source, a.input), InvalidProblem)


class IndexAddSpec(_IndexUpdateSpec):
    plan = IndexAddPlan
    ALPHA = -1.5

    def expect(self, args, desc):
        return ref.index_add(args.input, desc.axis, args.index, args.source, args.alpha)


class IndexCopySpec(_IndexUpdateSpec):
    plan = IndexCopyPlan

    def expect(self, args, desc):
        return ref.index_copy(args.input, desc.axis, args.index, args.source)


register_spec(IndexAddSpec())
register_spec(IndexCopySpec())
register_spec(IndexSelectSpec())
register_spec(IndexSelectBackwardSpec())
register_spec(GatherSpec())
register_spec(ScatterSpec())


@register_bench("indexing")
def indexing_benches(quick: bool):
    from .torch_api import index_add, index_select

    n, d, k = 131072, 1024, 65536
    shape = f"[{n}, {d}] K={k} bf16"

    def setup(device):
        x = torch.randn(n, d, device=device, dtype=torch.bfloat16, requires_grad=True)
        idx = torch.randint(0, n, (k,), device=device)
        return {"x": x, "idx": idx, "g": torch.randn(k, d, device=device, dtype=torch.bfloat16)}

    def ours_fb(x, idx, g):
        return torch.autograd.grad(index_select(x, 0, idx), x, g)

    def torch_fb(x, idx, g):
        return torch.autograd.grad(torch.index_select(x, 0, idx), x, g)

    return [
        BenchCase("index_select fwd", shape, setup,
                  ours=lambda x, idx, g: index_select(x, 0, idx),
                  torch_eager=lambda x, idx, g: torch.index_select(x, 0, idx),
                  bytes=2 * k * d * 2),
        BenchCase("index_select fwd+bwd", shape, setup, ours=ours_fb, torch_eager=torch_fb,
                  bytes=4 * k * d * 2 + n * d * 2),
        BenchCase("index_add fwd", shape, setup,
                  ours=lambda x, idx, g: index_add(x, 0, idx, g),
                  torch_eager=lambda x, idx, g: torch.index_add(x, 0, idx, g),
                  bytes=2 * n * d * 2 + k * d * 2),
    ] + region_benches()


from . import spec_mask  # noqa: E402,F401  - registers the mask plans' specs
from .spec_region import region_benches  # noqa: E402  - registers the region plans' specs
