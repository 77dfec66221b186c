"""The arguments torch's tensor factories share (size, layout, pin_memory, device,
requires_grad), read the way torch reads them: the creation and random families' factories
take them alike."""

from __future__ import annotations

import numbers

import torch

from ..core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from ..core.runtime import interpreter_active

_SIZE_TYPES = (tuple, list, torch.Size)


class NegativeExtent(InvalidProblem, RuntimeError):
    """A negative size: a typed baracuda error that is also the RuntimeError torch raises."""


def size_of(who: str, size) -> tuple[int, ...]:
    """torch's size arguments: ints, or one tuple / list / torch.Size of them; a negative
    extent raises as torch does."""
    if len(size) == 1 and isinstance(size[0], _SIZE_TYPES):
        size = size[0]
    out = []
    for d in size:
        if isinstance(d, torch.Tensor) and d.dim() == 0 and not d.is_floating_point():
            d = int(d)
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise ArgumentTypeError(f"{who}: size must be a tuple of ints, got {tuple(size)!r}")
        if d < 0:
            raise NegativeExtent(f"{who}: Trying to create tensor with negative dimension {d}: "
                                 f"{list(size)}")
        out.append(int(d))
    return tuple(out)


def check_options(who: str, layout=None, pin_memory=False) -> None:
    if layout is not None and layout != torch.strided:
        raise Unsupported(f"{who}: only layout=torch.strided is supported, got {layout}")
    if pin_memory:
        raise Unsupported(f"{who}: pin_memory=True is not supported (baracuda creates tensors "
                          "on the device its kernels run on); allocate with torch and pin it")


def device_of(device) -> torch.device | None:
    """A device argument as a torch.device; None stays None (torch's default device: asking
    torch for it returns a non-tensor that torch.compile cannot trace)."""
    if device is None or isinstance(device, torch.device):
        return device
    return torch.device(device)


def on_host(device: torch.device) -> bool:
    """A CPU tensor outside the interpreter: no Triton kernel can write it, torch's own CPU
    op does (the result is the same function's)."""
    return device.type == "cpu" and not interpreter_active()


def finish(t: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    return t.requires_grad_() if requires_grad else t
