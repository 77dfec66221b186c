"""Plans built from DenseGemmPlan: Linear forward/backward, torch's bmm/baddbmm/addmm/mm, and
the grouped (mixture-of-experts) GEMM. Each has one candidate per backend of the inner GEMM, so
`PlanPreference(prefer_backend=...)` reaches the GEMMs underneath.

**Precision**: that of the inner DenseGemmPlan (deterministic, bit-stable on the same
hardware); activation derivatives and bias gradients are elementwise / fixed-order reductions.
"""

from __future__ import annotations

import dataclasses
import functools

import torch

from ...core import validate as V
from ...core.errors import Unsupported
from ...core.plan import Candidate
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import BackendKind, ElementKind, PlanPreference
from .cublaslt import fuses_activation
from .descriptors import (
    BatchedGemmArgs,
    BatchedGemmDescriptor,
    DenseGemmArgs,
    DenseGemmDescriptor,
    GemmActivation,
    GroupedGemmArgs,
    GroupedGemmDescriptor,
    LinearArgs,
    LinearBackwardArgs,
    LinearBackwardDescriptor,
    LinearDescriptor,
)
from .launch import (
    act_partials_workspace,
    activation_2d,
    colsum,
    colsum_workspace,
)
from .plans import DenseGemmPlan, GemmPlanBase

_ALIGN = 256


def _round(n: int) -> int:
    return cdiv(n, _ALIGN) * _ALIGN


def _inner_pref(pref: PlanPreference, backend: BackendKind) -> PlanPreference:
    return dataclasses.replace(pref, prefer_backend=backend)


def _run_dense(desc: DenseGemmDescriptor, args: DenseGemmArgs, pref: PlanPreference,
               workspace: torch.Tensor | None) -> None:
    plan = DenseGemmPlan.select(desc, pref)
    if plan.is_empty(args):
        return
    # The outer plan validated every tensor these views come from and sized the workspace for
    # its inner GEMMs: launch directly (per-call Python checks would dominate small GEMMs).
    plan.candidate.launch_with(desc, args, workspace if plan.workspace_size() else None, pref)


class _Composite(Candidate):
    """A candidate whose work is a few DenseGemmPlans (selected with this backend)."""

    inner: BackendKind = BackendKind.TRITON
    replayable = True  # inner DenseGemm candidates, themselves replayable

    def inner_descs(self, desc) -> list[DenseGemmDescriptor]:
        raise NotImplementedError

    def extra_workspace(self, desc) -> int:
        return 0

    def supports(self, desc, pref, arch):
        try:
            for d in self.inner_descs(desc):
                DenseGemmPlan._select(d, _inner_pref(pref, self.inner), arch)
                if pref.prefer_backend is None:
                    # Without a backend preference, follow DenseGemmPlan's own default.
                    chosen = DenseGemmPlan._select(d, pref, arch).candidate.backend
                    if chosen is not self.inner:
                        return (f"DenseGemmPlan defaults to {chosen.value} for "
                                f"{d.epilogue_name} epilogue, m={d.m} n={d.n} k={d.k}")
        except Unsupported as exc:
            return f"inner GEMM: {exc}"
        return None

    def guarantee(self, desc, pref):
        from .plans import gemm_guarantee

        return gemm_guarantee(desc, pref)

    def _inner_ws(self, desc) -> int:
        pref = PlanPreference(prefer_backend=self.inner)
        sizes = [0]
        for d in self.inner_descs(desc):
            try:
                sizes.append(DenseGemmPlan.select(d, pref).workspace_size())
            except Unsupported:
                pass
        return max(sizes)

    def workspace_size(self, desc) -> int:
        return _round(self.extra_workspace(desc)) + self._inner_ws(desc)

    def launch(self, desc, args, workspace) -> None:
        self.launch_with(desc, args, workspace, PlanPreference())


def _both_backends(plan_cls, base):
    """Register `base` once per backend of the inner GEMM (cuBLASLt first)."""
    for backend, prio in ((BackendKind.CUBLASLT, 0), (BackendKind.TRITON, 10)):
        cls = type(f"{base.__name__}{backend.name.title()}", (base,), {
            "name": f"{base.name}_via_{backend.value}", "backend": backend, "inner": backend,
            "priority": prio})
        register_candidate(plan_cls)(cls)


# ---------------------------------------------------------------------------------- Linear
def _linear_lt_fused(desc) -> bool:
    """cuBLASLt fuses the activation, and the saved pre-activation for gelu_tanh only
    (GELU_AUX_BIAS; relu's aux is a bitmask, not the pre-activation), per cublaslt._EPILOG."""
    return fuses_activation(desc.activation, save_preact=desc.save_preact)


@register_plan
class LinearPlan(GemmPlanBase):
    """y = activation(x @ weight^T + bias), pre-activation optionally saved for the backward.

    **Formula**: pre = x @ W^T + b; y = act(pre), act in {none, relu, gelu, gelu_tanh, silu}.
    **Dtypes / shape**: f16, bf16, f32, f64; x [tokens, in], weight [out, in] (any BLAS
    layout), bias [out].
    **Workspace**: the inner GEMM's (cuBLASLt scratch).
    **Precision**: the inner DenseGemmPlan's: deterministic, f32 accumulation for halves.
    On cuBLASLt, gelu_tanh with its saved pre-activation is one GELU_AUX_BIAS GEMM; an
    activation it cannot fuse (or a saved relu/gelu/silu pre-activation) runs as a separate
    elementwise pass; on Triton everything is one fused kernel.
    """

    descriptor_type = LinearDescriptor
    args_type = LinearArgs
    partner = "LinearBackwardPlan"



@functools.lru_cache(maxsize=256)
def _fwd_dense(desc, fused: bool) -> tuple[DenseGemmDescriptor, bool]:
    """The Linear forward's GEMM (cached: descriptors cost host time to build)."""
    return DenseGemmDescriptor(
        m=desc.tokens, n=desc.out_features, k=desc.in_features, element=desc.element,
        bias=desc.bias, activation=desc.activation if fused else GemmActivation.NONE,
        save_preact=desc.save_preact if fused else False), fused


class _LinearFwd(_Composite):
    name = "linear"

    def _dense(self, desc):
        return _fwd_dense(desc, self.inner is BackendKind.TRITON or _linear_lt_fused(desc))

    def inner_descs(self, desc):
        return [self._dense(desc)[0]]

    def launch_with(self, desc, args, workspace, pref) -> None:
        dense, fused = self._dense(desc)
        pre = args.preact if desc.save_preact else args.y
        out = args.y if fused else pre
        _run_dense(dense, DenseGemmArgs(a=args.x, b=args.weight.mT, d=out, bias=args.bias,
                                        preact_out=args.preact if fused else None),
                   _inner_pref(pref, self.inner), workspace)
        if not fused:
            activation_2d(pre, args.y, desc.activation.code, desc.element)


_both_backends(LinearPlan, _LinearFwd)


@register_plan
class LinearBackwardPlan(GemmPlanBase):
    """Gradients of LinearPlan from dy and the saved pre-activation.

    **Formula**: dh = dy * act'(preact) (dh = dy without activation); dx = dh @ W;
    dW = dh^T @ x; db = sum over tokens of dh. Each is computed when its output is given.
    **Dtypes / shape**: as LinearPlan.
    **Workspace**: dh (tokens x out elements) when there is an activation, plus the inner
    GEMMs' scratch.
    **Precision**: deterministic: dh elementwise, GEMMs as DenseGemmPlan, db a fixed-order
    column reduction (f32 accumulation; with an activation, partial sums written by the dh
    kernel itself); without an activation on cuBLASLt, db is the dW GEMM's BGRADB epilogue
    (fixed algorithm per layout, ordered reduction).
    """

    descriptor_type = LinearBackwardDescriptor
    args_type = LinearBackwardArgs
    partner = "LinearPlan"
    is_backward = True

    def check_args(self, args: LinearBackwardArgs) -> None:
        super().check_args(args)
        who, d = type(self).__name__, self.desc
        outs = [t for t in (args.dx, args.dweight, args.dbias) if t is not None]
        if not outs:
            raise V.InvalidProblem(f"{who}: no gradient requested; expected at least one of "
                                   "dx, dweight, dbias")
        if d.bias is False and args.dbias is not None:
            raise V.InvalidProblem(f"{who}: dbias given but the descriptor has bias=False")

    def is_empty(self, args) -> bool:
        return all(t.numel() == 0 for t in args.outputs().values())


@functools.lru_cache(maxsize=256)
def _bwd_descs(desc) -> tuple[DenseGemmDescriptor, DenseGemmDescriptor]:
    """The Linear backward's two GEMMs (cached: descriptors cost host time to build)."""
    m, n, k, e = desc.tokens, desc.out_features, desc.in_features, desc.element
    return (DenseGemmDescriptor(m=m, n=k, k=n, element=e),   # dx = dh @ W
            DenseGemmDescriptor(m=n, n=k, k=m, element=e))   # dW = dh^T @ x


class _LinearBwd(_Composite):
    name = "linear_backward"

    def inner_descs(self, desc):
        return list(_bwd_descs(desc))

    @staticmethod
    def _dh_bytes(desc) -> int:
        if desc.activation is GemmActivation.NONE:
            return 0
        return _round(desc.tokens * desc.out_features * desc.element.itemsize)

    @staticmethod
    def _part_bytes(desc) -> int:
        if not desc.bias:
            return 0
        if desc.activation is not GemmActivation.NONE:  # partials from the dh kernel
            return _round(act_partials_workspace(desc.tokens, desc.out_features, desc.element))
        return _round(colsum_workspace(desc.tokens, desc.out_features, desc.element))

    def extra_workspace(self, desc) -> int:
        return self._dh_bytes(desc) + self._part_bytes(desc)

    def launch_with(self, desc, args, workspace, pref) -> None:
        # workspace = [dh | bias-gradient partial sums | inner GEMM scratch]
        m, n = desc.tokens, desc.out_features
        dh_b, part_b = self._dh_bytes(desc), self._part_bytes(desc)
        inner = workspace[dh_b + part_b:] if workspace is not None else None
        part = workspace[dh_b:dh_b + part_b] if part_b else None
        want_dw = args.dweight is not None and args.dweight.numel() > 0
        # Bias gradient: with an activation, the dh kernel sums its own output as it writes it
        # (partials, then a tiny fixed-order stage 2). Without one, dh = dy is not written by
        # us: on cuBLASLt the dW GEMM's BGRADB epilogue sums it (a separate cuBLASLt kernel over
        # dh costs more than the fused partials cost the dh kernel).
        bgradb = (self.inner is BackendKind.CUBLASLT and want_dw and args.dbias is not None
                  and m > 0 and desc.element is not ElementKind.F64 and not dh_b)
        fused_db = False
        if dh_b and m * n > 0:
            dh = workspace[: m * n * desc.element.itemsize].view(desc.element.torch_dtype)
            dh = dh.view(m, n)
            # dh and (unless BGRADB does it) the bias gradient's partial sums in one pass.
            fused_db = args.dbias is not None and not bgradb
            activation_2d(args.preact, dh, desc.activation.code, desc.element, grad=args.dy,
                          dbias=args.dbias if fused_db else None, workspace=part)
        else:
            dh = args.dy
        ipref = _inner_pref(pref, self.inner)
        dx_desc, dw_desc = _bwd_descs(desc)
        if args.dx is not None and args.dx.numel():
            _run_dense(dx_desc, DenseGemmArgs(a=dh, b=args.weight, d=args.dx), ipref, inner)
        if bgradb:
            from .ltcore import lt_matmul

            fused_db = lt_matmul(dh.mT, args.x, args.dweight, inner, desc.element,
                                 tf32=pref.allow_tf32, epilogue="BGRADB", bias=args.dbias)
            want_dw = not fused_db
        if want_dw:
            _run_dense(dw_desc, DenseGemmArgs(a=dh.mT, b=args.x, d=args.dweight), ipref, inner)
        if args.dbias is not None and not fused_db:
            colsum(dh, (), args.dbias, desc.element, part)


_both_backends(LinearBackwardPlan, _LinearBwd)


# ---------------------------------------------------------------------- bmm/baddbmm/addmm/mm
@register_plan
class BatchedGemmPlan(GemmPlanBase):
    """torch's mm / addmm / bmm / baddbmm: out = beta * input + alpha * (A @ B).

    **Formula**: as torch: input broadcast to out's shape; beta == 0 ignores input (NaN too).
    **Dtypes / shape**: f16, bf16, f32, f64; A [b, m, k], B [b, k, n] (no b for mm/addmm).
    **Workspace**: the inner GEMM's.
    **Precision**: the inner DenseGemmPlan's (deterministic). addmm with a 1-D input and
    beta == 1 runs as a bias epilogue.
    """

    descriptor_type = BatchedGemmDescriptor
    args_type = BatchedGemmArgs

    @classmethod
    def op_name(cls, desc) -> str:
        return desc.kind.value

    def check_args(self, args: BatchedGemmArgs) -> None:
        super().check_args(args)
        who, d = type(self).__name__, self.desc
        if d.has_input:
            inp = args.input
            try:
                torch.broadcast_shapes(tuple(inp.shape), d.out_shape())
                ok = len(inp.shape) <= len(d.out_shape())
            except RuntimeError:
                ok = False
            if not ok:
                raise V.InvalidProblem(f"{who}: input.shape {tuple(inp.shape)} does not "
                                       f"broadcast to out.shape {d.out_shape()}")


def _bias_form(desc, inp) -> bool:
    """addmm(input[n] or [1, n], ...) with beta == 1: a bias epilogue."""
    return (desc.kind.value == "addmm" and desc.beta == 1.0 and inp is not None
            and inp.shape[-1:] == (desc.n,) and (inp.dim() == 1 or inp.shape[0] == 1))


class _Batched(_Composite):
    name = "batched"

    def _dense(self, desc, bias: bool):
        return DenseGemmDescriptor(
            m=desc.m, n=desc.n, k=desc.k, element=desc.element,
            batch=desc.lead, alpha=desc.alpha,
            beta=0.0 if (bias or not desc.has_input) else desc.beta, bias=bias)

    def inner_descs(self, desc):
        return [self._dense(desc, False)]

    def launch_with(self, desc, args, workspace, pref) -> None:
        inp = args.input if desc.has_input else None
        bias = inp is not None and _bias_form(desc, inp)
        dense = self._dense(desc, bias)
        ipref = _inner_pref(pref, self.inner)
        if bias:
            # The bias form follows DenseGemmPlan's own default unless a backend was asked for,
            # within the scratch this plan reserved.
            have = 0 if workspace is None else workspace.numel()
            for bpref in (pref, ipref) if pref.prefer_backend is None else (ipref,):
                try:
                    if DenseGemmPlan.select(dense, bpref).workspace_size() <= have:
                        ipref = bpref
                        break
                except Unsupported:
                    pass
            else:
                bias, dense = False, self._dense(desc, False)
        c = None
        if inp is not None and not bias and dense.has_c:
            c = inp.expand(desc.out_shape())
        b_vec = inp.reshape(desc.n) if bias else None
        _run_dense(dense, DenseGemmArgs(a=args.a, b=args.b, d=args.out, c=c, bias=b_vec),
                   ipref, workspace)


_both_backends(BatchedGemmPlan, _Batched)


# --------------------------------------------------------------------------------- grouped
@register_plan
class GroupedGemmPlan(GemmPlanBase):
    """Mixture-of-experts grouped GEMM: consecutive row groups of A times their own B[g].

    **Formula**: D[r0_g : r0_g + size_g] = A[r0_g : r0_g + size_g] @ B[g].
    **Dtypes / shape**: f16, bf16, f32, f64; A [sum sizes, k], B [groups, k, n],
    D [sum sizes, n]; any BLAS layouts.
    **Workspace**: the inner GEMMs' (shared, they run one after another).
    **Precision**: each group is one DenseGemmPlan (deterministic).
    """

    descriptor_type = GroupedGemmDescriptor
    args_type = GroupedGemmArgs



class _Grouped(_Composite):
    name = "grouped"

    def inner_descs(self, desc):
        return [DenseGemmDescriptor(m=s, n=desc.n, k=desc.k, element=desc.element)
                for s in sorted(set(desc.group_sizes))]

    def launch_with(self, desc, args, workspace, pref) -> None:
        ipref = _inner_pref(pref, self.inner)
        r0 = 0
        for g, size in enumerate(desc.group_sizes):
            if size:
                dense = DenseGemmDescriptor(m=size, n=desc.n, k=desc.k, element=desc.element)
                _run_dense(dense, DenseGemmArgs(a=args.a[r0:r0 + size], b=args.b[g],
                                                d=args.d[r0:r0 + size]), ipref, workspace)
            r0 += size


_both_backends(GroupedGemmPlan, _Grouped)
