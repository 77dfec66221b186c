"""torch's constant factories on FillPlan: zeros / ones / full (and _like, new_, out=),
scalar_tensor, fill / fill_ / zero_ (differentiable as torch's: no gradient reaches the
overwritten values, a 0-d tensor value gets the sum of the gradient); the empty* family is
torch's allocation (nothing to compute). Ranges, eye, tri and the triangle indices live in
torch_range.py and are collected here."""

from __future__ import annotations

import torch

from .torch_common import (
    check_fits,
    check_options,
    device_of,
    element_of,
    fill_into,
    finish,
    on_host,
    result,
    scalar_dtype,
    size_of,
)
from .torch_range import (
    arange,
    broadcasted_iota,
    eye,
    iota,
    linspace,
    logspace,
    tri,
    tril_indices,
    triu_indices,
)

__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros",
           "new_ones", "new_full", "scalar_tensor", "empty", "empty_like", "empty_strided",
           "empty_permuted", "new_empty", "new_empty_strided", "fill", "fill_", "zero_",
           "arange", "linspace", "logspace", "iota", "broadcasted_iota", "eye", "tri",
           "tril_indices", "triu_indices"]


def _full(who: str, shape, value, out, dtype, layout, device, requires_grad, pin_memory):
    check_options(who, layout, pin_memory)
    if dtype is None:
        dtype = out.dtype if out is not None else scalar_dtype(value)
    element_of(who, dtype)
    dev = out.device if out is not None and device is None else device_of(device)
    y = result(who, shape, dtype, dev, out, requires_grad)
    if on_host(y.device):
        check_fits(value, dtype)
        return finish(y.fill_(value), requires_grad)
    return finish(fill_into(y, value), requires_grad)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> torch.Tensor:
    """torch.zeros on one fill kernel (16-byte stores)."""
    shape = size_of("zeros", size)
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    return _full("zeros", shape, 0, out, dtype, layout, device, requires_grad, pin_memory)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False) -> torch.Tensor:
    """torch.ones on one fill kernel."""
    shape = size_of("ones", size)
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    return _full("ones", shape, 1, out, dtype, layout, device, requires_grad, pin_memory)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> torch.Tensor:
    """torch.full: the dtype from the fill value when not given (bool, int64, else the default
    float dtype), as torch."""
    shape = size_of("full", (size,))
    value = _python(fill_value)
    return _full("full", shape, value, out, dtype, layout, device, requires_grad, pin_memory)


def _python(value):
    """A 0-d tensor fill value of a factory becomes its Python number (torch reads it too)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise ValueError(f"fill_value must be a number or a 0-d tensor, got shape "
                             f"{tuple(value.shape)}")
        return value.item()
    return value


def _like(who: str, x: torch.Tensor, value, dtype, layout, device, requires_grad,
          memory_format):
    check_options(who, layout)
    dtype = x.dtype if dtype is None else dtype
    element_of(who, dtype)
    dev = x.device if device is None else device_of(device)
    fmt = torch.preserve_format if memory_format is None else memory_format
    y = torch.empty_like(x, dtype=dtype, device=dev, memory_format=fmt)
    if on_host(y.device):
        check_fits(value, dtype)
        return finish(y.fill_(value), requires_grad)
    return finish(fill_into(y, value), requires_grad)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.zeros_like (memory_format as torch: preserve keeps a dense input's strides)."""
    return _like("zeros_like", input, 0, dtype, layout, device, requires_grad, memory_format)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.ones_like."""
    return _like("ones_like", input, 1, dtype, layout, device, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.full_like: the input's dtype unless `dtype` is given."""
    return _like("full_like", input, _python(fill_value), dtype, layout, device, requires_grad,
                 memory_format)


def _new(who: str, x: torch.Tensor, size, value, dtype, layout, device, requires_grad,
         pin_memory):
    shape = size_of(who, size)
    dtype = x.dtype if dtype is None else dtype
    dev = x.device if device is None else device
    return _full(who, shape, value, None, dtype, layout, dev, requires_grad, pin_memory)


def new_zeros(self, *size, dtype=None, layout=None, device=None, requires_grad=False,
              pin_memory=False) -> torch.Tensor:
    """Tensor.new_zeros: self's dtype and device unless given."""
    return _new("new_zeros", self, size, 0, dtype, layout, device, requires_grad, pin_memory)


def new_ones(self, *size, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False) -> torch.Tensor:
    """Tensor.new_ones."""
    return _new("new_ones", self, size, 1, dtype, layout, device, requires_grad, pin_memory)


def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> torch.Tensor:
    """Tensor.new_full: self's dtype (not the fill value's) unless given."""
    return _new("new_full", self, (size,), _python(fill_value), dtype, layout, device,
                requires_grad, pin_memory)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> torch.Tensor:
    """torch.scalar_tensor: a 0-d tensor of the default float dtype unless `dtype`."""
    dtype = torch.get_default_dtype() if dtype is None else dtype
    return _full("scalar_tensor", (), _python(s), None, dtype, layout, device, requires_grad,
                 pin_memory)


# -- empty: torch's allocation, nothing to compute ----------------------------------------------
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=torch.contiguous_format) -> torch.Tensor:
    """torch.empty: an allocation (values unspecified)."""
    check_options("empty", layout, pin_memory)
    shape = size_of("empty", size)
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    if out is not None:
        return result("empty", shape, dtype, out.device, out, requires_grad)
    y = torch.empty(shape, dtype=dtype, device=device_of(device), memory_format=memory_format)
    return finish(y, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.empty_like: an allocation with the input's layout (preserve_format)."""
    check_options("empty_like", layout)
    y = torch.empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return finish(y, requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> torch.Tensor:
    """torch.empty_strided: an allocation with the given strides."""
    check_options("empty_strided", layout, pin_memory)
    shape = size_of("empty_strided", (size,))
    y = torch.empty_strided(shape, tuple(stride), dtype=dtype or torch.get_default_dtype(),
                            device=device_of(device))
    return finish(y, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False) -> torch.Tensor:
    """torch.empty_permuted: dims laid out in memory in `physical_layout` order."""
    check_options("empty_permuted", layout, pin_memory)
    shape = size_of("empty_permuted", (size,))
    y = torch.empty_permuted(shape, tuple(physical_layout),
                             dtype=dtype or torch.get_default_dtype(), device=device_of(device))
    return finish(y, requires_grad)


def new_empty(self, *size, dtype=None, layout=None, device=None, requires_grad=False,
              pin_memory=False) -> torch.Tensor:
    """Tensor.new_empty: self's dtype and device unless given."""
    check_options("new_empty", layout, pin_memory)
    shape = size_of("new_empty", size)
    y = torch.empty(shape, dtype=dtype or self.dtype,
                    device=self.device if device is None else device)
    return finish(y, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad=False, pin_memory=False) -> torch.Tensor:
    """Tensor.new_empty_strided."""
    check_options("new_empty_strided", layout, pin_memory)
    shape = size_of("new_empty_strided", (size,))
    y = torch.empty_strided(shape, tuple(stride), dtype=dtype or self.dtype,
                            device=self.device if device is None else device)
    return finish(y, requires_grad)


# -- fill / fill_ / zero_ -------------------------------------------------------------------
def _fill_value(x: torch.Tensor, value):
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        if value.device != x.device and value.device.type != "cpu":
            raise RuntimeError(f"fill_: value is on {value.device}, the tensor on {x.device}")
        if value.device != x.device:  # a CPU scalar tensor: torch reads it on the host too
            return value.to(x.device) if value.requires_grad else value.item()
    return value


class _Fill(torch.autograd.Function):
    """y = value with x's shape: no gradient to x, the gradient's sum to a tensor value."""

    @staticmethod
    def forward(ctx, x, value):
        ctx.tensor_value = isinstance(value, torch.Tensor)
        ctx.value_dtype = value.dtype if ctx.tensor_value else None
        return fill_into(torch.empty_like(x), value)

    @staticmethod
    def backward(ctx, grad):
        gx = fill_into(torch.empty_like(grad), 0)
        gv = grad.sum().to(ctx.value_dtype) if ctx.tensor_value else None
        return gx, gv


def _needs_grad(*ts) -> bool:
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                           for t in ts)


def _host_fill(x: torch.Tensor) -> bool:
    return on_host(x.device)


def fill(input, value) -> torch.Tensor:
    """torch.fill: a new tensor of input's shape, dtype and layout, every element `value`."""
    value = _fill_value(input, value)
    if _host_fill(input):
        return torch.fill(input, value)
    if _needs_grad(input, value):
        return _Fill.apply(input, value)
    return fill_into(torch.empty_like(input), value)


def fill_(input, value) -> torch.Tensor:
    """Tensor.fill_: input = value in place (its version bumps; autograd as torch)."""
    value = _fill_value(input, value)
    if _host_fill(input):
        return input.fill_(value)
    if _needs_grad(input, value):
        if input.is_leaf and input.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        # the filled copy written back by copy_, whose autograd (gradient to the copy, none
        # to the old input) holds under torch.compile, where an in-place Function marked
        # dirty sent a second gradient through the input's earlier history
        return input.copy_(_Fill.apply(input, value))
    return fill_into(input, value)


def zero_(input) -> torch.Tensor:
    """Tensor.zero_: fill_(input, 0)."""
    return fill_(input, 0)
