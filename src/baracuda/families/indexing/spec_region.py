"""Test cases, malformed inputs, AOT variants and bench rows of the region copies,
index_reduce and unravel_index."""

from __future__ import annotations

import warnings

import torch
import triton.language as tl

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned
from ...core.vocab import ElementKind
from . import descriptors as D
from . import descriptors_region as R
from .kernels_region import index_reduce_combine_kernel, strided_copy_kernel, unravel_kernel
from .plans_region import COMBINE_ID, IndexReducePlan, StridedCopyPlan, UnravelIndexPlan
from .spec import _data, _idx, _sig

E = ElementKind

# (src shape, element, src layout, region of a larger out: (out shape, view maker), dynamic)
COPY = [
    ((6, 10), E.F32, "contiguous", None, False),
    ((5, 7, 3), E.BF16, "transposed", ((9, 7, 3), lambda t: t[2:7]), False),
    ((4, 6), E.I64, "strided", ((8, 8), lambda t: t[::2, 1:7]), False),
    ((3, 5), E.F64, "contiguous", ((7, 9), lambda t: t[1:4, 2:7]), True),
    ((), E.F16, "contiguous", None, False),
    ((0, 4), E.F32, "contiguous", None, False),
    ((2, 3, 4, 5, 2, 3, 2, 2), E.F32, "transposed", None, False),
    ((4,), E.BOOL, "contiguous", ((9,), lambda t: t[1::2]), False),
]


class StridedCopySpec(PlanSpec):
    plan = StridedCopyPlan

    def cases(self, scale):
        table = COPY if scale == "small" else [
            ((8192, 8192), E.F32, "contiguous", ((8192, 16384), lambda t: t[:, ::2]), False)]
        for shape, el, layout, region, dyn in table:
            desc = R.StridedCopyDescriptor(shape, el, dynamic_src=dyn, dynamic_out=dyn)

            def make(device, gen, desc=desc, layout=layout, region=region):
                if desc.element is E.BOOL:
                    src = torch.rand(desc.shape, generator=gen).to(device) > 0.5
                else:
                    src = _data(desc.shape, desc.element, device, gen, layout)
                if region is None:
                    return R.StridedCopyArgs(src, poisoned(desc.shape, src.dtype, device))
                base = poisoned(region[0], src.dtype, device) if desc.element is not E.BOOL \
                    else torch.zeros(region[0], dtype=torch.bool, device=device)
                view = region[1](base)
                if not desc.dynamic_out:
                    return R.StridedCopyArgs(src, view)
                # a dynamic offset of 0 in src and out: the kernel adds it to both bases
                zero = torch.zeros(1, dtype=torch.int64, device=device)
                return R.StridedCopyArgs(src, view, zero, zero)

            def expect(args):
                t = args.src.detach().cpu()
                return {"out": t.double() if t.is_floating_point() else t}

            yield Case(f"{shape} {el.value} {layout} region={region is not None} dyn={dyn}",
                       desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("rank 9", lambda: R.StridedCopyDescriptor((1,) * 9, E.F32),
                        Unsupported)
        yield Malformed("dynamic flag not bool", lambda: R.StridedCopyDescriptor(
            (2,), E.F32, dynamic_src=1), InvalidProblem)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        if case.desc.shape and case.desc.shape[0] > 1 and not case.desc.dynamic_src:
            yield Malformed("out wrong shape", lambda: R.StridedCopyArgs(a.src, a.out[:-1]),
                            InvalidProblem)
            yield Malformed("missing dynamic offset", lambda: R.StridedCopyArgs(
                a.src, a.out, a.src.new_zeros(1, dtype=torch.int64)), InvalidProblem)

    def aot_variants(self):
        k = strided_copy_kernel
        for dyn in (False, True):
            const = dict(DYN_SRC=dyn, DYN_OUT=dyn, BLOCK_R=4, BLOCK_C=1024, a7=1, b7=1)
            ptr = {"src_ptr": "*fp32", "out_ptr": "*fp32", "soff_ptr": "*i64",
                   "ooff_ptr": "*i64"}
            yield AotVariant(f"strided_copy f32 dyn={dyn}", k, _sig(k, ptr, const), const)
        const = dict(DYN_SRC=False, DYN_OUT=False, BLOCK_R=2, BLOCK_C=2048, a7=1, b7=1)
        ptr = {"src_ptr": "*bf16", "out_ptr": "*bf16", "soff_ptr": "*i64", "ooff_ptr": "*i64"}
        yield AotVariant("strided_copy bf16", k, _sig(k, ptr, const), const)


# (input shape, dim, K, element, index element, layout)
REDUCE = [
    ((7, 10), 0, 12, E.F32, E.I64, "contiguous"),
    ((5, 9, 3), 1, 20, E.BF16, E.I32, "strided"),
    ((6, 4), -1, 0, E.F64, E.I64, "transposed"),
    ((9,), 0, 5, E.F64, E.I64, "contiguous"),
]


def _reduce_ref(args, desc):
    x = args.input.detach().cpu().double()
    with warnings.catch_warnings():  # torch marks index_reduce as beta
        warnings.simplefilter("ignore")
        return x.index_reduce(desc.axis, args.index.cpu().long(),
                              args.source.detach().cpu().double(), desc.kind.value,
                              include_self=desc.include_self)


class IndexReduceSpec(PlanSpec):
    plan = IndexReducePlan

    def _table(self, scale):
        if scale != "small":
            yield ((65536, 1024), 0, 65536, E.F32, E.I64, "contiguous", D.ScatterKind.AMAX, True)
            return
        # every (kind, include_self) once, the layouts and dtypes spread over them
        combos = [(k, inc) for k in R.INDEX_REDUCE_KINDS for inc in (True, False)]
        for i, (kind, inc) in enumerate(combos):
            yield (*REDUCE[i % len(REDUCE)], kind, inc)

    def cases(self, scale):
        for shape, dim, k, el, iel, layout, kind, inc in self._table(scale):
            desc = R.IndexReduceDescriptor(shape, dim, k, el, iel, kind, inc)

            def make(device, gen, desc=desc, layout=layout):
                x = _data(desc.input_shape, desc.element, device, gen, layout)
                src = _data(desc.out_shape, desc.element, device, gen)
                if desc.kind is D.ScatterKind.PROD:  # keep the products' range moderate
                    x, src = x / 3, src / 3
                # fewer destinations than indices: duplicates, and rows no index names
                n = max(desc.input_shape[desc.axis] - 2, 1)
                idx = _idx((desc.num_indices,), n, desc.index_element, device, gen)
                return D.IndexUpdateArgs(x, idx, src, poisoned(desc.input_shape, x.dtype,
                                                               device))

            yield Case(f"{kind.value} include_self={inc} {shape} dim={dim} K={k} {el.value} "
                       f"{layout}", desc, make,
                       lambda args, desc=desc: {"out": _reduce_ref(args, desc)})

    def malformed_descriptors(self):
        yield Malformed("sum is not index_reduce", lambda: R.IndexReduceDescriptor(
            (3, 4), 0, 2, E.F32, E.I64, D.ScatterKind.SUM), InvalidProblem)
        yield Malformed("integer data", lambda: R.IndexReduceDescriptor(
            (3, 4), 0, 2, E.I32, E.I64), Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("source wrong shape", lambda: D.IndexUpdateArgs(
            a.input, a.index, a.input[:0], a.out), InvalidProblem)
        yield Malformed("out is input", lambda: D.IndexUpdateArgs(
            a.input, a.index, a.source, a.input), InvalidProblem)

    def aot_variants(self):
        k = index_reduce_combine_kernel
        for kind in (D.ScatterKind.AMAX, D.ScatterKind.MEAN, D.ScatterKind.PROD):
            const = dict(KIND=COMBINE_ID[kind], INCLUDE_SELF=True, ACC=tl.float32,
                         BLOCK_D=1024, FLAT=True, S1=1, S2=1, S3=1, ss0=0, ss1=0, ss2=0,
                         ss3=1, os0=0, os1=0, os2=0, os3=1)
            ptr = {"off_ptr": "*i32", "self_ptr": "*fp32", "out_ptr": "*fp32"}
            yield AotVariant(f"index_reduce_combine {kind.value}", k, _sig(k, ptr, const),
                             const)


class UnravelIndexSpec(PlanSpec):
    plan = UnravelIndexPlan

    def cases(self, scale):
        table = [(300, (4, 5, 6), E.I64), (17, (7,), E.I32), (0, (2, 3), E.I64),
                 (50, (2, 1, 3, 2, 2, 1, 2, 3), E.I64)] if scale == "small" else \
            [(1 << 24, (64, 512, 512), E.I64)]
        for n, dims, iel in table:
            desc = R.UnravelDescriptor(n, dims, iel)

            def make(device, gen, desc=desc):
                total = 1
                for e in desc.dims:
                    total *= e
                # negative and past-the-end indices too: torch's floor-mod per dim
                idx = torch.randint(-total, 2 * total, (desc.num_indices,), generator=gen)
                return R.UnravelArgs(idx.to(device, desc.index_element.torch_dtype),
                                     poisoned((desc.num_indices, len(desc.dims)), torch.int64,
                                              device))

            def expect(args, desc=desc):
                got = torch.unravel_index(args.index.cpu().long(), desc.dims)
                return {"out": torch.stack(got, -1)}

            yield Case(f"N={n} dims={dims} {iel.value}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("zero extent", lambda: R.UnravelDescriptor(3, (2, 0)), InvalidProblem)
        yield Malformed("float index", lambda: R.UnravelDescriptor(3, (2, 3), E.F32),
                        Unsupported)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(1))
        yield Malformed("out wrong width", lambda: R.UnravelArgs(a.index, a.out[:, :1]),
                        InvalidProblem)

    def aot_variants(self):
        k = unravel_kernel
        const = dict(R=3, BLOCK=1024, idx_stride=1, n0=1, n1=1, n2=1, n3=1, n4=1)
        ptr = {"idx_ptr": "*i64", "out_ptr": "*i64"}
        yield AotVariant("unravel i64 rank 3", k, _sig(k, ptr, const), const)


register_spec(StridedCopySpec())
register_spec(IndexReduceSpec())
register_spec(UnravelIndexSpec())


def region_benches() -> list[BenchCase]:
    """take, index_fill, index_reduce (amax, include_self) and slice_scatter at >= 256 MB."""
    from .torch_api import index_fill, index_reduce, slice_scatter, take

    n, d, k = 65536, 1024, 65536  # f32 [n, d]: 256 MiB
    shape = f"[{n}, {d}] f32"

    def setup(device):
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(n, d, device=device, generator=g)
        return {"x": x,
                "flat": torch.randint(0, n * d, (k * d,), device=device, generator=g),
                "rows": torch.randint(0, n, (k,), device=device, generator=g),
                "src": torch.randn(k, d, device=device, generator=g),
                "half": torch.randn(n, d // 2, device=device, generator=g)}

    el = 4
    return [
        BenchCase("take", f"{shape} {k * d} flat indices", setup,
                  ours=lambda x, flat, rows, src, half: take(x, flat),
                  torch_eager=lambda x, flat, rows, src, half: torch.take(x, flat),
                  bytes=k * d * (8 + 2 * el)),
        BenchCase("index_fill", f"{shape} dim=0 K={k}", setup,
                  ours=lambda x, flat, rows, src, half: index_fill(x, 0, rows, 1.5),
                  torch_eager=lambda x, flat, rows, src, half: torch.index_fill(x, 0, rows,
                                                                                1.5),
                  bytes=2 * n * d * el),
        BenchCase("index_reduce amax", f"{shape} dim=0 K={k} include_self", setup,
                  ours=lambda x, flat, rows, src, half: index_reduce(x, 0, rows, src, "amax"),
                  torch_eager=lambda x, flat, rows, src, half: torch.index_reduce(
                      x, 0, rows, src, "amax"),
                  bytes=2 * n * d * el + k * d * el),
        BenchCase("slice_scatter", f"{shape} dim=1 ::2", setup,
                  ours=lambda x, flat, rows, src, half: slice_scatter(x, half, 1, 0, None, 2),
                  torch_eager=lambda x, flat, rows, src, half: torch.slice_scatter(
                      x, half, 1, 0, None, 2),
                  bytes=2 * n * d * el + n * (d // 2) * el),
    ]
