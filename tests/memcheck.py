"""A memory checker for the Triton interpreter: every load, store and atomic of an interpreted
kernel must touch only memory of the tensors passed to that launch. A GPU does not check this:
a store a few bytes past an output lands in the caching allocator's neighbouring block (another
tensor) and shows up later as someone else's wrong value or device assert. (Session 16's
parallel GPU fuzz runs saw such asserts; they went away when cases with a failing torch launch
were left out, and this checker found no access of ours outside its tensors' storages in the
whole CPU suite.)

tests/conftest.py installs it on CPU runs in the mode BARACUDA_MEMCHECK names (default
"storage,poison"; "1" is the strict mode alone, "0" turns it off). A fault raises MemoryFault
naming the kernel, the access kind and the first bad address relative to the nearest argument.
Masked-off lanes are not checked (their addresses are never dereferenced).

- strict (the default without "storage"): each tensor's own span, from its first to one past
  its last element. Plans that pass a one-element view as a base pointer (the extent in other
  arguments) fault here by design: 90 of the suite's tests do.
- "storage": each argument's whole storage; on a GPU only an access outside every storage can
  corrupt another tensor.
- "poison": every tensor made by torch.empty / empty_like / empty_strided / new_empty is filled
  with 0xFF bytes (NaN, -1), so code that reads memory it never wrote reads garbage (on a GPU
  it reads whatever the allocator's block held last: results that depend on what ran before)."""

from __future__ import annotations

import threading

import numpy as np

from baracuda.core.validate import byte_span

_STATE = threading.local()


class MemoryFault(AssertionError):
    """An interpreted kernel touched memory outside its arguments."""


def _ranges() -> list[tuple[int, int, str]]:
    return getattr(_STATE, "ranges", [])


def _check(kind: str, ptrs, mask) -> None:
    ranges = _ranges()
    if not ranges:
        return
    addr = np.asarray(ptrs, dtype=np.uint64).reshape(-1)
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs)).reshape(-1)
        addr = addr[m]
    if addr.size == 0:
        return
    ok = np.zeros(addr.shape, dtype=bool)
    for lo, n, _ in ranges:
        ok |= (addr >= lo) & (addr < lo + n)
    if ok.all():
        return
    bad = int(addr[~ok][0])
    near = min(ranges, key=lambda r: min(abs(bad - r[0]), abs(bad - (r[0] + r[1]))))
    rel = bad - near[0]
    raise MemoryFault(f"{getattr(_STATE, 'kernel', '?')}: {kind} of {int((~ok).sum())} "
                      f"address(es) outside the arguments; first at byte {rel} of argument "
                      f"{near[2]} (span {near[1]} bytes)")


def install(mode: str) -> None:
    """Patch the interpreter (idempotent); `mode` as BARACUDA_MEMCHECK (see the module)."""
    from triton.runtime import interpreter as itp

    if getattr(itp, "_baracuda_memcheck", False):
        return
    itp._baracuda_memcheck = True
    whole_storage = "storage" in mode
    builder = type(itp.interpreter_builder)
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def masked_load(self, ptrs, mask, other, *a):
        _check("load", ptrs.data, mask.data)
        return load(self, ptrs, mask, other, *a)

    def masked_store(self, ptrs, value, mask, *a):
        _check("store", ptrs.data, mask.data)
        return store(self, ptrs, value, mask, *a)

    def atomic_rmw(self, op, ptr, val, mask, *a):
        _check("atomic", ptr.data, mask.data)
        return rmw(self, op, ptr, val, mask, *a)

    def atomic_cas(self, ptr, cmp, val, *a):
        _check("atomic_cas", ptr.data, None)
        return cas(self, ptr, cmp, val, *a)

    builder.create_masked_load = masked_load
    builder.create_masked_store = masked_store
    builder.create_atomic_rmw = atomic_rmw
    builder.create_atomic_cas = atomic_cas

    init = itp.GridExecutor._init_args_hst

    def init_args(self, args_dev, kwargs):
        args_hst, kwargs_hst = init(self, args_dev, kwargs)
        names = list(self.arg_names)
        ranges = []
        for i, a in enumerate([*args_hst, *kwargs_hst.values()]):
            if hasattr(a, "data_ptr") and hasattr(a, "stride"):
                lo, hi = byte_span(a)
                n = hi - lo
                if whole_storage:
                    st = a.untyped_storage()
                    lo, n = st.data_ptr(), st.nbytes()
                ranges.append((lo, n, names[i] if i < len(names) else f"#{i}"))
        _STATE.ranges = ranges
        _STATE.kernel = getattr(self.fn, "__name__", "?")
        return args_hst, kwargs_hst

    itp.GridExecutor._init_args_hst = init_args
    call = itp.GridExecutor.__call__

    def run(self, *args, **kwargs):
        try:
            return call(self, *args, **kwargs)
        finally:
            _STATE.ranges = []

    itp.GridExecutor.__call__ = run
    if "poison" in mode:
        _poison_empty()


def _poison_empty() -> None:
    import functools

    import torch

    def poisoned(make):
        @functools.wraps(make)  # __wrapped__: a test that must see plain allocations unwraps
        def wrapper(*args, **kwargs):
            t = make(*args, **kwargs)
            if torch.compiler.is_compiling():  # traced: sizes may be symbolic, no storage
                return t
            if t.numel() and not t.is_meta and type(t) is torch.Tensor:  # not fake / subclass
                st = t.untyped_storage()
                torch.empty(0, dtype=torch.uint8, device=t.device).set_(st).fill_(255)
            return t
        return wrapper

    for name in ("empty", "empty_like", "empty_strided"):
        setattr(torch, name, poisoned(getattr(torch, name)))
    torch.Tensor.new_empty = poisoned(torch.Tensor.new_empty)
