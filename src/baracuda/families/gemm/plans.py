"""DenseGemmPlan and its Triton candidate (the cuBLASLt candidate lives in cublaslt.py).

**Formula**: D[*batch] = epilogue(alpha * op(A) @ op(B) + beta * C), op in {N, T} given by the
operands' strides (row- or column-major, any leading dimension), batch strides may be 0
(broadcast). Forward epilogue: + bias[n], activation (relu, gelu, gelu_tanh, silu), optional
saved pre-activation. Backward epilogue: * activation'(preact), bias gradient (sum of D over
batch and rows, a separate deterministic column reduction).

**Dtypes / shape**: f16, bf16 (f32 accumulation), f32 (strict IEEE unless
PlanPreference(allow_tf32=True)), f64 (f64 FMA path). m, n, k >= 0, batch rank 0..6.

**Backends**: cuBLASLt (nvmath-python's low-level bindings) first, with its bias / relu /
gelu(tanh) epilogues, the saved gelu(tanh) pre-activation (GELU_AUX) and dgelu(tanh)
(+ bias gradient) backward epilogues (measured faster than the fused Triton kernel on H100,
PERF_NOTES.md); other backward epilogues and saved pre-activations, exact-erf GELU, SiLU,
batched aux epilogues and the CPU interpreter run on Triton (k == 0 too) (whose fused-activation
tile is timed once per large problem on sm_90).

**Workspace**: Triton: none. cuBLASLt: a fixed scratch (CUBLASLT_WORKSPACE bytes) for the
library's heuristic algorithm.

**Precision**: deterministic and bit-stable on the same hardware: each output tile is reduced
over k by one program in a fixed order (no split-k atomics); cuBLASLt's algorithm is fixed per
problem and layout after its first call (timed once for large problems), its split-k
reductions are ordered for a fixed algorithm and workspace size. Across processes the timed
choice, hence the bits, may differ.
"""

from __future__ import annotations

from ...core import validate as V
from ...core.plan import Candidate, Plan, interpreter_active
from ...core.registry import register_candidate, register_plan
from ...core.vocab import (
    ArchSku,
    ElementKind,
    MathPrecision,
    OpCategory,
    PlanPreference,
    PrecisionGuarantee,
)
from .descriptors import DenseGemmArgs, DenseGemmDescriptor, GemmActivation
from .launch import check_matrix_layout, launch_gemm


def gemm_guarantee(desc, pref: PlanPreference) -> PrecisionGuarantee:
    if desc.element is ElementKind.F32 and pref.allow_tf32:
        return PrecisionGuarantee(MathPrecision.TF32, ElementKind.F32)
    return PrecisionGuarantee.for_element(desc.element)


class GemmPlanBase(Plan):
    """Base of the GEMM family's plans (Plan.run / run_trusted hand candidates the preference
    through `launch_with`: TF32 and the backend of inner plans are preferences)."""


@register_plan
class DenseGemmPlan(GemmPlanBase):
    __doc__ = __doc__
    category = OpCategory.GEMM
    descriptor_type = DenseGemmDescriptor
    args_type = DenseGemmArgs

    @classmethod
    def op_name(cls, desc) -> str:
        return "gemm" if not desc.batch else "batched_gemm"

    def __init__(self, desc, candidate, preference, arch):
        super().__init__(desc, candidate, preference, arch)
        import dataclasses

        self._sku = dataclasses.replace(self._sku, epilogue=desc.epilogue_name, layout="strided")

    def check_args(self, args: DenseGemmArgs) -> None:
        who, d = type(self).__name__, self.desc
        e = d.element
        mn = (*d.batch, d.m, d.n)
        a = V.check_tensor(who, "a", args.a, element=e)
        b = V.check_tensor(who, "b", args.b, element=e)
        if tuple(a.shape) != (*d.batch, d.m, d.k) or tuple(b.shape) != (*d.batch, d.k, d.n):
            raise V.InvalidProblem(
                f"{who}: a.shape {tuple(a.shape)} and b.shape {tuple(b.shape)} do not match the "
                f"descriptor: expected a {(*d.batch, d.m, d.k)} and b {(*d.batch, d.k, d.n)}")
        V.check_tensor(who, "d", args.d, mn, e)
        check_matrix_layout(who, "a", a)
        check_matrix_layout(who, "b", b)
        check_matrix_layout(who, "d", args.d)
        if d.has_c:
            V.check_tensor(who, "c", args.c, mn, e)
            V.check_nonnegative_strides(who, "c", args.c)  # C may broadcast (stride 0)
        if d.bias:
            V.check_tensor(who, "bias", args.bias, (d.n,), e)
        if d.dactivation is not GemmActivation.NONE:
            V.check_tensor(who, "preact", args.preact, mn, e)
            V.check_nonnegative_strides(who, "preact", args.preact)
        if d.save_preact:
            V.check_tensor(who, "preact_out", args.preact_out, mn, e)
            V.check_nonnegative_strides(who, "preact_out", args.preact_out)
            V.check_no_overlap(who, "preact_out", args.preact_out, "d", args.d)
        if d.bias_grad:
            V.check_tensor(who, "dbias", args.dbias, (d.n,), e)
            V.check_no_overlap(who, "dbias", args.dbias, "d", args.d)
        for name in ("bias", "dbias"):
            t = getattr(args, name)
            if t is not None:
                V.check_nonnegative_strides(who, name, t)

    def is_empty(self, args) -> bool:
        if self.desc.bias_grad and self.desc.n > 0:
            return False  # dbias of an empty batch/row set is zeros, still to be written
        return super().is_empty(args)


@register_candidate(DenseGemmPlan)
class TritonGemm(Candidate):
    """Tiled tl.dot GEMM (wgmma on sm_90), f32 accumulation, epilogue fused."""

    name = "triton_tiled_gemm"
    priority = 10

    def supports(self, desc, pref, arch):
        return None

    def guarantee(self, desc, pref):
        return gemm_guarantee(desc, pref)

    def launch(self, desc, args, workspace) -> None:
        self.launch_with(desc, args, workspace, PlanPreference())

    def launch_with(self, desc, args, workspace, pref: PlanPreference) -> None:
        arch = ArchSku.INTERPRETER if interpreter_active() else ArchSku.current(args.d.device)
        launch_gemm(desc, args, arch, pref)
