"""Pointwise loss test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import dataclasses

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, randn, with_layout
from ...core.vocab import ElementKind
from . import reference_pointwise as ref
from .descriptors_pointwise import KINDS, PointwiseLossKind, PointwiseReduction
from .kernels_pointwise import (
    pointwise_loss_bwd_kernel,
    pointwise_loss_kernel,
    pointwise_loss_rows_kernel,
    sum_partials_kernel,
)
from .plans_pointwise import (
    BWD_BLOCK,
    FWD_BLOCK,
    PointwiseLossBackwardPlan,
    PointwiseLossPlan,
    bwd_warps,
    fwd_warps,
)

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
ALL = (F32, F16, BF16, F64)
K = PointwiseLossKind


@dataclasses.dataclass(frozen=True)
class Row:
    """One problem. `layout` applies to the input; `bcast` names the operand read through a
    broadcast view: "target" (one row, expanded), "extra" (the last dim only, or extent 1 in
    the last dim for gaussian var), "pos_weight" (the last dim only)."""

    kind: PointwiseLossKind
    shape: tuple
    elements: tuple
    reduction: str = "mean"
    extra: bool = False
    pos_weight: bool = False
    param: float | None = None
    log_input: bool = False
    full: bool = False
    layout: str = "contiguous"
    bcast: str | None = None
    #: the forward also writes the input's gradient for a unit upstream gradient
    fused: bool = False


SMALL = [
    Row(K.MSE, (7, 13), ALL),
    Row(K.MSE, (3, 5, 6), (F32,), "none", layout="strided"),
    Row(K.MSE, (5, 9), (F64,), "sum", extra=True, bcast="target"),
    Row(K.MSE, (0, 4), (F32,), "mean"),
    Row(K.MSE, (), (F32,), "sum"),
    Row(K.L1, (6, 11), (F32, BF16), "sum"),
    Row(K.L1, (4, 7), (F64,), "none", extra=True, layout="transposed"),
    Row(K.SMOOTH_L1, (7, 9), ALL, "mean", param=0.5),
    Row(K.SMOOTH_L1, (5, 6), (F64,), "none", param=2.0, layout="transposed"),
    Row(K.HUBER, (7, 9), (F32, F16), "sum", param=0.7),
    Row(K.HUBER, (4, 5, 3), (F64,), "mean", extra=True, bcast="extra"),
    Row(K.BCE, (6, 10), ALL, "mean", extra=True),
    Row(K.BCE, (5, 7), (F64,), "none", layout="strided"),
    Row(K.BCE_LOGITS, (6, 10), ALL, "mean", extra=True, pos_weight=True, bcast="pos_weight"),
    Row(K.BCE_LOGITS, (3, 4, 5), (F64,), "none", pos_weight=True, bcast="pos_weight"),
    Row(K.BCE_LOGITS, (5, 7), (F32,), "sum", layout="transposed"),
    Row(K.KL_DIV, (6, 10), (F32, BF16), "batchmean"),
    Row(K.KL_DIV, (5, 7), (F64,), "none", log_input=True),
    Row(K.KL_DIV, (4, 9), (F16,), "mean"),
    Row(K.SOFT_MARGIN, (6, 10), (F32, F64), "mean"),
    Row(K.SOFT_MARGIN, (5, 7), (BF16,), "none"),
    Row(K.POISSON_NLL, (6, 10), (F32,), "mean", log_input=True, full=True),
    Row(K.POISSON_NLL, (5, 7), (F64,), "sum", full=True),
    Row(K.POISSON_NLL, (4, 5), (BF16,), "none", log_input=True),
    Row(K.GAUSSIAN_NLL, (6, 10), (F32, F64), "mean", extra=True, param=0.05, full=True),
    Row(K.GAUSSIAN_NLL, (5, 7), (F64,), "none", extra=True, bcast="extra"),
    Row(K.GAUSSIAN_NLL, (4, 6), (F16,), "sum", extra=True),
    Row(K.HINGE_EMBEDDING, (6, 10), (F32, F64), "mean"),
    Row(K.HINGE_EMBEDDING, (5, 7), (BF16,), "none", param=0.5),
    Row(K.MARGIN_RANKING, (6, 10), (F32, F64), "mean", extra=True, param=0.1),
    Row(K.MARGIN_RANKING, (5, 7), (F16,), "none", extra=True, bcast="target"),
    Row(K.MULTILABEL_SOFT_MARGIN, (6, 10), (F32, F64), "mean", extra=True, bcast="extra"),
    Row(K.MULTILABEL_SOFT_MARGIN, (5, 7), (F64,), "none", layout="strided"),
    Row(K.MULTILABEL_SOFT_MARGIN, (2, 3, 5), (BF16,), "none", extra=True),
    Row(K.MULTILABEL_SOFT_MARGIN, (4, 9), (F32,), "sum"),
    Row(K.MSE, (7, 13), (F32, BF16), "mean", fused=True),
    Row(K.BCE_LOGITS, (6, 10), (F64,), "sum", extra=True, pos_weight=True, bcast="pos_weight",
        fused=True),
    Row(K.KL_DIV, (5, 7), (F32,), "batchmean", fused=True),
    Row(K.GAUSSIAN_NLL, (4, 6), (F32,), "mean", extra=True, bcast="extra", fused=True),
    Row(K.MULTILABEL_SOFT_MARGIN, (4, 9), (F16,), "sum", extra=True, fused=True),
    Row(K.SMOOTH_L1, (0, 3), (F32,), "mean", fused=True),
]
BIG = (8192, 8192)
REAL = [
    *(Row(k, BIG, (BF16, F32), "mean", fused=f) for k in (K.MSE, K.L1, K.SMOOTH_L1)
      for f in (False, True)),
    Row(K.BCE_LOGITS, BIG, (BF16, F32), "mean"),
    Row(K.BCE_LOGITS, BIG, (BF16, F32), "mean", fused=True),
    Row(K.BCE_LOGITS, (4099, 3001), (BF16,), "none", extra=True, pos_weight=True,
        bcast="pos_weight"),
    Row(K.HUBER, (3001, 4099), (F16,), "sum", param=0.3, layout="transposed"),
    Row(K.BCE, (4096, 4099), (BF16, F32), "mean", extra=True),
    Row(K.KL_DIV, (4096, 4099), (BF16,), "batchmean", log_input=True),
    Row(K.SOFT_MARGIN, (4096, 4099), (F32,), "sum"),
    Row(K.POISSON_NLL, (4096, 4099), (F32,), "mean", log_input=True, full=True),
    Row(K.GAUSSIAN_NLL, (4096, 4099), (BF16,), "mean", extra=True, bcast="extra"),
    Row(K.HINGE_EMBEDDING, (4096, 4099), (F32,), "none"),
    Row(K.MARGIN_RANKING, (4096, 4099), (BF16,), "mean", extra=True),
    Row(K.MULTILABEL_SOFT_MARGIN, (4096, 4099), (BF16,), "none", extra=True, bcast="extra"),
    # rank 5 with an extent-1 dim: four collapsed dims, every one strided
    Row(K.MSE, (3, 1, 5, 7, 4001), (F32,), "mean", layout="strided"),
]


def _sign(shape, device, gen, dt):
    return torch.where(randn(shape, torch.float64, "cpu", gen) > 0, 1.0, -1.0).to(device, dt)


def _operand(row: Row, shape, name, dt, device, gen):
    """A fresh random operand of `name` in the kind's domain, at `shape`."""
    kind = row.kind
    if name == "input":
        if kind is K.BCE:
            return rand(shape, dt, device, gen, 0.02, 0.98)
        if kind is K.POISSON_NLL and not row.log_input:
            return rand(shape, dt, device, gen, 0.1, 3.0)
        return randn(shape, dt, device, gen, std=1.5)
    if name == "target":
        if kind in (K.BCE, K.BCE_LOGITS, K.MULTILABEL_SOFT_MARGIN):
            return rand(shape, dt, device, gen, 0.0, 1.0)
        if kind is K.KL_DIV:
            return randn(shape, dt, device, gen, std=0.5) if row.log_input else \
                rand(shape, dt, device, gen, 0.05, 1.0)
        if kind in (K.SOFT_MARGIN, K.HINGE_EMBEDDING):
            return _sign(shape, device, gen, dt)
        if kind is K.POISSON_NLL:
            return rand(shape, dt, device, gen, 0.0, 3.0)
        return randn(shape, dt, device, gen)
    if name == "extra":
        if kind is K.MARGIN_RANKING:
            return _sign(shape, device, gen, dt)
        if kind is K.GAUSSIAN_NLL:  # some below eps: the clamp is exercised
            return rand(shape, dt, device, gen, 0.01, 2.0)
        return rand(shape, dt, device, gen, 0.2, 1.5)
    return rand(shape, dt, device, gen, 0.5, 2.0)  # pos_weight


def make_inputs(row: Row, element: ElementKind, device, gen):
    """(input, target, extra, pos_weight) at row.shape; broadcast ones as expanded views."""
    dt, shape = element.torch_dtype, row.shape
    out = []
    for name in ("input", "target", "extra", "pos_weight"):
        if (name == "extra" and not row.extra) or (name == "pos_weight" and not row.pos_weight):
            out.append(None)
            continue
        small = shape
        if row.bcast == name and shape:
            if name == "target":
                small = (1, *shape[1:])
            elif name == "extra" and row.kind is K.GAUSSIAN_NLL:
                small = (*shape[:-1], 1)
            else:
                small = shape[-1:]
        t = _operand(row, small, name, dt, device, gen)
        if small != shape:
            t = t.expand(shape)
        elif name == "input":
            t = with_layout(t, row.layout)
        out.append(t)
    return out


def _desc(cls, row: Row, element: ElementKind):
    return cls.descriptor_type(row.kind, row.shape, element, PointwiseReduction(row.reduction),
                               row.extra, row.pos_weight, row.param, row.log_input, row.full)


def _wanted(row: Row) -> tuple[str, ...]:
    return tuple(n for n in KINDS[row.kind].grads if n != "extra" or row.extra)


class _Spec(PlanSpec):
    backward = False

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            if row.fused and self.backward:
                continue
            for element in row.elements:
                yield self._case(row, element)

    def _case(self, row: Row, element: ElementKind):
        desc = _desc(self.plan, row, element)
        dt = element.torch_dtype
        args_t = self.plan.args_type
        name = (f"{'bwd' if self.backward else 'fwd'} {row.kind.value} {row.shape} "
                f"{row.reduction} extra={row.extra} pw={row.pos_weight} p={row.param} "
                f"log={row.log_input} full={row.full} {row.layout} bcast={row.bcast} "
                f"fused={row.fused} {element.value}")
        if not self.backward:
            def make(device, gen):
                dx = poisoned(row.shape, dt, device) if row.fused else None
                return args_t(*make_inputs(row, element, device, gen),
                              poisoned(desc.loss_shape, dt, device), dx)

            def expect(a):
                out = {"loss": ref.pointwise_loss(desc, a.input, a.target, a.extra,
                                                  a.pos_weight)}
                if row.fused:
                    one = torch.ones((), dtype=torch.float64, device=a.input.device)
                    out.update(ref.pointwise_loss_grads(desc, one, a.input, a.target, a.extra,
                                                        a.pos_weight, ("input",)))
                return out

            return Case(name, desc, make, expect)
        wanted = _wanted(row)

        def make(device, gen):
            x, y, c, d = make_inputs(row, element, device, gen)
            g = randn(desc.loss_shape, dt, device, gen)
            outs = [poisoned(row.shape, dt, device) if n in wanted else None
                    for n in ("input", "target", "extra")]
            return args_t(g, x, y, c, d, *outs)

        def expect(a):
            return ref.pointwise_loss_grads(desc, a.grad_loss, a.input, a.target, a.extra,
                                            a.pos_weight, wanted)

        return Case(name, desc, make, expect)

    def malformed_descriptors(self):
        cls = self.plan.descriptor_type
        yield Malformed("negative extent", lambda: cls(K.MSE, (4, -1), F32), InvalidProblem)
        yield Malformed("rank 9", lambda: cls(K.MSE, (1,) * 9, F32), Unsupported)
        yield Malformed("integer element", lambda: cls(K.MSE, (4, 8), ElementKind.I32),
                        Unsupported)
        yield Malformed("bad reduction", lambda: cls(K.MSE, (4, 8), F32, "avg"), InvalidProblem)
        yield Malformed("batchmean for mse",
                        lambda: cls(K.MSE, (4, 8), F32, "batchmean"), InvalidProblem)
        yield Malformed("kind not a kind", lambda: cls(3, (4, 8), F32), InvalidProblem)
        yield Malformed("extra for kl_div",
                        lambda: cls(K.KL_DIV, (4, 8), F32, "sum", True), InvalidProblem)
        yield Malformed("gaussian without var",
                        lambda: cls(K.GAUSSIAN_NLL, (4, 8), F32), InvalidProblem)
        yield Malformed("pos_weight for bce",
                        lambda: cls(K.BCE, (4, 8), F32, "mean", False, True), InvalidProblem)
        yield Malformed("negative beta",
                        lambda: cls(K.SMOOTH_L1, (4, 8), F32, "mean", param=-1.0),
                        InvalidProblem)
        yield Malformed("zero delta",
                        lambda: cls(K.HUBER, (4, 8), F32, "mean", param=0.0), InvalidProblem)
        yield Malformed("nan margin",
                        lambda: cls(K.HINGE_EMBEDDING, (4, 8), F32, param=float("nan")),
                        InvalidProblem)
        yield Malformed("full for mse", lambda: cls(K.MSE, (4, 8), F32, full=True),
                        InvalidProblem)
        yield Malformed("flag not a bool",
                        lambda: cls(K.KL_DIV, (4, 8), F32, log_input=1), InvalidProblem)
        yield Malformed("multilabel rank 0",
                        lambda: cls(K.MULTILABEL_SOFT_MARGIN, (), F32), Unsupported)

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

        bad = tuple(s + 1 for s in d.shape) or (2,)
        yield Malformed("target shape mismatch", replace(
            target=lambda a: torch.zeros(bad, dtype=a.target.dtype, device=device)),
            InvalidProblem)
        other = torch.float64 if d.element is not F64 else torch.float32
        yield Malformed("target wrong dtype", replace(target=lambda a: a.target.to(other)),
                        InvalidProblem)
        yield Malformed("target not a tensor", replace(target=[1, 2]), InvalidProblem)
        if d.has_extra:
            yield Malformed("extra missing", replace(extra=None), InvalidProblem)
        else:
            yield Malformed("extra given", replace(extra=lambda a: a.input), InvalidProblem)
        if not self.backward:
            yield Malformed("loss wrong dtype", replace(loss=lambda a: a.loss.to(other)),
                            InvalidProblem)
            if d.loss_shape == () and d.numel:
                yield Malformed("loss aliases input", replace(
                    loss=lambda a: a.input.reshape(-1)[:1].reshape(())), InvalidProblem)
            if d.reduction is PointwiseReduction.NONE:
                yield Malformed("fused gradient for reduction none", replace(
                    grad_input=lambda a: torch.empty(d.shape, dtype=d.element.torch_dtype,
                                                     device=device)), InvalidProblem)
            return
        missing = [n for n in ("input", "target", "extra") if n not in KINDS[d.kind].grads]
        if missing and d.numel:
            name = missing[0]
            yield Malformed(f"grad_{name} not differentiable", replace(**{
                f"grad_{name}": lambda a: torch.empty(d.shape, dtype=d.element.torch_dtype,
                                                      device=device)}), InvalidProblem)
        if len(d.shape) == 2 and d.numel > 1 and min(d.shape) > 1:
            yield Malformed("grad_input not contiguous", replace(grad_input=lambda a: torch.empty(
                d.shape[::-1], dtype=d.element.torch_dtype, device=device).mT), Unsupported)

    def aot_variants(self):
        yield from _aot(self.backward)


def _aot(backward: bool):
    """Every kind once in bf16 (flat, reduced), plus the strided / per-element / per-row /
    f32 and f64 variants the real cases launch."""
    def variant(kernel, element, const, warps, label):
        t = "*" + triton_dtype(element.torch_dtype)
        acc = "*fp64" if element is F64 else "*fp32"
        ptrs = {n: (acc if n == "ws_ptr" else t) for n in kernel.arg_names if n.endswith("_ptr")}
        scalars = {n: "fp32" for n in kernel.arg_names if n.endswith(("_hi", "_lo"))}
        scalars.update({n: "i64" for n in kernel.arg_names
                        if n not in ptrs and n not in scalars and n not in const})
        const = dict(const, ACC=acc_type(element))
        return AotVariant.auto(f"{kernel.__name__} {label} {element.value}", kernel, ptrs,
                               const, scalars, num_warps=warps)

    def flags(kind, **kw):
        row = KINDS[kind]
        return dict(KIND=row.code, HAS_C=row.extra_required or kind is K.BCE_LOGITS,
                    HAS_D=row.pos_weight, LOG=False, FULL=False, **kw)

    if not backward:
        for kind in K:
            heavy_flags = flags(kind)
            for fused in (False, True):
                heavy = fused and (heavy_flags["HAS_C"] or heavy_flags["HAS_D"])
                yield variant(pointwise_loss_kernel, BF16, flags(
                    kind, REDUCE=True, NDIM=1, BLOCK=FWD_BLOCK, DX=fused),
                    fwd_warps(1, heavy), f"{kind.value} mean{' fused' if fused else ''}")
            # broadcast operands (pos_weight per class, a target row): two collapsed dims
            yield variant(pointwise_loss_kernel, BF16, flags(
                kind, REDUCE=True, NDIM=2, BLOCK=FWD_BLOCK, DX=True), fwd_warps(2, True),
                f"{kind.value} mean fused broadcast")
        yield variant(pointwise_loss_kernel, F32, flags(K.MSE, REDUCE=True, NDIM=1,
                                                         BLOCK=FWD_BLOCK, DX=True),
                      fwd_warps(1), "mse mean fused")
        for element in (F32, F64):
            yield variant(pointwise_loss_kernel, element, flags(K.MSE, REDUCE=False, NDIM=4,
                                                                 BLOCK=FWD_BLOCK),
                          fwd_warps(4), "mse none strided")
            yield variant(sum_partials_kernel, element, dict(BLOCK=1024), 4, "")
        yield variant(pointwise_loss_rows_kernel, BF16,
                      flags(K.MULTILABEL_SOFT_MARGIN, NDIM=2, BLOCK_R=4, BLOCK_C=1024),
                      fwd_warps(2), "multilabel rows")
        return
    for kind in K:
        row = KINDS[kind]
        yield variant(pointwise_loss_bwd_kernel, BF16, flags(
            kind, SCALAR_G=True, DX=True, DY="target" in row.grads,
            DC="extra" in row.grads and row.extra_required, NDIM=1, BLOCK=BWD_BLOCK),
            bwd_warps(1), f"{kind.value} mean")
    for element in (F32, F64):
        yield variant(pointwise_loss_bwd_kernel, element, flags(
            K.MSE, SCALAR_G=False, DX=True, DY=True, DC=False, NDIM=4, BLOCK=BWD_BLOCK),
            bwd_warps(4), "mse none strided")


class PointwiseLossSpec(_Spec):
    plan = PointwiseLossPlan


class PointwiseLossBackwardSpec(_Spec):
    plan = PointwiseLossBackwardPlan
    backward = True


register_spec(PointwiseLossSpec())
register_spec(PointwiseLossBackwardSpec())


BENCH_ELEMENTS = 1 << 26


@register_bench("loss")
def pointwise_loss_benches(quick: bool):
    """Forward + backward (input gradient), reduction mean, 2^26 elements ([8192, 8192])."""
    import torch.nn.functional as F

    from . import torch_pointwise as bt

    out = []
    shape = (8192, BENCH_ELEMENTS // 8192)
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits"):
        ours_fn, torch_fn = getattr(bt, name), getattr(F, name)
        logits = name.startswith("binary")
        for dtype in (torch.bfloat16, torch.float32):
            def setup(device, dtype=dtype, logits=logits):
                x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
                t = (torch.rand if logits else torch.randn)(shape, device=device, dtype=dtype)
                return {"x": x, "t": t}

            def ours(x, t, fn=ours_fn):
                return torch.autograd.grad(fn(x, t), x)

            def eager(x, t, fn=torch_fn):
                return torch.autograd.grad(fn(x, t), x)

            # forward reads x and t, backward reads them again and writes dx
            nbytes = 5 * BENCH_ELEMENTS * torch.finfo(dtype).bits // 8
            out.append(BenchCase(f"{name} fwd+bwd", f"{list(shape)} {str(dtype)[6:]}", setup,
                                 ours=ours, torch_eager=eager, bytes=nbytes, quick=True))
    return out
