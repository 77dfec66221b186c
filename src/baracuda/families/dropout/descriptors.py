"""Dropout family descriptors and args: y = x * (keep ? s : 0) + (keep ? c_keep : c_drop),
keep drawn per element (or per feature map) from the counter-based stream of
backends/philox.py, so the backward regenerates it instead of storing a mask."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

E = ElementKind
FLOAT_ELEMENTS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))
#: SELU's alpha * lambda: alpha_dropout keeps SELU's mean and variance (torch's constant)
ALPHA_PRIME = 1.7580993408473766


class DropoutMode(enum.Enum):
    #: y = x * (keep ? s : 0) + (keep ? c_keep : c_drop), keep drawn from the stream
    FORWARD = "forward"
    #: dx = dy * (keep ? s : 0), keep regenerated from the same stream
    GRAD = "grad"
    #: dx = dy * mask * scale (native_dropout_backward: the mask is an input)
    FROM_MASK = "from_mask"


@dataclass(frozen=True)
class DropoutDescriptor(Descriptor):
    """Dropout of probability p over x (shape, element). `alpha`: alpha dropout (dropped
    values go to SELU's saturation, then an affine map keeps mean and variance); `inner` > 0:
    feature dropout, one draw per run of `inner` consecutive elements of the logical
    (row-major) order (a channel's map), 0: one per element. `write_mask`: the forward also
    stores the bool keep mask. FROM_MASK reads the mask and multiplies by `scale`."""

    shape: tuple[int, ...]
    element: ElementKind
    p: float
    mode: DropoutMode = DropoutMode.FORWARD
    alpha: bool = False
    inner: int = 0
    write_mask: bool = False
    scale: float = 1.0

    def validate(self, who: str) -> None:
        V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", self.shape, 0)
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        if not isinstance(self.mode, DropoutMode):
            raise V.InvalidProblem(f"{who}: mode must be a DropoutMode, got {self.mode!r}")
        V.check_bool(who, "alpha", self.alpha)
        V.check_bool(who, "write_mask", self.write_mask)
        if isinstance(self.p, bool) or not isinstance(self.p, (int, float)) or \
                not 0.0 <= self.p <= 1.0:
            raise V.InvalidProblem(f"{who}: dropout probability has to be between 0 and 1, "
                                   f"but got {self.p!r}")
        if isinstance(self.inner, bool) or not isinstance(self.inner, int) or self.inner < 0:
            raise V.InvalidProblem(f"{who}: inner must be an int >= 0, got {self.inner!r}")
        V.check_finite(who, "scale", self.scale)
        if self.write_mask and self.mode is not DropoutMode.FORWARD:
            raise V.InvalidProblem(f"{who}: write_mask is for the forward, got mode "
                                   f"{self.mode.value}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def constants(self) -> tuple[float, float, float]:
        """(s, c_keep, c_drop) of the formula: plain dropout 1 / (1 - p), 0, 0; alpha
        dropout a, alpha' a p, (p - 1) alpha' a with a = ((alpha'^2 p + 1)(1 - p))^-1/2
        (torch's); the gradient modes s alone; p = 1 zeroes everything (y = x * 0, as torch)."""
        if self.mode is DropoutMode.FROM_MASK:
            return float(self.scale), 0.0, 0.0
        p = float(self.p)
        if p >= 1.0:
            return 0.0, 0.0, 0.0
        if not self.alpha:
            return 1.0 / (1.0 - p), 0.0, 0.0
        a = 1.0 / math.sqrt((ALPHA_PRIME ** 2 * p + 1.0) * (1.0 - p))
        if self.mode is DropoutMode.GRAD:
            return a, 0.0, 0.0
        return a, ALPHA_PRIME * a * p, (p - 1.0) * ALPHA_PRIME * a


def _rng_shape(desc) -> tuple[int, ...]:
    return (2,)


def _uses_rng(desc) -> bool:
    return desc.mode is not DropoutMode.FROM_MASK


@dataclass
class DropoutArgs(Args):
    x: torch.Tensor = operand("shape", "element", strides="non_negative")
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")
    rng_state: torch.Tensor | None = operand(_rng_shape, E.I64, when=_uses_rng)
    #: the keep mask: written by a forward with write_mask, read by FROM_MASK
    mask: torch.Tensor | None = operand("shape", E.BOOL, output=True, strides="non_negative",
                                        when=lambda d: d.write_mask)
    mask_in: torch.Tensor | None = operand("shape", E.BOOL, strides="non_negative",
                                           when=lambda d: d.mode is DropoutMode.FROM_MASK)
