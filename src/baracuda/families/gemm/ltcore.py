"""cuBLASLt through nvmath-python's low-level bindings (`nvmath.bindings.cublasLt`).

The high-level `nvmath.linalg.advanced.Matmul` costs far more host time per call (operand
wrapping, stream objects, checked rebinding) than a raw `cublasLtMatmul`. Everything
that depends only on the problem and operand layouts (matmul descriptor, matrix layouts,
algorithm) is built once per *cell* and cached; a call then sets the epilogue pointers that
change (bias / aux, descriptor attributes) and launches on torch's current stream.

cuBLASLt is column-major and its bias runs along the rows of its D. We hand it the transposed
problem D^T = B^T A^T: our per-column bias is its per-row bias and a row-major D is its
column-major D. A column-major D without an epilogue vector runs the problem as given.

Algorithm: the heuristic's first HEURISTIC_LIMIT candidates; for problems of at least
AUTOTUNE_MACS multiply-adds they are timed on the first call and the heuristic's first is kept
unless another is clearly faster (`_fastest`; nvmath's default 8 candidates held no good kernel
for some backward layouts). After that
the algorithm is fixed, so results are bit-identical on reruns (cuBLASLt's split-k reductions
are ordered for a fixed algorithm and workspace size; the workspace size is always
CUBLASLT_WORKSPACE). A cell first met while a CUDA graph is captured keeps the heuristic's
first choice (no timing during capture). Across processes the timed choice may differ.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
import torch

from ...backends import launch_replay, native_replay
from ...core import validate as V
from ...core.errors import BackendError
from ...core.vocab import ElementKind

#: Scratch handed to cuBLASLt (NVIDIA recommends 32 MiB on Hopper). Always passed whole, so the
#: algorithm's split-k choice does not depend on the caller's buffer.
CUBLASLT_WORKSPACE = 32 << 20
#: Heuristic candidates requested per cell.
HEURISTIC_LIMIT = 24
#: Problems of at least this many multiply-adds time the candidates once per cell.
AUTOTUNE_MACS = 1 << 32
#: Tuning: the FINALISTS fastest candidates of a first pass (within NEAR of its best) and the
#: heuristic's first are re-timed in ROUNDS interleaved rounds; another candidate replaces the
#: first only when its median is more than MARGIN faster.
NEAR, FINALISTS, ROUNDS, MARGIN = 0.06, 4, 5, 0.05

_CUDA_R = {ElementKind.F16: 2, ElementKind.F32: 0, ElementKind.F64: 1, ElementKind.BF16: 14}
_OP_N, _OP_T = 0, 1


@functools.lru_cache(maxsize=1)
def _lib():
    from nvmath.bindings import cublas, cublasLt

    return cublasLt, cublas


@functools.cache
def _handle(device: int) -> int:
    """One cuBLASLt handle per device (handles may be shared by threads)."""
    with torch.cuda.device(device):
        return _lib()[0].create()


def _raw_stream_fn():
    fn = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fn is not None:
        return fn
    return lambda dev: torch.cuda.current_stream(dev).cuda_stream


_raw_stream = _raw_stream_fn()
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _operand(r: int, c: int, sr: int, sc: int, transpose: bool):
    """cuBLASLt (op, rows, cols, ld) of the torch matrix (r x c, strides sr, sc), or of its
    transpose, as a column-major stored matrix; None when BLAS cannot express the strides."""
    if transpose:
        r, c, sr, sc = c, r, sc, sr
    if sr == 1 or r <= 1:
        ld = sc if c > 1 else max(r, 1)
        if ld >= max(r, 1):
            return _OP_N, r, c, ld
    if sc == 1 or c <= 1:
        ld = sr if r > 1 else max(c, 1)
        if ld >= max(c, 1):
            return _OP_T, c, r, ld
    return None


def _set(fn, obj, attr, dtype_fn, value) -> None:
    buf = np.array([value], dtype=dtype_fn(attr))
    fn(obj, int(attr), buf.ctypes.data, buf.nbytes)


class _Cell:
    """Everything one problem/layout needs to launch: descriptors, algorithm, scalars."""

    __slots__ = ("mm", "la", "lb", "ld", "alpha", "beta", "algo", "results", "swap",
                 "ptrs", "bias_attr", "aux_attr", "lock", "handle", "addr", "cands")


_CELLS: dict = {}
_BUILD = threading.Lock()
_NONE = object()  # cached "cuBLASLt cannot do this cell"


def lt_matmul(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, workspace: torch.Tensor,
              element: ElementKind, *, tf32: bool = False, alpha: float = 1.0,
              beta: float = 0.0, epilogue: str = "DEFAULT", bias: torch.Tensor | None = None,
              aux: torch.Tensor | None = None) -> bool:
    """d = epilogue(alpha * a @ b + beta * d) on cuBLASLt; a [(nb,) m, k], b [(nb,) k, n],
    d [(nb,) m, n] (batch strides uniform, nonzero for d). `bias` is the epilogue's vector
    (input of BIAS*, output of *BGRAD*), `aux` its [m, n] buffer (pre-activation written by
    GELU_AUX*, read by DGELU*). Returns False, having launched nothing, when cuBLASLt cannot
    express the strides or offers no algorithm (the caller falls back)."""
    V.check_workspace("DenseGemmPlan: cuBLASLt", workspace, CUBLASLT_WORKSPACE)
    dev = d.get_device()
    if _current_device() != dev:
        with torch.cuda.device(dev):
            return lt_matmul(a, b, d, workspace, element, tf32=tf32, alpha=alpha, beta=beta,
                             epilogue=epilogue, bias=bias, aux=aux)
    pa, pb, pd = a.data_ptr(), b.data_ptr(), d.data_ptr()
    pv = bias.data_ptr() if bias is not None else 0
    px = aux.data_ptr() if aux is not None else 0
    low = pa | pb | pd | pv | px
    align = min(256, low & -low) if low else 256
    key = (element, tf32, alpha, beta, epilogue, a.shape, a.stride(), b.shape[-1], b.stride(),
           d.stride(), None if aux is None else aux.stride(),
           None if bias is None else bias.stride(), align, dev)
    cell = _CELLS.get(key)
    if cell is None:
        with _BUILD:
            cell = _CELLS.get(key)
            if cell is None:
                cell = _build(a, b, d, workspace, element, tf32, alpha, beta, epilogue, bias,
                              aux, align, dev)
                _CELLS[key] = cell
    if cell is _NONE:
        return False
    recording = launch_replay.active()
    if recording is not None:  # an op-level recording: this call replays with new pointers
        recording.add_call(_run_cell, (cell, a, b, d, 0 if bias is None else bias,
                                       0 if aux is None else aux, workspace))
    _run_cell(_raw_stream(dev), cell, pa, pb, pd, pv, px, workspace.data_ptr())
    return True


def _run_cell(stream: int, cell, pa: int, pb: int, pd: int, pv: int, px: int, pw: int) -> None:
    """One cublasLtMatmul of a built cell on raw pointers (what a replay calls too)."""
    lt = _lib()[0]
    x, y = (pa, pb) if cell.swap else (pb, pa)
    alpha_at, beta_at, ptrs_at = cell.addr
    # The descriptor is shared by every call of the cell: pointer attributes and the launch
    # that reads them stay together.
    with cell.lock:
        if cell.bias_attr is not None:
            cell.ptrs[0] = pv
            lt.matmul_desc_set_attribute(cell.mm, cell.bias_attr, ptrs_at, 8)
        if cell.aux_attr is not None:
            cell.ptrs[1] = px
            lt.matmul_desc_set_attribute(cell.mm, cell.aux_attr, ptrs_at + 8, 8)
        try:
            lt.matmul(cell.handle, cell.mm, alpha_at, x, cell.la, y, cell.lb, beta_at, pd,
                      cell.ld, pd, cell.ld, cell.algo, pw, CUBLASLT_WORKSPACE, stream)
        except Exception as exc:  # noqa: BLE001 - library failures surface typed
            raise BackendError(f"DenseGemmPlan: cublasLtMatmul failed: {exc}") from exc


@functools.lru_cache(maxsize=1)
def _entry_points() -> tuple[int, int] | None:
    """Addresses of cublasLtMatmul and cublasLtMatmulDescSetAttribute in the library nvmath
    loaded (the one that made our handles and descriptors), or None when they can't be read."""
    try:
        from nvmath.bindings._internal import cublasLt as loader

        found = loader._inspect_function_pointers()
        addrs = (found.get("__cublasLtMatmul"), found.get("__cublasLtMatmulDescSetAttribute"))
    except Exception:  # noqa: BLE001 - another nvmath: its calls stay on the Python path
        return None
    return addrs if all(isinstance(a, int) and a for a in addrs) else None


def _native_form(args):
    """A recorded `_run_cell` call (cell, a, b, d, bias, aux, workspace) as a cuBLASLt call of
    the C replay (`native_replay.CALL_FORMS`): the cell's handles and the pointers' places."""
    fns = _entry_points()
    if fns is None:
        return None
    cell = args[0]
    alpha_at, beta_at, _ = cell.addr
    attrs = (-1 if cell.bias_attr is None else cell.bias_attr,
             -1 if cell.aux_attr is None else cell.aux_attr)
    head = [*fns, cell.handle, cell.mm, alpha_at, cell.la, cell.lb, beta_at, cell.ld,
            cell.algo, CUBLASLT_WORKSPACE, *attrs, int(cell.swap)]
    places = {pos: 13 + pos for pos in range(1, 7)}  # a, b, d, bias, aux, workspace
    return head, places, (cell.lock if max(attrs) >= 0 else None)


native_replay.CALL_FORMS[_run_cell] = _native_form


def _build(a, b, d, workspace, element, tf32, alpha, beta, epilogue, bias, aux, align, dev):
    """The cell for these layouts, or _NONE when cuBLASLt can't run it."""
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    sd = d.stride()[-2:]
    swap = False
    dl = _operand(m, n, sd[0], sd[1], True)
    if dl is None or dl[0] != _OP_N:
        dl = _operand(m, n, sd[0], sd[1], False)
        if dl is None or dl[0] != _OP_N or bias is not None:
            return _NONE  # bias runs along cuBLASLt's rows: needs the transposed form
        swap = True
    if swap:
        al = _operand(m, k, a.stride(-2), a.stride(-1), False)
        bl = _operand(k, n, b.stride(-2), b.stride(-1), False)
    else:
        al = _operand(k, n, b.stride(-2), b.stride(-1), True)
        bl = _operand(m, k, a.stride(-2), a.stride(-1), True)
    if al is None or bl is None:
        return _NONE
    if bias is not None and bias.shape[0] > 1 and bias.stride(0) != 1:
        return _NONE
    xl = None
    if aux is not None:
        xl = _operand(m, n, aux.stride(-2), aux.stride(-1), not swap)
        if xl is None or xl[0] != _OP_N or xl[3] % 8 or aux.data_ptr() % 16:
            return _NONE  # cuBLASLt's aux: D's orientation, ld a multiple of 8
    lt, cublas = _lib()
    f64 = element is ElementKind.F64
    compute = (cublas.ComputeType.COMPUTE_64F if f64 else
               cublas.ComputeType.COMPUTE_32F_FAST_TF32 if tf32 and element is ElementKind.F32
               else cublas.ComputeType.COMPUTE_32F)
    scale = _CUDA_R[ElementKind.F64 if f64 else ElementKind.F32]
    dtype = _CUDA_R[element]
    nb = a.shape[0] if a.dim() == 3 else 1
    cell = _Cell()
    cell.swap = swap
    cell.mm = lt.matmul_desc_create(int(compute), scale)
    dfn, setd = lt.get_matmul_desc_attribute_dtype, lt.matmul_desc_set_attribute
    A = lt.MatmulDescAttribute
    _set(setd, cell.mm, A.TRANSA, dfn, al[0])
    _set(setd, cell.mm, A.TRANSB, dfn, bl[0])
    _set(setd, cell.mm, A.EPILOGUE, dfn, int(lt.Epilogue[epilogue]))
    if xl is not None:
        _set(setd, cell.mm, A.EPILOGUE_AUX_LD, dfn, xl[3])
        if nb > 1:
            _set(setd, cell.mm, A.EPILOGUE_AUX_BATCH_STRIDE, dfn, aux.stride(0))
    cell.bias_attr = int(A.BIAS_POINTER) if bias is not None else None
    cell.aux_attr = int(A.EPILOGUE_AUX_POINTER) if aux is not None else None
    cell.ptrs = np.zeros(2, dtype=np.uint64)
    sdt = np.float64 if f64 else np.float32
    cell.alpha, cell.beta = np.array([alpha], dtype=sdt), np.array([beta], dtype=sdt)
    cell.addr = (cell.alpha.ctypes.data, cell.beta.ctypes.data, cell.ptrs.ctypes.data)
    cell.handle = _handle(dev)
    lfn, setl = lt.get_matrix_layout_attribute_dtype, lt.matrix_layout_set_attribute
    L = lt.MatrixLayoutAttribute
    layouts = []
    strides = ((a, b, d) if swap else (b, a, d))
    for (_, rows, cols, ld), t in zip((al, bl, dl), strides):
        lay = lt.matrix_layout_create(dtype, rows, cols, ld)
        if nb > 1:
            _set(setl, lay, L.BATCH_COUNT, lfn, nb)
            _set(setl, lay, L.STRIDED_BATCH_OFFSET, lfn, t.stride(0))
        layouts.append(lay)
    cell.la, cell.lb, cell.ld = layouts
    cell.lock = threading.Lock()
    pref = lt.matmul_preference_create()
    pfn, setp = lt.get_matmul_preference_attribute_dtype, lt.matmul_preference_set_attribute
    P = lt.MatmulPreferenceAttribute
    _set(setp, pref, P.MAX_WORKSPACE_BYTES, pfn, CUBLASLT_WORKSPACE)
    for attr in (P.MIN_ALIGNMENT_A_BYTES, P.MIN_ALIGNMENT_B_BYTES, P.MIN_ALIGNMENT_C_BYTES,
                 P.MIN_ALIGNMENT_D_BYTES):
        _set(setp, pref, attr, pfn, align)
    results = np.zeros(HEURISTIC_LIMIT, dtype=lt.matmul_heuristic_result_dtype)
    count = np.zeros(1, dtype=np.int32)
    try:
        lt.matmul_algo_get_heuristic(_handle(dev), cell.mm, cell.la, cell.lb, cell.ld, cell.ld,
                                     pref, HEURISTIC_LIMIT, results.ctypes.data,
                                     count.ctypes.data)
    except Exception:  # noqa: BLE001 - "not supported" comes back as an error status
        count[0] = 0
    finally:
        lt.matmul_preference_destroy(pref)
    has_state = "state" in (results.dtype.names or ())
    ok = [i for i in range(int(count[0])) if not has_state or int(results[i]["state"]) == 0]
    if not ok:
        return _NONE
    cell.results = results  # keeps the algorithm structs alive
    off = results.dtype.fields["algo"][1]
    addrs = [results.ctypes.data + i * results.itemsize + off for i in ok]
    cell.algo = addrs[0]
    cell.cands = addrs
    macs = m * n * k * nb
    if (len(addrs) > 1 and macs >= AUTOTUNE_MACS and beta == 0.0
            and not torch.cuda.is_current_stream_capturing()):
        cell.algo = _fastest(cell, addrs, a, b, d, workspace, bias, aux, dev)
    return cell


def _fastest(cell, addrs, a, b, d, workspace, bias, aux, dev) -> int:
    """The heuristic's first candidate unless another is clearly faster. Every candidate is
    timed briefly; the few near the best and the first are re-timed in interleaved rounds
    (order alternating); another wins only when its median beats the first's by more than
    MARGIN: short timings move with the clocks, and a tuner that took any faster-looking
    candidate would pick different kernels from process to process."""
    first = time_candidates(cell, addrs, a, b, d, workspace, bias, aux, dev, reps=2)
    best = min(first)
    if best == float("inf"):
        return addrs[0]
    fastest = sorted(range(len(first)), key=first.__getitem__)[:FINALISTS]
    near = sorted({i for i in fastest if first[i] <= best * (1 + NEAR)}
                  | ({0} if first[0] < float("inf") else set()))
    if len(near) == 1:
        return addrs[near[0]]
    runs = []
    for r in range(ROUNDS):  # alternate the order: no candidate always runs first
        order = near if r % 2 == 0 else near[::-1]
        t = time_candidates(cell, [addrs[i] for i in order], a, b, d, workspace, bias, aux,
                            dev, reps=1, warmup=False)
        runs.append(t if r % 2 == 0 else t[::-1])
    med = [sorted(r[j] for r in runs)[ROUNDS // 2] for j in range(len(near))]
    j = min(range(len(near)), key=med.__getitem__)
    if near[0] == 0 and med[j] >= med[0] * (1 - MARGIN):
        return addrs[0]
    return addrs[near[j]]


def time_candidates(cell, addrs, a, b, d, workspace, bias, aux, dev, *, reps: int = 3,
                    warmup: bool = True) -> list[float]:
    """Milliseconds per call of each candidate algorithm on these operands (the fastest of
    `reps` calls; inf when it fails). Outputs are rewritten by the real call that follows
    (beta == 0, so nothing is read back)."""
    lt = _lib()[0]
    x, y = (a.data_ptr(), b.data_ptr()) if cell.swap else (b.data_ptr(), a.data_ptr())
    alpha_at, beta_at, ptrs_at = cell.addr
    cell.ptrs[0] = bias.data_ptr() if bias is not None else 0
    cell.ptrs[1] = aux.data_ptr() if aux is not None else 0
    if cell.bias_attr is not None:
        lt.matmul_desc_set_attribute(cell.mm, cell.bias_attr, ptrs_at, 8)
    if cell.aux_attr is not None:
        lt.matmul_desc_set_attribute(cell.mm, cell.aux_attr, ptrs_at + 8, 8)
    stream = _raw_stream(dev)
    pd = d.data_ptr()

    def call(algo):
        lt.matmul(cell.handle, cell.mm, alpha_at, x, cell.la, y, cell.lb, beta_at, pd, cell.ld,
                  pd, cell.ld, algo, workspace.data_ptr(), CUBLASLT_WORKSPACE, stream)

    # One queue, one synchronization at the end: every timed call starts behind the previous
    # one, so no launch latency lands inside a measurement.
    if not warmup and addrs:
        try:
            call(addrs[0])
        except Exception:  # noqa: BLE001 - its own timing below reports the failure
            pass
    from ...backends.timing import CudaEventChain

    chains = []
    for algo in addrs:
        try:
            # the warm-up call also skips a failing algorithm
            chain = CudaEventChain(functools.partial(call, algo), reps, warmup=int(warmup))
        except Exception:  # noqa: BLE001 - an algorithm that fails is not a choice
            chain = None
        chains.append(chain)
    torch.cuda.current_stream(dev).synchronize()
    return [float("inf") if chain is None else min(chain.ms()) for chain in chains]
