"""torch.nn.functional.pad and torch.constant_pad_nd on PadPlan, differentiable through
PadBackwardPlan (reflect / replicate / circular) or a constant pad of the gradient (constant).
The triangle, diagonal and repeat copies live in their own torch_<pattern>.py modules and are
collected here."""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from ...core.vocab import ElementKind
from .descriptors import (
    PadArgs,
    PadBackwardArgs,
    PadBackwardDescriptor,
    PadDescriptor,
    PadMode,
    circular_overwraps,
    fill_bits,
    padded_shape,
)
from .plans import PadBackwardPlan, PadPlan
from .torch_matrix import __all__ as _matrix_names
from .torch_matrix import block_diag, diag, diag_embed, diagflat, tril, triu  # noqa: F401
from .torch_repeat import repeat_interleave  # noqa: F401

__all__ = ["pad", "constant_pad_nd", *_matrix_names, "repeat_interleave", "jnp_pad", "lax_pad"]

_MODES = {m.value: m for m in PadMode if m is not PadMode.SYMMETRIC}  # F.pad's (torch's)


def _pairs(flat: list[int] | tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2))


def _per_dim(pad, rank: int) -> tuple[tuple[int, int], ...]:
    """torch's pad list (last dim first, low then high) as one (low, high) pair per dim."""
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    return tuple([(0, 0)] * (rank - len(pairs)) + pairs[::-1])


def _fill(value: float, ivalue: int, element: ElementKind) -> int:
    if element.is_float:
        return fill_bits(value, element)
    if element is ElementKind.BOOL:
        return int(bool(value) or bool(ivalue))
    return fill_bits(ivalue, element)


# -- the custom ops -----------------------------------------------------------------------------
def _pad_impl(x: torch.Tensor, pads: list[int], mode: str, value: float,
              ivalue: int) -> torch.Tensor:
    """pads: one (low, high) pair per dim, flattened (dim 0 first)."""
    element = ElementKind.of(x.dtype)
    lines = x.reshape(1) if x.dim() == 0 else x
    pairs = _pairs(tuple(pads)) if x.dim() else ((0, 0),)
    desc = PadDescriptor.cached(PadMode(mode), tuple(lines.shape), pairs, element,
                                _fill(value, ivalue, element))
    y = x.new_empty(desc.output_shape)
    run_plan(PadPlan, desc, PadArgs(x=lines, y=y))
    return y.reshape(()) if x.dim() == 0 else y


def _pad_fake(x: torch.Tensor, pads: list[int], mode: str, value: float,
              ivalue: int) -> torch.Tensor:
    return x.new_empty(padded_shape(tuple(x.shape), _pairs(pads)))


def _pad_backward_impl(dy: torch.Tensor, pads: list[int], mode: str,
                       input_shape: list[int]) -> torch.Tensor:
    desc = PadBackwardDescriptor.cached(PadMode(mode), tuple(input_shape), _pairs(tuple(pads)),
                                        ElementKind.of(dy.dtype))
    dx = dy.new_empty(tuple(input_shape))
    run_plan(PadBackwardPlan, desc, PadBackwardArgs(dy=dy, dx=dx))
    return dx


def _pad_backward_fake(dy: torch.Tensor, pads: list[int], mode: str,
                       input_shape: list[int]) -> torch.Tensor:
    return dy.new_empty(tuple(input_shape))


_pad_backward = define_op("pad_backward", _pad_backward_impl, _pad_backward_fake)


def _setup(ctx, inputs, output):
    x, pads, mode, _, _ = inputs
    ctx.pads, ctx.mode, ctx.shape = pads, mode, list(x.shape)


def _autograd(ctx, grad):
    if ctx.mode == "constant":  # the inverse crop (and zero where the forward cropped)
        dx = _pad(grad, [-p for p in ctx.pads], "constant", 0.0, 0)
    else:
        dx = _pad_backward(grad, ctx.pads, ctx.mode, ctx.shape)
    return dx, None, None, None, None


_pad = define_op("pad", _pad_impl, _pad_fake, backward=_autograd, setup_context=_setup)


# -- torch's argument rules -----------------------------------------------------------------------
def _check_pad_list(pad, rank: int, who: str) -> tuple[int, ...]:
    if isinstance(pad, torch.Tensor) or not isinstance(pad, (list, tuple, torch.Size)):
        raise ArgumentTypeError(f"{who}: pad must be a sequence of ints, got "
                                f"{type(pad).__name__}")
    out = []
    for p in pad:
        if isinstance(p, bool) or not isinstance(p, int):
            raise ArgumentTypeError(f"{who}: pad must be a sequence of ints, got {p!r} in "
                                    f"{tuple(pad)}")
        out.append(int(p))
    if len(out) % 2:
        raise InvalidProblem(f"{who}: Padding length must be divisible by 2, got {len(out)}")
    if len(out) > 2 * rank:
        raise InvalidProblem(f"{who}: Padding length should be less than or equal to two times "
                             f"the input dimension but got padding length {len(out)} and input "
                             f"of dimension {rank}")
    return tuple(out)


def _check_sizes(x: torch.Tensor, per_dim, who: str) -> None:
    for d, (n, (lo, hi)) in enumerate(zip(x.shape, per_dim)):
        if n + min(lo, 0) + min(hi, 0) < 0 or n + lo + hi < 0:
            raise InvalidProblem(f"{who}: The input size {n}, plus negative padding {lo} and "
                                 f"{hi} resulted in a negative output size, which is invalid. "
                                 f"Check dimension {d} of your input.")


def _check_spatial(x: torch.Tensor, pad: tuple[int, ...], mode: PadMode, who: str) -> None:
    """torch's rules for reflect / replicate / circular: 1 to 3 padded trailing dims on an
    input with one or two more dims (channels, and an optional batch); every dim but the
    first non-empty; reflect pads below the size, circular at most the size."""
    spatial = len(pad) // 2
    if spatial not in (1, 2, 3) or x.dim() not in (spatial + 1, spatial + 2):
        raise Unsupported(
            f"{who}: Padding size {len(pad)} is not supported for {x.dim()}D input tensor; "
            "non-constant padding takes a 2D or 3D input with padding size 2, 3D or 4D with "
            "4, 4D or 5D with 6")
    if any(n == 0 for n in x.shape[1:]):
        raise InvalidProblem(f"{who}: Expected a {spatial + 1}D or {spatial + 2}D (batch mode) "
                             f"tensor with possibly 0 batch size and other non-zero dimensions "
                             f"for input, but got: {list(x.shape)}")
    per_dim = _per_dim(pad, x.dim())
    for d, (n, (lo, hi)) in enumerate(zip(x.shape, per_dim)):
        if (lo, hi) == (0, 0):
            continue
        if mode is PadMode.REFLECT and (lo >= n or hi >= n):
            raise InvalidProblem(f"{who}: Padding size should be less than the corresponding "
                                 f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                                 f"{d} of input {list(x.shape)}")
        if mode is PadMode.CIRCULAR and circular_overwraps(n, lo, hi):
            raise InvalidProblem(f"{who}: Padding value causes wrapping around more than once "
                                 f"(padding ({lo}, {hi}) on dimension {d} of size {n})")


def _run(x: torch.Tensor, per_dim, mode: PadMode, value) -> torch.Tensor:
    flat = [p for pair in per_dim for p in pair]
    if x.dtype.is_complex:
        raise Unsupported(f"pad: complex dtypes are not supported, got {x.dtype}")
    fval = float(value)
    if x.dtype.is_floating_point:
        fits = not math.isfinite(fval) or abs(fval) <= torch.finfo(x.dtype).max
    elif x.dtype == torch.bool:
        fits = True
    else:
        info = torch.iinfo(x.dtype)
        fits = math.isfinite(fval) and info.min <= value <= info.max
    if not fits:
        raise InvalidProblem(f"pad: value {value} cannot be converted to {x.dtype} without "
                             "overflow")
    ival = int(value) if math.isfinite(fval) else 0
    return _pad(x, flat, mode.value, fval, ival)


def pad(input: torch.Tensor, pad, mode: str = "constant", value: float | None = None):
    """torch.nn.functional.pad: `pad` lists (low, high) pairs from the last dim backwards;
    constant mode pads (or, negative, crops) any dims with `value` (default 0); reflect,
    replicate and circular pad the last 1-3 dims of a (batch,) channels, spatial input."""
    who = "pad"
    if not isinstance(input, torch.Tensor):
        raise ArgumentTypeError(f"{who}: input must be a Tensor, got {type(input).__name__}")
    if mode not in _MODES:
        raise Unsupported(f"{who}: Unrecognised padding mode {mode}")
    flat = _check_pad_list(pad, input.dim(), who)
    m = _MODES[mode]
    if m is not PadMode.CONSTANT:
        if value is not None and value != 0:
            raise InvalidProblem(f'{who}: Padding mode "{mode}" doesn\'t take in value '
                                 "argument")
        _check_spatial(input, flat, m, who)
    per_dim = _per_dim(flat, input.dim())
    _check_sizes(input, per_dim, who)
    return _run(input, per_dim, m, 0 if value is None else value)


def constant_pad_nd(input: torch.Tensor, pad, value=0):
    """torch.constant_pad_nd: F.pad's constant mode."""
    who = "constant_pad_nd"
    if not isinstance(input, torch.Tensor):
        raise ArgumentTypeError(f"{who}: input must be a Tensor, got {type(input).__name__}")
    flat = _check_pad_list(pad, input.dim(), who)
    per_dim = _per_dim(flat, input.dim())
    _check_sizes(input, per_dim, who)
    return _run(input, per_dim, PadMode.CONSTANT, value)


from .torch_jax_pad import jnp_pad, lax_pad  # noqa: E402,F401 - jax's pads, on these ops
