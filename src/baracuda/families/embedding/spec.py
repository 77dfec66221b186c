"""Embedding test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.rows import gather_tile
from ...backends.triton_rows import row_gather_kernel
from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import descriptors as D
from . import reference as ref
from .kernels import embedding_bag_kernel, embedding_renorm_kernel
from .plans import EmbeddingBackwardPlan, EmbeddingPlan, EmbeddingRenormPlan
from .plans_bag import EmbeddingBagPlan

E = ElementKind
# (V, Dm, T, element, index element, padding_idx, weight layout, scale_grad_by_freq)
SMALL = [
    (50, 33, 100, E.F32, E.I64, None, "contiguous", False),
    (20, 8, 200, E.BF16, E.I32, 3, "strided", True),
    (7, 5, 0, E.F32, E.I64, None, "contiguous", False),
    (300, 4, 30, E.F64, E.I64, 0, "transposed", False),
    (16, 64, 64, E.F16, E.I32, None, "contiguous", True),
]
REAL = [
    (32768, 1024, 8192, E.BF16, E.I64, None, "contiguous", False),
    (50257, 256, 8192, E.F32, E.I64, 0, "contiguous", True),
    (1000, 256, 50_000, E.F16, E.I32, 5, "strided", False),
]

def _indices(v, t, iel, pad, device, gen):
    idx = torch.randint(0, max(v, 1), (t,), generator=gen)
    if pad is not None and t:
        idx[::5] = pad
    return idx.to(device=device, dtype=iel.torch_dtype)


class EmbeddingSpec(PlanSpec):
    plan = EmbeddingPlan

    def cases(self, scale):
        for v, dm, t, el, iel, pad, layout, _ in (SMALL if scale == "small" else REAL):
            desc = D.EmbeddingDescriptor(v, dm, t, el, iel, pad)

            def make(device, gen, v=v, dm=dm, t=t, el=el, iel=iel, pad=pad, layout=layout):
                w = with_layout(randn((v, dm), el.torch_dtype, device, gen), layout)
                idx = _indices(v, t, iel, pad, device, gen)
                return D.EmbeddingArgs(w, idx, poisoned((t, dm), el.torch_dtype, device))

            def expect(args):
                return {"out": ref.embedding(args.weight, args.indices)}

            yield Case(f"V={v} D={dm} T={t} {el.value} {iel.value} pad={pad} {layout}", desc,
                       make, expect)

    def malformed_descriptors(self):
        yield Malformed("padding_idx out of range",
                        lambda: D.EmbeddingDescriptor(10, 4, 3, E.F32, E.I64, 10), InvalidProblem)
        yield Malformed("negative dim", lambda: D.EmbeddingDescriptor(10, -4, 3, E.F32),
                        InvalidProblem)
        yield Malformed("integer weight", lambda: D.EmbeddingDescriptor(10, 4, 3, E.I32),
                        Unsupported)
        yield Malformed("float indices", lambda: D.EmbeddingDescriptor(10, 4, 3, E.F32, E.F16),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        a = case.make_args(device, torch.Generator().manual_seed(2))
        dt = d.element.torch_dtype
        yield Malformed("out wrong shape", lambda: D.EmbeddingArgs(
            a.weight, a.indices, torch.empty((d.num_tokens + 1, d.embedding_dim), dtype=dt,
                                             device=device)), InvalidProblem)
        yield Malformed("indices float", lambda: D.EmbeddingArgs(
            a.weight, a.indices.to(dt), a.out), InvalidProblem)
        yield Malformed("weight wrong dtype", lambda: D.EmbeddingArgs(
            a.weight.to(torch.float64 if dt != torch.float64 else torch.float32), a.indices,
            a.out), InvalidProblem)

    def aot_variants(self):
        for el in (E.F32, E.BF16):
            t = "*" + triton_dtype(el.torch_dtype)
            k = row_gather_kernel
            # the runtime tile of the bench's rows (dim 4096), unit strides as the JIT sees
            block_t, block_d, warps = gather_tile(4096, el.torch_dtype.itemsize)
            const = dict(BLOCK_K=block_t, BLOCK_D=block_d, S1=1, S2=1, S3=1, ss3=1, ds3=1,
                         FLAT=True, CHECK=True)
            sig = {n: ("constexpr" if n in const else {"src_ptr": t, "dst_ptr": t,
                                                       "idx_ptr": "*i64"}.get(n, "i64"))
                   for n in k.arg_names}
            yield AotVariant(f"embedding row_gather {el.value}", k, sig, const, num_warps=warps)


class EmbeddingBackwardSpec(PlanSpec):
    plan = EmbeddingBackwardPlan

    def cases(self, scale):
        for v, dm, t, el, iel, pad, layout, freq in (SMALL if scale == "small" else REAL):
            desc = D.EmbeddingBackwardDescriptor(v, dm, t, el, iel, pad, freq)

            def make(device, gen, v=v, dm=dm, t=t, el=el, iel=iel, pad=pad, layout=layout):
                g = with_layout(randn((t, dm), el.torch_dtype, device, gen), layout)
                idx = _indices(v, t, iel, pad, device, gen)
                return D.EmbeddingBackwardArgs(g, idx, poisoned((v, dm), el.torch_dtype, device))

            def expect(args, v=v, pad=pad, freq=freq):
                return {"grad_weight": ref.embedding_backward(args.grad_out, args.indices, v,
                                                              pad, freq)}

            yield Case(f"V={v} D={dm} T={t} {el.value} {iel.value} pad={pad} {layout} "
                       f"freq={freq}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("scale_grad_by_freq not bool", lambda: D.EmbeddingBackwardDescriptor(
            10, 4, 3, E.F32, E.I64, None, 1), InvalidProblem)
        yield Malformed("padding_idx negative", lambda: D.EmbeddingBackwardDescriptor(
            10, 4, 3, E.F32, E.I64, -1), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        a = case.make_args(device, torch.Generator().manual_seed(2))
        yield Malformed("grad_weight wrong shape", lambda: D.EmbeddingBackwardArgs(
            a.grad_out, a.indices, a.grad_weight[:-1]), InvalidProblem)
        yield Malformed("indices wrong length", lambda: D.EmbeddingBackwardArgs(
            a.grad_out, a.indices[:-1], a.grad_weight), InvalidProblem)
        yield Malformed("grad_weight is grad_out", lambda: D.EmbeddingBackwardArgs(
            a.grad_out, a.indices, a.grad_out.reshape(-1)[: d.num_embeddings * d.embedding_dim]
            .view(d.num_embeddings, d.embedding_dim)), InvalidProblem)


class EmbeddingRenormSpec(PlanSpec):
    plan = EmbeddingRenormPlan

    def cases(self, scale):
        table = [(50, 33, 100, E.F32, E.I64, 1.0, 2.0), (20, 8, 60, E.BF16, E.I32, 2.0, 1.0),
                 (30, 16, 40, E.F64, E.I64, 0.5, float("inf")),
                 (10, 5, 20, E.F32, E.I64, 1.5, 3.0), (24, 9, 30, E.F16, E.I32, 1.0, 2.0)] \
            if scale == "small" else [
                 (131072, 1024, 16384, E.BF16, E.I64, 1.0, 2.0)]
        for v, dm, t, el, iel, mx, p in table:
            desc = D.EmbeddingRenormDescriptor(v, dm, t, el, iel, mx, p)

            def make(device, gen, v=v, dm=dm, t=t, el=el, iel=iel):
                w = randn((v, dm), el.torch_dtype, device, gen)
                return D.EmbeddingRenormArgs(_indices(v, t, iel, None, device, gen), w)

            def expect(args, mx=mx, p=p):
                return {"weight": ref.embedding_renorm(args.weight, args.indices, mx, p)}

            yield Case(f"V={v} D={dm} T={t} {el.value} max_norm={mx} p={p}", desc, make,
                       expect)

    def aot_variants(self):
        k = embedding_renorm_kernel
        for p in (2, -1):
            const = dict(P=p, ACC=tl.float32, BLOCK_D=1024, wc=1)
            sig = {n: ("constexpr" if n in const else {"w_ptr": "*bf16", "cnt_ptr": "*i32",
                                                       "max_norm": "fp32",
                                                       "norm_type": "fp32"}.get(n, "i64"))
                   for n in k.arg_names}
            yield AotVariant(f"embedding_renorm p={p}", k, sig, const)

    def malformed_descriptors(self):
        yield Malformed("max_norm 0", lambda: D.EmbeddingRenormDescriptor(
            10, 4, 3, E.F32, E.I64, 0.0), InvalidProblem)
        yield Malformed("norm_type negative", lambda: D.EmbeddingRenormDescriptor(
            10, 4, 3, E.F32, E.I64, 1.0, -2.0), InvalidProblem)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(2))
        yield Malformed("weight wrong shape", lambda: D.EmbeddingRenormArgs(
            a.indices, a.weight[:-1]), InvalidProblem)


class EmbeddingBagSpec(PlanSpec):
    plan = EmbeddingBagPlan

    def aot_variants(self):
        k = embedding_bag_kernel
        for mode in (0, 2):
            const = dict(MODE=mode, HAS_W=mode == 0, STORE_MT=mode == 2, ACC=tl.float32,
                         BLOCK_T=8, BLOCK_D=256, wc=1)
            ptrs = {"w_ptr": "*bf16", "idx_ptr": "*i64", "b_ptr": "*i64", "psw_ptr": "*bf16",
                    "out_ptr": "*bf16", "mt_ptr": "*i64"}
            sig = {n: ("constexpr" if n in const else ptrs.get(n, "i64")) for n in k.arg_names}
            yield AotVariant(f"embedding_bag mode={mode}", k, sig, const)

    def cases(self, scale):
        table = [(30, 20, 60, 9, "sum", E.F32, True, None), (25, 12, 40, 6, "mean", E.BF16,
                                                            False, 3),
                 (40, 7, 50, 8, "max", E.F64, False, None), (10, 5, 0, 3, "sum", E.F32, False,
                                                               None),
                 (18, 11, 30, 5, "sum", E.F16, True, 2), (18, 11, 30, 5, "max", E.F16, False,
                                                          None)] if scale == "small" else [
            (131072, 1024, 65536, 4096, "sum", E.BF16, True, None)]
        for v, dm, t, b, mode, el, has_w, pad in table:
            desc = D.EmbeddingBagDescriptor(v, dm, t, b, mode, el, E.I64, has_w, pad)

            def make(device, gen, v=v, dm=dm, t=t, b=b, mode=mode, el=el, has_w=has_w,
                     pad=pad):
                w = randn((v, dm), el.torch_dtype, device, gen)
                if mode == "max" and v > 2:
                    w[1] = w[0]  # ties between rows
                idx = _indices(v, t, E.I64, pad, device, gen)
                cuts = torch.randint(0, t + 1, (b - 1,), generator=gen).sort().values
                bounds = torch.cat([torch.zeros(1, dtype=torch.int64), cuts,
                                    torch.tensor([t])]).to(device)
                psw = randn((t,), el.torch_dtype, device, gen) if has_w else None
                mt = poisoned((b, dm), torch.int64, device) if mode == "max" else None
                return D.EmbeddingBagArgs(w, idx, bounds, poisoned((b, dm), el.torch_dtype,
                                                                 device), psw, mt)

            def expect(args, mode=mode, pad=pad):
                out, mt = ref.embedding_bag(args.weight, args.indices, args.bounds, mode,
                                            args.per_sample_weights, pad)
                return {"out": out} if mt is None else {"out": out, "max_token": mt}

            yield Case(f"V={v} D={dm} T={t} B={b} {mode} {el.value} w={has_w} pad={pad}",
                       desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("bad mode", lambda: D.EmbeddingBagDescriptor(
            10, 4, 3, 2, "median", E.F32), InvalidProblem)
        yield Malformed("weights with mean", lambda: D.EmbeddingBagDescriptor(
            10, 4, 3, 2, "mean", E.F32, E.I64, True), InvalidProblem)

    def malformed_args(self, case, device):
        a = case.make_args(device, torch.Generator().manual_seed(3))
        yield Malformed("bounds wrong length", lambda: D.EmbeddingBagArgs(
            a.weight, a.indices, a.bounds[:-1], a.out, a.per_sample_weights), InvalidProblem)
        yield Malformed("max_token on sum", lambda: D.EmbeddingBagArgs(
            a.weight, a.indices, a.bounds, a.out, a.per_sample_weights,
            torch.empty(a.out.shape, dtype=torch.int64, device=device)), InvalidProblem)


register_spec(EmbeddingBagSpec())
register_spec(EmbeddingRenormSpec())
register_spec(EmbeddingSpec())
register_spec(EmbeddingBackwardSpec())


@register_bench("embedding")
def embedding_benches(quick: bool):
    import torch.nn.functional as F

    from .torch_api import embedding

    v, dm, t = 131072, 4096, 16384
    shape = f"V={v} D={dm} T={t} bf16"

    def setup(device):
        w = torch.randn(v, dm, device=device, dtype=torch.bfloat16, requires_grad=True)
        idx = torch.randint(0, v, (t,), device=device)
        return {"idx": idx, "w": w, "g": torch.randn(t, dm, device=device, dtype=torch.bfloat16)}

    def ours_bwd(idx, w, g):
        return torch.autograd.grad(embedding(idx, w), w, g)

    def torch_bwd(idx, w, g):
        return torch.autograd.grad(F.embedding(idx, w), w, g)

    return [
        BenchCase("embedding fwd", shape, setup, ours=lambda idx, w, g: embedding(idx, w),
                  torch_eager=lambda idx, w, g: F.embedding(idx, w), bytes=2 * t * dm * 2),
        BenchCase("embedding fwd+bwd", shape, setup, ours=ours_bwd, torch_eager=torch_bwd,
                  bytes=3 * t * dm * 2 + v * dm * 2),
    ]
