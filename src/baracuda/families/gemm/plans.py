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
(+ bias gradient) backward epilogues (faster than the fused Triton kernel on the H100); other
backward epilogues and saved pre-activations, exact-erf GELU, SiLU, batched aux epilogues and
the CPU interpreter run on Triton (k == 0 too) (whose fused-activation tile is timed once per
large problem on sm_90).

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
from .descriptors import DenseGemmArgs, DenseGemmDescriptor
from .launch import check_matrix_layout, launch_gemm


def gemm_guarantee(desc, pref: PlanPreference) -> PrecisionGuarantee:
    if desc.element is ElementKind.F32 and pref.allow_tf32:
        return PrecisionGuarantee(MathPrecision.TF32, ElementKind.F32)
    return PrecisionGuarantee.for_element(desc.element)


class GemmPlanBase(Plan):
    """Base of the GEMM family's plans (Plan.run / run_trusted hand candidates the preference
    through `launch_with`: TF32 and the backend of inner plans are preferences). Arguments: the
    declared operands, then the layouts the Args class names (`MATRICES` in a BLAS layout,
    `STRIDED` with non-negative strides)."""

    category = OpCategory.GEMM

    def check_args(self, args) -> None:
        super().check_args(args)
        who = type(self).__name__
        for name in args.STRIDED:
            if (t := getattr(args, name)) is not None:
                V.check_nonnegative_strides(who, name, t)
        for name in args.MATRICES:
            if (t := getattr(args, name)) is not None:
                check_matrix_layout(who, name, t)


@register_plan
class DenseGemmPlan(GemmPlanBase):
    __doc__ = __doc__
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
        super().check_args(args)
        if self.desc.has_c and args.c is None:
            raise V.InvalidProblem(f"{type(self).__name__}: c is required when beta != 0, "
                                   "got None")

    def is_empty(self, args) -> bool:
        if self.desc.bias_grad and self.desc.n > 0:
            return False  # dbias of an empty batch/row set is zeros, still to be written
        return super().is_empty(args)


@register_candidate(DenseGemmPlan)
class TritonGemm(Candidate):
    """Tiled tl.dot GEMM (wgmma on sm_90), f32 accumulation, epilogue fused."""

    name = "triton_tiled_gemm"
    priority = 10
    replayable = True  # only Triton launches (backends/launch_replay.py)

    def supports(self, desc, pref, arch):
        return None

    def guarantee(self, desc, pref):
        return gemm_guarantee(desc, pref)

    def launch(self, desc, args, workspace) -> None:
        self.launch_with(desc, args, workspace, PlanPreference())

    def launch_with(self, desc, args, workspace, pref: PlanPreference) -> None:
        arch = ArchSku.INTERPRETER if interpreter_active() else ArchSku.current(args.d.device)
        launch_gemm(desc, args, arch, pref)
