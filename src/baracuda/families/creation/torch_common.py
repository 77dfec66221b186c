"""What every creation frontend shares: sizes, dtypes and devices as torch reads them, the
refusals (layout, pin_memory), `out=` as torch's resize-and-check, and the custom ops that
write into a freshly allocated (or given) tensor."""

from __future__ import annotations

import math
import numbers

import torch

from ...backends.factory_args import (  # noqa: F401 - the family's modules import them here
    check_options,
    device_of,
    finish,
    on_host,
    size_of,
)
from ...backends.torch_ops import define_op, run_plan
from ...core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from ...core.vocab import ElementKind
from .descriptors import (
    BandArgs,
    BandDescriptor,
    FillArgs,
    FillDescriptor,
    RangeArgs,
    RangeDescriptor,
    TriIndicesArgs,
    TriIndicesDescriptor,
    fill_bits,
)
from .plans import BandPlan, FillPlan, RangePlan, TriIndicesPlan


def scalar_dtype(value) -> torch.dtype:
    """torch's dtype for a Python fill value: bool, int64, or the default float dtype."""
    if isinstance(value, torch.Tensor):
        return value.dtype
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, numbers.Integral):
        return torch.int64
    if isinstance(value, complex):
        raise Unsupported(f"complex fill values are not supported, got {value!r}")
    return torch.get_default_dtype()


def element_of(who: str, dtype: torch.dtype) -> ElementKind:
    if dtype.is_complex:
        raise Unsupported(f"{who}: complex dtypes are not supported, got {dtype}")
    return ElementKind.of(dtype)


def result(who: str, shape, dtype, device, out, requires_grad=False) -> torch.Tensor:
    """The tensor to write: a new one, or `out` resized to `shape` after torch's dtype
    check."""
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if not isinstance(out, torch.Tensor):
        raise ArgumentTypeError(f"{who}: out must be a tensor, got {type(out).__name__}")
    if out.dtype != dtype:
        raise InvalidProblem(f"{who}: dtype {dtype} does not match dtype of out parameter "
                             f"({out.dtype})")
    if requires_grad:
        raise InvalidProblem(f"{who}: out= does not take requires_grad=True")
    if tuple(out.shape) != tuple(shape):
        out.resize_(shape)  # torch's factories resize out= silently
    return out


# -- the custom ops: each writes into y (mutated), so they dispatch on y's device ------------
_BOOL, _INT, _FLOAT = 0, 1, 2


def split_scalar(value) -> tuple[int, float, int]:
    """A Python scalar as the (int, float, type) the ops' schema carries."""
    if isinstance(value, bool):
        return int(value), 0.0, _BOOL
    if isinstance(value, numbers.Integral):
        return int(value), 0.0, _INT
    return 0, float(value), _FLOAT


def join_scalar(ivalue: int, fvalue: float, kind: int):
    return bool(ivalue) if kind == _BOOL else ivalue if kind == _INT else fvalue


def _fill_impl(y: torch.Tensor, ivalue: int, fvalue: float, kind: int) -> None:
    value = join_scalar(ivalue, fvalue, kind)
    # the bits in the key: the descriptor cache would take -0.0 for 0.0 (they are ==)
    desc = FillDescriptor.cached(tuple(y.shape), y.dtype, value, None,
                                 fill_bits(value, ElementKind.of(y.dtype)))
    run_plan(FillPlan, desc, FillArgs(y=y))


def _fill_fake(y, ivalue, fvalue, kind) -> None:
    return None


def _fill_tensor_impl(y: torch.Tensor, value: torch.Tensor) -> None:
    desc = FillDescriptor.cached(tuple(y.shape), y.dtype, None, value.dtype)
    run_plan(FillPlan, desc, FillArgs(y=y, value=value))


def _fill_tensor_fake(y, value) -> None:
    return None


def _range_impl(y: torch.Tensor, kind: str, istart: int, fstart: float, skind: int,
                istop: int, fstop: float, tkind: int, base: float) -> None:
    start, stop = join_scalar(istart, fstart, skind), join_scalar(istop, fstop, tkind)
    # the descriptor cache would take -0.0 for 0.0 (they are ==): a negative zero builds anew
    signed_zero = any(isinstance(v, float) and v == 0 and math.copysign(1.0, v) < 0
                      for v in (start, stop))
    make = RangeDescriptor if signed_zero else RangeDescriptor.cached
    desc = make(kind, y.shape[0], y.dtype, start, stop, base)
    run_plan(RangePlan, desc, RangeArgs(y=y))


def _range_fake(y, kind, istart, fstart, skind, istop, fstop, tkind, base) -> None:
    return None


def _band_impl(y: torch.Tensor, lower: int, upper: int) -> None:
    desc = BandDescriptor.cached(y.shape[0], y.shape[1], y.dtype, lower, upper)
    run_plan(BandPlan, desc, BandArgs(y=y))


def _band_fake(y, lower, upper) -> None:
    return None


def _tri_indices_impl(y: torch.Tensor, kind: str, rows: int, cols: int, offset: int) -> None:
    desc = TriIndicesDescriptor.cached(kind, rows, cols, offset, y.dtype)
    run_plan(TriIndicesPlan, desc, TriIndicesArgs(y=y))


def _tri_indices_fake(y, kind, rows, cols, offset) -> None:
    return None


fill_op = define_op("creation_fill_", _fill_impl, _fill_fake, mutates_args=("y",))
fill_tensor_op = define_op("creation_fill_tensor_", _fill_tensor_impl, _fill_tensor_fake,
                           mutates_args=("y",))
range_op = define_op("creation_range_", _range_impl, _range_fake, mutates_args=("y",))
band_op = define_op("creation_band_", _band_impl, _band_fake, mutates_args=("y",))
tri_indices_op = define_op("creation_tri_indices_", _tri_indices_impl, _tri_indices_fake,
                           mutates_args=("y",))


def fill_into(y: torch.Tensor, value) -> torch.Tensor:
    """y = value (a Python scalar or a 0-d tensor) through one fill kernel; returns y."""
    if y.numel() == 0:
        return y
    target = y.view(-1) if y.is_contiguous() else y  # one descriptor per size, any rank
    if isinstance(value, torch.Tensor):
        fill_tensor_op(target, value)
    else:
        check_fits(value, y.dtype)
        fill_op(target, *split_scalar(value))
    return y


def check_fits(value, dtype: torch.dtype) -> None:
    """torch refuses a fill value its dtype cannot hold (300 into uint8, inf into int, a
    finite value past the largest float: 1e39 into float32, 65519 into float16)."""
    if dtype.is_floating_point and dtype != torch.float64 and \
            isinstance(value, (int, float)) and math.isfinite(value) and \
            abs(value) > torch.finfo(dtype).max:
        raise InvalidProblem(f"value cannot be converted to type {dtype} without overflow: "
                             f"{value}")
    if dtype.is_floating_point or dtype == torch.bool or isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidProblem(f"value cannot be converted to type {dtype} without overflow: "
                             f"{value}")
    info = torch.iinfo(dtype)
    if not info.min <= value < info.max + 1:
        raise InvalidProblem(f"value cannot be converted to type {dtype} without overflow: "
                             f"{value}")
