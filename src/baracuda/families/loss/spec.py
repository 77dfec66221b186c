"""Loss test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import dataclasses

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec, single_threaded_autograd
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import LossReduction
from .kernels import (
    ce_kernel,
    finalize_kernel,
    nll_bwd_kernel,
    nll_fwd_kernel,
    scale_unless_one_kernel,
    weight_total_kernel,
)
from .plans import (
    CrossEntropyLossBackwardPlan,
    CrossEntropyLossFusedPlan,
    CrossEntropyLossPlan,
    NllLossBackwardPlan,
    NllLossPlan,
    ce_config,
)

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
I32, I64 = ElementKind.I32, ElementKind.I64
ALL = (F32, F16, BF16, F64)


def _tname(target) -> str:
    return target if isinstance(target, str) else target.value


@dataclasses.dataclass(frozen=True)
class Row:
    """One problem of the table; `target` is i32 / i64 (class indices) or "prob"."""

    shape: tuple
    elements: tuple
    target: object = I64
    reduction: str = "mean"
    weight: bool = False
    ignore_index: int = -100
    smoothing: float = 0.0
    layout: str = "contiguous"
    special: str | None = None  # "ignore", "neg_inf", "all_neg_inf_row", "constant_rows"


SMALL = [
    Row((7, 100), ALL),
    Row((5, 777), ALL, I32, "sum", True, -100, 0.1, "contiguous", "ignore"),
    Row((3, 10, 6), (F32, F64), I64, "none", True, 2, 0.0, "strided", "ignore"),
    Row((4, 33), ALL, "prob", "mean", True, -100, 0.2, "transposed"),
    Row((6, 50), (F32, BF16), I64, "none", False, -100, 0.0, "contiguous", "neg_inf"),
    Row((4, 50), (F32,), I64, "none", True, -100, 0.1, "contiguous", "all_neg_inf_row"),
    Row((4, 50), (F16,), I64, "mean", False, -100, 0.3, "contiguous", "constant_rows"),
    Row((2, 20000), (F32, BF16, F64), I64, "mean", True, -100, 0.05, "contiguous", None),
    Row((2, 20000), (F32, F64), "prob", "sum", False, -100, 0.0, "contiguous", None),
    Row((2, 20000), (F32,), I32, "none", False, 1, 0.0, "strided", "ignore"),
    Row((0, 5), (F32, F64), I64, "mean", True),
    Row((0, 5), (F32,), I64, "sum"),
    Row((37,), (F32, F64), I64, "none", True, -100, 0.1),
    Row((2, 3, 2, 1, 2, 1, 2, 2), (F32,), I64, "sum", True, -100, 0.1, "strided", "ignore"),
    Row((3, 4, 2, 5), (F64,), "prob", "none", False, -100, 0.0, "transposed"),
    Row((1, 1), (F32,), I64, "mean"),
]
REAL = [
    Row((512, 32768), (BF16, F32), I64, "mean", False, -100, 0.0, "contiguous", "ignore"),
    Row((64, 262144), (BF16,), I64, "mean", True, -100, 0.1, "contiguous", "ignore"),
    Row((64, 131072), (F32,), "prob", "sum", False),
    Row((4096, 1000), (F16, F32), I32, "none", True, 5, 0.0, "transposed", "ignore"),
    Row((16, 50, 64), (BF16,), I64, "mean", True, -100, 0.2, "strided", "neg_inf"),
]
NLL_SMALL = [r for r in SMALL if r.target != "prob" and r.smoothing == 0.0] + [
    Row((5, 777), (F32, F64, BF16), I32, "mean", True, -100, 0.0, "contiguous", "ignore"),
    Row((3, 10, 6), (F16,), I64, "sum", True, 2, 0.0, "strided", "ignore"),
    Row((2, 3, 2, 1, 2, 1, 2, 2), (F32, BF16), I64, "mean", True, -100, 0.0, "strided",
        "ignore"),
    Row((2, 5, 3, 2, 2), (F64,), I32, "none", False, -100, 0.0, "transposed"),
]
NLL_REAL = [dataclasses.replace(r, smoothing=0.0) for r in REAL if r.target != "prob"]


def _class_axis(shape):
    return 1 if len(shape) >= 2 else 0


def _make_inputs(row: Row, element: ElementKind, device, gen, log_probs: bool = False):
    shape, dt = row.shape, element.torch_dtype
    axis = _class_axis(shape)
    C = shape[axis]
    x = randn(shape, torch.float64, "cpu", gen, std=2.0)
    if log_probs and x.numel():
        x = torch.log_softmax(x, axis)
    if row.special == "neg_inf" and x.numel():
        x.movedim(axis, -1)[..., ::7] = -float("inf")
    elif row.special == "all_neg_inf_row" and x.numel():
        x[0] = -float("inf")
    elif row.special == "constant_rows" and x.numel():
        x[:] = 0.5
    x = with_layout(x.to(device, dt), row.layout)
    sample = tuple(d for i, d in enumerate(shape) if i != axis)
    if row.target == "prob":
        p = torch.softmax(randn(shape, torch.float64, "cpu", gen), axis)
        t = with_layout(p.to(device, dt), row.layout)
    else:
        t = torch.randint(0, C, sample, generator=gen)
        if row.special == "ignore" and t.numel():
            t.view(-1)[::3] = row.ignore_index
        t = with_layout(t.to(device, row.target.torch_dtype), row.layout if len(sample) else
                        "contiguous")
    w = rand_weight(C, dt, device, gen) if row.weight else None
    return x, t, w


def rand_weight(C, dt, device, gen):
    return (torch.rand(C, generator=gen, dtype=torch.float64) * 2 + 0.1).to(device, dt)


def _desc(cls, row: Row, element: ElementKind, smoothing: bool = True):
    target = element if row.target == "prob" else row.target
    kw = {"label_smoothing": row.smoothing} if smoothing else {}
    return cls(row.shape, element, target, LossReduction(row.reduction), row.weight,
               row.ignore_index, **kw)


def _loss_shape(d):
    return d.loss_shape


class _CESpec(PlanSpec):
    """One table, three plans: forward, backward and fused."""

    mode = "forward"

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            for element in row.elements:
                yield self._case(row, element)

    def _case(self, row: Row, element: ElementKind):
        prob = row.target == "prob"
        desc, args_t = _desc(self.plan.descriptor_type, row, element), self.plan.args_type
        rkw = dict(reduction=row.reduction, ignore_index=row.ignore_index,
                   label_smoothing=row.smoothing, prob=prob)
        dt = element.torch_dtype
        name = f"{self.mode} {row.shape} {_tname(row.target)} {row.reduction} w={row.weight} " \
               f"eps={row.smoothing} {row.layout} {row.special} {element.value}"
        if self.mode == "forward":
            def make(device, gen):
                x, t, w = _make_inputs(row, element, device, gen)
                return args_t(x, t, w, poisoned(desc.loss_shape, dt, device))

            def expect(a):
                return {"loss": ref.cross_entropy(a.input, a.target, a.weight, **rkw)[1].detach()}

            return Case(name, desc, make, expect)
        if self.mode == "fused":
            def make(device, gen):
                x, t, w = _make_inputs(row, element, device, gen)
                return args_t(x, t, w, poisoned(desc.loss_shape, dt, device),
                              poisoned(row.shape, dt, device))

            def expect(a):
                loss = ref.cross_entropy(a.input, a.target, a.weight, **rkw)[1].detach()
                dx = ref.cross_entropy_grad(None, a.input, a.target, a.weight, **rkw)
                return {"loss": loss, "grad_input": dx}

            return Case(name, desc, make, expect)

        def make(device, gen):
            x, t, w = _make_inputs(row, element, device, gen)
            g = randn(desc.loss_shape, dt, device, gen)
            # probability targets: their gradient too (the optional grad_target output)
            dtg = poisoned(row.shape, dt, device) if prob else None
            return args_t(g, x, t, w, poisoned(row.shape, dt, device), dtg)

        def expect(a):
            out = {"grad_input": ref.cross_entropy_grad(a.grad_loss, a.input, a.target,
                                                        a.weight, **rkw)}
            if prob:
                out["grad_target"] = ref.cross_entropy_target_grad(
                    a.grad_loss, a.input, a.target, a.weight, row.reduction, row.ignore_index,
                    row.smoothing)
            return out

        return Case(name, desc, make, expect)

    def malformed_descriptors(self):
        yield from _bad_descriptors(self.plan.descriptor_type, True)

    def malformed_args(self, case, device):
        d = case.desc
        good = lambda: case.make_args(device, torch.Generator().manual_seed(5))  # noqa: E731
        yield from _bad_args(d, good, device)
        if self.mode != "backward":
            def alias():
                a = good()
                a.loss = a.input.reshape(-1)[:1].reshape(())
                return a
            if d.loss_shape == ():
                yield Malformed("loss aliases input", alias, InvalidProblem)

    def aot_variants(self):
        if self.mode != "fused":
            yield from _ce_variants(self.mode)
            return
        for element, C in ((BF16, 32768), (BF16, 131072), (F32, 32768)):
            cfg = ce_config(C, element)
            warps = cfg.pop("num_warps")
            t = "*" + triton_dtype(element.torch_dtype)
            ptrs = {"x_ptr": t, "t_ptr": "*i64", "w_ptr": t, "g_ptr": t, "loss_ptr": t,
                    "dx_ptr": t, "dt_ptr": t, "ws_ptr": "*fp32"}
            sig = dict(ptrs)
            const = dict({"KEEP": "", "STREAM": ""}, **cfg, PROB=False, HAS_W=False,
                         SMOOTH=False, LOSS=2, GRAD=1, MEAN=True, ACC=acc_type(element), WIDE=False,
                         DT=False, CHECK=True)
            for n in ce_kernel.arg_names:
                if n not in ptrs and n not in const:
                    sig[n] = "fp32" if n.startswith("eps") else "i64"
            sig.update({n: "constexpr" for n in const})
            yield AotVariant(f"ce_kernel fused {element.value} C={C}", ce_kernel, sig, const,
                             num_warps=warps)
        yield from _smem_variants()


def _smem_variants():
    """The Hopper shared-memory exchange (Gluon): both chunk configs, with and without
    weights, per-sample and reduced losses."""
    from ...backends.gluon_chunks import chunk_config, n_chunks
    from .kernels_smem import ce_fused_smem_kernel as kernel
    from .plans_smem import KIND

    for C, has_w, loss in ((32768, False, 2), (131072, True, 1), (131072, False, 2)):
        cfg = dict(chunk_config(C, KIND))
        sig = {"x_ptr": "*bf16", "t_ptr": "*i64", "w_ptr": "*bf16", "dx_ptr": "*bf16",
               "loss_ptr": "*bf16", "ws_ptr": "*fp32", "part_ptr": "*fp32", "count_ptr": "*i32",
               "C": "i32", "stride_x": "i32", "stride_dx": "i32", "ignore_index": "i32",
               "SPIN": "i32"}
        nch = n_chunks(C, cfg)
        const = dict(cfg, NCH=nch, NCH_P2=nch, HAS_W=has_w, LOSS=loss, MEAN=loss == 2,
                     CHECK=True)
        sig.update({n: "constexpr" for n in const})
        yield AotVariant(f"ce smem fused bf16 C={C} weight={has_w} loss={loss}", kernel, sig,
                         const, num_warps=cfg["num_warps"], divisible=("C", "stride_x",
                                                                       "stride_dx"))


def _ce_variants(mode: str):
    """Probability targets with smoothing and weights (the most registers), per dtype."""
    for element, C in ((BF16, 32768), (F32, 16384), (F64, 20000)):
        cfg = ce_config(C, element, heavy=True)
        warps = cfg.pop("num_warps")
        t = "*" + triton_dtype(element.torch_dtype)
        ws = "*fp64" if element is F64 else "*fp32"
        sig = {"x_ptr": t, "t_ptr": t, "w_ptr": t, "g_ptr": t, "loss_ptr": t, "dx_ptr": t,
               "dt_ptr": t, "ws_ptr": ws}
        grad = 0 if mode == "forward" else 3
        # the backward with the target's gradient too: the most live values
        const = dict({"KEEP": "", "STREAM": ""}, **cfg, PROB=True, HAS_W=True, SMOOTH=True,
                     LOSS=2 if grad == 0 else 0, GRAD=grad, MEAN=grad != 0, ACC=acc_type(element),
                     WIDE=False, DT=grad != 0, CHECK=False)
        for n in ce_kernel.arg_names:
            if n not in sig and n not in const:
                sig[n] = "fp32" if n.startswith("eps") else "i64"
        sig.update({n: "constexpr" for n in const})
        yield AotVariant(f"ce_kernel {mode} prob+w+smooth {element.value} C={C}", ce_kernel,
                         sig, const, num_warps=warps)


def _small_variants(backward: bool):
    """NLL and the reduction kernels: few registers, compiled to catch sm_90 errors."""
    for element in (BF16, F64):
        t = "*" + triton_dtype(element.torch_dtype)
        ws = "*fp64" if element is F64 else "*fp32"
        acc = acc_type(element)
        if backward:
            kern, sig = nll_bwd_kernel, {"t_ptr": "*i64", "w_ptr": t, "g_ptr": t, "dx_ptr": t,
                                         "ws_ptr": ws}
            const = dict(HAS_W=True, GRAD=3, MEAN=True, ACC=acc, BLOCK=4096, WIDE=False,
                         CHECK=True)
            items = [(kern, sig, const, 8)]
        else:
            items = [
                (nll_fwd_kernel, {"x_ptr": t, "t_ptr": "*i32", "w_ptr": t, "loss_ptr": t,
                                  "ws_ptr": ws}, dict(HAS_W=True, LOSS=2, ACC=acc, BLOCK_R=128,
                                                      CHECK=True), 4),
                (weight_total_kernel, {"t_ptr": "*i64", "w_ptr": t, "ws_ptr": ws},
                 dict(HAS_W=True, PROB=False, ACCUMULATE=True, ACC=acc, BLOCK=1024), 4),
                (finalize_kernel, {"ws_ptr": ws, "loss_ptr": t}, dict(MEAN=True, ACC=acc,
                                                                      BLOCK=1024), 4),
                (scale_unless_one_kernel, {"dx_ptr": t, "g_ptr": t}, dict(BLOCK=4096), 8),
            ]
        for kern, sig, const, warps in items:
            sig = dict(sig)
            sig.update({n: "i64" for n in kern.arg_names if n not in sig and n not in const})
            sig.update({n: "constexpr" for n in const})
            yield AotVariant(f"{kern.__name__} {element.value}", kern, sig, const,
                             num_warps=warps)


def _bad_descriptors(cls, ce: bool):
    E = F32
    yield Malformed("negative extent", lambda: cls((4, -1), E), InvalidProblem)
    yield Malformed("rank 0", lambda: cls((), E), Unsupported)
    yield Malformed("rank 9", lambda: cls((1,) * 9, E), Unsupported)
    yield Malformed("zero classes", lambda: cls((4, 0), E), InvalidProblem)
    yield Malformed("integer element", lambda: cls((4, 8), I32), Unsupported)
    yield Malformed("bad reduction", lambda: cls((4, 8), E, I64, "avg"), InvalidProblem)
    yield Malformed("float16 target for f32", lambda: cls((4, 8), E, F16), Unsupported)
    yield Malformed("ignore_index not int", lambda: cls((4, 8), E, I64, "mean", False, 1.5),
                    InvalidProblem)
    if ce:
        yield Malformed("label_smoothing 1.5",
                        lambda: cls((4, 8), E, I64, "mean", False, -100, 1.5), InvalidProblem)
        yield Malformed("label_smoothing nan",
                        lambda: cls((4, 8), E, I64, "mean", False, -100, float("nan")),
                        InvalidProblem)
        yield Malformed("ignore_index with probability target",
                        lambda: cls((4, 8), E, E, "mean", False, 3), InvalidProblem)
    else:
        yield Malformed("probability target", lambda: cls((4, 8), E, E), Unsupported)


def _bad_args(d, good, device):
    def replace(**kw):
        def build():
            a = good()
            for k, v in kw.items():
                setattr(a, k, v(a) if callable(v) else v)
            return a
        return build

    bad_shape = tuple(s + 1 for s in d.sample_shape) or (2,)
    yield Malformed("target batch mismatch",
                    replace(target=lambda a: torch.zeros(bad_shape, dtype=torch.int64,
                                                         device=device)), InvalidProblem)
    yield Malformed("target wrong dtype",
                    replace(target=lambda a: a.target.to(torch.float64)
                            if not a.target.is_floating_point() else a.target.to(torch.int16)),
                    InvalidProblem)
    if d.has_weight:
        yield Malformed("weight missing", replace(weight=None), InvalidProblem)
        yield Malformed("weight wrong length",
                        replace(weight=lambda a: torch.ones(d.num_classes + 1, dtype=a.weight.dtype,
                                                            device=device)), InvalidProblem)
    else:
        yield Malformed("weight given", replace(
            weight=lambda a: torch.ones(d.num_classes, dtype=d.element.torch_dtype,
                                        device=device)), InvalidProblem)
    out = "loss" if hasattr(good(), "loss") else "grad_input"
    yield Malformed(f"{out} wrong dtype", replace(**{out: lambda a: getattr(a, out).to(
        torch.float64 if d.element is not F64 else torch.float32)}), InvalidProblem)
    yield Malformed("target not a tensor", replace(target=[1, 2]), InvalidProblem)
    if d.has_weight:
        yield Malformed("weight strided", replace(weight=lambda a: torch.ones(
            2 * d.num_classes, dtype=a.weight.dtype, device=device)[::2]), Unsupported)
    if hasattr(good(), "grad_target") and not d.probability_target:
        yield Malformed("grad_target for class indices", replace(
            grad_target=lambda a: torch.empty(d.sample_shape, dtype=d.element.torch_dtype,
                                              device=device)), InvalidProblem)


class CrossEntropyLossSpec(_CESpec):
    plan = CrossEntropyLossPlan
    mode = "forward"


class CrossEntropyLossBackwardSpec(_CESpec):
    plan = CrossEntropyLossBackwardPlan
    mode = "backward"


class CrossEntropyLossFusedSpec(_CESpec):
    plan = CrossEntropyLossFusedPlan
    mode = "fused"


class _NllSpec(PlanSpec):
    backward = False

    def cases(self, scale):
        for row in NLL_SMALL if scale == "small" else NLL_REAL:
            for element in row.elements:
                yield self._case(row, element)

    def _case(self, row: Row, element: ElementKind):
        dt = element.torch_dtype
        rkw = dict(reduction=row.reduction, ignore_index=row.ignore_index)
        kind = "nll_bwd" if self.backward else "nll"
        desc = _desc(self.plan.descriptor_type, row, element, smoothing=False)
        args_t = self.plan.args_type
        name = f"{kind} {row.shape} {_tname(row.target)} {row.reduction} " \
               f"w={row.weight} {row.layout} {row.special} {element.value}"
        if not self.backward:
            def make(device, gen):
                x, t, w = _make_inputs(row, element, device, gen, log_probs=True)
                return args_t(x, t, w, poisoned(desc.loss_shape, dt, device))

            def expect(a):
                return {"loss": ref.nll_loss(a.input, a.target, a.weight, **rkw)}

            return Case(name, desc, make, expect)

        def make(device, gen):
            _, t, w = _make_inputs(row, element, device, gen, log_probs=True)
            g = randn(desc.loss_shape, dt, device, gen)
            return args_t(g, t, w, poisoned(row.shape, dt, device))

        def expect(a):
            return {"grad_input": ref.nll_loss_grad(a.grad_loss, row.shape, a.target, a.weight,
                                                    **rkw)}

        return Case(name, desc, make, expect)

    def malformed_descriptors(self):
        yield from _bad_descriptors(self.plan.descriptor_type, False)

    def malformed_args(self, case, device):
        good = lambda: case.make_args(device, torch.Generator().manual_seed(5))  # noqa: E731
        yield from _bad_args(case.desc, good, device)

    def aot_variants(self):
        yield from _small_variants(self.backward)


class NllLossSpec(_NllSpec):
    plan = NllLossPlan


class NllLossBackwardSpec(_NllSpec):
    plan = NllLossBackwardPlan
    backward = True


for _spec in (CrossEntropyLossSpec(), CrossEntropyLossBackwardSpec(), CrossEntropyLossFusedSpec(),
              NllLossSpec(), NllLossBackwardSpec()):
    register_spec(_spec)


BENCH_SHAPES = [(8192, 32768), (4096, 131072)]


@register_bench("loss")
def loss_benches(quick: bool):
    import torch.nn.functional as F

    from .torch_api import cross_entropy

    extra = {}
    try:  # the third peer, when its wheel is installed
        from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

        def liger(x, t):  # (it writes the gradient into the logits' storage, as designed)
            return torch.autograd.grad(LigerCrossEntropyFunction.apply(x, t, None)[0], x)

        extra = {"liger": liger}
    except Exception:  # noqa: BLE001 - optional peer
        pass
    out = []
    for shape in BENCH_SHAPES:
        nbytes = shape[0] * shape[1] * 2

        def setup(device, shape=shape):
            x = torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
            t = torch.randint(0, shape[1], (shape[0],), device=device)
            return {"x": x, "t": t}

        def ours(x, t):
            return torch.autograd.grad(cross_entropy(x, t), x)

        def eager(x, t):
            return torch.autograd.grad(F.cross_entropy(x, t), x)

        case = BenchCase("cross_entropy fwd+bwd", f"{list(shape)} bf16", setup, ours=ours,
                         torch_eager=eager, bytes=2 * nbytes, quick=True, extra_peers=extra)
        out += [case, single_threaded_autograd(case)]
    return out
