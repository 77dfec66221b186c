"""Patterned-copy descriptors and args: pad (constant / reflect / replicate / circular) and its
gather-form backward; the triangle, diagonal and repeat copies."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

ALL_ELEMENTS = tuple(sorted(ElementKind, key=lambda k: k.value))
FLOAT_ELEMENTS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))


class PadMode(enum.Enum):
    CONSTANT = "constant"
    REFLECT = "reflect"
    REPLICATE = "replicate"
    CIRCULAR = "circular"
    #: numpy's / jnp.pad's symmetric: the mirror image including the edge (not torch's)
    SYMMETRIC = "symmetric"


#: the kernels' integer code of each mode
MODE_CODES = {PadMode.CONSTANT: 0, PadMode.REFLECT: 1, PadMode.REPLICATE: 2,
              PadMode.CIRCULAR: 3, PadMode.SYMMETRIC: 4}


def padded_shape(shape: tuple[int, ...], pads: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """Each dim grown by its (low, high) pads (negative pads crop)."""
    return tuple(n + lo + hi for n, (lo, hi) in zip(shape, pads))


def _check_pads(who: str, shape: tuple[int, ...], pads) -> None:
    if not isinstance(pads, tuple) or len(pads) != len(shape):
        raise V.InvalidProblem(f"{who}: pads must be one (low, high) pair per dim of "
                               f"{shape}, got {pads!r}")
    for d, pair in enumerate(pads):
        if not (isinstance(pair, tuple) and len(pair) == 2
                and all(isinstance(p, int) and not isinstance(p, bool) for p in pair)):
            raise V.InvalidProblem(f"{who}: pads[{d}] must be a (low, high) pair of ints, "
                                   f"got {pair!r}")
        if shape[d] + pair[0] + pair[1] < 0:
            raise V.InvalidProblem(f"{who}: dim {d} of size {shape[d]} with pads {pair} gives "
                                   f"a negative size {shape[d] + sum(pair)}")


def circular_overwraps(n: int, lo: int, hi: int) -> bool:
    """Circular pads crop first (negative pads) and wrap inside what is left: a positive pad
    longer than that would wrap more than once."""
    left = n + min(lo, 0) + min(hi, 0)
    return max(lo, 0) > left or max(hi, 0) > left


def _check_mode_pads(who: str, mode: PadMode, shape, pads) -> None:
    """reflect reads one mirror image (pad < size), circular one wrap (pad <= size), and
    every non-constant mode needs a non-empty padded dim: torch's rules."""
    for d, (lo, hi) in enumerate(pads):
        if (lo, hi) == (0, 0) or mode is PadMode.CONSTANT:
            continue
        n = shape[d]
        if n == 0:
            raise V.InvalidProblem(f"{who}: {mode.value} pads dim {d} of size 0; expected a "
                                   "non-empty dim")
        if mode is PadMode.REFLECT and (lo >= n or hi >= n):
            raise V.InvalidProblem(f"{who}: reflect pads must be less than the dim's size, "
                                   f"got ({lo}, {hi}) on dim {d} of size {n}")
        if mode is PadMode.SYMMETRIC and not (0 <= lo <= n and 0 <= hi <= n):
            raise V.InvalidProblem(f"{who}: symmetric pads must be in [0, the dim's "
                                   f"size], got ({lo}, {hi}) on dim {d} of size {n}")
        if mode is PadMode.CIRCULAR and circular_overwraps(n, lo, hi):
            raise V.InvalidProblem(f"{who}: circular pads must be at most the size their "
                                   f"negative pads leave (one wrap), got ({lo}, {hi}) on dim "
                                   f"{d} of size {n}")


_BITS_TORCH = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def fill_bits(value, element: ElementKind, who: str = "pad") -> int:
    """A fill value as PadDescriptor holds it: a float element's bit pattern after torch's own
    conversion (exact, and -0.0 / NaN payloads stay distinct keys), or the integer value
    (bool: 0 or 1)."""
    if element.is_float:
        t = torch.tensor(float(value), dtype=torch.float64).to(element.torch_dtype)
        return int(t.view(_BITS_TORCH[element.itemsize]).item())
    if isinstance(value, float) and not math.isfinite(value):
        raise V.InvalidProblem(f"{who}: fill value {value} does not fit {element.value}")
    if element is ElementKind.BOOL:
        return int(bool(value))
    return int(torch.tensor(value).to(element.torch_dtype).item())


@dataclass(frozen=True)
class PadDescriptor(Descriptor):
    """y[o] = x[src(o)] per dim: src = o - low, and outside the input the fill (constant),
    the mirror image without the edge (reflect), the nearest edge (replicate) or the index mod
    the size (circular; negative pads crop first and the rest wraps inside what is left).
    `pads` has one (low, high) pair per dim; negative pads crop. `fill` is the constant
    mode's fill as `fill_bits` gives it."""

    mode: PadMode
    input_shape: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    element: ElementKind
    fill: int = 0

    def validate(self, who: str) -> None:
        V.check_in(who, "mode", self.mode, tuple(PadMode))
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape)
        V.check_element(who, "element", self.element, ALL_ELEMENTS)
        _check_pads(who, shape, self.pads)
        _check_mode_pads(who, self.mode, shape, self.pads)
        if isinstance(self.fill, bool) or not isinstance(self.fill, int):
            raise V.InvalidProblem(f"{who}: fill must be an int (fill_bits), got {self.fill!r}")

    @property
    def output_shape(self) -> tuple[int, ...]:
        return padded_shape(self.input_shape, self.pads)


@dataclass(frozen=True)
class PadBackwardDescriptor(Descriptor):
    """dx of a reflect / replicate / circular pad: each input element sums, in a fixed order,
    the output gradients that read it (constant pads differentiate as a constant pad of the
    gradient with the pads negated, a PadDescriptor). Floating elements only."""

    mode: PadMode
    input_shape: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    element: ElementKind

    def validate(self, who: str) -> None:
        V.check_in(who, "mode", self.mode,
                   (PadMode.REFLECT, PadMode.REPLICATE, PadMode.CIRCULAR,
                    PadMode.SYMMETRIC))
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape)
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        _check_pads(who, shape, self.pads)
        _check_mode_pads(who, self.mode, shape, self.pads)
        padded = [d for d, p in enumerate(self.pads) if p != (0, 0)]
        if padded and len(shape) - padded[0] > 3:
            raise V.Unsupported(f"{who}: the backward pads at most the last 3 dims, got pads "
                                f"{self.pads}")

    @property
    def output_shape(self) -> tuple[int, ...]:
        return padded_shape(self.input_shape, self.pads)


@dataclass
class PadArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    y: torch.Tensor = operand("output_shape", "element", output=True, strides="non_negative")


@dataclass
class PadBackwardArgs(Args):
    dy: torch.Tensor = operand("output_shape", "element", strides="non_negative")
    dx: torch.Tensor = operand("input_shape", "element", output=True, strides="non_negative")
