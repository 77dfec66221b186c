"""cuBLASLt candidate of DenseGemmPlan through nvmath-python (`nvmath.linalg.advanced.Matmul`).

cuBLASLt is column-major and its bias runs along the rows of its D; we hand it the transposed
problem D^T = B^T A^T (+ beta C^T), so our per-column bias is its per-row bias and a row-major D
is its native column-major output. The result is written in place into D (nvmath's
``inplace=True`` with C := D; beta = 0 means C is not read, BLAS semantics). One planned
Matmul (heuristic algorithm) is cached per descriptor and operand layout; each run rebinds the
operands. Scratch comes from the plan's workspace through a tiny allocator.
"""

from __future__ import annotations

import functools
import threading

import torch

from ...core.errors import BackendError, WorkspaceTooSmall
from ...core.plan import Candidate
from ...core.registry import register_candidate
from ...core.vocab import ArchSku, BackendKind, ElementKind, PlanPreference
from .descriptors import GemmActivation
from .launch import batch_groups, launch_gemm
from .plans import DenseGemmPlan, gemm_guarantee

#: Scratch handed to cuBLASLt (NVIDIA recommends 32 MiB on Hopper); nvmath adds 16 bytes when an
#: epilogue is set.
CUBLASLT_WORKSPACE = 32 << 20
_WS_BYTES = CUBLASLT_WORKSPACE + 256

_EPILOG = {
    (False, GemmActivation.NONE): None,
    (True, GemmActivation.NONE): "BIAS",
    (False, GemmActivation.RELU): "RELU",
    (True, GemmActivation.RELU): "RELU_BIAS",
    (False, GemmActivation.GELU_TANH): "GELU",  # cuBLASLt's GELU is the tanh form
    (True, GemmActivation.GELU_TANH): "GELU_BIAS",
}


@functools.lru_cache(maxsize=1)
def nvmath_missing() -> str | None:
    """None when nvmath-python imports, else why not."""
    try:
        import nvmath.linalg.advanced  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"nvmath-python not installed ({type(exc).__name__}: {exc})"
    return None


def _blas_view(t: torch.Tensor) -> torch.Tensor | None:
    """The same matrix with BLAS-legal strides (unit stride in one dim, the leading dim
    covering the other; strides of extent-1 dims are free), or None when it has none."""
    rows, cols = t.shape[-2], t.shape[-1]
    sr, sc = t.stride(-2), t.stride(-1)
    if rows <= 1:
        sr, sc = (max(cols, 1), 1) if (sc == 1 or cols <= 1) else (1, sc)
    elif cols <= 1:
        sr, sc = (1, max(rows, 1)) if sr == 1 else (sr, 1)
    if not ((sc == 1 and sr >= max(cols, 1)) or (sr == 1 and sc >= max(rows, 1))):
        return None
    if (sr, sc) == (t.stride(-2), t.stride(-1)):
        return t
    return t.as_strided(tuple(t.shape), (*t.stride()[:-2], sr, sc))


class _Workspace:
    """nvmath allocator protocol over the plan's workspace (bound around each execute)."""

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.buffer: torch.Tensor | None = None

    def memalloc_async(self, size, stream):
        from nvmath.memory import MemoryPointer

        buf = self.buffer
        have = 0 if buf is None else buf.numel()
        if size > have:
            raise WorkspaceTooSmall("DenseGemmPlan: cuBLASLt", size, have)
        return MemoryPointer(buf.data_ptr(), size, finalizer=None)

    def memalloc(self, size):
        return self.memalloc_async(size, None)


_CACHE: dict = {}
_LOCK = threading.Lock()


def _layout_key(t: torch.Tensor | None):
    if t is None:
        return None
    return (tuple(t.shape), tuple(t.stride()), t.data_ptr() % 16)


def _compute_type(element: ElementKind, pref: PlanPreference):
    from nvmath.linalg import ComputeType

    if element is ElementKind.F64:
        return ComputeType.COMPUTE_64F
    if element is ElementKind.F32 and pref.allow_tf32:
        return ComputeType.COMPUTE_32F_FAST_TF32
    return ComputeType.COMPUTE_32F  # f16 too: never accumulate in f16


#: Problems of at least this many multiply-adds are autotuned once (nvmath times the
#: heuristic's candidate algorithms on the first operands and keeps the fastest).
AUTOTUNE_MACS = 1 << 32


def _matmul_for(desc, pref, a, b, c, bias, stream, workspace):
    """The planned nvmath Matmul for this layout (built once, then cached)."""
    key = (desc, pref.allow_tf32, a.device.index, _layout_key(a), _layout_key(b), _layout_key(c),
           _layout_key(bias))
    entry = _CACHE.get(key)
    if entry is not None:
        return entry
    from nvmath.linalg import advanced as adv

    alloc = _Workspace(a.device.index or 0)
    options = adv.MatmulOptions(inplace=True, compute_type=_compute_type(desc.element, pref),
                                memory_limit=CUBLASLT_WORKSPACE, allocator=alloc)
    beta = float(desc.beta) if desc.has_c else 0.0
    mm = adv.Matmul(a, b, c=c, alpha=float(desc.alpha), beta=beta, options=options,
                    stream=stream)
    name = _EPILOG[(desc.bias, desc.activation)]
    epilog = getattr(adv.MatmulEpilog, name) if name else None
    inputs = {"bias": bias} if desc.bias else None
    mm.plan(epilog=epilog, epilog_inputs=inputs, stream=stream)
    macs = a.shape[-2] * b.shape[-1] * a.shape[-1] * (a.shape[0] if a.dim() == 3 else 1)
    if macs >= AUTOTUNE_MACS and not desc.has_c:  # autotuning reruns in place: C must be D
        alloc.buffer = workspace
        try:
            mm.autotune(iterations=5, stream=stream)
        except Exception:  # noqa: BLE001 - autotuning is an optimization; the heuristic stays
            pass
        finally:
            alloc.buffer = None
    # The entry keeps its last operands referenced (no release_operands): rebinding them with
    # reset_operands_unchecked is the cheap path, and it needs the operand holders alive.
    entry = [mm, alloc, threading.Lock(), False]  # [.., unchecked rebinding verified]
    with _LOCK:
        _CACHE[key] = entry
    return entry


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
    """cuBLASLt heuristic GEMM with bias/relu/gelu(tanh) epilogues (nvmath-python)."""

    name = "cublaslt_matmul"
    backend = BackendKind.CUBLASLT
    priority = 0

    def supports(self, desc, pref, arch):
        if arch is ArchSku.INTERPRETER or not torch.cuda.is_available():
            return "needs CUDA (cuBLASLt); none here"
        missing = nvmath_missing()
        if missing:
            return missing
        if desc.is_backward_epilogue:
            return "backward epilogues (activation derivative, bias gradient) run on Triton"
        if desc.save_preact:
            return "saving the pre-activation runs on Triton (nvmath owns cuBLASLt's aux buffer)"
        if (desc.bias, desc.activation) not in _EPILOG:
            return f"cuBLASLt has no {desc.activation.value} epilogue"
        if desc.element is ElementKind.F64 and desc.epilogue_name != "none":
            return "cuBLASLt epilogues are not offered for f64"
        if desc.k == 0:
            return "k == 0 (an empty reduction) runs on Triton"
        if (pref.prefer_backend is None and desc.epilogue_name != "none"
                and desc.element in (ElementKind.BF16, ElementKind.F16)
                and arch in (ArchSku.SM90, ArchSku.SM90A)):
            # Measured on H100 (PERF_NOTES.md): bias 8192x4096x4096 bf16 ran at 475 TFLOP/s
            # through nvmath/cuBLASLt, the Triton GEMM at 740-780 at 8192^3.
            return ("f16/bf16 epilogues default to the fused Triton GEMM on sm_90 (faster there); "
                    "PlanPreference(prefer_backend=CUBLASLT) selects cuBLASLt's")
        return None

    def guarantee(self, desc, pref):
        return gemm_guarantee(desc, pref)

    def workspace_size(self, desc) -> int:
        return _WS_BYTES

    def launch(self, desc, args, workspace) -> None:
        self.launch_with(desc, args, workspace, PlanPreference())

    def launch_with(self, desc, args, workspace, pref: PlanPreference) -> None:
        if desc.has_c and args.c is not None:
            args.d.copy_(args.c)  # C := D below (in place); beta scales it there
        stream = torch.cuda.current_stream(args.d.device)
        bias = args.bias if desc.bias else None
        for a, b, d in _problems(desc, args):
            # The transposed problem: D^T = B^T @ A^T (+ beta D^T); see the module doc.
            at, bt, dt = _blas_view(b.mT), _blas_view(a.mT), _blas_view(d.mT)
            if at is None or bt is None or dt is None or (bias is not None
                                                          and bias.stride(0) != 1):
                # Degenerate vector strides BLAS can't express: the same math on Triton.
                launch_gemm(_single(desc, a), _Args(a, b, dt if dt is not None else d.mT,
                                                    bias, d), ArchSku.current(d.device), pref)
                continue
            entry = _matmul_for(desc, pref, at, bt, dt, bias, stream, workspace)
            mm, alloc, lock = entry[0], entry[1], entry[2]
            inputs = {"bias": bias} if bias is not None else None
            with lock:
                try:
                    _rebind(entry, at, bt, dt, inputs, stream)
                    alloc.buffer = workspace
                    mm.execute(release_workspace=True, stream=stream)
                except WorkspaceTooSmall:
                    raise
                except Exception as exc:  # noqa: BLE001 - surface library failures typed
                    raise BackendError(f"DenseGemmPlan: cuBLASLt (nvmath) failed: {exc}") from exc
                finally:
                    alloc.buffer = None


def _rebind(entry, a, b, c, inputs, stream) -> None:
    """Point the cached Matmul at this call's operands (same layout, by the cache key).
    The unchecked rebinding is verified once per entry against the operand pointers; where it
    does not take, the checked `reset_operands` is used from then on."""
    mm = entry[0]
    if entry[3] is not None:
        mm.reset_operands_unchecked(a=a, b=b, c=c, epilog_inputs=inputs, stream=stream)
        if entry[3]:
            return
        ptrs = [getattr(o, "data_ptr", None) for o in mm.operands[:3]]
        if ptrs == [a.data_ptr(), b.data_ptr(), c.data_ptr()]:
            entry[3] = True
            return
        entry[3] = None
    mm.reset_operands(a=a, b=b, c=c, epilog_inputs=inputs, stream=stream)


def _single(desc, a):
    """The descriptor of one unbatched sub-problem (same epilogue) for the Triton fallback."""
    import dataclasses

    batch = tuple(a.shape[:-2])
    return dataclasses.replace(desc, batch=batch, m=a.shape[-2], beta=desc.beta)


class _Args:
    def __init__(self, a, b, _dt, bias, d):
        self.a, self.b, self.d, self.bias = a, b, d, bias
        self.c = d  # C already copied into D; beta applies in place
        self.preact = self.preact_out = self.dbias = None
