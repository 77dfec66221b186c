"""Shared validators: one function per rule, called by every plan.

Each takes `who` (the plan's name) first so messages read
``SoftmaxBackwardPlan: dy.shape (4, 8) != descriptor input_shape (4, 9)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch

from .errors import (
    BufferTooSmall,
    InvalidProblem,
    MisalignedOperand,
    Unsupported,
    WorkspaceTooSmall,
)
from .vocab import ElementKind

MAX_RANK = 8


def check_shape(who: str, name: str, shape: Sequence[int]) -> tuple[int, ...]:
    """Extents are Python ints >= 0; returns the shape as a tuple."""
    if not isinstance(shape, (tuple, list, torch.Size)):
        raise InvalidProblem(f"{who}: {name} must be a tuple of ints, got {type(shape).__name__}")
    out = []
    for i, d in enumerate(shape):
        if isinstance(d, bool) or not isinstance(d, int):
            raise InvalidProblem(f"{who}: {name}[{i}] must be an int, got {d!r}")
        if d < 0:
            raise InvalidProblem(f"{who}: {name}[{i}] must be >= 0, got {d} in {tuple(shape)}")
        out.append(int(d))
    return tuple(out)


def check_rank(who: str, name: str, shape: Sequence[int], lo: int = 1, hi: int = MAX_RANK) -> None:
    if not lo <= len(shape) <= hi:
        raise Unsupported(
            f"{who}: rank of {name} must be in {lo}..{hi}, got {len(shape)} ({tuple(shape)})"
        )


def check_axis(who: str, name: str, axis: int, rank: int) -> int:
    """An axis in [-rank, rank); returns it normalized to [0, rank)."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise InvalidProblem(f"{who}: {name} must be an int, got {axis!r}")
    if not -rank <= axis < rank:
        raise InvalidProblem(f"{who}: {name} must be in [{-rank}, {rank}), got {axis}")
    return axis % rank


def check_suffix_axes(who: str, name: str, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """A non-empty, sorted, contiguous suffix of [0, rank); returns it normalized."""
    norm = tuple(sorted({check_axis(who, name, a, rank) for a in axes}))
    expected = tuple(range(rank - len(norm), rank))
    if not norm or norm != expected or len(norm) != len(tuple(axes)):
        raise InvalidProblem(
            f"{who}: {name} must be a non-empty suffix of the {rank} axes "
            f"(e.g. {tuple(range(rank - 1, rank))}), got {tuple(axes)}"
        )
    return norm


def check_kind(who: str, name: str, element) -> None:
    """`element` is an ElementKind (a descriptor field holding a dtype)."""
    if not isinstance(element, ElementKind):
        raise InvalidProblem(f"{who}: {name} must be an ElementKind, got {element!r}")


def check_bool(who: str, name: str, value) -> None:
    """`value` is a bool (a descriptor flag: 0 / 1 and other truthy values are refused)."""
    if not isinstance(value, bool):
        raise InvalidProblem(f"{who}: {name} must be a bool, got {value!r}")


def check_element(who: str, name: str, element: ElementKind,
                  allowed: Iterable[ElementKind]) -> None:
    check_kind(who, name, element)
    allowed = tuple(allowed)
    if element not in allowed:
        names = ", ".join(k.value for k in allowed)
        raise Unsupported(f"{who}: {name} must be one of {{{names}}}, got {element.value}")


def check_finite(who: str, name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidProblem(f"{who}: {name} must be a finite number, got {value!r}")


def check_positive(who: str, name: str, value: float) -> None:
    check_finite(who, name, value)
    if value <= 0:
        raise InvalidProblem(f"{who}: {name} must be > 0, got {value!r}")


def check_in(who: str, name: str, value, allowed: Iterable) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise InvalidProblem(f"{who}: {name} must be one of {allowed}, got {value!r}")


def check_tensor(
    who: str,
    name: str,
    t,
    shape: Sequence[int] | None = None,
    element: ElementKind | Iterable[ElementKind] | None = None,
) -> torch.Tensor:
    """`t` is a torch tensor with the expected shape and element kind."""
    if not isinstance(t, torch.Tensor):
        raise InvalidProblem(f"{who}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise InvalidProblem(
            f"{who}: {name}.shape {tuple(t.shape)} != expected {tuple(shape)}"
        )
    if element is not None:
        kinds = (element,) if isinstance(element, ElementKind) else tuple(element)
        dtypes = tuple(k.torch_dtype for k in kinds)
        if t.dtype not in dtypes:
            want = " or ".join(str(d) for d in dtypes)
            raise InvalidProblem(f"{who}: {name}.dtype {t.dtype} != expected {want}")
    return t


def check_one_device(who: str, tensors: dict[str, torch.Tensor], allow_cpu: bool) -> torch.device:
    """All tensors on one CUDA device (or all on CPU when the Triton interpreter runs)."""
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    if not devices:
        return torch.device("cpu")
    first_name, first = next(iter(devices.items()))
    for name, dev in devices.items():
        if dev != first:
            raise InvalidProblem(
                f"{who}: all tensors must be on one device; {first_name} is on {first}, "
                f"{name} is on {dev}"
            )
    if first.type == "cpu" and not allow_cpu:
        raise Unsupported(
            f"{who}: tensors are on cpu; expected a CUDA device (CPU runs only under "
            "the Triton interpreter, TRITON_INTERPRET=1)"
        )
    if first.type not in ("cuda", "cpu"):
        raise Unsupported(f"{who}: device {first} is not supported; expected cuda")
    return first


def check_numel_fits(who: str, name: str, t: torch.Tensor, needed: int) -> None:
    """The storage behind `t` holds at least `needed` elements from its offset."""
    have = t.untyped_storage().nbytes() // max(t.element_size(), 1) - t.storage_offset()
    if have < needed:
        raise BufferTooSmall(f"{who}: {name} storage too small", needed, have)


def check_nonnegative_strides(who: str, name: str, t: torch.Tensor) -> None:
    if any(s < 0 for s in t.stride()):
        raise Unsupported(f"{who}: {name} has negative strides {t.stride()}; expected >= 0")


def check_unit_stride(who: str, name: str, t: torch.Tensor, axis: int) -> None:
    if t.shape[axis] > 1 and t.stride(axis) != 1:
        raise Unsupported(
            f"{who}: {name} must have unit stride on axis {axis}, got stride {t.stride(axis)}"
        )


def check_alignment(who: str, name: str, t: torch.Tensor, nbytes: int) -> None:
    if t.numel() and t.data_ptr() % nbytes:
        raise MisalignedOperand(
            f"{who}: {name} data pointer must be {nbytes}-byte aligned, "
            f"got address % {nbytes} = {t.data_ptr() % nbytes}",
            needed=nbytes,
            got=t.data_ptr() % nbytes,
        )


def check_stride_alignment(who: str, name: str, t: torch.Tensor, nbytes: int) -> None:
    """Every dim but the last that spans more than one element steps by a non-zero multiple of
    `nbytes` bytes (each row starts aligned, as TMA-style loads need)."""
    if not t.numel():
        return
    unit = max(nbytes // t.element_size(), 1)
    for n, s in zip(t.shape[:-1], t.stride()[:-1]):
        if n > 1 and (s == 0 or s % unit):
            raise MisalignedOperand(
                f"{who}: {name} outer strides must be non-zero multiples of {unit} elements "
                f"({nbytes} bytes), got {tuple(t.stride())}",
                needed=unit,
                got=s,
            )


def byte_span(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, one past the last byte) of t's elements; (0, 0) when t is empty."""
    if t.numel() == 0:
        return (0, 0)
    lo = t.data_ptr()
    hi = lo + sum((d - 1) * s for d, s in zip(t.shape, t.stride()) if d > 0) * t.element_size()
    return lo, hi + t.element_size()


def has_internal_overlap(t: torch.Tensor) -> bool:
    """True when two indices of `t` can name one element (a stride-0 or overlapping view)."""
    dims = sorted((abs(s), d) for d, s in zip(t.shape, t.stride()) if d > 1)
    reach = 0  # the largest offset the smaller-stride dims reach
    for stride, extent in dims:
        if stride <= reach:
            return True
        reach += stride * (extent - 1)
    return False


def check_output_writable(who: str, name: str, t: torch.Tensor) -> None:
    """An output must not alias itself: a broadcast (stride-0) output would be a race."""
    if has_internal_overlap(t):
        raise InvalidProblem(
            f"{who}: output {name} has overlapping elements (strides {t.stride()}, "
            f"shape {tuple(t.shape)}); expected a writable tensor without stride-0 dims"
        )


def check_no_overlap(
    who: str, out_name: str, out: torch.Tensor, in_name: str, inp: torch.Tensor,
    allow_exact_alias: bool = False,
) -> None:
    """Output and input memory ranges are disjoint (or the very same view, when allowed)."""
    if out is None or inp is None or out.numel() == 0 or inp.numel() == 0:
        return
    if out.untyped_storage().data_ptr() != inp.untyped_storage().data_ptr():
        return
    same_view = (
        out.data_ptr() == inp.data_ptr()
        and out.shape == inp.shape
        and out.stride() == inp.stride()
        and out.dtype == inp.dtype
    )
    if same_view and allow_exact_alias:
        return
    a0, a1 = byte_span(out)
    b0, b1 = byte_span(inp)
    if a0 < b1 and b0 < a1:
        what = "aliases" if same_view else "partially overlaps"
        raise InvalidProblem(
            f"{who}: output {out_name} {what} input {in_name}; expected disjoint memory"
            + ("" if not same_view else " (this plan cannot run in place)")
        )


def check_workspace(who: str, workspace: torch.Tensor | None, needed: int) -> None:
    if needed == 0:
        return
    got = 0 if workspace is None else workspace.numel() * workspace.element_size()
    if got < needed:
        raise WorkspaceTooSmall(who, needed, got)


def host_check(ok: torch.Tensor, exc: type[Exception], message: str) -> None:
    """Raise exc(message) unless the 0-d bool `ok` holds. Reads the device; a traced graph
    (torch.compile) cannot, so there the check becomes a device-side assert."""
    if torch.compiler.is_compiling():
        torch._assert_async(ok, message)
    elif not bool(ok):
        raise exc(message)


def first_out_of_range(index: torch.Tensor, n: int, ignore: int | None = None,
                       wrap: bool = False) -> int | None:
    """The first value of an integer `index` outside [0, n) ([-n, n) with `wrap`; skipping
    `ignore`), or None. Reads the device, so the torch functions call it on CPU tensors (and
    where torch itself checks on the host); CUDA kernels assert on the device instead. In a
    traced graph the range is asserted on the device and None is returned."""
    if index.numel() == 0:
        return None
    low = -n if wrap else 0
    valid = None if ignore is None else index != ignore
    if not torch.compiler.is_compiling():  # the common case: one reduction, one read
        lo, hi = torch.aminmax(index if valid is None else torch.where(valid, index, low))
        if int(lo) >= low and int(hi) < n:
            return None
    bad = (index < low) | (index >= n)
    if valid is not None:
        bad &= valid
    if torch.compiler.is_compiling():
        torch._assert_async(~bad.any(), f"index out of range [{low}, {n})")
        return None
    return int(index[bad].flatten()[0])
