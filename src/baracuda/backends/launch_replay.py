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

import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from triton import knobs

from ..core.validate import byte_span

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
    """What one plan call launched: (direct C launcher or None, compiled kernel, grid, args)."""

    def __init__(self) -> None:
        self.launches: list[tuple] = []
        self.hook_count = 0
        self.refusal: str | None = None

    def add(self, direct, compiled, grid: tuple, args: tuple) -> None:
        self.launches.append((direct, compiled, grid, args))

    def refuse(self, why: str) -> None:
        if self.refusal is None:
            self.refusal = why

    def _count(self, metadata) -> None:
        self.hook_count += 1


class _ViewsOnly(TorchDispatchMode):
    """Refuses the recording on any aten op that is not a pure view (allocations, fills,
    in-place updates, copies, host reads): work outside Triton launches would be missing
    from a replay."""

    def __init__(self, recording: Recording):
        super().__init__()
        self._recording = recording

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        returns = func._schema.returns
        if not returns or any(r.alias_info is None or r.alias_info.is_write for r in returns):
            self._recording.refuse(f"aten op {func} during the launch")
        return func(*args, **(kwargs or {}))


#: Why the last recording of each candidate (by name) was refused; None when it replays.
OUTCOMES: dict[str, str | None] = {}


def record(name: str, launch, slots: list[torch.Tensor | None]) -> Program | None:
    """Run `launch()` once (for real) while recording; return its replay program, or None when
    the call cannot be replayed (the reason goes to OUTCOMES[name]). `slots` are the tensors a
    pointer may point into, in the order `Program.replay` receives their base pointers."""
    rec = Recording()
    enter = knobs.runtime.launch_enter_hook
    counting = hasattr(enter, "add")
    if counting:
        enter.add(rec._count)
    _STATE.recording = rec
    try:
        with _ViewsOnly(rec):
            launch()
    finally:
        _STATE.recording = None
        if counting:
            enter.remove(rec._count)
    if not counting:
        rec.refuse("no launch hook to count launches with")
    elif rec.hook_count != len(rec.launches):
        rec.refuse(f"{rec.hook_count} Triton launches, {len(rec.launches)} recorded")
    if not rec.launches:
        rec.refuse("no launch")
    program = None if rec.refusal is not None else Program.build(rec, slots, _current_device())
    if program is None and rec.refusal is None:
        rec.refuse("a pointer outside the arguments and the workspace, or in two of them")
    OUTCOMES[name] = rec.refusal
    return program


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

    @staticmethod
    def build(rec: Recording, slots: list[torch.Tensor | None], device: int) -> Program | None:
        ranges = [(lo, hi - lo) for lo, hi in (byte_span(t) for t in slots if t is not None)]
        index = [i for i, t in enumerate(slots) if t is not None]
        launches = []
        for direct, compiled, grid, args in rec.launches:
            template = list(args)
            patches = []
            for i, a in enumerate(args):
                if not isinstance(a, torch.Tensor):
                    continue
                p = a.data_ptr()
                owners = [k for k, (base, n) in enumerate(ranges) if base <= p < base + n]
                if len(owners) != 1:
                    return None  # foreign, empty or ambiguous pointer: no replay
                k = owners[0]
                patches.append((i, index[k], p - ranges[k][0]))
                template[i] = None
            g = (*grid, 1, 1)[:3]
            if direct is None:  # Triton's wrapper, which allocates the kernel's scratch
                launcher = compiled.run
                tail = (compiled.function, compiled.packed_metadata, None, None, None)
            else:
                launcher, cooperative, pdl = direct
                tail = (compiled.function, cooperative, pdl, None, None,
                        compiled.packed_metadata, None, None, None)
            launches.append((launcher, g, tail, template, tuple(patches)))
        return Program(device, launches)

    def replay(self, bases: list[int]) -> bool:
        """Launch with the new base pointers; False (nothing launched) when the current device
        differs from the recorded one or a launch hook is installed."""
        if _current_device() != self.device or hooks_installed():
            return False
        stream = _raw_stream(self.device)
        for launcher, grid, tail, template, patches in self.launches:
            args = template.copy()
            for i, slot, off in patches:
                args[i] = bases[slot] + off
            launcher(*grid, stream, *tail, *args)
        return True
