"""Segment test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import torch

from ...backends.grouping import COUNT_WARPS, FUSED_SCAN_MAX
from ...backends.triton_grouping import (
    bucket_place_kernel,
    count_place_kernel,
    count_scan_kernel,
    count_sort_chunk_kernel,
    exclusive_scan_kernel,
    radix_hist_kernel,
    radix_scatter_kernel,
)
from ...backends.triton_rows import grouped_reduce_kernel
from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, randn, with_layout
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import (
    SegmentArgs,
    SegmentBackwardArgs,
    SegmentBackwardDescriptor,
    SegmentDescriptor,
    SegmentKind,
)
from .kernels import segment_backward_kernel, segment_ties_kernel
from .plans import BACKWARD_PLANS, FORWARD_PLANS, KIND_ID

E = ElementKind
# (data_shape, num_segments, element, index element, layout, id pattern)
SMALL = [
    ((777, 5), 13, E.F32, E.I64, "contiguous", "out_of_range"),
    ((100, 3, 4), 9, E.BF16, E.I32, "strided", "gaps"),
    ((60,), 7, E.F64, E.I64, "contiguous", "ties"),
    ((40, 6), 5, E.F16, E.I32, "transposed", "out_of_range"),
    ((0, 4), 3, E.F32, E.I64, "contiguous", "gaps"),
    ((30, 3), 50, E.F32, E.I64, "contiguous", "out_of_range"),  # short segments: 4 / program
]
REAL = [
    ((1 << 18, 128), 4096, E.F32, E.I64, "contiguous", "out_of_range"),
    ((50_000, 3, 40), 20_000, E.BF16, E.I32, "strided", "gaps"),
]

def make_ids(n, s, pattern, index_element, device, gen, sort):
    if pattern == "gaps":  # every other segment empty
        ids = torch.randint(0, max(s // 2, 1), (n,), generator=gen) * 2
    elif pattern == "out_of_range":
        ids = torch.randint(-2, s + 3, (n,), generator=gen)
    else:
        ids = torch.randint(0, s, (n,), generator=gen)
    if sort:
        ids = ids.sort().values
    return ids.to(device=device, dtype=index_element.torch_dtype)


def make_data(shape, element, kind, device, gen, layout):
    if kind is SegmentKind.PROD:
        x = rand(shape, torch.float64, "cpu", gen, 0.5, 1.5)
        x = torch.where(torch.rand(shape, generator=gen) < 0.5, x, -x)
        if x.numel():
            flat = x.view(-1)
            flat[:: 7] = 0.0  # zeros: one or several per segment
    else:
        x = randn(shape, torch.float64, "cpu", gen)
        if kind in (SegmentKind.MAX, SegmentKind.MIN) and x.shape[0] > 8:
            x[1::4] = x[0]  # exact ties across rows: the gradient splits among them
            flat = x.view(x.shape[0], -1)
            flat[5, 0] = flat[9, 0] = float("nan")  # NaN wins; NaN rows share the gradient
            flat[3::8, -1] = float("inf")  # tied infinities: max's winners
            flat[7::8, -1] = -float("inf")  # and min's
    return with_layout(x.to(device=device, dtype=element.torch_dtype), layout)


class SegmentSpec(PlanSpec):
    def __init__(self, plan):
        self.plan = plan
        self.kind, self.sorted = plan.KIND, plan.SORTED

    def cases(self, scale):
        for shape, s, el, iel, layout, pattern in (SMALL if scale == "small" else REAL):
            desc = SegmentDescriptor(shape, s, el, iel)
            extremal = self.kind in (SegmentKind.MAX, SegmentKind.MIN)

            def make(device, gen, shape=shape, s=s, el=el, iel=iel, layout=layout,
                     pattern=pattern, extremal=extremal):
                x = make_data(shape, el, self.kind, device, gen, layout)
                ids = make_ids(shape[0], s, pattern, iel, device, gen, self.sorted)
                out_shape = (s, *shape[1:])
                arg = poisoned(out_shape, torch.int64, device) if extremal else None
                return SegmentArgs(x, ids, poisoned(out_shape, el.torch_dtype, device), arg)

            def expect(args, s=s, extremal=extremal):
                out, arg = ref.segment_reduce(args.data, args.segment_ids, s, self.kind.value)
                return {"out": out, "argmax": arg} if extremal else {"out": out}

            yield Case(f"{shape} S={s} {el.value} ids={iel.value} {layout} {pattern}",
                       desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("negative num_segments",
                        lambda: SegmentDescriptor((4, 3), -1, E.F32), InvalidProblem)
        yield Malformed("num_segments not int",
                        lambda: SegmentDescriptor((4, 3), 2.0, E.F32), InvalidProblem)
        yield Malformed("rank 0 data", lambda: SegmentDescriptor((), 2, E.F32), Unsupported)
        yield Malformed("negative extent",
                        lambda: SegmentDescriptor((4, -3), 2, E.F32), InvalidProblem)
        yield Malformed("integer data", lambda: SegmentDescriptor((4, 3), 2, E.I32), Unsupported)
        yield Malformed("float ids",
                        lambda: SegmentDescriptor((4, 3), 2, E.F32, E.F32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        gen = torch.Generator().manual_seed(5)
        args = case.make_args(device, gen)
        dt = d.element.torch_dtype
        bad_out = torch.empty((d.num_segments + 1, *d.row_shape), dtype=dt, device=device)
        other = torch.int32 if d.index_element is E.I64 else torch.int64

        def replace(**kw):
            fields = dict(data=args.data, segment_ids=args.segment_ids, out=args.out,
                          argmax=args.argmax)
            fields.update(kw)
            return SegmentArgs(**fields)

        yield Malformed("out wrong shape", lambda: replace(out=bad_out), InvalidProblem)
        yield Malformed("ids wrong dtype",
                        lambda: replace(segment_ids=args.segment_ids.to(other)), InvalidProblem)
        yield Malformed("ids wrong length",
                        lambda: replace(segment_ids=args.segment_ids[:-1]), InvalidProblem)
        yield Malformed("data wrong dtype", lambda: replace(data=args.data.double()
                        if dt != torch.float64 else args.data.float()), InvalidProblem)
        yield Malformed("out is data", lambda: SegmentArgs(
            args.data, args.segment_ids, args.data[: d.num_segments], None), InvalidProblem)
        if self.kind not in (SegmentKind.MAX, SegmentKind.MIN):
            yield Malformed("argmax on a non-extremal plan", lambda: replace(
                argmax=torch.empty(d.out_shape, dtype=torch.int64, device=device)),
                InvalidProblem)

    def aot_variants(self):
        for el in (E.F32, E.BF16):
            yield _reduce_variant(int(KIND_ID[self.kind]), self.sorted, el,
                                  self.kind in (SegmentKind.MAX, SegmentKind.MIN))
        if not self.sorted and self.kind is SegmentKind.SUM:
            for bits, chunk, fused in ((4, 512, False), (5, 256, True), (6, 128, True)):
                for k in (radix_hist_kernel, radix_scatter_kernel):
                    for first in (True, False):
                        yield _sort_variant(k, first, bits, chunk, fused)
            yield from _count_variants()
        if not self.sorted and self.kind is SegmentKind.MAX:
            for k in (exclusive_scan_kernel, bucket_place_kernel):
                ptrs = {n: ("*i64" if n == "ids_ptr" else "*i32") for n in k.arg_names
                        if n.endswith("_ptr")}
                scan = k is exclusive_scan_kernel
                const = dict(BLOCK=4096, TOTAL=True, CURSOR=True) if scan else dict(BLOCK=1024)
                yield AotVariant(k.__name__, k, _sig(k, ptrs, const), const,
                                 num_warps=8 if scan else 4)


#: Ints the JIT specializes to 1 for contiguous rows (one collapsed inner dim, unit stride).
_ONES = ("S1", "S2", "xs3", "os3", "as3", "gs3", "ds3")


def _sig(kernel, ptrs: dict[str, str], const: dict) -> dict[str, str]:
    const.update({n: 1 for n in _ONES if n in kernel.arg_names})
    sig = {}
    for n in kernel.arg_names:
        sig[n] = "constexpr" if n in const else ptrs.get(n, "i64")
    return sig


def _reduce_variant(kind_id, sorted_ids, el, store_arg):
    t = "*" + triton_dtype(el.torch_dtype)
    ptrs = {"data_ptr": t, "perm_ptr": "*i32", "off_ptr": "*i32", "out_ptr": t,
            "arg_ptr": "*i64", "base_ptr": t, "alpha": "fp32"}
    const = dict(KIND=kind_id, SORTED=sorted_ids, STORE_ARG=store_arg, ACC=acc_type(el),
                 BLOCK_R=8 if store_arg else 16, BLOCK_D=128, SEGS=1, FLAT=True,
                 HAS_BASE=False)
    return AotVariant(f"segment_reduce k{kind_id} sorted={sorted_ids} {el.value}",
                      grouped_reduce_kernel, _sig(grouped_reduce_kernel, ptrs, const), const)


def _bwd_variants(kind_id, el):
    t = "*" + triton_dtype(el.torch_dtype)
    if kind_id in (KIND_ID[SegmentKind.MAX], KIND_ID[SegmentKind.MIN]):
        k = segment_ties_kernel
        const = dict(ACC=acc_type(el), BLOCK_R=8, BLOCK_D=128, FLAT=True)
        ptrs = {"x_ptr": t, "o_ptr": t, "ids_ptr": "*i64", "hit_ptr": "*u8"}
        yield AotVariant(f"segment_ties {el.value}", k, _sig(k, ptrs, const), const)
    ptrs = {"g_ptr": t, "ids_ptr": "*i64", "x_ptr": t, "st_ptr": "*fp32", "dc_ptr": "*i32",
            "cnt_ptr": "*i32", "hit_ptr": "*u8", "dx_ptr": t}
    const = dict(KIND=kind_id, ACC=acc_type(el), BLOCK_R=8, BLOCK_D=128, FLAT=True)
    yield AotVariant(f"segment_backward k{kind_id} {el.value}", segment_backward_kernel,
                     _sig(segment_backward_kernel, ptrs, const), const)


def _sort_variant(kernel, first, bits, chunk, fused):
    ptrs = {n: ("*i64" if n == "ids_ptr" else "*i32") for n in kernel.arg_names
            if n.endswith(("_in", "_out", "_ptr"))}
    const = dict(FIRST=first, R=1 << bits, C=chunk)
    if kernel is radix_scatter_kernel:
        const.update(FUSED=fused, NCH=FUSED_SCAN_MAX >> bits if fused else 1)
    return AotVariant(f"{kernel.__name__} first={first} R={1 << bits} C={chunk}", kernel,
                      _sig(kernel, ptrs, const), const)


def _count_variants():
    """The counting sort at the bench shape (2^20 rows, 4097 keys: 512 chunks of 2048)."""
    for k, const in ((count_sort_chunk_kernel, dict(C=2048, LOGC=11, ZB=1024)),
                     (count_scan_kernel, dict(PP=512, KB=8)),
                     (count_place_kernel, dict(C=2048, LOGC=11, KB=8, NBP=1024, OB=1024))):
        ptrs = {n: ("*i64" if n == "ids_ptr" else "*i32") for n in k.arg_names
                if n.endswith("_ptr")}
        yield AotVariant(k.__name__, k, _sig(k, ptrs, const), const,
                         num_warps=8 if k is count_scan_kernel else COUNT_WARPS)


class SegmentBackwardSpec(PlanSpec):
    def __init__(self, plan):
        self.plan = plan
        self.kind, self.sorted = plan.KIND, plan.SORTED

    def cases(self, scale):
        fw_spec = SegmentSpec(FORWARD_PLANS[(self.kind, self.sorted)])
        for fw in fw_spec.cases(scale):
            d = fw.desc
            desc = SegmentBackwardDescriptor(d.data_shape, d.num_segments, d.element,
                                             d.index_element)

            def make(device, gen, fw=fw, d=d):
                fa = fw.make_args(device, gen)
                g = with_layout(randn(d.out_shape, d.element.torch_dtype, device, gen), "strided")
                out = data = None
                if self.kind in (SegmentKind.MAX, SegmentKind.MIN):
                    out, _ = ref.segment_reduce(fa.data, fa.segment_ids, d.num_segments,
                                                self.kind.value)
                    out = out.to(device, d.element.torch_dtype)  # exact: data's own values
                if self.kind in (SegmentKind.MAX, SegmentKind.MIN, SegmentKind.PROD):
                    data = fa.data
                return SegmentBackwardArgs(g, fa.segment_ids,
                                           poisoned(d.data_shape, d.element.torch_dtype, device),
                                           out, data)

            def expect(args, d=d):
                return {"grad_data": ref.segment_backward(
                    args.grad_out, args.segment_ids, self.kind.value, d.num_rows, args.data)}

            yield Case(fw.name, desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("negative num_segments",
                        lambda: SegmentBackwardDescriptor((4, 3), -2, E.F32), InvalidProblem)
        yield Malformed("integer data",
                        lambda: SegmentBackwardDescriptor((4, 3), 2, E.I64), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        args = case.make_args(device, torch.Generator().manual_seed(6))

        def replace(**kw):
            fields = dict(grad_out=args.grad_out, segment_ids=args.segment_ids,
                          grad_data=args.grad_data, out=args.out, data=args.data)
            fields.update(kw)
            return SegmentBackwardArgs(**fields)

        bad = torch.empty((d.num_segments + 1, *d.row_shape), dtype=d.element.torch_dtype,
                          device=device)
        yield Malformed("grad_out wrong shape", lambda: replace(grad_out=bad), InvalidProblem)
        yield Malformed("grad_data wrong dtype", lambda: replace(
            grad_data=args.grad_data.to(torch.float64 if d.element is not E.F64
                                        else torch.float32)), InvalidProblem)
        if self.kind in (SegmentKind.MAX, SegmentKind.MIN):
            yield Malformed("out missing", lambda: replace(out=None), InvalidProblem)
            yield Malformed("out int64", lambda: replace(out=args.out.long()), InvalidProblem)
            yield Malformed("out wrong shape", lambda: replace(out=bad), InvalidProblem)
        else:
            yield Malformed("out on a non-extremal plan", lambda: replace(
                out=torch.empty(d.out_shape, dtype=d.element.torch_dtype, device=device)),
                InvalidProblem)
        if self.kind in (SegmentKind.MAX, SegmentKind.MIN, SegmentKind.PROD):
            yield Malformed("data missing", lambda: replace(data=None), InvalidProblem)

    def aot_variants(self):
        for el in (E.F32, E.BF16):
            yield from _bwd_variants(int(KIND_ID[self.kind]), el)


for _plan in FORWARD_PLANS.values():
    register_spec(SegmentSpec(_plan))
for _plan in BACKWARD_PLANS.values():
    register_spec(SegmentBackwardSpec(_plan))


@register_bench("segment")
def segment_benches(quick: bool):
    from . import torch_api as api

    n, d, s = 1 << 20, 128, 4096
    shape = f"N=2^20 D={d} S={s} f32"
    nbytes = n * d * 4

    def setup(device, sort=False, grad=False):
        x = torch.randn(n, d, device=device, requires_grad=grad)
        ids = torch.randint(0, s, (n,), device=device)
        if sort:
            ids = ids.sort().values
        return {"x": x, "ids": ids, "g": torch.randn(s, d, device=device)}

    def torch_max(x, ids, g):
        out = torch.zeros(s, d, device=x.device, dtype=x.dtype).scatter_reduce(
            0, ids[:, None].expand(n, d), x, "amax", include_self=False)
        return out

    def torch_max_fb(x, ids, g):
        return torch.autograd.grad(torch_max(x, ids, g), x, g)

    def ours_max_fb(x, ids, g):
        return torch.autograd.grad(api.segment_max(x, ids, s), x, g)

    def torch_sum(x, ids, g):
        return torch.zeros(s, d, device=x.device, dtype=x.dtype).index_add_(0, ids, x)

    return [
        BenchCase("unsorted segment_max fwd", shape, setup,
                  ours=lambda x, ids, g: api.segment_max(x, ids, s), torch_eager=torch_max,
                  bytes=nbytes + s * d * 4),
        BenchCase("unsorted segment_max fwd+bwd", shape,
                  lambda dev: setup(dev, grad=True), ours=ours_max_fb, torch_eager=torch_max_fb,
                  bytes=2 * nbytes + 2 * s * d * 4),
        BenchCase("unsorted segment_sum fwd", shape, setup,
                  ours=lambda x, ids, g: api.segment_sum(x, ids, s), torch_eager=torch_sum,
                  bytes=nbytes + s * d * 4),
        BenchCase("sorted segment_sum fwd", shape, lambda dev: setup(dev, sort=True),
                  ours=lambda x, ids, g: api.segment_sum(x, ids, s, indices_are_sorted=True),
                  torch_eager=torch_sum, bytes=nbytes + s * d * 4),
    ]
