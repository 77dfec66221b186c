"""CTC loss cases, malformed inputs, AOT variants and bench rows."""

from __future__ import annotations

import dataclasses

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference_ctc as ref
from .descriptors import LossReduction
from .kernels_ctc import ctc_alpha_kernel, ctc_beta_kernel, ctc_grad_kernel
from .plans_ctc import CtcLossBackwardPlan, CtcLossPlan, ctc_config, grad_config

F32, F64, I32, I64 = ElementKind.F32, ElementKind.F64, ElementKind.I32, ElementKind.I64


@dataclasses.dataclass(frozen=True)
class Row:
    T: int
    N: int
    C: int
    S: int  # longest target
    elements: tuple = (F32, F64)
    reduction: str = "mean"
    concat: bool = False
    blank: int = 0
    zero_infinity: bool = False
    target_element: ElementKind = I64
    special: str | None = None  # "infeasible": item 0 cannot align; "repeats": aa bb labels
    layout: str = "contiguous"  # of log_probs


SMALL = [
    Row(12, 3, 5, 4, reduction="none", special="repeats"),
    Row(12, 3, 5, 4, (F32,), "mean", layout="transposed"),
    Row(9, 4, 7, 3, (F64,), "sum", concat=True, blank=3, target_element=I32),
    Row(6, 3, 5, 5, (F32,), "mean", zero_infinity=True, special="infeasible"),
    Row(6, 2, 5, 5, (F64,), "none", special="infeasible"),
    Row(7, 2, 4, 0, (F32,), "mean"),
]
REAL = [
    Row(512, 32, 64, 128, (F32,), "mean"),
    Row(512, 32, 1024, 128, (F32,), "mean", concat=True),
    Row(256, 16, 64, 64, (F64,), "none", zero_infinity=True, special="infeasible"),
]


def _inputs(row: Row, element: ElementKind, device, gen):
    T, N, C, S = row.T, row.N, row.C, row.S
    lp = torch.log_softmax(randn((T, N, C), torch.float64, "cpu", gen, std=2.0), 2)
    lp = with_layout(lp.to(device, element.torch_dtype), row.layout)
    tl = torch.randint(0, S + 1, (N,), generator=gen) if S else torch.zeros(N, dtype=torch.long)
    if N and S:
        tl[0] = S
    il = torch.randint(max(1, T // 2), T + 1, (N,), generator=gen)
    if N:
        il[-1] = T
    if row.special == "infeasible" and N:
        il[0] = max(1, S // 2)  # too short for the target: infinite loss
    labels = torch.randint(1, C, (N, S), generator=gen)
    labels = (labels + row.blank) % C  # never the blank
    labels[labels == row.blank] = (row.blank + 1) % C
    if row.special == "repeats" and S >= 2:
        labels[:, 1::2] = labels[:, 0::2][:, : labels[:, 1::2].shape[1]]
    if row.concat:
        targets = torch.cat([labels[b, : tl[b]] for b in range(N)]) if N else \
            torch.zeros(0, dtype=torch.long)
    else:
        targets = labels
    to = dict(device=device)
    return (lp, targets.to(dtype=row.target_element.torch_dtype, **to), il.to(**to),
            tl.to(**to))


def _desc(cls, row: Row, element: ElementKind, targets):
    return cls((row.T, row.N, row.C), element, tuple(targets.shape), row.S, row.target_element,
               LossReduction(row.reduction), row.blank, row.zero_infinity)


def _target_shape(row: Row) -> tuple:
    return (row.N, row.S)  # the padded form; concatenated cases rebuild it from the data


class _Spec(PlanSpec):
    backward = False

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            for element in row.elements:
                yield self._case(row, element)

    def _case(self, row: Row, element: ElementKind):
        dt = element.torch_dtype
        # the descriptor's target shape: padded (N, S) or the data's concatenated length
        probe = _inputs(row, element, "cpu", torch.Generator().manual_seed(0))[1]
        desc = _desc(self.plan.descriptor_type, row, element, probe)
        args_t = self.plan.args_type
        back = self.backward
        red = row.reduction

        def make(device, gen):
            # the same lengths as the descriptor's probe (concatenated shapes depend on them)
            lp, tg, il, tl = _inputs(row, element, device, torch.Generator().manual_seed(0))
            lp = with_layout(randn(lp.shape, torch.float64, "cpu", gen, std=2.0)
                             .log_softmax(2).to(device, dt), row.layout)
            if not back:
                return args_t(lp, tg, il, tl, poisoned(desc.loss_shape, dt, device),
                              poisoned((row.N,), dt, device),
                              poisoned(desc.alpha_shape, dt, device))
            nll = ref.ctc_loss(lp, tg, il, tl, row.blank, "none", False)[0].to(device, dt)
            alpha = ref.log_alpha(lp, tg, il, tl, row.blank, desc.states).to(device, dt)
            g = randn(desc.loss_shape, dt, device, gen)
            return args_t(g, lp, tg, il, tl, nll, alpha, poisoned(lp.shape, dt, device))

        def expect(a):
            if not back:
                loss = ref.ctc_loss(a.log_probs, a.targets, a.input_lengths, a.target_lengths,
                                    row.blank, red, row.zero_infinity)[0]
                nll = ref.ctc_loss(a.log_probs, a.targets, a.input_lengths, a.target_lengths,
                                   row.blank, "none", False)[0]
                return {"loss": loss, "neg_log_likelihood": nll}
            _, dx = ref.ctc_loss(a.log_probs, a.targets, a.input_lengths, a.target_lengths,
                                 row.blank, red, row.zero_infinity, a.grad_loss)
            return {"grad_log_probs": dx}

        name = f"ctc{' bwd' if back else ''} T={row.T} N={row.N} C={row.C} S={row.S} {red} " \
               f"concat={row.concat} blank={row.blank} zi={row.zero_infinity} {row.special} " \
               f"{row.layout} {element.value}"
        return Case(name, desc, make, expect)

    def malformed_descriptors(self):
        cls = self.plan.descriptor_type
        ok = dict(log_probs_shape=(8, 2, 5), element=F32, target_shape=(2, 3),
                  max_target_length=3)

        def bad(**kw):
            return lambda: cls(**{**ok, **kw})

        yield Malformed("log_probs rank 2", bad(log_probs_shape=(8, 5)), Unsupported)
        yield Malformed("f16", bad(element=ElementKind.F16), Unsupported)
        yield Malformed("float targets", bad(target_element=F32), Unsupported)
        yield Malformed("blank = C", bad(blank=5), InvalidProblem)
        yield Malformed("blank negative", bad(blank=-1), InvalidProblem)
        yield Malformed("padded targets too short", bad(max_target_length=4), InvalidProblem)
        yield Malformed("padded targets batch", bad(target_shape=(3, 3)), InvalidProblem)
        yield Malformed("bad reduction", bad(reduction="avg"), InvalidProblem)
        yield Malformed("zero_infinity 1", bad(zero_infinity=1), InvalidProblem)
        yield Malformed("targets rank 3", bad(target_shape=(2, 3, 1)), Unsupported)

    def malformed_args(self, case, device):
        good = lambda: case.make_args(device, torch.Generator().manual_seed(5))  # noqa: E731

        def replace(**kw):
            def build():
                a = good()
                for k, v in kw.items():
                    setattr(a, k, v(a))
                return a
            return build

        yield Malformed("int32 input_lengths", replace(
            input_lengths=lambda a: a.input_lengths.int()), InvalidProblem)
        yield Malformed("lengths wrong size", replace(
            target_lengths=lambda a: torch.zeros(case.desc.N + 1, dtype=torch.int64,
                                                 device=device)), InvalidProblem)
        yield Malformed("log_probs wrong dtype", replace(
            log_probs=lambda a: a.log_probs.to(torch.float16)), InvalidProblem)
        yield Malformed("log_alpha strided", replace(
            log_alpha=lambda a: torch.empty(*a.log_alpha.shape[:-1], 2 * a.log_alpha.shape[-1],
                                            dtype=a.log_alpha.dtype,
                                            device=device)[..., ::2]), Unsupported)

    def aot_variants(self):
        for element, row in ((F32, REAL[1]), (F64, REAL[2])):
            t = "*" + triton_dtype(element.torch_dtype)
            probe = torch.zeros(row.N, row.S) if not row.concat else torch.zeros(1)
            desc = _desc(self.plan.descriptor_type, row, element, probe)
            acc = acc_type(element)
            lens = {"il_ptr": "*i64", "tl_ptr": "*i64", "tg_ptr": "*i64"}
            scalars = {n: "i64" for n in ("N", "C", "blank", "T", "lps0", "lps1", "lps2",
                                          "tgs0", "tgs1", "als0", "als1", "bes0", "bes1", "gs",
                                          "ds0", "ds1", "ds2", "ls", "S_STATES")}
            if not self.backward:
                cfg = ctc_config(desc)
                warps = cfg.pop("num_warps")
                ptrs = dict(lens, lp_ptr=t, nll_ptr=t, alpha_ptr=t, ws_ptr=t, loss_ptr=t)
                const = dict(cfg, CONCAT=row.concat, LOSS=2, ZERO_INF=row.zero_infinity,
                             MEAN=True, ACC=acc)
                yield AotVariant.auto(f"ctc_alpha_kernel {element.value} S={row.S}",
                                      ctc_alpha_kernel, ptrs, const, scalars, num_warps=warps)
                continue
            cfg = ctc_config(desc)
            warps = cfg.pop("num_warps")
            ptrs = dict(lens, lp_ptr=t, beta_ptr=t)
            yield AotVariant.auto(f"ctc_beta_kernel {element.value} S={row.S}", ctc_beta_kernel,
                                  ptrs, dict(cfg, CONCAT=row.concat, ACC=acc), scalars,
                                  num_warps=warps)
            cfg = grad_config(desc)
            warps = cfg.pop("num_warps")
            ptrs = dict(lens, lp_ptr=t, nll_ptr=t, alpha_ptr=t, beta_ptr=t, g_ptr=t, dlp_ptr=t)
            const = dict(cfg, CONCAT=row.concat, GRAD=3, ZERO_INF=row.zero_infinity, ACC=acc)
            yield AotVariant.auto(f"ctc_grad_kernel {element.value} C={row.C} S={row.S}",
                                  ctc_grad_kernel, ptrs, const, scalars, num_warps=warps)


class CtcLossSpec(_Spec):
    plan = CtcLossPlan


class CtcLossBackwardSpec(_Spec):
    plan = CtcLossBackwardPlan
    backward = True


register_spec(CtcLossSpec())
register_spec(CtcLossBackwardSpec())


@register_bench("loss")
def ctc_benches(quick: bool):
    import torch.nn.functional as F

    from .torch_ctc import ctc_loss

    out = []
    for T, N, C, S in ((512, 32, 64, 128), (512, 32, 1024, 128)):
        def setup(device, T=T, N=N, C=C, S=S):
            lp = torch.randn(T, N, C, device=device).log_softmax(2).detach().requires_grad_()
            tg = torch.randint(1, C, (N, S), device=device)
            il = torch.full((N,), T, dtype=torch.long, device=device)
            tl = torch.randint(S // 2, S + 1, (N,), dtype=torch.long, device=device)
            return {"lp": lp, "tg": tg, "il": il, "tl": tl}

        def grad_of(fn):
            def run(lp, tg, il, tl):
                return torch.autograd.grad(fn(lp, tg, il, tl), lp)
            return run

        # log_probs read by both passes, its gradient written; alpha and beta tables
        # (N T (2S + 1) f32 each) written and read once
        table = N * T * (2 * S + 1) * 4
        out.append(BenchCase("ctc_loss fwd+bwd (target >= 1.0x torch)",
                             f"T={T} N={N} C={C} S={S} f32", setup, ours=grad_of(ctc_loss),
                             torch_eager=grad_of(F.ctc_loss), bytes=3 * T * N * C * 4 + 4 * table))
    return out
