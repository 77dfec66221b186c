"""GEMM test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn
from ...core.tolerance import Tolerance
from ...core.vocab import ArchSku, BackendKind, ElementKind, PlanPreference
from . import descriptors as D
from . import reference as ref
from .composite import BatchedGemmPlan, GroupedGemmPlan, LinearBackwardPlan, LinearPlan
from .kernels import gemm_kernel
from .launch import tile_for
from .plans import DenseGemmPlan

E = ElementKind
A = D.GemmActivation
F32, F16, BF16, F64 = E.F32, E.F16, E.BF16, E.F64
TRITON = PlanPreference(prefer_backend=BackendKind.TRITON)
TF32 = PlanPreference(allow_tf32=True)
#: TF32 keeps 10 mantissa bits of each input: ~1e-3 relative per product.
TF32_TOL = Tolerance(4e-3, 8e-3)


def matrix(shape, layout: str, dtype, device, gen, scale: float = 1.0) -> torch.Tensor:
    """A [*batch, r, c] operand: "N" row-major, "T" column-major (a transposed view),
    "ld" row-major with a padded leading dimension, "bcast" batch dim 0 broadcast (stride 0)."""
    *batch, r, c = shape
    if layout == "T":
        return randn((*batch, c, r), dtype, device, gen, std=scale).mT
    if layout == "ld":
        big = randn((*batch, r, c + 5), dtype, device, gen, std=scale)
        return big[..., :c]
    if layout == "bcast" and batch:
        return randn((1, *batch[1:], r, c), dtype, device, gen, std=scale).expand(*shape)
    return randn(shape, dtype, device, gen, std=scale)


# (name, m, n, k, element, extra descriptor fields, a layout, b layout, preference)
DENSE_SMALL = [
    ("NN", 17, 100, 33, F32, {}, "N", "N", None),
    ("TN", 100, 17, 100, BF16, {}, "T", "N", None),
    ("NT", 1, 100, 17, F16, {}, "N", "T", None),
    ("TT", 100, 1, 17, F64, {}, "T", "T", None),
    ("k1 ld", 17, 17, 1, F32, {}, "ld", "ld", None),
    ("bias relu", 17, 100, 100, BF16, {"bias": True, "activation": A.RELU}, "N", "T", None),
    ("gelu aux", 17, 33, 100, F32, {"activation": A.GELU, "save_preact": True}, "T", "N",
     None),
    ("bias gelu_tanh", 100, 17, 17, F16, {"bias": True, "activation": A.GELU_TANH}, "N", "N",
     None),
    ("bias silu aux", 17, 17, 100, F64,
     {"bias": True, "activation": A.SILU, "save_preact": True}, "N", "T", None),
    ("alpha beta C", 17, 100, 17, F32, {"alpha": 0.5, "beta": -1.5}, "N", "N", None),
    ("f64 alpha 1/3", 17, 17, 33, F64, {"alpha": 1 / 3, "beta": 0.1}, "T", "N", None),
    ("batch a bcast", 17, 33, 17, F32, {"batch": (3,)}, "bcast", "N", None),
    ("batch2 b bcast bias gelu", 17, 17, 33, BF16,
     {"batch": (2, 3), "bias": True, "activation": A.GELU_TANH}, "N", "bcast", None),
    ("drelu bgrad", 17, 100, 33, F32, {"dactivation": A.RELU, "bias_grad": True}, "N", "T",
     None),
    ("dgelu bgrad", 33, 17, 17, BF16, {"dactivation": A.GELU, "bias_grad": True}, "T", "N",
     None),
    ("dgelu_tanh", 17, 17, 17, F64, {"dactivation": A.GELU_TANH}, "N", "N", None),
    ("batch dsilu bgrad", 17, 17, 17, F16,
     {"batch": (2,), "dactivation": A.SILU, "bias_grad": True}, "N", "T", None),
    ("bgrad only", 100, 17, 17, F32, {"bias_grad": True}, "N", "N", None),
    ("tf32", 17, 100, 100, F32, {}, "N", "N", TF32),
    ("k0 beta bias", 17, 17, 0, F32, {"beta": 2.0, "bias": True}, "N", "N", None),
    ("m0", 0, 17, 17, BF16, {}, "N", "N", None),
    ("m0 bgrad", 0, 17, 17, F32, {"bias_grad": True}, "N", "N", None),
]

DENSE_REAL = [
    ("NN 1000", 1000, 1000, 1000, BF16, {}, "N", "N", None),
    ("TN 777", 777, 1000, 333, F16, {}, "T", "N", None),
    ("NT bias gelu_tanh", 1024, 2048, 512, BF16,
     {"bias": True, "activation": A.GELU_TANH}, "N", "T", None),
    ("f32 ieee", 1000, 777, 1000, F32, {}, "N", "T", None),
    ("f32 tf32", 1000, 777, 1000, F32, {}, "N", "T", TF32),
    ("f64", 333, 777, 100, F64, {"alpha": 1 / 3, "beta": 0.5}, "T", "T", None),
    ("batch bcast b", 500, 300, 200, BF16, {"batch": (4,)}, "N", "bcast", None),
    ("batch bcast a", 100, 300, 200, F32, {"batch": (3,)}, "bcast", "N", None),
    ("triton NN", 1000, 1000, 1000, BF16, {"bias": True, "activation": A.GELU}, "N", "N",
     TRITON),
    ("triton NT f16 batch", 256, 512, 384, F16, {"batch": (2,)}, "N", "T", TRITON),
    ("triton f32", 500, 300, 200, F32, {"activation": A.SILU, "save_preact": True}, "T",
     "N", TRITON),
    ("dgelu bgrad", 2048, 1024, 512, BF16, {"dactivation": A.GELU, "bias_grad": True}, "N",
     "T", None),
    ("bias gelu_tanh aux", 1024, 2048, 512, BF16,
     {"bias": True, "activation": A.GELU_TANH, "save_preact": True}, "N", "T", None),
    ("dgelu_tanh bgrad", 2048, 1024, 512, BF16,
     {"dactivation": A.GELU_TANH, "bias_grad": True}, "T", "N", None),
    ("ld 1000", 1000, 999, 1001, BF16, {"beta": 1.0}, "ld", "ld", None),
]


def _dense_case(row):
    name, m, n, k, el, extra, la, lb, pref = row
    desc = D.DenseGemmDescriptor(m=m, n=n, k=k, element=el, **extra)
    dt = el.torch_dtype
    mn = (*desc.batch, m, n)

    def make(device, gen):
        scale = 1.0 / max(k, 1) ** 0.5
        a = matrix((*desc.batch, m, k), la, dt, device, gen)
        b = matrix((*desc.batch, k, n), lb, dt, device, gen, scale)
        return D.DenseGemmArgs(
            a=a, b=b, d=poisoned(mn, dt, device),
            c=randn(mn, dt, device, gen) if desc.has_c else None,
            bias=randn((n,), dt, device, gen) if desc.bias else None,
            preact=randn(mn, dt, device, gen) if desc.dactivation is not A.NONE else None,
            preact_out=poisoned(mn, dt, device) if desc.save_preact else None,
            dbias=poisoned((n,), dt, device) if desc.bias_grad else None)

    def expect(args):
        return ref.dense_gemm(desc, args.a, args.b, args.c, args.bias, args.preact)

    tol = {}
    if pref is TF32:
        tol = {"d": TF32_TOL}
    return Case(f"{name} {m}x{n}x{k} {el.value}", desc, make, expect, tol=tol,
                preference=pref or PlanPreference())


class DenseGemmSpec(PlanSpec):
    plan = DenseGemmPlan

    def cases(self, scale):
        for row in DENSE_SMALL if scale == "small" else DENSE_REAL:
            yield _dense_case(row)

    def malformed_descriptors(self):
        yield Malformed("negative m", lambda: D.DenseGemmDescriptor(-1, 4, 4, F32), InvalidProblem)
        yield Malformed("integer element", lambda: D.DenseGemmDescriptor(4, 4, 4, E.I32),
                        Unsupported)
        yield Malformed("bad activation",
                        lambda: D.DenseGemmDescriptor(4, 4, 4, F32, activation="no_such_act"),
                        InvalidProblem)
        yield Malformed("save_preact without activation",
                        lambda: D.DenseGemmDescriptor(4, 4, 4, F32, save_preact=True),
                        InvalidProblem)
        yield Malformed("infinite alpha",
                        lambda: D.DenseGemmDescriptor(4, 4, 4, F32, alpha=float("inf")),
                        InvalidProblem)
        yield Malformed("forward and backward epilogue",
                        lambda: D.DenseGemmDescriptor(4, 4, 4, F32, bias=True, bias_grad=True),
                        InvalidProblem)
        yield Malformed("batch rank 7", lambda: D.DenseGemmDescriptor(4, 4, 4, F32, batch=(1,) * 7),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        g = torch.Generator().manual_seed(5)
        m, n, k = d.m, d.n, d.k

        def args(**kw):
            base = dict(a=randn((m, k), dt, device, g), b=randn((k, n), dt, device, g),
                        d=torch.empty((m, n), dtype=dt, device=device))
            base.update(kw)
            return D.DenseGemmArgs(**base)

        other = torch.float64 if dt != torch.float64 else torch.float32
        yield Malformed("inner dims differ", lambda: args(b=randn((k + 1, n), dt, device, g)),
                        InvalidProblem)
        yield Malformed("d wrong shape", lambda: args(d=torch.empty((m, n + 1), dtype=dt,
                                                                    device=device)),
                        InvalidProblem)
        yield Malformed("a wrong dtype", lambda: args(a=randn((m, k), other, device, g)),
                        InvalidProblem)
        yield Malformed("bad leading dimension",
                        lambda: args(a=randn((m * k,), dt, device, g).as_strided((m, k),
                                                                                 (k - 1, 1))),
                        InvalidProblem)
        yield Malformed("no unit stride",
                        lambda: args(a=randn((m, 2 * k + 1), dt, device, g)[:, ::2][:, :k]
                                     .as_strided((m, k), (2 * k + 1, 2))),
                        Unsupported)

        def overlap():
            buf = randn((m * k + m * n,), dt, device, g)
            return args(a=buf[: m * k].view(m, k), d=buf[: m * n].view(m, n))

        yield Malformed("d overlaps a", overlap, InvalidProblem)
        yield Malformed("not a tensor", lambda: args(a=[1.0]), InvalidProblem)

    def aot_variants(self):
        # As the JIT specializes them on the GPU: unit inner strides, 16-divisible pointers.
        unit = ("s_ak", "s_bn", "s_cn", "s_bias", "s_pn", "s_dn", "s_on")
        ptrs = ("a_ptr", "b_ptr", "c_ptr", "bias_ptr", "pre_ptr", "d_ptr", "preo_ptr")
        # Extents and leading dimensions are multiples of 16 at the benchmarked sizes.
        div = ("M", "N", "K", "s_am", "s_bk", "s_cm", "s_pm", "s_dm", "s_om")
        for el in (BF16, F16, F32):
            for m, n, act in ((8192, 8192, A.NONE), (8192, 8192, A.GELU_TANH),
                              (64, 4096, A.GELU)):
                epi = act is not A.NONE
                t = tile_for(el, m, n, ArchSku.SM90A, PlanPreference(), epi)
                p = "*" + triton_dtype(el.torch_dtype)
                sig = {x: p for x in ptrs}
                sig.update({"M": "i32", "N": "i32", "K": "i32"})
                for x in gemm_kernel.arg_names:
                    if x not in sig and x not in unit and x.upper() != x:
                        sig[x] = "fp32" if x.startswith(("alpha", "beta")) else "i32"
                # The training forward (saved pre-activation) is the fused cell benchmarked.
                const = dict(HAS_C=False, HAS_BIAS=True, ACT=act.code, SAVE_PRE=epi, DACT=0,
                             MATH=t.math, ACC=acc_type(el), EVEN_K=True, BLOCK_M=t.block_m,
                             BLOCK_N=t.block_n, BLOCK_K=t.block_k, GROUP_M=t.group_m,
                             IDX64=False, INTERPRETING=False, EPI_SPLIT=t.epi_split,
                             **dict.fromkeys(unit, 1))
                sig.update({x: "constexpr" for x in const})
                yield AotVariant(f"gemm {el.value} {act.value} {t.block_m}x{t.block_n}x"
                                 f"{t.block_k}", gemm_kernel, sig, const, num_warps=t.warps,
                                 num_stages=t.stages, divisible=div)


# ----------------------------------------------------------------------------- composites
LINEAR_SMALL = [(17, 33, 100, F32, True, A.NONE), (100, 17, 17, BF16, True, A.GELU),
                (1, 17, 33, F64, False, A.RELU), (17, 100, 17, F16, True, A.SILU),
                (17, 17, 33, F32, True, A.GELU_TANH), (0, 17, 17, F32, True, A.RELU),
                (300, 7, 17, F32, True, A.RELU)]  # > 256 tokens: two-stage bias gradient
LINEAR_REAL = [(2048, 1024, 4096, BF16, True, A.GELU_TANH), (1000, 777, 333, F16, True, A.GELU),
               (1024, 512, 512, F32, False, A.NONE), (777, 100, 300, BF16, True, A.SILU)]


class LinearSpec(PlanSpec):
    plan = LinearPlan

    def cases(self, scale):
        for t, i, o, el, bias, act in LINEAR_SMALL if scale == "small" else LINEAR_REAL:
            save = act is not A.NONE
            desc = D.LinearDescriptor(t, i, o, el, bias=bias, activation=act, save_preact=save)
            dt = el.torch_dtype

            def make(device, gen, t=t, i=i, o=o, dt=dt, bias=bias, save=save):
                return D.LinearArgs(
                    x=randn((t, i), dt, device, gen),
                    weight=randn((o, i), dt, device, gen, std=1 / max(i, 1) ** 0.5),
                    y=poisoned((t, o), dt, device),
                    bias=randn((o,), dt, device, gen) if bias else None,
                    preact=poisoned((t, o), dt, device) if save else None)

            def expect(args, act=act, save=save):
                out = ref.linear(args.x, args.weight, args.bias, act)
                return out if save else {"y": out["y"]}

            yield Case(f"linear {t}x{i}->{o} {el.value} bias={bias} {act.value}", desc, make,
                       expect)

    def malformed_descriptors(self):
        yield Malformed("negative tokens", lambda: D.LinearDescriptor(-2, 4, 4, F32),
                        InvalidProblem)
        yield Malformed("i8", lambda: D.LinearDescriptor(2, 4, 4, E.I8), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        g = torch.Generator().manual_seed(3)
        good = case.make_args(device, g)
        yield Malformed("weight in_features differ",
                        lambda: D.LinearArgs(good.x, randn((d.out_features, d.in_features + 1), dt,
                                                         device, g), good.y, good.bias,
                                           good.preact), InvalidProblem)
        yield Malformed("y aliases x", lambda: D.LinearArgs(good.x, good.weight,
                                                          good.x[:, :1].expand(-1, 1), good.bias,
                                                          good.preact), InvalidProblem)


class LinearBackwardSpec(PlanSpec):
    plan = LinearBackwardPlan

    def cases(self, scale):
        for t, i, o, el, bias, act in LINEAR_SMALL if scale == "small" else LINEAR_REAL:
            desc = D.LinearBackwardDescriptor(t, i, o, el, bias=bias, activation=act)
            dt = el.torch_dtype

            def make(device, gen, t=t, i=i, o=o, dt=dt, bias=bias, act=act):
                return D.LinearBackwardArgs(
                    dy=randn((t, o), dt, device, gen), x=randn((t, i), dt, device, gen),
                    weight=randn((o, i), dt, device, gen),
                    preact=randn((t, o), dt, device, gen) if act is not A.NONE else None,
                    dx=poisoned((t, i), dt, device), dweight=poisoned((o, i), dt, device),
                    dbias=poisoned((o,), dt, device) if bias else None)

            def expect(args, act=act, bias=bias):
                out = ref.linear_backward(args.dy, args.x, args.weight, args.preact, act)
                if not bias:
                    out.pop("dbias")
                return out

            yield Case(f"linear_bwd {t}x{i}->{o} {el.value} bias={bias} {act.value}", desc,
                       make, expect)

    def malformed_descriptors(self):
        yield Malformed("bad activation",
                        lambda: D.LinearBackwardDescriptor(2, 4, 4, F32, activation=3),
                        InvalidProblem)

    def malformed_args(self, case, device):
        g = torch.Generator().manual_seed(4)
        good = case.make_args(device, g)
        yield Malformed("no gradient requested",
                        lambda: D.LinearBackwardArgs(good.dy, good.x, good.weight, good.preact),
                        InvalidProblem)
        yield Malformed("dy wrong shape",
                        lambda: D.LinearBackwardArgs(good.dy[:, :1], good.x, good.weight,
                                                   good.preact, good.dx), InvalidProblem)


BATCHED_SMALL = [(D.BatchedGemmKind.BMM, 3, 17, 33, 17, F32, 1.0, 0.0, None),
                 (D.BatchedGemmKind.BADDBMM, 2, 17, 17, 100, BF16, 0.5, 2.0, (1, 17)),
                 (D.BatchedGemmKind.ADDMM, 1, 17, 100, 17, F32, 1.0, 1.0, (100,)),
                 (D.BatchedGemmKind.ADDMM, 1, 33, 17, 17, F64, 2.0, 0.5, (33, 1)),
                 (D.BatchedGemmKind.MM, 1, 100, 17, 33, F16, 1.0, 0.0, None)]
BATCHED_REAL = [(D.BatchedGemmKind.BMM, 8, 512, 512, 256, BF16, 1.0, 0.0, None),
                (D.BatchedGemmKind.ADDMM, 1, 1024, 1024, 1024, BF16, 1.0, 1.0, (1024,)),
                (D.BatchedGemmKind.BADDBMM, 4, 300, 200, 100, F32, 0.5, -1.0, (4, 300, 200))]


class BatchedGemmSpec(PlanSpec):
    plan = BatchedGemmPlan

    def cases(self, scale):
        for kind, bt, m, n, k, el, alpha, beta, ishape in (
                BATCHED_SMALL if scale == "small" else BATCHED_REAL):
            desc = D.BatchedGemmDescriptor(kind, bt, m, n, k, el, alpha, beta)
            dt = el.torch_dtype
            lead = (bt,) if desc.batched else ()

            def make(device, gen, lead=lead, m=m, n=n, k=k, dt=dt, ishape=ishape, desc=desc):
                return D.BatchedGemmArgs(
                    a=randn((*lead, m, k), dt, device, gen),
                    b=randn((*lead, k, n), dt, device, gen, std=1 / k ** 0.5),
                    out=poisoned(desc.out_shape(), dt, device),
                    input=randn(ishape, dt, device, gen) if ishape else None)

            def expect(args, desc=desc):
                r = desc.alpha * (ref.f64(args.a) @ ref.f64(args.b))
                if desc.has_input:
                    r = r + desc.beta * ref.f64(args.input)
                return {"out": r}

            yield Case(f"{kind.value} {bt}x{m}x{n}x{k} {el.value} input={ishape}", desc, make,
                       expect)

    def malformed_descriptors(self):
        yield Malformed("addmm with batch", lambda: D.BatchedGemmDescriptor(
            D.BatchedGemmKind.ADDMM, 2, 4, 4, 4, F32), InvalidProblem)
        yield Malformed("bad kind", lambda: D.BatchedGemmDescriptor("no_kind", 2, 4, 4, 4, F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        g = torch.Generator().manual_seed(6)
        good = case.make_args(device, g)
        yield Malformed("b inner dim differs",
                        lambda: D.BatchedGemmArgs(good.a, good.b[..., :-1, :], good.out),
                        InvalidProblem)


GROUPED_SMALL = [((5, 0, 17, 1), 17, 33, BF16), ((17, 33), 100, 17, F32), ((3, 4), 9, 16, F16),
                 ((2, 5), 7, 12, F64)]
GROUPED_REAL = [((512, 1024, 0, 300, 2048), 1024, 512, BF16)]


class GroupedGemmSpec(PlanSpec):
    plan = GroupedGemmPlan

    def cases(self, scale):
        for sizes, n, k, el in GROUPED_SMALL if scale == "small" else GROUPED_REAL:
            desc = D.GroupedGemmDescriptor(sizes, n, k, el)
            dt = el.torch_dtype

            def make(device, gen, desc=desc, dt=dt):
                s = desc.total_rows
                return D.GroupedGemmArgs(
                    a=randn((s, desc.k), dt, device, gen),
                    b=randn((len(desc.group_sizes), desc.n, desc.k), dt, device, gen,
                            std=desc.k ** -0.5).mT,
                    d=poisoned((s, desc.n), dt, device))

            def expect(args, desc=desc):
                outs, r0 = [], 0
                for g, size in enumerate(desc.group_sizes):
                    outs.append(ref.f64(args.a[r0:r0 + size]) @ ref.f64(args.b[g]))
                    r0 += size
                return {"d": torch.cat(outs)}

            yield Case(f"grouped {sizes} n={n} k={k} {el.value}", desc, make, expect)

    def malformed_descriptors(self):
        yield Malformed("no groups", lambda: D.GroupedGemmDescriptor((), 4, 4, F32), InvalidProblem)
        yield Malformed("negative group", lambda: D.GroupedGemmDescriptor((3, -1), 4, 4, F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        g = torch.Generator().manual_seed(8)
        good = case.make_args(device, g)
        yield Malformed("too few experts", lambda: D.GroupedGemmArgs(good.a, good.b[:1], good.d),
                        InvalidProblem)


for _spec in (DenseGemmSpec(), LinearSpec(), LinearBackwardSpec(), BatchedGemmSpec(),
              GroupedGemmSpec()):
    register_spec(_spec)


# ------------------------------------------------------------------------------ benchmarks
@register_bench("gemm")
def gemm_benches(quick: bool):
    from . import torch_api as bt

    F = torch.nn.functional
    out = []

    def mm_case(name, m, n, k, dtype=torch.bfloat16, pref=None, quick_=True):
        def setup(device):
            return {"a": torch.randn(m, k, device=device, dtype=dtype),
                    "b": torch.randn(k, n, device=device, dtype=dtype)}

        if pref is None:
            def ours(a, b):
                return bt.mm(a, b)
        else:
            def ours(a, b):
                return bt._dense_mm(a, b, pref)
        out.append(BenchCase(name, f"{m}x{n}x{k} {str(dtype)[6:]}", setup, ours=ours,
                             torch_eager=lambda a, b: torch.mm(a, b), flops=2 * m * n * k,
                             quick=quick_))

    mm_case("mm", 8192, 8192, 8192)
    mm_case("mm triton", 8192, 8192, 8192, pref=TRITON)
    mm_case("mm f32", 4096, 4096, 4096, torch.float32, quick_=False)

    for t, i, o in ((8192, 4096, 14336), (8192, 14336, 4096)):
        def lsetup(device, t=t, i=i, o=o, grad=False):
            x = torch.randn(t, i, device=device, dtype=torch.bfloat16, requires_grad=grad)
            w = (torch.randn(o, i, device=device, dtype=torch.bfloat16) * i ** -0.5)
            return {"x": x, "w": w.requires_grad_(grad),
                    "dy": torch.randn(t, o, device=device, dtype=torch.bfloat16)}

        out.append(BenchCase("linear fwd", f"{t}x{i}->{o} bf16", lsetup,
                             ours=lambda x, w, dy: bt.linear(x, w),
                             torch_eager=lambda x, w, dy: F.linear(x, w), flops=2 * t * i * o))

        def bsetup(device, f=lsetup):
            return f(device, grad=True)

        def fb(fn):
            def run(x, w, dy):
                return torch.autograd.grad(fn(x, w), (x, w), dy)
            return run

        out.append(BenchCase("linear fwd+bwd", f"{t}x{i}->{o} bf16", bsetup,
                             ours=fb(bt.linear), torch_eager=fb(F.linear), flops=6 * t * i * o))

    def torch_bg(x, w, b, dy):
        return F.gelu(F.linear(x, w, b), approximate="tanh")

    def ours_bg(x, w, b, dy):
        return bt.linear_act(x, w, b, "gelu_tanh")

    def grad_of(fn):
        def run(x, w, b, dy):
            return torch.autograd.grad(fn(x, w, b, dy), (x, w, b), dy)
        return run

    def no_grad(fn):
        def run(x, w, b, dy):
            with torch.no_grad():
                return fn(x, w, b, dy)
        return run

    # The shape (K = 4096), then a smaller-K MLP shape (the elementwise passes weigh
    # more next to a shorter GEMM).
    for t, i, o in ((8192, 4096, 4096), (8192, 1024, 4096)):
        def gsetup(device, t=t, i=i, o=o):
            x = torch.randn(t, i, device=device, dtype=torch.bfloat16, requires_grad=True)
            w = (torch.randn(o, i, device=device, dtype=torch.bfloat16) * i ** -0.5)
            b = torch.randn(o, device=device, dtype=torch.bfloat16)
            return {"x": x, "w": w.requires_grad_(True), "b": b.requires_grad_(True),
                    "dy": torch.randn(t, o, device=device, dtype=torch.bfloat16)}

        shape = f"{t}x{i}->{o} bf16"
        out.append(BenchCase("bias+gelu fwd", shape, gsetup, ours=ours_bg,
                             torch_eager=torch_bg, flops=2 * t * i * o))
        out.append(BenchCase("bias+gelu fwd+bwd", shape, gsetup, ours=grad_of(ours_bg),
                             torch_eager=grad_of(torch_bg), flops=6 * t * i * o))
        # Inference (no pre-activation to keep): one GELU_BIAS GEMM on cuBLASLt.
        out.append(BenchCase("bias+gelu fwd no_grad", shape, gsetup, ours=no_grad(ours_bg),
                             torch_eager=no_grad(torch_bg), flops=2 * t * i * o))
    return out
