"""Structured-loss cases, malformed inputs, AOT variants and bench rows."""

from __future__ import annotations

import dataclasses

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference_structured as ref
from .kernels_structured import (
    cosine_embedding_kernel,
    margin_hinge_kernel,
    multi_margin_kernel,
    multilabel_margin_kernel,
    reduce_rows_kernel,
    triplet_margin_kernel,
)
from .plans_structured import (
    CosineEmbeddingLossBackwardPlan,
    CosineEmbeddingLossPlan,
    MarginHingeLossBackwardPlan,
    MarginHingeLossPlan,
    MultilabelMarginLossBackwardPlan,
    MultilabelMarginLossPlan,
    MultiMarginLossBackwardPlan,
    MultiMarginLossPlan,
    TripletMarginLossBackwardPlan,
    TripletMarginLossPlan,
    norm_kind,
    row_config,
)

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
I32, I64 = ElementKind.I32, ElementKind.I64
ALL = (F32, F16, BF16, F64)


@dataclasses.dataclass(frozen=True)
class Row:
    shape: tuple
    elements: tuple
    reduction: str = "mean"
    opts: tuple = ()  # the descriptor's fields after (shape, element, reduction)
    layout: str = "contiguous"


#: Empty batches of the margin losses run with reduction none: torch's CPU kernels leave a
#: reduced loss of no rows uninitialized (ours: sum 0, mean NaN, as torch's other losses).
#: per kind: (small rows, real rows); opts per kind:
#: multi_margin (target_element, p, margin, has_weight); multilabel (target_element,);
#: cosine (target_element, margin); triplet (margin, p, eps, swap); hinge (margin, swap).
ROWS = {
    "multi_margin": (
        [Row((7, 13), ALL, "mean", (I64, 1, 1.0, False)),
         Row((5, 300), (F32, F64), "none", (I32, 2, 0.5, True), "strided"),
         Row((4, 9), (F32,), "sum", (I64, 2, 1.5, True), "transposed"),
         Row((0, 5), (F32,), "none", (I64, 1, 1.0, False))],
        [Row((4096, 1000), (BF16, F32), "mean", (I64, 1, 1.0, True))]),
    "multilabel_margin": (
        [Row((6, 11), ALL, "mean"), Row((3, 40), (F32, F64), "none", (I32,), "strided"),
         Row((5, 7), (F32,), "sum", (I64,), "transposed"), Row((0, 4), (F32,), "none")],
        [Row((4096, 256), (BF16, F32), "mean")]),
    "cosine": (
        [Row((7, 33), ALL, "mean", (I64, 0.1)),
         Row((5, 5000), (F32, F64), "none", (ElementKind.F32, -0.2), "strided"),
         Row((6, 10), (F32,), "sum", (I32, 0.3), "transposed"),
         Row((0, 8), (F32,), "mean", (I64, 0.0))],
        [Row((65536, 512), (BF16,), "mean", (I64, 0.0)),
         Row((4096, 8192), (F32,), "none", (I64, 0.2))]),
    "triplet": (
        [Row((7, 33), ALL, "mean", (1.0, 2.0, 1e-6, False)),
         Row((5, 5000), (F32, F64), "none", (2.0, 1.0, 1e-6, True), "strided"),
         Row((6, 10), (F32, F64), "sum", (0.5, 3.0, 1e-3, True), "transposed"),
         Row((0, 8), (F32,), "mean", (1.0, 2.0, 1e-6, False))],
        [Row((65536, 512), (BF16,), "mean", (1.0, 2.0, 1e-6, False)),
         Row((65536, 512), (BF16,), "sum", (1.0, 2.0, 1e-6, True))]),
    "hinge": (
        [Row((37, 1), ALL, "mean", (1.0, False)), Row((50, 1), (F32, F64), "none", (0.5, True),
                                                      "strided"),
         Row((0, 1), (F32,), "sum", (1.0, True))],
        [Row((1 << 20, 1), (F32,), "mean", (1.0, True))]),
}


def _targets(kind: str, row: Row, gen, device):
    n, c = row.shape
    if kind == "multi_margin":
        return torch.randint(0, c, (n,), generator=gen).to(device, row.opts[0].torch_dtype)
    if kind == "multilabel_margin":
        t = torch.randint(0, c, (n, c), generator=gen)
        cut = torch.randint(0, c + 1, (n, 1), generator=gen)
        t = torch.where(torch.arange(c) < cut, t, -1)
        el = row.opts[0] if row.opts else I64
        return with_layout(t.to(device, el.torch_dtype), row.layout)
    if kind == "cosine":
        t = torch.tensor([1, -1, 1, -1, 0, 1, -1])[torch.arange(n) % 7]
        return t.to(device, row.opts[0].torch_dtype)
    return None


def _floats(kind: str, row: Row, element, gen, device) -> list:
    n, c = row.shape
    count = {"multi_margin": 1, "multilabel_margin": 1, "cosine": 2, "triplet": 3}.get(kind)
    count = count or (3 if row.opts[-1] else 2)
    if kind == "hinge":
        return [with_layout(randn((n,), torch.float64, "cpu", gen).abs().to(device,
                                                                             element.torch_dtype),
                            row.layout) for _ in range(count)]
    return [with_layout(randn((n, c), element.torch_dtype, device, gen), row.layout)
            for _ in range(count)]


class _Spec(PlanSpec):
    kind = ""
    backward = False

    def cases(self, scale):
        small, real = ROWS[self.kind]
        for row in small if scale == "small" else real:
            for element in row.elements:
                yield self._case(row, element)

    def _desc(self, row, element):
        return self.plan.descriptor_type(row.shape, element, row.reduction, *row.opts)

    def _case(self, row: Row, element):
        desc = self._desc(row, element)
        dt = element.torch_dtype
        kind, back = self.kind, self.backward
        args_t = self.plan.args_type

        def make(device, gen):
            xs = _floats(kind, row, element, gen, device)
            t = _targets(kind, row, gen, device)
            w = None
            if kind == "multi_margin" and desc.has_weight:
                w = (torch.rand(row.shape[1], generator=gen, dtype=torch.float64) + 0.1).to(
                    device, dt)
            if kind == "hinge" and not desc.swap:
                xs = [*xs, None]
            ins = xs + ([t] if t is not None else []) + ([w] if kind == "multi_margin" else [])
            if not back:
                return args_t(*ins, poisoned(desc.loss_shape, dt, device))
            g = randn(desc.loss_shape, dt, device, gen)
            outs = [poisoned(x.shape, dt, device) if x is not None else None for x in xs]
            return args_t(g, *ins, *outs)

        def expect(a):
            loss, grads, names = _reference(kind, desc, a, back)
            if not back:
                return {"loss": loss}
            return {n: d for n, d in zip(names, grads) if n is not None}

        name = f"{kind}{' bwd' if back else ''} {row.shape} {row.reduction} {row.opts} " \
               f"{row.layout} {element.value}"
        return Case(name, desc, make, expect)

    def malformed_descriptors(self):
        cls = self.plan.descriptor_type
        yield Malformed("rank 1", lambda: cls((4,), F32), Unsupported)
        yield Malformed("negative extent", lambda: cls((4, -1), F32), InvalidProblem)
        yield Malformed("integer element", lambda: cls((4, 8), I32), Unsupported)
        yield Malformed("bad reduction", lambda: cls((4, 8), F32, "avg"), InvalidProblem)
        yield from _bad_descriptors(self.kind, cls)

    def malformed_args(self, case, device):
        good = lambda: case.make_args(device, torch.Generator().manual_seed(5))  # noqa: E731
        out = "loss" if not self.backward else next(iter(good().outputs()))

        def wrong_dtype():
            a = good()
            o = getattr(a, out)
            setattr(a, out, o.to(torch.float64 if o.dtype != torch.float64 else torch.float32))
            return a

        yield Malformed(f"{out} wrong dtype", wrong_dtype, InvalidProblem)
        first = next(iter(good().tensors()))

        def wrong_shape():
            a = good()
            t = getattr(a, first)
            setattr(a, first, torch.zeros(tuple(s + 1 for s in t.shape) or (2,),
                                          dtype=t.dtype, device=device))
            return a

        yield Malformed(f"{first} wrong shape", wrong_shape, InvalidProblem)

    def aot_variants(self):
        yield from _aot(self.kind, self.backward)


def _reference(kind, desc, a, back):
    g = a.grad_loss if back else None
    red = desc.reduction.value
    if kind == "multi_margin":
        loss, grads = ref.multi_margin(a.input, a.target, a.weight, g, desc.p, desc.margin, red)
        return loss, grads, ["grad_input"]
    if kind == "multilabel_margin":
        loss, grads = ref.multilabel_margin(a.input, a.target, g, red)
        return loss, grads, ["grad_input"]
    if kind == "cosine":
        loss, grads = ref.cosine_embedding(a.input1, a.input2, a.target, g, desc.margin, red)
        return loss, grads, ["grad_input1", "grad_input2"]
    if kind == "triplet":
        loss, grads = ref.triplet_margin(a.anchor, a.positive, a.negative, g, desc.margin,
                                         desc.p, desc.eps, desc.swap, red)
        return loss, grads, ["grad_anchor", "grad_positive", "grad_negative"]
    loss, grads = ref.margin_hinge(a.dist_pos, a.dist_neg, a.dist_swap, g, desc.margin, red)
    return loss, grads, ["grad_pos", "grad_neg", "grad_swap"]


def _bad_descriptors(kind, cls):
    if kind == "multi_margin":
        yield Malformed("p = 3", lambda: cls((4, 8), F32, "mean", I64, 3), Unsupported)
        yield Malformed("margin nan", lambda: cls((4, 8), F32, "mean", I64, 1, float("nan")),
                        InvalidProblem)
        yield Malformed("float target", lambda: cls((4, 8), F32, "mean", F32), Unsupported)
        yield Malformed("has_weight 1", lambda: cls((4, 8), F32, "mean", I64, 1, 1.0, 1),
                        InvalidProblem)
    elif kind == "multilabel_margin":
        yield Malformed("zero classes", lambda: cls((4, 0), F32), InvalidProblem)
        yield Malformed("float target", lambda: cls((4, 8), F32, "mean", F32), Unsupported)
    elif kind == "cosine":
        yield Malformed("margin str", lambda: cls((4, 8), F32, "mean", I64, "0.5"),
                        InvalidProblem)
    elif kind == "triplet":
        yield Malformed("p = 0", lambda: cls((4, 8), F32, "mean", 1.0, 0.0), Unsupported)
        yield Malformed("p = inf", lambda: cls((4, 8), F32, "mean", 1.0, float("inf")),
                        Unsupported)
        yield Malformed("eps nan", lambda: cls((4, 8), F32, "mean", 1.0, 2.0, float("nan")),
                        InvalidProblem)
        yield Malformed("swap 1", lambda: cls((4, 8), F32, "mean", 1.0, 2.0, 1e-6, 1),
                        InvalidProblem)
    else:
        yield Malformed("width 2", lambda: cls((4, 2), F32), InvalidProblem)
        yield Malformed("margin inf", lambda: cls((4, 1), F32, "mean", float("inf")),
                        InvalidProblem)


def _aot(kind, backward):
    """The widest rows of the real cases, per dtype (bf16 and f64), loss or gradient."""
    loss, grad = (0, 3) if backward else (2, 0)
    for element in (BF16, F64):
        t = "*" + triton_dtype(element.torch_dtype)
        ws = "*fp64" if element is F64 else "*fp32"
        acc = acc_type(element)
        floats = {"margin": "fp32", "p": "fp32", "eps": "fp32"}
        if kind == "multi_margin":
            block, warps = row_config(1000, element)
            ptrs = {"x_ptr": t, "t_ptr": "*i64", "w_ptr": t, "g_ptr": t, "loss_ptr": t,
                    "dx_ptr": t, "ws_ptr": ws}
            const = dict(HAS_W=True, P=2, LOSS=loss, GRAD=grad, ACC=acc, BLOCK=block,
                         CHECK=True)
            kern = multi_margin_kernel
        elif kind == "multilabel_margin":
            block, warps = 256, 1
            ptrs = {"x_ptr": t, "t_ptr": "*i64", "g_ptr": t, "loss_ptr": t, "dx_ptr": t,
                    "ws_ptr": ws}
            const = dict(LOSS=loss, GRAD=grad, ACC=acc, BLOCK=block, CHECK=True)
            kern = multilabel_margin_kernel
        elif kind == "cosine":
            block, warps = row_config(512, element)
            ptrs = {n: t for n in ("a_ptr", "b_ptr", "g_ptr", "loss_ptr", "da_ptr", "db_ptr")}
            ptrs.update(t_ptr="*i64", ws_ptr=ws)
            const = dict(LOSS=loss, GRAD=grad, ACC=acc, BLOCK=block)
            kern = cosine_embedding_kernel
        elif kind == "triplet":
            block, warps = row_config(512, element)
            ptrs = {n: t for n in ("a_ptr", "p_ptr", "n_ptr", "g_ptr", "loss_ptr", "da_ptr",
                                   "dp_ptr", "dn_ptr")}
            ptrs["ws_ptr"] = ws
            const = dict(NORM=norm_kind(3.0), SWAP=True, LOSS=loss, GRAD=grad, ACC=acc,
                         BLOCK=block)
            kern = triplet_margin_kernel
        else:
            block, warps = 1024, 4
            ptrs = {n: t for n in ("p_ptr", "n_ptr", "s_ptr", "g_ptr", "loss_ptr", "gp_ptr",
                                   "gn_ptr", "gsw_ptr")}
            ptrs["ws_ptr"] = ws
            const = dict(SWAP=True, LOSS=loss, GRAD=grad, ACC=acc, BLOCK=block)
            kern = margin_hinge_kernel
        scalars = {n: floats.get(n, "i64") for n in kern.arg_names}
        yield AotVariant.auto(f"{kern.__name__} {'bwd' if backward else 'fwd'} {element.value}",
                              kern, ptrs, const, scalars, num_warps=warps)
        if not backward:
            yield AotVariant.auto(f"reduce_rows_kernel {kind} {element.value}",
                                  reduce_rows_kernel, {"ws_ptr": ws, "loss_ptr": t},
                                  dict(MEAN=True, ACC=acc, BLOCK=1024), {"n_rows": "i64"})


class MultiMarginLossSpec(_Spec):
    plan, kind = MultiMarginLossPlan, "multi_margin"


class MultiMarginLossBackwardSpec(_Spec):
    plan, kind, backward = MultiMarginLossBackwardPlan, "multi_margin", True


class MultilabelMarginLossSpec(_Spec):
    plan, kind = MultilabelMarginLossPlan, "multilabel_margin"


class MultilabelMarginLossBackwardSpec(_Spec):
    plan, kind, backward = MultilabelMarginLossBackwardPlan, "multilabel_margin", True


class CosineEmbeddingLossSpec(_Spec):
    plan, kind = CosineEmbeddingLossPlan, "cosine"


class CosineEmbeddingLossBackwardSpec(_Spec):
    plan, kind, backward = CosineEmbeddingLossBackwardPlan, "cosine", True


class TripletMarginLossSpec(_Spec):
    plan, kind = TripletMarginLossPlan, "triplet"


class TripletMarginLossBackwardSpec(_Spec):
    plan, kind, backward = TripletMarginLossBackwardPlan, "triplet", True


class MarginHingeLossSpec(_Spec):
    plan, kind = MarginHingeLossPlan, "hinge"


class MarginHingeLossBackwardSpec(_Spec):
    plan, kind, backward = MarginHingeLossBackwardPlan, "hinge", True


for _spec in (MultiMarginLossSpec(), MultiMarginLossBackwardSpec(), MultilabelMarginLossSpec(),
              MultilabelMarginLossBackwardSpec(), CosineEmbeddingLossSpec(),
              CosineEmbeddingLossBackwardSpec(), TripletMarginLossSpec(),
              TripletMarginLossBackwardSpec(), MarginHingeLossSpec(),
              MarginHingeLossBackwardSpec()):
    register_spec(_spec)


@register_bench("loss")
def structured_benches(quick: bool):
    import torch.nn.functional as F

    from .torch_structured import cosine_embedding_loss, triplet_margin_loss

    shape = (65536, 512)
    nbytes = shape[0] * shape[1] * 2  # one bf16 operand

    def setup(device):
        mk = lambda: torch.randn(shape, device=device, dtype=torch.bfloat16,  # noqa: E731
                                 requires_grad=True)
        t = torch.randint(0, 2, (shape[0],), device=device) * 2 - 1
        return {"a": mk(), "p": mk(), "n": mk(), "t": t}

    def grad_of(fn):
        def run(a, p, n, t):
            return torch.autograd.grad(fn(a, p, n, t), (a, p, n), allow_unused=True)
        return run

    def cos(f):
        return lambda a, p, n, t: f(a, p, t)

    def trip(f):
        return lambda a, p, n, t: f(a, p, n)

    # forward + backward: reads 2 (cosine) / 3 (triplet) operands twice, writes their grads
    return [
        BenchCase("cosine_embedding_loss fwd+bwd", f"{list(shape)} bf16", setup,
                  ours=grad_of(cos(cosine_embedding_loss)),
                  torch_eager=grad_of(cos(F.cosine_embedding_loss)), bytes=6 * nbytes),
        BenchCase("triplet_margin_loss fwd+bwd", f"{list(shape)} bf16", setup,
                  ours=grad_of(trip(triplet_margin_loss)),
                  torch_eager=grad_of(trip(F.triplet_margin_loss)), bytes=9 * nbytes),
    ]
