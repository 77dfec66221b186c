"""cuDNN candidates of SdpaPlan / SdpaBackwardPlan through nvidia-cudnn-frontend's graph API.

cuDNN's fused flash attention (the kernels behind torch's cuDNN SDPA backend) is the fastest
path on Hopper for the cells it takes: f16/bf16, no user mask, no dropout, scale >= 0, top-left
causal with Sq == Sk or bottom-right causal without fully masked rows, head dims multiples of 8.
Its softmax stats are the natural-log row logsumexp, f32 — exactly our `lse` contract — so a
cuDNN backward accepts the lse of a Triton forward and the other way round (tested in
tests/families/test_attention.py).

One built graph per (descriptor, operand strides, device, thread): cuDNN handles must not be
shared across threads (autograd runs the backward on its own thread), and a graph is built for
fixed strides. `supports` builds the contiguous-layout graph once, so a cell cuDNN declines
(head dims, GQA on an old cuDNN, ...) shows its reason in `Unsupported`'s listing and the Triton
candidate is picked instead. Workspace = what that graph asks for; graphs for other layouts are
built with `deselect_workspace_greater_than` that size, so the plan's workspace always suffices.

Precision: f32 softmax and accumulation, P rounded to the element type before P·V (as the
Triton kernels). Forward and the deterministic backward are deterministic and bit-stable for a
built graph; the default backward accumulates dQ with float atomics (deterministic=False), and
PlanPreference(require_deterministic=True) selects cuDNN's deterministic algorithm instead.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import torch

from ...backends import launch_replay
from ...core import validate as V
from ...core.errors import BackendError
from ...core.layout import row_major_strides
from ...core.plan import Candidate
from ...core.registry import register_candidate
from ...core.vocab import ArchSku, BackendKind, ElementKind, PrecisionGuarantee
from .descriptors import CausalKind, MaskKind, SdpaDescriptor
from .plans import SdpaBackwardPlan, SdpaPlan

HALF = (ElementKind.F16, ElementKind.BF16)
#: TMA loads in cuDNN's kernels: 16-byte aligned bases and outer strides.
ALIGN_BYTES = 16


@functools.lru_cache(maxsize=1)
def cudnn_missing() -> str | None:
    """None when the cuDNN frontend imports and finds a cuDNN 9 library, else why not."""
    try:
        import cudnn

        version = int(cudnn.backend_version())
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"nvidia-cudnn-frontend not importable ({type(exc).__name__}: {str(exc)[:160]})"
    if version < 90000:
        return f"cuDNN backend {version} < 9.0"
    return None


def _static_reason(desc: SdpaDescriptor, arch: ArchSku) -> str | None:
    """The cells cuDNN's fused attention cannot take (before asking cuDNN itself)."""
    if arch is ArchSku.INTERPRETER or not torch.cuda.is_available():
        return "needs a CUDA device"
    if desc.element not in HALF:
        return f"cuDNN fused attention takes f16/bf16 only, got {desc.element.value}"
    if desc.mask is not MaskKind.NONE:
        return "user masks run on the Triton kernels"
    if desc.dropout_p > 0.0:
        return "dropout replay follows our philox stream (Triton kernels)"
    if desc.head_dim % 8 or desc.value_dim % 8 or max(desc.head_dim, desc.value_dim) > 256:
        return f"head dims must be multiples of 8 up to 256, got {desc.head_dim}/{desc.value_dim}"
    if min(desc.batch, desc.num_heads, desc.query_len, desc.key_len) == 0:
        return "empty problem (the Triton kernels write the empty-key convention)"
    if desc.scale < 0:
        # cuDNN 9's fused forward returns NaN rows for a negative attn_scale (torch's cuDNN
        # backend does the same)
        return f"negative scale {desc.scale} (cuDNN's fused attention returns NaN)"
    if desc.causal is CausalKind.TOP_LEFT and desc.query_len != desc.key_len:
        # torch's is_causal diagonal (query i sees keys 0..i); on the H100 halves went through
        # cuDNN wrong for Sq != Sk (issue #32), as if aligned bottom-right: Triton takes them
        return "top-left causal with Sq != Sk (torch's is_causal): cuDNN's results differ there"
    if desc.causal is CausalKind.BOTTOM_RIGHT and desc.query_len > desc.key_len:
        return "bottom-right causal with Sq > Sk has fully masked rows (lse = +inf convention)"
    return cudnn_missing()


# -- graphs ------------------------------------------------------------------------------------
_TLS = threading.local()
_GRAPHS: dict = {}
_LOCK = threading.Lock()
#: Entries the graph and launch caches keep before starting over (each distinct shape, layout
#: and thread adds one; a long-running server with varying shapes must not grow without end).
CACHE_LIMIT = 512


def _handle(device: int):
    """One cuDNN handle per (thread, device): cuDNN forbids sharing one across threads."""
    import cudnn

    handles = getattr(_TLS, "handles", None)
    if handles is None:
        handles = _TLS.handles = {}
    h = handles.get(device)
    if h is None:
        with torch.cuda.device(device):
            h = handles[device] = cudnn.create_handle()
    return h


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    """Strides as cuDNN should see them: extent-1 dims take the contiguous value (any stride
    is valid for them, but TMA descriptors want 16-byte multiples)."""
    canon = row_major_strides(t.shape)
    return tuple(c if n == 1 else s for n, s, c in zip(t.shape, t.stride(), canon))


#: Fixed uids per operand name: execute binds buffers by this order (`tensor_uids`), the
#: frontend's cheapest host path (no per-call dict of graph tensors).
_UID = {"q": 1, "k": 2, "v": 3, "out": 4, "lse": 5, "dout": 6, "dq": 7, "dk": 8, "dv": 9}


_FWD_NAMES = ("q", "k", "v", "out", "lse")
_BWD_NAMES = ("q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv")


def _shapes(desc: SdpaDescriptor, backward: bool) -> dict[str, tuple[int, ...]]:
    s = {"q": desc.q_shape, "k": desc.k_shape, "v": desc.v_shape, "out": desc.out_shape,
         "lse": (*desc.lse_shape, 1)}
    if backward:
        s.update(dout=desc.out_shape, dq=desc.q_shape, dk=desc.k_shape, dv=desc.v_shape)
    return s


def _build(desc: SdpaDescriptor, backward: bool, deterministic: bool, strides: dict,
           device: int, ws_limit: int | None):
    """Build a cuDNN graph for these strides; returns (graph, operand uids in `_shapes`
    order, workspace bytes)."""
    import cudnn

    dt = cudnn.data_type.BFLOAT16 if desc.element is ElementKind.BF16 else cudnn.data_type.HALF
    handle = _handle(device)
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    shapes = _shapes(desc, backward)

    def inp(name, dtype=dt):
        return g.tensor(name=name, dim=list(shapes[name]), stride=list(strides[name]),
                        data_type=dtype, uid=_UID[name])

    causal = {}
    if desc.causal is CausalKind.TOP_LEFT:
        causal["use_causal_mask"] = True
    elif desc.causal is CausalKind.BOTTOM_RIGHT:
        causal["use_causal_mask_bottom_right"] = True
    t = {"q": inp("q"), "k": inp("k"), "v": inp("v")}
    if not backward:
        o, stats = g.sdpa(name="sdpa", q=t["q"], k=t["k"], v=t["v"], generate_stats=True,
                          attn_scale=float(desc.scale), **causal)
        t["out"], t["lse"] = o, stats
        outs = ("out", "lse")
    else:
        t["out"], t["dout"] = inp("out"), inp("dout")
        t["lse"] = inp("lse", cudnn.data_type.FLOAT)
        dq, dk, dv = g.sdpa_backward(name="sdpa_backward", q=t["q"], k=t["k"], v=t["v"],
                                     o=t["out"], dO=t["dout"], stats=t["lse"],
                                     attn_scale=float(desc.scale),
                                     use_deterministic_algorithm=deterministic, **causal)
        t["dq"], t["dk"], t["dv"] = dq, dk, dv
        outs = ("dq", "dk", "dv")
    for name in outs:
        dtype = cudnn.data_type.FLOAT if name == "lse" else dt
        t[name].set_uid(_UID[name]).set_output(True).set_dim(list(shapes[name])).set_stride(
            list(strides[name])).set_data_type(dtype)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    if ws_limit is not None:
        g.deselect_workspace_greater_than(ws_limit)
    g.check_support()
    g.build_plans()
    return g, tuple(_UID[n] for n in shapes), int(g.get_workspace_size())


def _graph(desc: SdpaDescriptor, backward: bool, deterministic: bool, strides: dict,
           device: int, ws_limit: int | None):
    key = (desc, backward, deterministic, device, threading.get_ident(),
           tuple(sorted(strides.items())))
    entry = _GRAPHS.get(key)
    if entry is None:
        with _LOCK:
            entry = _GRAPHS.get(key)
            if entry is None:
                if len(_GRAPHS) >= CACHE_LIMIT:
                    _GRAPHS.clear()
                entry = _GRAPHS[key] = _build(desc, backward, deterministic, strides, device,
                                              ws_limit)
    return entry


def _canonical(desc: SdpaDescriptor, backward: bool) -> dict:
    return {n: row_major_strides(s) for n, s in _shapes(desc, backward).items()}


class _CudnnBase(Candidate):
    backend = BackendKind.CUDNN
    backward = False
    deterministic = True
    # the raw-pointer execute records itself (Recording.add_call); the other bindings refuse
    replayable = True

    def _canonical_graph(self, desc):
        dev = torch.cuda.current_device()
        return _graph(desc, self.backward, self.deterministic, _canonical(desc, self.backward),
                      dev, None)

    @functools.lru_cache(maxsize=256)  # noqa: B019 - candidates are process-lifetime singletons
    def _build_reason(self, desc) -> str | None:
        try:
            self._canonical_graph(desc)
        except Exception as exc:  # noqa: BLE001 - cuDNN's decline is the reason
            return f"cuDNN declined the graph ({type(exc).__name__}: {str(exc)[:200]})"
        return None

    def supports(self, desc, pref, arch):
        return _static_reason(desc, arch) or self._build_reason(desc)

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element, deterministic=self.deterministic,
                                              bit_stable_on_same_hardware=self.deterministic)

    @functools.lru_cache(maxsize=256)  # noqa: B019
    def workspace_size(self, desc) -> int:
        return self._canonical_graph(desc)[2]

    def can_implement(self, desc, args) -> None:
        who = f"{'SdpaBackwardPlan' if self.backward else 'SdpaPlan'} [{self.name}]"
        for name in _shapes(desc, self.backward):
            t = getattr(args, name)
            V.check_alignment(who, name, t, ALIGN_BYTES)
            if name != "lse":  # stats rows are written per thread, not by TMA
                V.check_stride_alignment(who, name, t, ALIGN_BYTES)

    def _prepare(self, desc, tensors: list, device: int):
        """Graph, operand uids, workspace need and handle for one layout (first call only)."""
        names = _shapes(desc, self.backward)
        strides = {n: _strides(t) for n, t in zip(names, tensors)}
        limit = self.workspace_size(desc)
        try:
            g, uids, need = _graph(desc, self.backward, self.deterministic, strides, device,
                                   limit)
        except Exception as exc:  # noqa: BLE001 - a layout cuDNN declines is a backend error
            raise BackendError(f"{self.name}: cuDNN declined strides {strides}: "
                               f"{type(exc).__name__}: {str(exc)[:300]}") from exc
        if need > limit:  # deselect_workspace_greater_than keeps this from happening
            raise BackendError(f"cuDNN graph needs {need} workspace bytes > {limit}")
        handle = _handle(device)
        return g, uids, need, handle, _raw_binding(g, uids, handle)

    def launch(self, desc, args, workspace) -> None:
        # Host time bounds eager training steps at small sizes, so the per-call path is one
        # dict lookup keyed by the raw strides (this thread's cache; cuDNN handles are per
        # thread) and the execute call.
        tensors = [getattr(args, n) for n in (_BWD_NAMES if self.backward else _FWD_NAMES)]
        tensors[4] = tensors[4].unsqueeze(-1)  # lse as cuDNN's [B, H, Sq, 1] stats
        device = tensors[0].device.index
        cache = getattr(_TLS, "launch", None)
        if cache is None:
            cache = _TLS.launch = {}
        key = (self.name, desc, device, *(t.stride() for t in tensors))
        entry = cache.get(key)
        if entry is None:
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
            entry = cache[key] = self._prepare(desc, tensors, device)
        g, uids, need, handle, raw = entry
        import cudnn

        # the raw stream getter: torch.cuda.current_stream builds a Stream object per call
        cudnn.set_stream(handle, torch._C._cuda_getCurrentRawStream(device))
        bind = _BIND if raw is not None or _BIND != "raw" else "ordered"
        recording = launch_replay.active()
        if recording is not None:
            if bind == "raw":
                recording.add_call(_replay_raw, (handle, raw, workspace if need else 0,
                                                 *tensors))
            else:
                recording.refuse(f"{self.name}: cuDNN bound by {bind}, not by raw pointers")
        _EXECUTE[bind](g, uids, tensors, workspace if need else None, handle, raw)


def _exec_dict(g, uids, tensors, ws, handle, raw):
    g.execute(dict(zip(uids, tensors)), ws, handle=handle)


def _exec_ordered(g, uids, tensors, ws, handle, raw):
    g.execute(tensors, ws, handle=handle, tensor_uids=uids)


def _exec_raw(g, uids, tensors, ws, handle, raw):
    # The backend's own entry point for a uid-sorted void*[]: what execute() ends in after it
    # has described every buffer in Python (host time that small training steps feel). Sound
    # here because the graph was built for exactly these
    # strides (the cache key) and can_implement checked alignment; only addresses change.
    _run_raw(raw, [t.data_ptr() for t in tensors], 0 if ws is None else ws.data_ptr())


def _run_raw(raw, ptrs: list[int], ws: int) -> None:
    run, arr, backend, index = raw
    arr[:] = ptrs
    run(ctypes.addressof(arr), len(arr), ws, backend, index)


def _replay_raw(stream: int, handle, raw, ws: int, *ptrs: int) -> None:
    """_exec_raw on pointers (a launch replay, backends/launch_replay.py)."""
    import cudnn

    cudnn.set_stream(handle, stream)
    _run_raw(raw, list(ptrs), ws)


def _raw_binding(g, uids, handle):
    """(execute, pointer array, backend handle, plan index) for `_exec_raw`, or None when this
    frontend's graph does not expose that path as expected (then launch binds by `ordered`)."""
    try:
        lowered = g._lowered_graph
        order = g._variant_pack_uids()
        plan = g._plans[g._plan_index]
        run = lowered._execute_with_raw_ptrs
        backend = handle.backend_handle
    except Exception:  # noqa: BLE001 - a frontend without these internals: public path
        return None
    if (list(order or ()) != sorted(uids) or list(uids) != sorted(uids) or backend is None
            or g.selected_engine is not None):
        return None
    index = -1 if plan.cpp_index is None else plan.cpp_index
    return run, (ctypes.c_void_p * len(uids))(), backend, index


#: How launch binds buffers to the graph: raw pointers, else (a frontend without that path)
#: by uid order; `dict` is the frontend's plain documented form.
_EXECUTE = {"dict": _exec_dict, "ordered": _exec_ordered, "raw": _exec_raw}
_BIND = "raw"


@register_candidate(SdpaPlan)
class CudnnForward(_CudnnBase):
    name = "cudnn_fwd"
    priority = -10  # fastest where it applies


@register_candidate(SdpaBackwardPlan)
class CudnnBackward(_CudnnBase):
    name = "cudnn_bwd"
    backward = True
    deterministic = False  # dQ accumulated with float atomics
    priority = -11


@register_candidate(SdpaBackwardPlan)
class CudnnBackwardDeterministic(_CudnnBase):
    name = "cudnn_bwd_deterministic"
    backward = True
    deterministic = True
    priority = -10

    def supports(self, desc, pref, arch):
        if max(desc.head_dim, desc.value_dim) <= 64:
            return "at head dims <= 64 the Triton deterministic backward is faster"
        return super().supports(desc, pref, arch)
