"""Launch replay: the eager fast path for plan calls whose whole work is Triton launches.

A candidate that sets ``replayable = True`` promises that its `launch` issues only Triton
kernel launches whose grids and non-pointer arguments are functions of the descriptor, the
preference and the arguments' signature (shapes, strides, dtypes, devices, 16-byte alignment,
non-tensor field values), and whose pointer arguments lie inside the argument tensors or the
workspace. `run_plan` records the first call of each signature and replays later calls: the
same compiled kernels, grids and scalars, with each pointer moved by the distance between the
new and the recorded base of the tensor it points into. Host time per call then drops from the
~25 us of recipe lookups, Triton's argument binding and per-pointer driver queries to a few
microseconds per kernel: eager forward+backward steps are bound by that time (see
docs/PERFORMANCE.md, eager host time).

What the recording refuses (the call then simply takes the normal path every time):
- any aten operation other than a view (an allocation, a fill, a copy, `.item()`), caught by a
  dispatch mode while recording;
- a Triton launch that did not pass through the fast launcher (counted by a launch hook, so an
  unpatched kernel can never be silently dropped from a replay);
- a pointer argument outside the argument tensors and the workspace, or inside more than one;
- a launch with a runtime keyword argument or an asynchronous compile.
Replays honour profilers: while a Triton launch hook is installed, calls take the normal path.
"""

from __future__ import annotations

import os
import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from triton import knobs

from ..core.layout import row_major_strides
from ..core.validate import byte_span
from . import native_replay

_STATE = threading.local()


def active() -> Recording | None:
    """The recording of this thread, if one is in progress (read by the fast launcher)."""
    return getattr(_STATE, "recording", None)


def hooks_installed() -> bool:
    rt = knobs.runtime
    enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
    if type(enter) is knobs.HookChain and type(leave) is knobs.HookChain:  # the usual case
        return bool(enter.calls) or bool(leave.calls)
    return _chain_busy(enter) or _chain_busy(leave)


def _chain_busy(hook) -> bool:
    """Triton 3.6 keeps its launch hooks in a HookChain that is never None; empty means off."""
    if hook is None:
        return False
    calls = getattr(hook, "calls", None)
    return True if calls is None else bool(calls)


class Recording:
    """What one call launched: (direct C launcher or None, compiled kernel, grid, args); with
    `allocate`, also the tensors it allocated (an op-level recording, `record_op`)."""

    def __init__(self, allocate: bool = False) -> None:
        self.launches: list[tuple] = []
        self.allocations: list[torch.Tensor] | None = [] if allocate else None
        self.hook_count = 0
        self.calls = 0
        self.refusal: str | None = None

    def add(self, direct, compiled, grid: tuple, args: tuple) -> None:
        self.launches.append((direct, compiled, grid, args))

    def add_call(self, fn, args: tuple) -> None:
        """A library launch (not Triton's) that replays as fn(stream, *args), the tensors in
        args passed as their data pointers (re-based like a kernel's)."""
        self.launches.append((_CALL, fn, (), args))
        self.calls += 1

    def refuse(self, why: str) -> None:
        if self.refusal is None:
            self.refusal = why

    def _count(self, metadata) -> None:
        self.hook_count += 1


_CALL = "call"  # Recording.launches tag of a library call (add_call)
#: ops that answer from dtypes or tensor metadata alone: no GPU work, no value read
_METADATA_OPS = frozenset(getattr(torch.ops.aten, n) for n in (
    "promote_types", "result_type", "can_cast", "is_same_size", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "size", "stride", "numel", "dim", "is_contiguous",
    "is_floating_point", "is_complex", "is_signed") if hasattr(torch.ops.aten, n))
_aten = torch.ops.aten
#: the allocations an op-level recording replays (fresh memory whose contents the launches
#: write; nothing reads it before)
_ALLOCATORS = frozenset((_aten.empty.memory_format, _aten.empty_strided.default,
                         _aten.empty_like.default, _aten.new_empty.default,
                         _aten.new_empty_strided.default))


class _ViewsOnly(TorchDispatchMode):
    """Refuses the recording on any aten op that is not a pure view (allocations, fills,
    in-place updates, copies, host reads): work outside Triton launches would be missing
    from a replay."""

    def __init__(self, recording: Recording):
        super().__init__()
        self._recording = recording

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        rec = self._recording
        if rec.allocations is not None and func in _ALLOCATORS:
            rec.allocations.append(out)
            return out
        if func._overloadpacket in _METADATA_OPS:
            return out
        returns = func._schema.returns
        if not returns or any(r.alias_info is None or r.alias_info.is_write for r in returns):
            rec.refuse(f"aten op {func} during the launch")
        return out


#: Why the last recording of each candidate (by name) was refused; None when it replays.
OUTCOMES: dict[str, str | None] = {}
#: The same for whole op calls (`record_op`, by custom-op name)
OP_OUTCOMES: dict[str, str | None] = {}


def refusals() -> str:
    """One line naming the ops whose replay was refused and why ("" when none was): what a
    host-time table should say under it."""
    refused = sorted((k, v) for k, v in OP_OUTCOMES.items() if v is not None)
    if not refused:
        return ""
    return "launch replay refused: " + "; ".join(f"{k}: {v}" for k, v in refused)


def record(name: str, launch, slots: list[torch.Tensor | None]) -> Program | None:
    """Run `launch()` once (for real) while recording; return its replay program, or None when
    the call cannot be replayed (the reason goes to OUTCOMES[name]). `slots` are the tensors a
    pointer may point into, in the order `Program.replay` receives their base pointers."""
    rec = Recording()
    _capture(rec, launch)
    program = None if rec.refusal is not None else Program.build(rec, slots, _current_device())
    if program is None and rec.refusal is None:
        rec.refuse("a pointer outside the arguments and the workspace, or in two of them")
    OUTCOMES[name] = rec.refusal
    return program


def record_op(name: str, run, inputs: list[torch.Tensor]):
    """Run a whole custom-op implementation `run()` once (for real) while recording its
    allocations and launches; return (its output, an `OpProgram` or None). The program
    replays the call for other tensors of the same signature: the same allocations, the same
    launches with re-based pointers, the same outputs. Every plan the implementation runs
    must be `replayable` (`run_plan` refuses the recording otherwise)."""
    rec = Recording(allocate=True)
    out = _capture(rec, run)
    program = None
    if rec.refusal is None:
        program = OpProgram.build(rec, inputs, out, _current_device())
    OP_OUTCOMES[name] = rec.refusal
    return out, program


def _capture(rec: Recording, run):
    """run() with `rec` as this thread's recording, its launches counted by Triton's hook and
    its aten ops watched; the refusal (if any) is left in rec."""
    enter = knobs.runtime.launch_enter_hook
    counting = hasattr(enter, "add")
    if counting:
        enter.add(rec._count)
    outer, _STATE.recording = active(), rec
    try:
        with _ViewsOnly(rec):
            out = run()
    finally:
        _STATE.recording = outer
        if counting:
            enter.remove(rec._count)
    if not counting:
        rec.refuse("no launch hook to count launches with")
    elif rec.hook_count != len(rec.launches) - rec.calls:
        rec.refuse(f"{rec.hook_count} Triton launches, {len(rec.launches) - rec.calls} "
                   "recorded")
    if not rec.launches:
        rec.refuse("no launch")
    return out


def _current_device() -> int:
    return _get_device()


# torch.cuda.current_device() minus its Python wrapper (lazy init is done by then: a replay
# follows a recorded launch)
_get_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)


def _raw_stream(device: int) -> int:
    return torch._C._cuda_getCurrentRawStream(device)


class Program:
    """Recorded launches, each (launcher, grid, the launcher's fixed arguments, the kernel's
    arguments with pointers blanked, (position, slot, byte offset) per pointer)."""

    def __init__(self, device: int, launches: list[tuple]):
        self.device = device
        self.launches = launches
        self.native: tuple | None = None  # the C replay's packed program (`_native`)
        self.thread = threading.get_ident()  # library handles in the launches are per thread

    @staticmethod
    def build(rec: Recording, slots: list[torch.Tensor | None], device: int) -> Program | None:
        rebased = _rebased_launches(rec, slots)
        if rebased is None:
            return None
        program = Program(device, rebased[0])
        program.native = _native(rebased[1])
        return program

    def replay(self, bases: list[int]) -> bool:
        """Launch with the new base pointers; False (nothing launched) when the current device
        or thread differs from the recorded one or a launch hook is installed."""
        if not _may_replay(self.device, self.thread):
            return False
        _issue(self, bases, ())
        return True


def _issue(program: Program | OpProgram, slots, more_slots) -> None:
    """A program's launches on the bases of `slots` then `more_slots` (each an int, None for 0,
    or a tensor): from one C call when the program is packed for it, else the Python loop."""
    if program.native is not None:
        _NATIVE[0].replay(*program.native, _raw_stream(program.device), slots, more_slots)
        return
    bases = [s if type(s) is int else 0 if s is None else s.data_ptr()
             for group in (slots, more_slots) for s in group]
    _launch(program.launches, bases, program.device)


def _native(raw: list[tuple]) -> tuple | None:
    """The launches packed for the C replay (`native_replay`), or None (Python replay)."""
    if not _NATIVE:
        _NATIVE.append(native_replay.module() if NATIVE else None)
    return None if _NATIVE[0] is None else native_replay.pack(raw)


#: BARACUDA_NATIVE_REPLAY=0 keeps replays on the Python launch loop (`_launch`)
NATIVE = os.environ.get("BARACUDA_NATIVE_REPLAY", "1") != "0"
_NATIVE: list = []  # the C module (or None), looked up once


def _may_replay(device: int, thread: int) -> bool:
    """The recording's device and thread, and no launch hook (a profiler sees Triton's path)."""
    return (_current_device() == device and not hooks_installed()
            and threading.get_ident() == thread)


def _launch(launches: list[tuple], bases: list[int], device: int) -> None:
    """Every recorded launch, each pointer re-based on its slot's new base pointer."""
    stream = _raw_stream(device)
    for launcher, grid, tail, template, patches in launches:
        args = template.copy()
        for i, slot, off in patches:
            args[i] = bases[slot] + off
        launcher(*grid, stream, *tail, *args)


def _rebased_launches(rec: Recording, slots: list[torch.Tensor | None]
                      ) -> tuple[list[tuple], list[tuple]] | None:
    """The recorded launches as (launcher, grid, fixed tail, arguments with pointers blanked,
    (position, slot, byte offset) per pointer), and the same for `native_replay.pack` (kind,
    kernel or function, direct launcher, grid, arguments, pointers); None when a pointer lies
    in no slot or in two (foreign, empty or ambiguous: no replay)."""
    ranges = [(lo, hi - lo) for lo, hi in (byte_span(t) for t in slots if t is not None)]
    index = [i for i, t in enumerate(slots) if t is not None]
    launches, raw = [], []
    for direct, compiled, grid, args in rec.launches:
        template = list(args)
        patches = []
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                if isinstance(getattr(a, "base", None), torch.Tensor):
                    return None  # a tensor inside an object (a TMA descriptor): no re-basing
                continue
            p = a.data_ptr()
            owners = [k for k, (base, n) in enumerate(ranges) if base <= p < base + n]
            if len(owners) > 1:
                # interleaved views (q, k, v unbound from one projection) overlap in bytes;
                # a pointer at exactly one of their first elements is that tensor's
                owners = [k for k in owners if ranges[k][0] == p]
            if len(owners) != 1:
                return None
            k = owners[0]
            patches.append((i, index[k], p - ranges[k][0]))
            template[i] = None
        if direct is _CALL:
            launches.append((compiled, (), (), template, tuple(patches)))
            raw.append(("call", compiled, None, (), args, tuple(patches)))
            continue
        g = (*grid, 1, 1)[:3]
        raw.append(("kernel", compiled, direct, g, args, tuple(patches)))
        if direct is None:  # Triton's wrapper, which allocates the kernel's scratch
            launcher = compiled.run
            tail = (compiled.function, compiled.packed_metadata, None, None, None)
        else:
            launcher, cooperative, pdl = direct
            tail = (compiled.function, cooperative, pdl, None, None,
                    compiled.packed_metadata, None, None, None)
        launches.append((launcher, g, tail, template, tuple(patches)))
    return launches, raw


#: OpProgram.replay's answer when it launched nothing (the caller takes the normal path)
NOT_REPLAYED = object()


class OpProgram:
    """A whole op call: its allocations (shape, strides, dtype, device), its launches (as in
    `Program`, slots = the input tensors then the allocations) and where each output comes
    from: ("alloc", k), ("view", k, shape, strides, offset) of allocation k, or ("input", i)."""

    def __init__(self, device: int, allocations: list[tuple], launches: list[tuple], outputs,
                 single: bool):
        self.device = device
        self.allocations = allocations
        self.launches = launches
        self.outputs = outputs
        self.single = single
        kinds = {w[0] for w in outputs}
        self.direct = tuple(w[1] for w in outputs) if kinds == {"alloc"} else None
        self.native: tuple | None = None  # the C replay's packed program (`_native`)
        self.thread = threading.get_ident()  # library handles in the launches are per thread

    @staticmethod
    def build(rec: Recording, inputs: list[torch.Tensor], out, device: int) -> OpProgram | None:
        allocs = rec.allocations
        rebased = _rebased_launches(rec, [*inputs, *allocs])
        if rebased is None:
            rec.refuse("a pointer outside the inputs and the allocations, or in two of them")
            return None
        single = not isinstance(out, (tuple, list))
        outputs = []
        for t in ((out,) if single else out):
            where = _source(t, inputs, allocs)
            if where is None:
                rec.refuse("an output that is neither an allocation, a view of one, nor an "
                           "input")
                return None
            outputs.append(where)
        # an empty allocation (an output the call did not need, shaped (0,)) holds nothing a
        # launch can point into: a replay skips it (an empty output is made anew, `_source`)
        specs = [None if a.numel() == 0 else
                 (tuple(a.shape), a.stride() if not a.is_contiguous() else None, a.dtype,
                  a.device, _like(a, inputs)) for a in allocs]
        program = OpProgram(device, specs, rebased[0], tuple(outputs), single)
        program.native = _native(rebased[1])
        return program

    def replay(self, inputs: list[torch.Tensor]):
        """The op's output for `inputs` (tensors of the recorded signature), or NOT_REPLAYED
        (nothing launched) on another device or while a launch hook is installed."""
        if not _may_replay(self.device, self.thread):
            return NOT_REPLAYED
        allocs = [None if spec is None else
                  torch.empty_like(inputs[spec[4]]) if spec[4] is not None else
                  torch.empty(spec[0], dtype=spec[2], device=spec[3]) if spec[1] is None else
                  torch.empty_strided(spec[0], spec[1], dtype=spec[2], device=spec[3])
                  for spec in self.allocations]
        _issue(self, inputs, allocs)
        direct = self.direct
        if direct is not None:  # every output an allocation: the common case, kept short
            return allocs[direct[0]] if self.single else tuple(allocs[k] for k in direct)
        outs = [_rebuild(w, inputs, allocs) for w in self.outputs]
        return outs[0] if self.single else tuple(outs)


def _like(a: torch.Tensor, inputs: list[torch.Tensor]) -> int | None:
    """An input whose `empty_like` is allocation a's layout (same shape, dtype, device, both
    with row-major strides), or None: empty_like parses no size and costs ~1 us less than
    torch.empty on the GPU host. The inputs' strides are part of the replay's signature, so
    the layout holds on every replay."""
    strides = row_major_strides(a.shape)
    if a.stride() != strides:
        return None
    for i, x in enumerate(inputs):
        if (x.shape == a.shape and x.dtype == a.dtype and x.device == a.device
                and x.stride() == strides and type(x) is torch.Tensor):
            return i
    return None


def _source(t, inputs, allocs):
    """Where output t comes from. A tensor a dispatch mode saw allocated reaches the caller as
    another Python object of the same storage, so allocations are matched by storage (and
    layout); an empty one holds nothing and is made anew."""
    if t is None:
        return ("none",)
    if not isinstance(t, torch.Tensor):
        return None
    for i, x in enumerate(inputs):
        if t is x:
            return ("input", i)
    if t.numel() == 0:
        return ("empty", tuple(t.shape), t.stride(), t.dtype, t.device)
    base = t.untyped_storage().data_ptr()
    layout = (t.shape, t.stride(), t.storage_offset(), t.dtype)
    for k, a in enumerate(allocs):
        if a.numel() and a.untyped_storage().data_ptr() == base:
            if (a.shape, a.stride(), a.storage_offset(), a.dtype) == layout:
                return ("alloc", k)
            return ("view", k, tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)
    return None


def _rebuild(where, inputs, allocs):
    kind = where[0]
    if kind == "alloc":
        return allocs[where[1]]
    if kind == "view":
        base = allocs[where[1]]
        if where[5] != base.dtype:
            base = base.view(where[5])
        return base.as_strided(where[2], where[3], where[4])
    if kind == "input":
        return inputs[where[1]]
    if kind == "empty":
        return torch.empty_strided(where[1], where[2], dtype=where[3], device=where[4])
    return None
