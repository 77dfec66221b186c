"""Channel-norm descriptors and args: GroupNorm, BatchNorm, InstanceNorm (channels on axis 1).

eps and momentum take any finite value, as torch's kernels do: a negative eps gives NaN where
var + eps < 0, a momentum outside [0, 1] extrapolates the running statistics."""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter
from typing import ClassVar

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import ElementKind
from .descriptors import FLOATS_SORTED

#: What the family package re-exports from this module.
__all__ = [
    "BatchNormArgs", "BatchNormBackwardArgs", "BatchNormBackwardDescriptor", "BatchNormDescriptor",
    "GroupNormArgs", "GroupNormBackwardArgs", "GroupNormBackwardDescriptor", "GroupNormDescriptor",
    "InstanceNormArgs", "InstanceNormBackwardArgs", "InstanceNormBackwardDescriptor",
    "InstanceNormDescriptor",
]


def validate_channel_norm(desc, who: str, min_rank: int = 2) -> None:
    if not isinstance(desc.element, ElementKind):
        raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {desc.element!r}")
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape, lo=min_rank)
    V.check_element(who, "element", desc.element, FLOATS_SORTED)
    for flag in ("has_gamma", "has_beta", "has_running", "training", "use_input_stats"):
        if hasattr(desc, flag) and not isinstance(getattr(desc, flag), bool):
            raise V.InvalidProblem(f"{who}: {flag} must be a bool, got {getattr(desc, flag)!r}")
    # any finite eps and momentum, as torch's kernels take them (a negative eps gives NaN
    # where var + eps < 0; F.batch_norm's own eps checks are in the torch function)
    for name in ("eps", "momentum"):
        if hasattr(desc, name):
            V.check_finite(who, name, getattr(desc, name))
    if hasattr(desc, "num_groups"):
        _check_groups(desc, who)
    if getattr(desc, "has_running", True):
        return
    if not getattr(desc, "training", True):
        raise V.InvalidProblem(f"{who}: eval mode (training=False) needs running statistics")
    if not getattr(desc, "use_input_stats", True):
        raise V.InvalidProblem(f"{who}: use_input_stats=False needs running statistics")


class _ChannelShape:
    """Shape helpers and the rule set shared by the channel-norm descriptors; STATS names the
    statistics' dims: per (sample, group), per channel, or per (sample, channel)."""

    STATS: ClassVar[str]

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)

    @property
    def stats_shape(self) -> tuple[int, ...]:
        if self.STATS == "ng":
            return (self.n, self.num_groups)  # type: ignore[attr-defined]
        return (self.c,) if self.STATS == "c" else (self.n, self.c)

    @property
    def n(self) -> int:
        return self.input_shape[0]  # type: ignore[attr-defined]

    @property
    def c(self) -> int:
        return self.input_shape[1]  # type: ignore[attr-defined]

    @property
    def spatial(self) -> int:
        return math.prod(self.input_shape[2:])  # type: ignore[attr-defined]

    @property
    def stats_element(self) -> ElementKind:
        return self.element.compute_kind  # type: ignore[attr-defined]


@dataclass(frozen=True)
class GroupNormDescriptor(_ChannelShape, Descriptor):
    """y = (x - mean) * rstd * gamma[c] + beta[c], statistics per (sample, group of
    C / num_groups channels) over the group's channels and all spatial positions."""

    STATS: ClassVar[str] = "ng"
    input_shape: tuple[int, ...]
    num_groups: int
    has_gamma: bool
    has_beta: bool
    eps: float
    element: ElementKind


@dataclass(frozen=True)
class GroupNormBackwardDescriptor(_ChannelShape, Descriptor):
    STATS: ClassVar[str] = "ng"
    input_shape: tuple[int, ...]
    num_groups: int
    has_gamma: bool
    has_beta: bool
    element: ElementKind


def _check_groups(desc, who: str) -> None:
    g = desc.num_groups
    if isinstance(g, bool) or not isinstance(g, int) or g <= 0:
        raise V.InvalidProblem(f"{who}: num_groups must be a positive int, got {g!r}")
    if desc.input_shape[1] % g:
        raise V.InvalidProblem(
            f"{who}: the number of channels {desc.input_shape[1]} must be divisible by "
            f"num_groups {g}")


@dataclass(frozen=True)
class BatchNormDescriptor(_ChannelShape, Descriptor):
    """Statistics per channel over (N, spatial). training: batch statistics (biased for the
    output; running_var takes the unbiased one, momentum as torch); eval: running statistics."""

    STATS: ClassVar[str] = "c"
    input_shape: tuple[int, ...]
    training: bool
    has_gamma: bool
    has_beta: bool
    has_running: bool
    momentum: float
    eps: float
    element: ElementKind


@dataclass(frozen=True)
class BatchNormBackwardDescriptor(_ChannelShape, Descriptor):
    """training=False: the statistics are constants (dx = dy * gamma * rstd)."""

    STATS: ClassVar[str] = "c"
    input_shape: tuple[int, ...]
    training: bool
    has_gamma: bool
    has_beta: bool
    element: ElementKind


@dataclass(frozen=True)
class InstanceNormDescriptor(_ChannelShape, Descriptor):
    """Statistics per (sample, channel) over spatial positions (use_input_stats), or the
    running statistics; with has_running and use_input_stats the running ones take the batch
    average of the instances' mean and unbiased variance, as torch."""

    STATS: ClassVar[str] = "nc"
    input_shape: tuple[int, ...]
    use_input_stats: bool
    has_gamma: bool
    has_beta: bool
    has_running: bool
    momentum: float
    eps: float
    element: ElementKind


@dataclass(frozen=True)
class InstanceNormBackwardDescriptor(_ChannelShape, Descriptor):
    STATS: ClassVar[str] = "nc"
    input_shape: tuple[int, ...]
    use_input_stats: bool
    has_gamma: bool
    has_beta: bool
    element: ElementKind


def _full(output: bool = False):
    """A tensor of the input's shape and element."""
    return operand("input_shape", "element", output=output)


def _stats(output: bool = False):
    """A saved statistic (mean, rstd), in the descriptor's statistics shape."""
    return operand("stats_shape", "stats_element", output=output)


def _param(flag: str, output: bool = False, element="element"):
    """A per-channel tensor, present exactly when the descriptor's flag is set."""
    return operand(lambda d: (d.c,), element, output=output, when=attrgetter(flag))


def _running_kinds(d):
    """Running statistics are kept in the element type or the compute type."""
    return (d.element, d.stats_element)


@dataclass
class _ChannelNormArgs(Args):
    x: torch.Tensor = _full()
    y: torch.Tensor = _full(output=True)
    mean: torch.Tensor = _stats(output=True)
    rstd: torch.Tensor = _stats(output=True)
    gamma: torch.Tensor | None = _param("has_gamma")
    beta: torch.Tensor | None = _param("has_beta")


@dataclass
class ChannelNormBackwardArgs(Args):
    dy: torch.Tensor = _full()
    x: torch.Tensor = _full()
    mean: torch.Tensor = _stats()
    rstd: torch.Tensor = _stats()
    dx: torch.Tensor = _full(output=True)
    gamma: torch.Tensor | None = _param("has_gamma")
    dgamma: torch.Tensor | None = _param("has_gamma", output=True)
    dbeta: torch.Tensor | None = _param("has_beta", output=True)


@dataclass
class GroupNormArgs(_ChannelNormArgs):
    pass


@dataclass
class GroupNormBackwardArgs(ChannelNormBackwardArgs):
    pass


@dataclass
class BatchNormBackwardArgs(ChannelNormBackwardArgs):
    pass


@dataclass
class InstanceNormBackwardArgs(ChannelNormBackwardArgs):
    pass


@dataclass
class BatchNormArgs(_ChannelNormArgs):
    """running_mean / running_var are read and (training) updated in place."""

    running_mean: torch.Tensor | None = _param("has_running", True, _running_kinds)
    running_var: torch.Tensor | None = _param("has_running", True, _running_kinds)


@dataclass
class InstanceNormArgs(BatchNormArgs):
    pass
