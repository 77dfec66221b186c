"""One generic factory: a (forward plan, backward plan) pair becomes a torch.library custom op
with a fake implementation and an autograd formula.

Families write three small functions per op — `forward` (build descriptor, run the plan), `fake`
(shapes only) and `backward` (run the backward plan through its own custom op) — and call
`define_op`. Everything torch needs for eager, torch.compile(fullgraph=True), CUDA graphs and
`torch.library.opcheck` comes from here.

**Eager fast path.** Going through the torch.library dispatcher costs tens of microseconds of
host time per call (the Python autograd kernel, redispatch, the aliasing check), several times
the whole cost of torch's own eager ops. So `define_op` returns an `EagerOp`: when nothing but
plain eager tensors is involved (no torch.compile tracing, no dispatch or torch-function mode,
no functorch transform, no tensor subclass, no meta tensor) it calls the implementation
directly, through a generated `autograd.Function` with the same `setup_context`/`backward` when
a gradient is needed. Anything else goes through the registered custom op, which stays the one
definition torch.compile, export and opcheck see. Both paths run the same implementation and
the same autograd formula.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..core.plan import Args, Descriptor, Plan, _field_names, interpreter_active
from ..core.vocab import PlanPreference
from . import launch_replay

NAMESPACE = "baracuda"
#: the namespace's definitions (`define_op`); the library lives as long as the process
_LIB = torch.library.Library(NAMESPACE, "FRAGMENT")
_DEFAULT_PREF = PlanPreference()


def run_plan(plan_cls: type[Plan], desc: Descriptor, args: Args,
             preference: PlanPreference = _DEFAULT_PREF) -> None:
    """Select (cached per descriptor), size the workspace from torch's allocator, run.

    Frontends may allocate (torch's caching allocator is graph-safe); plans never do. The
    caller allocated the outputs, so the output-overlap scan is skipped (`Plan.run_trusted`).
    Every other check (device, shapes, dtypes, strides, alignment) is a function of the
    tensors' metadata, so it runs once per signature (`_signature`); later calls with the
    same signature launch directly, and candidates marked `replayable` replay their recorded
    Triton launches with the new pointers (`backends.launch_replay`): host time per call is
    what bounds eager training steps.
    """
    if launch_replay.active() is not None:
        _run_recorded(plan_cls, desc, args, preference)
        return
    sig, tensors, ptrs = _signature(args)
    key = (plan_cls, desc, preference, sig)
    entry = _TRUSTED.get(key) if sig is not None else None
    if entry is None:
        _first_call(plan_cls, desc, args, preference, sig, key, tensors)
        return
    candidate, pdesc, ppref, n, empty, program = entry
    if empty:
        return
    ws = torch.empty(n, dtype=torch.uint8, device=tensors[0].device) if n else None
    if program is not None:
        ptrs.append(0 if ws is None else ws.data_ptr())
        if program.replay(ptrs):
            return
    candidate.launch_with(pdesc, args, ws, ppref)


def _first_call(plan_cls, desc, args, preference, sig, key, tensors) -> None:
    """Select, check and run; cache the outcome (and the replay program) per signature."""
    plan = plan_cls.select(desc, preference)
    n = plan.workspace_size()
    ws = None
    if n:
        ws = torch.empty(n, dtype=torch.uint8, device=_first_device(args))
    program = None
    if (sig is not None and tensors and getattr(plan.candidate, "replayable", False)
            and REPLAY and not interpreter_active()):
        # raises on a bad signature: nothing is cached then
        program = launch_replay.record(type(plan.candidate).__name__,
                                       lambda: plan.run_trusted(args, ws), [*tensors, ws])
    else:
        plan.run_trusted(args, ws)
    if sig is not None:
        if len(_TRUSTED) >= _TRUSTED_LIMIT:
            _TRUSTED.clear()
        _TRUSTED[key] = (plan.candidate, plan.desc, plan.preference, n, plan.is_empty(args),
                         program)


def _run_recorded(plan_cls, desc, args, preference) -> None:
    """run_plan inside an op-level recording (`EagerOp`): the plain launch path, which the
    recording sees; a candidate that does more than Triton launches refuses the recording."""
    plan = plan_cls.select(desc, preference)
    if not getattr(plan.candidate, "replayable", False):
        launch_replay.active().refuse(f"{type(plan.candidate).__name__} is not replayable")
    n = plan.workspace_size()
    ws = torch.empty(n, dtype=torch.uint8, device=_first_device(args)) if n else None
    plan.run_trusted(args, ws)


_TRUSTED: dict = {}
#: BARACUDA_REPLAY=0 turns launch replay off (every call takes the normal launch path): for
#: telling a replay fault from a kernel's own when debugging
REPLAY = os.environ.get("BARACUDA_REPLAY", "1") != "0"
_TRUSTED_LIMIT = 4096
#: An op signature is recorded on its second call (one-off calls skip the recording's cost);
#: BARACUDA_RECORD_FIRST=1 records on the first, so that tests exercise replays.
RECORD_ON_FIRST_CALL = os.environ.get("BARACUDA_RECORD_FIRST", "0") == "1"


def _signature(args: Args) -> tuple[tuple | None, list[torch.Tensor], list[int]]:
    """Everything the checks of `run_trusted` read: per field, a tensor's shape, strides,
    dtype, device and 16-byte alignment, or the value itself; and the tensor fields in order
    with their data pointers. None (no caching) when a field holds something else (a tensor
    list)."""
    sig, tensors = _key_of([getattr(args, name) for name in _field_names(type(args))])
    return sig, tensors, [t.data_ptr() for t in tensors]


def _first_device(args: Args) -> torch.device:
    return next(iter(args.tensors().values())).device


def define_op(
    name: str,
    forward: Callable[..., Any],
    fake: Callable[..., Any],
    *,
    backward: Callable[..., Any] | None = None,
    setup_context: Callable[..., None] | None = None,
    mutates_args: Sequence[str] = (),
) -> EagerOp:
    """Register `baracuda::<name>` from a typed Python function; return its eager-fast callable.

    - ``forward``: the real implementation (its annotations give the op schema).
    - ``fake``: same signature; returns empty outputs of the right shape/dtype/strides.
    - ``backward(ctx, *grad_outputs)`` and ``setup_context(ctx, inputs, output)``: the autograd
      formula; omit both for ops that are not differentiable (backward ops themselves).
    """
    eager: list[EagerOp] = []

    @functools.wraps(forward)  # the schema comes from forward's signature
    def registered(*args, **kwargs):
        # what the dispatcher runs (torch.compile's generated code, CUDA-graph capture,
        # subclasses, opcheck): the same per-signature replay as the eager path
        if kwargs:
            bound = eager[0]._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        return eager[0]._run(args)

    qualname = f"{NAMESPACE}::{name}"
    if mutates_args:  # custom_op's in-place/view kernel bumps the mutated inputs' versions
        op = torch.library.custom_op(qualname, registered, mutates_args=tuple(mutates_args))
        op.register_fake(fake)
        if backward is not None:
            op.register_autograd(backward, setup_context=setup_context)
    else:
        # a plain definition with Python kernels per device: a dispatched call (what
        # torch.compile's generated code makes) costs ~2 us of dispatch, custom_op's wrapper
        # layers (its own backend wrapper, aliasing checks) ~15 us more
        _LIB.define(name + torch.library.infer_schema(forward, mutates_args=()))
        for key in ("CPU", "CUDA"):
            _LIB.impl(name, registered, key)
        torch.library.register_fake(qualname, fake, lib=_LIB)
        if backward is not None:
            torch.library.register_autograd(qualname, backward, setup_context=setup_context,
                                            lib=_LIB)
        op = getattr(getattr(torch.ops, NAMESPACE), name).default
    eager.append(EagerOp(op, name, forward, backward, setup_context, tuple(mutates_args)))
    EAGER_OPS.append(eager[0])
    return eager[0]


#: every op define_op made, in order (tests walk them)
EAGER_OPS: list[EagerOp] = []


_EAGER_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_C_APPLY = getattr(torch._C._FunctionBase, "__dict__", {}).get("apply")


class _Keyed(threading.local):
    """The signature key of the differentiable call being applied on this thread, handed
    from EagerOp.__call__ to its autograd forward (which runs inside apply, at once)."""

    value = None


_KEYED = _Keyed()
_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_increment_version = getattr(torch.autograd.graph, "increment_version", None)


def _plain_eager() -> bool:
    """True when no tracer, mode or transform could need to see the call as an operator."""
    return not (
        torch.compiler.is_compiling()
        or torch._C._len_torch_dispatch_stack()
        or torch._C._is_torch_function_mode_enabled()
        or torch._C._functorch.peek_interpreter_stack() is not None
    )


class EagerOp:
    """A baracuda custom op with a direct eager path (see the module docstring).

    ``custom_op`` is the registered op (what torch.compile, export and opcheck use)."""

    def __init__(self, op, name: str, impl, backward, setup_context,
                 mutates_args: tuple[str, ...]):
        self.custom_op = op
        self.name = name
        self._impl = impl
        sig = inspect.signature(impl)
        self._signature = sig
        self._n_params = len(sig.parameters)
        names = list(sig.parameters)
        self._mutated = tuple(names.index(a) for a in mutates_args)
        self._replays: dict = {}
        self._function = None
        run, run_keyed = self._run, self._run_keyed
        if backward is not None:
            # forward(ctx, *args) form: with a separate setup_context, Function.apply re-binds
            # the arguments through inspect.signature on every call (~15 us); these arrive
            # already bound. The signature key __call__ computed comes along (_KEYED).
            def forward_with_ctx(ctx, *args):
                keyed = _KEYED.value
                if keyed is not None:
                    _KEYED.value = None
                    out = run_keyed(args, *keyed)
                else:
                    out = run(args)
                setup_context(ctx, args, out)
                return out

            self._function = type(
                f"Eager_{name.replace('::', '_')}",
                (torch.autograd.Function,),
                {"forward": staticmethod(forward_with_ctx), "backward": staticmethod(backward)},
            )
            # autograd.Function.apply's Python layer only re-binds arguments and unwraps
            # functorch's dead wrappers (~2 us); plain eager calls (no transform active, no
            # wrapped tensor: checked in __call__) go to the C++ apply directly
            self._apply = (_C_APPLY.__get__(None, self._function) if _C_APPLY is not None
                           else self._function.apply)

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._n_params:
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        recording = launch_replay.active()
        if recording is not None:  # inside a whole-function recording (`replayed`)
            if self._mutated:
                recording.refuse(f"{self.name} writes into an input")
            return self._impl(*args)
        if not _plain_eager():
            return self.custom_op(*args)
        # one walk over the arguments: the replay key (reused by the run) and the tensors
        key, tensors = _key_of(args) if REPLAY else (None, None)
        if key is None:  # a value the key cannot hold (a tensor list, an object), or no replay
            for a in args:
                if isinstance(a, (list, tuple)) and any(isinstance(t, torch.Tensor) for t in a):
                    return self.custom_op(*args)  # tensor lists: the op's own autograd
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
        needs_grad = False
        grad_mode = torch.is_grad_enabled()
        for t in tensors:
            if type(t) not in _EAGER_TENSOR_TYPES or t.is_meta:
                return self.custom_op(*args)
            needs_grad = needs_grad or (grad_mode and t.requires_grad)
        if needs_grad:
            if self._function is None or any(args[i].requires_grad for i in self._mutated):
                return self.custom_op(*args)  # torch's errors / in-place autograd rules apply
            for t in tensors:
                if _functorch_wrapped(t):
                    return self._function.apply(*args)  # a dead transform's tensor: unwrapped
            if key is None:
                return self._apply(*args)
            _KEYED.value = (key, tensors)
            try:
                return self._apply(*args)
            finally:
                _KEYED.value = None
        out = self._run(args) if key is None else self._run_keyed(args, key, tensors)
        if self._mutated and _increment_version is not None:
            for i in self._mutated:
                _increment_version(args[i])
        return out


    def _run(self, args: tuple):
        """The implementation on plain eager tensors, replayed per signature: the second call
        of a signature is recorded (`launch_replay.record_op`: its allocations and Triton
        launches; the first call compiles and selects, and may autotune), later calls
        allocate and launch directly, skipping descriptors, plan lookup and argument checks,
        which are functions of the signature."""
        key, tensors = _key_of(args) if REPLAY else (None, None)
        if key is None:
            return self._impl(*args)
        return self._run_keyed(args, key, tensors)

    def _run_keyed(self, args: tuple, key, tensors: list[torch.Tensor]):
        """`_run` with the signature key already made."""
        if launch_replay.active() is not None:  # nested: the outer recording records
            return self._impl(*args)
        return _replay_or_run(self._replays, key, self.name, lambda: self._impl(*args),
                              tensors)


def _replay_or_run(table: dict, key, name: str, run, tensors: list[torch.Tensor]):
    """One call through a per-signature replay table (EagerOp's ops, `replayed` functions):
    the signature's first call runs `run()` (it compiles, selects, may autotune), the second
    is recorded (`launch_replay.record_op`), later ones replay; a refused recording, an
    output a replay cannot rebuild (a named tuple, a Python value) or the interpreter leaves
    the signature on `run()`."""
    entry = table.get(key, _UNSEEN)
    if entry is None:
        return run()
    if entry is not _UNSEEN and entry is not _SEEN:
        out = entry.replay(tensors)
        return run() if out is launch_replay.NOT_REPLAYED else out
    if len(table) >= _TRUSTED_LIMIT:
        table.clear()
    if interpreter_active():
        table[key] = None
        return run()
    if entry is _UNSEEN and RECORD_ON_FIRST_CALL is False:
        table[key] = _SEEN
        return run()
    out, program = launch_replay.record_op(name, run, tensors)
    if type(out) is not torch.Tensor and type(out) is not tuple:
        program = None
    table[key] = program
    return out


_UNSEEN = object()
_SEEN = object()


def replayed(fn: Callable) -> Callable:
    """`fn` (a baracuda.torch function) whose whole eager call replays per signature when no
    gradient is needed: the frontend's argument handling, its views and its custom ops are
    recorded once (`launch_replay.record_op`: allocations and launches; any other aten work,
    a write into an input or an output that is not a fresh tensor refuses) and later calls of
    the signature only allocate and launch. Inference calls then pay one key and one replay
    instead of the frontend's Python and one dispatch per op. What the frontend reads besides
    its arguments is in the key too: grad mode, the default dtype, deterministic mode."""
    replays: dict = {}
    # OP_OUTCOMES key: apart from the custom ops' names (softmax is both)
    name = f"baracuda.torch.{getattr(fn, '__name__', 'function')}"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        values = (*args, *kwargs.values()) if kwargs else args
        grad = torch.is_grad_enabled()
        if grad:  # a training call: handed on first, before any other check (the ops replay)
            for a in values:
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    return fn(*args, **kwargs)
        if not REPLAY or not _plain_eager():
            return fn(*args, **kwargs)
        key, tensors = _key_of(values)
        if key is None or not tensors:
            return fn(*args, **kwargs)
        for t in tensors:
            if type(t) not in _EAGER_TENSOR_TYPES or t.is_meta:
                return fn(*args, **kwargs)
        key = (key, tuple(kwargs) if kwargs else (), grad, torch.get_default_dtype(),
               torch.are_deterministic_algorithms_enabled())
        return _replay_or_run(replays, key, name, lambda: fn(*args, **kwargs), tensors)

    return call
_KEY_SCALARS = (int, str, bool, torch.dtype, type(None))
_EXACT_SCALARS = frozenset(_KEY_SCALARS)


def _key_of(args) -> tuple[tuple | None, list[torch.Tensor]]:
    """What code may read of these values without a device sync (the per-signature caches of
    `run_plan` and `EagerOp` key on it), and the tensors among them in order: per tensor its
    shape, strides, dtype, device and 16-byte alignment; other values by type and value (a
    float with its sign, so -0.0 and 0.0 differ). None when a value is something else."""
    key = []
    tensors = []
    for a in args:
        t = type(a)  # exact types first (host time): plain tensors, then common scalars
        if t is torch.Tensor or (t not in _EXACT_SCALARS and isinstance(a, torch.Tensor)):
            key.append((a.shape, a.stride(), a.dtype, a.device, a.data_ptr() & 15))
            tensors.append(a)
        elif t in _EXACT_SCALARS:
            key.append((t, a))
        elif t is float:
            key.append((a, math.copysign(1.0, a)))
        elif isinstance(a, _KEY_SCALARS):
            key.append((t, a))
        elif type(a) in (list, tuple) and all(type(v) is int for v in a):  # shapes, dims
            key.append((type(a), tuple(a)))
        elif type(a) in (list, tuple) and all(type(v) in (int, float, bool) for v in a):
            key.append((type(a), tuple((type(v), v, math.copysign(1.0, v)) for v in a)))
        else:
            return None, tensors
    return tuple(key), tensors


def normalize_dim(dim: int, rank: int, who: str) -> int:
    """torch's dim wrapping, with torch's IndexError for out-of-range dims."""
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(
            f"{who}: Dimension out of range (expected to be in range of [{-r}, {r - 1}], "
            f"but got {dim})"
        )
    return dim % r

