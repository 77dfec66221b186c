"""cuBLASLt candidate of DenseGemmPlan, called through nvmath-python's low-level bindings
(ltcore.py: cached descriptors/layouts/algorithm per cell, little host time per call).

Epilogues: bias, relu, gelu(tanh) forward (cuBLASLt's GELU is the tanh form); GELU_AUX(_BIAS)
writes the pre-activation into our buffer for the training forward; DGELU(_BGRAD) is the
backward epilogue dgelu_tanh from a saved pre-activation (+ the bias gradient of D). C is
copied into D and read in place (beta = 0 means C is not read, BLAS semantics). Layouts cuBLASLt
can't express (degenerate vector strides, aux buffers of odd leading dimension) run the same
math on Triton.
"""

from __future__ import annotations

import dataclasses
import functools

import torch

from ...core.plan import Candidate
from ...core.registry import register_candidate
from ...core.vocab import ArchSku, BackendKind, ElementKind, PlanPreference
from .descriptors import GemmActivation
from .launch import batch_groups, launch_gemm
from .ltcore import CUBLASLT_WORKSPACE, lt_matmul
from .plans import DenseGemmPlan, gemm_guarantee

_NONE, _RELU, _GELU = GemmActivation.NONE, GemmActivation.RELU, GemmActivation.GELU_TANH
#: (bias, activation, save_preact, dactivation, bias_grad) -> cuBLASLt epilogue.
_EPILOG = {
    (False, _NONE, False, _NONE, False): "DEFAULT",
    (True, _NONE, False, _NONE, False): "BIAS",
    (False, _RELU, False, _NONE, False): "RELU",
    (True, _RELU, False, _NONE, False): "RELU_BIAS",
    (False, _GELU, False, _NONE, False): "GELU",
    (True, _GELU, False, _NONE, False): "GELU_BIAS",
    (False, _GELU, True, _NONE, False): "GELU_AUX",
    (True, _GELU, True, _NONE, False): "GELU_AUX_BIAS",
    (False, _NONE, False, _GELU, False): "DGELU",
    (False, _NONE, False, _GELU, True): "DGELU_BGRAD",
}


def epilogue_of(desc) -> str | None:
    return _EPILOG.get((desc.bias, desc.activation, desc.save_preact, desc.dactivation,
                        desc.bias_grad))


def fuses_activation(activation: GemmActivation, save_preact: bool = False) -> bool:
    """Whether cuBLASLt has a forward epilogue for `activation` (with or without bias), also
    writing the pre-activation when `save_preact` (GELU_AUX: relu's aux is a bitmask, not the
    pre-activation, so that mode has none)."""
    save = bool(save_preact)
    return any((bias, activation, save, _NONE, False) in _EPILOG for bias in (False, True))


@functools.lru_cache(maxsize=1)
def nvmath_missing() -> str | None:
    """None when nvmath-python's cuBLASLt bindings import, else why not."""
    try:
        import nvmath.bindings.cublasLt  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"nvmath-python not installed ({type(exc).__name__}: {exc})"
    return None


def _problems(desc, args):
    """Yield (a, b, d) matrix problems (2-D, or 3-D with a uniform batch stride) covering the
    descriptor's batch, folding a broadcast B into the rows of A where memory allows. C was
    already copied into D (it is read in place)."""
    m = desc.m
    for v, nb, bs in batch_groups(desc.batch, {"a": args.a, "b": args.b, "d": args.d}):
        a, b, d = v["a"], v["b"], v["d"]
        if nb == 1:
            yield a, b, d
        elif bs["b"] == 0 and bs["a"] == m * a.stride(0) and bs["d"] == m * d.stride(0):
            yield (a.as_strided((nb * m, a.shape[1]), a.stride()), b,
                   d.as_strided((nb * m, d.shape[1]), d.stride()))
        elif all(s != 0 for s in bs.values()):
            yield tuple(t.as_strided((nb, *t.shape), (bs[x], *t.stride()))
                        for t, x in ((a, "a"), (b, "b"), (d, "d")))
        else:
            for i in range(nb):
                yield tuple(t.as_strided(tuple(t.shape), t.stride(),
                                         t.storage_offset() + i * bs[x])
                            for t, x in ((a, "a"), (b, "b"), (d, "d")))


@register_candidate(DenseGemmPlan)
class CublasLtGemm(Candidate):
    """cuBLASLt GEMM (heuristic candidates timed once per large cell) with bias / relu /
    gelu(tanh) / GELU_AUX / DGELU(_BGRAD) epilogues."""

    name = "cublaslt_matmul"
    backend = BackendKind.CUBLASLT
    priority = 0
    # cublasLtMatmul records itself (ltcore.lt_matmul: Recording.add_call), the Triton
    # fallback is a Triton launch, and C's copy into D is an aten op a recording refuses
    replayable = True

    def supports(self, desc, pref, arch):
        if arch is ArchSku.INTERPRETER or not torch.cuda.is_available():
            return "needs CUDA (cuBLASLt); none here"
        missing = nvmath_missing()
        if missing:
            return missing
        if desc.bias_grad and desc.dactivation is GemmActivation.NONE:
            return "a bias gradient of D alone has no cuBLASLt epilogue (runs on Triton)"
        if desc.dactivation not in (_NONE, _GELU):
            return (f"cuBLASLt's backward epilogue is DGELU (tanh form); "
                    f"d{desc.dactivation.value} runs on Triton")
        if desc.save_preact and desc.activation is not _GELU:
            return ("cuBLASLt saves the pre-activation only for gelu_tanh (GELU_AUX; relu's "
                    "aux is a bitmask)")
        if epilogue_of(desc) is None:
            return f"cuBLASLt has no {desc.activation.value} epilogue"
        if desc.batch and (desc.save_preact or desc.is_backward_epilogue):
            return "batched aux / bias-gradient epilogues run on Triton"
        if desc.element is ElementKind.F64 and desc.epilogue_name != "none":
            return "cuBLASLt epilogues are not offered for f64"
        return None

    def guarantee(self, desc, pref):
        return gemm_guarantee(desc, pref)

    def workspace_size(self, desc) -> int:
        return CUBLASLT_WORKSPACE

    def launch(self, desc, args, workspace) -> None:
        self.launch_with(desc, args, workspace, PlanPreference())

    def launch_with(self, desc, args, workspace, pref: PlanPreference) -> None:
        if desc.has_c and args.c is not None:
            args.d.copy_(args.c)  # C := D below (in place); beta scales it there
        if desc.m == 0 or desc.n == 0 or desc.nbatch == 0 or desc.k == 0:
            # Nothing to multiply (a zero bias gradient, or D = epilogue(beta * C)): cuBLASLt
            # rejects k == 0; the Triton kernel does the epilogue alone.
            launch_gemm(desc, _Args.of(args), _arch(args), pref)
            return
        epi = epilogue_of(desc)
        tf32 = pref.allow_tf32
        alpha, beta = float(desc.alpha), float(desc.beta) if desc.has_c else 0.0
        if not desc.batch:
            vec = args.dbias if desc.bias_grad else (args.bias if desc.bias else None)
            aux = args.preact_out if desc.save_preact else (
                args.preact if desc.dactivation is not _NONE else None)
            if not lt_matmul(args.a, args.b, args.d, workspace, desc.element, tf32=tf32,
                             alpha=alpha, beta=beta, epilogue=epi, bias=vec, aux=aux):
                launch_gemm(desc, _Args.of(args), _arch(args), pref)
            return
        bias = args.bias if desc.bias else None
        for a, b, d in _problems(desc, args):
            if not lt_matmul(a, b, d, workspace, desc.element, tf32=tf32, alpha=alpha,
                             beta=beta, epilogue=epi, bias=bias):
                # Degenerate vector strides BLAS can't express: the same math on Triton.
                launch_gemm(_single(desc, a), _Args(a, b, d, bias), _arch(args), pref)


def _arch(args) -> ArchSku:
    return ArchSku.current(args.d.device)


def _single(desc, a):
    """The descriptor of one (possibly 3-D batched) sub-problem for the Triton fallback."""
    return dataclasses.replace(desc, batch=tuple(a.shape[:-2]), m=a.shape[-2])


class _Args:
    """DenseGemmArgs for the Triton fallback, C already copied into D (beta applies there)."""

    def __init__(self, a, b, d, bias, preact=None, preact_out=None, dbias=None):
        self.a, self.b, self.d, self.bias = a, b, d, bias
        self.c = d
        self.preact, self.preact_out, self.dbias = preact, preact_out, dbias

    @classmethod
    def of(cls, args):
        return cls(args.a, args.b, args.d, args.bias, args.preact, args.preact_out,
                   args.dbias)
