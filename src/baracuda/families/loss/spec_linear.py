"""Fused linear + cross-entropy: test cases, malformed inputs, AOT variants and bench rows."""

from __future__ import annotations

import dataclasses

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference_linear as ref
from .descriptors import LossReduction
from .kernels_linear import lce_finalize_kernel, lce_rows_kernel, lce_totals_kernel
from .plans_linear import LinearCrossEntropyBackwardPlan, LinearCrossEntropyPlan, row_block

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
I32, I64 = ElementKind.I32, ElementKind.I64


@dataclasses.dataclass(frozen=True)
class Row:
    """One problem: (tokens, hidden, classes), dtypes, options; chunk 0 = the plan's pick."""

    shape: tuple
    elements: tuple
    reduction: str = "mean"
    bias: bool = False
    weight: bool = False
    ignore: bool = False
    smoothing: float = 0.0
    softcap: float = 0.0
    z_loss: float = 0.0
    chunk: int = 0
    layout: str = "contiguous"
    target: ElementKind = I64


SMALL = [
    Row((37, 24, 53), (F32, F64), "mean", True, False, True, 0.0, 0.0, 0.0, 16),
    Row((29, 16, 70), (F32, BF16), "sum", False, True, True, 0.1, 5.0, 1e-2, 8, "strided"),
    Row((21, 8, 45), (F64, F16), "mean", True, True, True, 0.2, 3.0, 0.1, 5, "contiguous", I32),
    Row((19, 12, 33), (F32,), "none", True, False, True, 0.0, 2.0, 0.05, 7),
    Row((0, 8, 10), (F32,), "mean", True, True),
    Row((0, 8, 10), (F32,), "sum", True),
]
REAL = [
    Row((2048, 2048, 32768), (BF16,), "mean", False, False, True),
    Row((1000, 1024, 50257), (F32, BF16), "mean", True, True, True, 0.1, 30.0, 1e-4),
    Row((4096, 512, 8000), (F16,), "sum", False, False, False, 0.0, 0.0, 1e-4, 1000),
    Row((3000, 768, 30000), (BF16,), "none", True, False, True, 0.0, 15.0, 0.0),
]


def _desc(cls, row: Row, element: ElementKind):
    n, h, c = row.shape
    return cls(n, h, c, element, row.target, LossReduction(row.reduction), row.bias, row.weight,
               -100, row.smoothing, row.softcap, row.z_loss, row.chunk)


def make_inputs(row: Row, element: ElementKind, device, gen):
    n, h, c = row.shape
    dt = element.torch_dtype
    x = with_layout(randn((n, h), dt, device, gen), row.layout)
    w_lin = with_layout(randn((c, h), dt, device, gen, std=h ** -0.5 * 3), row.layout)
    b = randn((c,), dt, device, gen) if row.bias else None
    w = ((torch.rand(c, generator=gen, dtype=torch.float64) * 2 + 0.1).to(device, dt)
         if row.weight else None)
    t = torch.randint(0, c, (n,), generator=gen)
    if row.ignore and n:
        t[::4] = -100
    t = t.to(device, row.target.torch_dtype)
    if row.layout == "strided" and n:
        t = with_layout(t, "strided")
    return x, w_lin, t, b, w


def _opts(row: Row) -> dict:
    return dict(reduction=row.reduction, label_smoothing=row.smoothing, softcap=row.softcap,
                z_loss=row.z_loss)


class _LinearCESpec(PlanSpec):
    backward = False

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            for element in row.elements:
                if self.backward:
                    yield self._case(row, element, "backward")
                    continue
                yield self._case(row, element, "forward")
                if row.reduction != "none":
                    yield self._case(row, element, "fused")

    def _case(self, row: Row, element: ElementKind, mode: str):
        desc = _desc(self.plan.descriptor_type, row, element)
        args_t = self.plan.args_type
        dt = element.torch_dtype
        n, h, c = row.shape
        name = f"linear_ce {mode} {row.shape} {row.reduction} b={row.bias} w={row.weight} " \
               f"eps={row.smoothing} cap={row.softcap} z={row.z_loss} chunk={row.chunk} " \
               f"{row.layout} {element.value}"

        def grads(device):
            return (poisoned((n, h), dt, device), poisoned((c, h), dt, device),
                    poisoned((c,), dt, device) if row.bias else None)

        def make(device, gen):
            x, w_lin, t, b, w = make_inputs(row, element, device, gen)
            if mode == "backward":
                g = randn(desc.loss_shape, dt, device, gen)
                return args_t(g, x, w_lin, t, b, w, *grads(device))
            outs = (poisoned(desc.loss_shape, dt, device), poisoned(desc.loss_shape, dt, device))
            return args_t(x, w_lin, t, b, w, *outs, *(grads(device) if mode == "fused" else ()))

        def expect(a):
            inputs = (a.input, a.linear_weight, a.target, a.linear_bias, a.weight)
            if mode == "forward":
                loss, z = ref.linear_cross_entropy(*inputs, **_opts(row))
                return {"loss": loss, "z_loss": z}
            g = a.grad_loss if mode == "backward" else "ones"
            loss, z, (dx, dw, db) = ref.linear_cross_entropy(*inputs, **_opts(row), grad=g)
            out = {"grad_input": dx, "grad_linear_weight": dw}
            if db is not None:
                out["grad_linear_bias"] = db
            if mode == "fused":
                out.update(loss=loss, z_loss=z)
            return out

        return Case(name, desc, make, expect)

    def malformed_descriptors(self):
        cls = self.plan.descriptor_type
        yield Malformed("negative tokens", lambda: cls(-1, 4, 8, F32), InvalidProblem)
        yield Malformed("zero classes", lambda: cls(4, 4, 0, F32), InvalidProblem)
        yield Malformed("integer element", lambda: cls(4, 4, 8, I32), Unsupported)
        yield Malformed("float target", lambda: cls(4, 4, 8, F32, F32), Unsupported)
        yield Malformed("bad reduction", lambda: cls(4, 4, 8, F32, I64, "avg"), InvalidProblem)
        yield Malformed("has_bias not bool", lambda: cls(4, 4, 8, F32, I64, "mean", 1),
                        InvalidProblem)
        yield Malformed("label_smoothing 1.5", lambda: cls(
            4, 4, 8, F32, I64, "mean", False, False, -100, 1.5), InvalidProblem)
        yield Malformed("negative softcap", lambda: cls(
            4, 4, 8, F32, I64, "mean", False, False, -100, 0.0, -1.0), InvalidProblem)
        yield Malformed("z_loss nan", lambda: cls(
            4, 4, 8, F32, I64, "mean", False, False, -100, 0.0, 0.0, float("nan")),
            InvalidProblem)
        yield Malformed("negative chunk_rows", lambda: cls(4, 4, 8, F32, chunk_rows=-2),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        good = lambda: case.make_args(device, torch.Generator().manual_seed(5))  # noqa: E731

        def replace(**kw):
            def build():
                a = good()
                for k, v in kw.items():
                    setattr(a, k, v(a) if callable(v) else v)
                return a
            return build

        dt = d.element.torch_dtype
        yield Malformed("target wrong length", replace(
            target=torch.zeros(d.tokens + 1, dtype=torch.int64, device=device)), InvalidProblem)
        yield Malformed("target float", replace(target=lambda a: a.target.double()),
                        InvalidProblem)
        yield Malformed("hidden mismatch", replace(
            linear_weight=torch.zeros(d.classes, d.hidden + 1, dtype=dt, device=device)),
            InvalidProblem)
        yield Malformed("input wrong dtype", replace(
            input=lambda a: a.input.to(torch.float64 if dt != torch.float64 else torch.float32)),
            InvalidProblem)
        if d.has_bias:
            yield Malformed("bias missing", replace(linear_bias=None), InvalidProblem)
        else:
            yield Malformed("bias given", replace(
                linear_bias=torch.zeros(d.classes, dtype=dt, device=device)), InvalidProblem)
        if d.has_weight:
            yield Malformed("class weight strided", replace(weight=torch.ones(
                2 * d.classes, dtype=dt, device=device)[::2]), Unsupported)
        if not self.backward and d.reduction is LossReduction.NONE:
            yield Malformed("fused gradients with reduction none", replace(
                grad_input=torch.empty(d.tokens, d.hidden, dtype=dt, device=device)),
                InvalidProblem)

    def aot_variants(self):
        """The row kernel with every option (the most live values) and its plain forms, the
        totals and finalize kernels, for bf16 and f32 at a 128K vocabulary."""
        for element in (BF16, F32):
            t = "*" + triton_dtype(element.torch_dtype)
            acc = acc_type(element)
            ptrs = {"buf_ptr": t, "t_ptr": "*i64", "w_ptr": t, "g_ptr": t, "ws_ptr": "*fp32"}
            scalars = {f"{n}_{p}": "fp32" for n in ("eps", "cap", "zc") for p in ("hi", "lo")}
            scalars.update({n: "i64" for n in ("row_base", "n_total", "C", "stride_b")})
            grads = (2, 3) if self.backward else (0, 1)
            for grad in grads:
                for full in (False, True):
                    const = dict(HAS_W=full, SMOOTH=full, SOFTCAP=full, ZLOSS=full, GRAD=grad,
                                 MEAN=grad in (1, 3), ACC=acc, BLOCK=row_block(128256, full),
                                 CHECK=True)
                    yield AotVariant.auto(
                        f"lce_rows_kernel {element.value} grad={grad} all_options={full}",
                        lce_rows_kernel, ptrs, const, scalars, num_warps=8)
            if not self.backward:
                yield AotVariant.auto(f"lce_totals_kernel {element.value}", lce_totals_kernel,
                                      {"t_ptr": "*i64", "w_ptr": t, "ws_ptr": "*fp32"},
                                      dict(HAS_W=True, ACC=acc, BLOCK=1024))
                yield AotVariant.auto(f"lce_finalize_kernel {element.value}",
                                      lce_finalize_kernel,
                                      {"ws_ptr": "*fp32", "loss_ptr": t, "z_ptr": t},
                                      dict(REDUCE=True, MEAN=True, ZLOSS=True, ACC=acc,
                                           BLOCK=1024))


class LinearCrossEntropySpec(_LinearCESpec):
    plan = LinearCrossEntropyPlan


class LinearCrossEntropyBackwardSpec(_LinearCESpec):
    plan = LinearCrossEntropyBackwardPlan
    backward = True


for _spec in (LinearCrossEntropySpec(), LinearCrossEntropyBackwardSpec()):
    register_spec(_spec)


#: (tokens, hidden, vocab): the issue's shape and a smaller one.
BENCH_SHAPES = [(8192, 4096, 128256), (4096, 2048, 32768)]


# its own key: register_bench keeps one function per key, and "loss" is spec.py's
@register_bench("loss")
def linear_ce_benches(quick: bool):
    """Forward + backward, bf16. Targets (issue #35) at 8192 x 4096 x 128256: time <= 1.05x
    the unfused torch path, peak memory <= 25% of it (lab/scripts/linear_ce_memory.py)."""
    import torch.nn.functional as F

    from .torch_api import linear_cross_entropy

    extra = {}
    try:  # the third peer, when its wheel is installed
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

        liger_loss = LigerFusedLinearCrossEntropyLoss()

        def liger(x, w, t):
            return torch.autograd.grad(liger_loss(w, x, t), (x, w))

        extra = {"liger": liger}
    except Exception:  # noqa: BLE001 - optional peer
        pass
    out = []
    for n, h, c in BENCH_SHAPES:
        def setup(device, n=n, h=h, c=c):
            x = torch.randn(n, h, device=device, dtype=torch.bfloat16, requires_grad=True)
            w = (torch.randn(c, h, device=device, dtype=torch.bfloat16) * h ** -0.5
                 ).requires_grad_(True)
            t = torch.randint(0, c, (n,), device=device)
            return {"x": x, "w": w, "t": t}

        def ours(x, w, t):
            return torch.autograd.grad(linear_cross_entropy(x, w, t), (x, w))

        def eager(x, w, t):
            return torch.autograd.grad(F.cross_entropy(F.linear(x, w), t), (x, w))

        # three GEMMs of 2 n h c flops each
        out.append(BenchCase("linear_cross_entropy fwd+bwd", f"[{n}, {h}] x [{c}, {h}] bf16",
                             setup, ours=ours, torch_eager=eager, flops=6 * n * h * c,
                             quick=n < 8192, extra_peers=extra))
    return out
