"""Normalization family descriptors and args (RMSNorm and LayerNorm over a suffix of axes)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

#: What the family package re-exports from this module.
__all__ = [
    "LayerNormArgs", "LayerNormBackwardArgs", "LayerNormBackwardDescriptor", "LayerNormDescriptor",
    "RMSNormArgs", "RMSNormBackwardArgs", "RMSNormBackwardDescriptor", "RMSNormDescriptor",
]

FLOATS_SORTED = sorted(FLOAT_KINDS, key=lambda k: k.value)


def _check_flag(who: str, name: str, value) -> None:
    if not isinstance(value, bool):
        raise V.InvalidProblem(f"{who}: {name} must be a bool, got {value!r}")


def validate_row_norm(desc, who: str, with_eps: bool) -> None:
    """One rule set for every RMSNorm / LayerNorm descriptor, forward and backward."""
    if not isinstance(desc.element, ElementKind):
        raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {desc.element!r}")
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape)
    if not isinstance(desc.norm_axes, tuple):
        raise V.InvalidProblem(f"{who}: norm_axes must be a tuple of ints, got {desc.norm_axes!r}")
    V.check_suffix_axes(who, "norm_axes", desc.norm_axes, len(shape))
    V.check_element(who, "element", desc.element, FLOATS_SORTED)
    for flag in ("has_gamma", "has_beta", "has_residual"):
        if hasattr(desc, flag):
            _check_flag(who, flag, getattr(desc, flag))
    if with_eps:
        # any finite eps, as torch: a negative one gives NaN where var + eps < 0, as there
        V.check_finite(who, "eps", desc.eps)


class _RowNormShape:
    """Shape helpers and the rule set shared by the row-norm descriptors (a forward has eps)."""

    def validate(self, who: str) -> None:
        validate_row_norm(self, who, with_eps=hasattr(self, "eps"))

    @property
    def n_norm(self) -> int:
        return len(self.norm_axes)  # type: ignore[attr-defined]

    @property
    def normalized_shape(self) -> tuple[int, ...]:
        return tuple(self.input_shape[len(self.input_shape) - self.n_norm:])  # type: ignore

    @property
    def stats_shape(self) -> tuple[int, ...]:
        """Saved statistics: the input shape with the normalized axes set to 1 (as torch)."""
        k = len(self.input_shape) - self.n_norm  # type: ignore[attr-defined]
        return tuple(self.input_shape[:k]) + (1,) * self.n_norm  # type: ignore[attr-defined]

    @property
    def norm_total_extent(self) -> int:
        return math.prod(self.normalized_shape)

    @property
    def rows(self) -> int:
        return math.prod(self.input_shape[: len(self.input_shape) - self.n_norm])  # type: ignore

    @property
    def stats_element(self) -> ElementKind:
        """Statistics are kept in the compute kind: f32 for halves and f32, f64 for f64."""
        return self.element.compute_kind  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RMSNormDescriptor(_RowNormShape, Descriptor):
    """y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2 over norm_axes) + eps); any finite eps
    (a negative one gives NaN where mean(x^2) + eps < 0, as torch).

    ``has_residual``: the fused residual variant, h = x + residual (rounded to `element`),
    y = rms_norm(h); h is also written (``residual_out``) and is what the backward takes as x.
    """

    input_shape: tuple[int, ...]
    norm_axes: tuple[int, ...]
    has_gamma: bool
    eps: float
    element: ElementKind
    has_residual: bool = False


@dataclass(frozen=True)
class RMSNormBackwardDescriptor(_RowNormShape, Descriptor):
    """dx (and dgamma when has_gamma) from dy, the forward's x (h for the residual variant)
    and its saved rstd; ``has_residual`` adds the gradient of the residual output to dx."""

    input_shape: tuple[int, ...]
    norm_axes: tuple[int, ...]
    has_gamma: bool
    element: ElementKind
    has_residual: bool = False


@dataclass(frozen=True)
class LayerNormDescriptor(_RowNormShape, Descriptor):
    """y = (x - mean) * rstd * gamma + beta over norm_axes; rstd = 1 / sqrt(var + eps),
    biased variance; any finite eps (NaN where var + eps < 0, as torch). ``has_residual`` as
    in RMSNormDescriptor."""

    input_shape: tuple[int, ...]
    norm_axes: tuple[int, ...]
    has_gamma: bool
    has_beta: bool
    eps: float
    element: ElementKind
    has_residual: bool = False


@dataclass(frozen=True)
class LayerNormBackwardDescriptor(_RowNormShape, Descriptor):
    """dx, dgamma (has_gamma), dbeta (has_beta) from dy, x and the saved mean and rstd."""

    input_shape: tuple[int, ...]
    norm_axes: tuple[int, ...]
    has_gamma: bool
    has_beta: bool
    element: ElementKind
    has_residual: bool = False


def _rows(output: bool = False, when=None):
    """A tensor of the input's shape and element."""
    return operand("input_shape", "element", output=output, when=when)


def _stats(output: bool = False):
    """A saved statistic (mean, rstd): the input shape with the normalized dims at 1."""
    return operand("stats_shape", "stats_element", output=output)


def _param(flag: str, output: bool = False):
    """gamma / beta or their gradient, present exactly when the descriptor's flag is set."""
    return operand("normalized_shape", "element", output=output, when=attrgetter(flag))


_residual = attrgetter("has_residual")


@dataclass
class RMSNormArgs(Args):
    x: torch.Tensor = _rows()
    y: torch.Tensor = _rows(output=True)
    rstd: torch.Tensor = _stats(output=True)
    gamma: torch.Tensor | None = _param("has_gamma")
    residual: torch.Tensor | None = _rows(when=_residual)
    residual_out: torch.Tensor | None = _rows(output=True, when=_residual)


@dataclass
class RMSNormBackwardArgs(Args):
    dy: torch.Tensor = _rows()
    x: torch.Tensor = _rows()
    rstd: torch.Tensor = _stats()
    dx: torch.Tensor = _rows(output=True)
    gamma: torch.Tensor | None = _param("has_gamma")
    dgamma: torch.Tensor | None = _param("has_gamma", output=True)
    dresidual_out: torch.Tensor | None = _rows(when=_residual)


@dataclass
class LayerNormArgs(Args):
    x: torch.Tensor = _rows()
    y: torch.Tensor = _rows(output=True)
    mean: torch.Tensor = _stats(output=True)
    rstd: torch.Tensor = _stats(output=True)
    gamma: torch.Tensor | None = _param("has_gamma")
    beta: torch.Tensor | None = _param("has_beta")
    residual: torch.Tensor | None = _rows(when=_residual)
    residual_out: torch.Tensor | None = _rows(output=True, when=_residual)


@dataclass
class LayerNormBackwardArgs(Args):
    dy: torch.Tensor = _rows()
    x: torch.Tensor = _rows()
    mean: torch.Tensor = _stats()
    rstd: torch.Tensor = _stats()
    dx: torch.Tensor = _rows(output=True)
    gamma: torch.Tensor | None = _param("has_gamma")
    dgamma: torch.Tensor | None = _param("has_gamma", output=True)
    dbeta: torch.Tensor | None = _param("has_beta", output=True)
    dresidual_out: torch.Tensor | None = _rows(when=_residual)
