"""Channel-norm descriptors and args: GroupNorm, BatchNorm, InstanceNorm (channels on axis 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ...core import validate as V
from ...core.plan import Args, Descriptor
from ...core.vocab import ElementKind
from .descriptors import FLOATS_SORTED


def validate_channel_norm(desc, who: str, min_rank: int = 2) -> None:
    if not isinstance(desc.element, ElementKind):
        raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {desc.element!r}")
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape, lo=min_rank)
    V.check_element(who, "element", desc.element, FLOATS_SORTED)
    for flag in ("has_gamma", "has_beta", "has_running", "training", "use_input_stats"):
        if hasattr(desc, flag) and not isinstance(getattr(desc, flag), bool):
            raise V.InvalidProblem(f"{who}: {flag} must be a bool, got {getattr(desc, flag)!r}")
    for name in ("eps", "momentum"):
        if hasattr(desc, name):
            V.check_finite(who, name, getattr(desc, name))
            if getattr(desc, name) < 0:
                raise V.InvalidProblem(f"{who}: {name} must be >= 0, got {getattr(desc, name)}")


class _ChannelShape:
    @property
    def n(self) -> int:
        return self.input_shape[0]  # type: ignore[attr-defined]

    @property
    def c(self) -> int:
        return self.input_shape[1]  # type: ignore[attr-defined]

    @property
    def spatial(self) -> int:
        s = 1
        for d in self.input_shape[2:]:  # type: ignore[attr-defined]
            s *= d
        return s

    @property
    def stats_element(self) -> ElementKind:
        return self.element.compute_kind  # type: ignore[attr-defined]


@dataclass(frozen=True)
class GroupNormDescriptor(Descriptor, _ChannelShape):
    """y = (x - mean) * rstd * gamma[c] + beta[c], statistics per (sample, group of
    C / num_groups channels) over the group's channels and all spatial positions."""

    input_shape: tuple[int, ...]
    num_groups: int
    has_gamma: bool
    has_beta: bool
    eps: float
    element: ElementKind

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)
        _check_groups(self, who)

    @property
    def stats_shape(self) -> tuple[int, ...]:
        return (self.n, self.num_groups)


@dataclass(frozen=True)
class GroupNormBackwardDescriptor(Descriptor, _ChannelShape):
    input_shape: tuple[int, ...]
    num_groups: int
    has_gamma: bool
    has_beta: bool
    element: ElementKind

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)
        _check_groups(self, who)

    @property
    def stats_shape(self) -> tuple[int, ...]:
        return (self.n, self.num_groups)


def _check_groups(desc, who: str) -> None:
    g = desc.num_groups
    if isinstance(g, bool) or not isinstance(g, int) or g <= 0:
        raise V.InvalidProblem(f"{who}: num_groups must be a positive int, got {g!r}")
    if desc.input_shape[1] % g:
        raise V.InvalidProblem(
            f"{who}: the number of channels {desc.input_shape[1]} must be divisible by "
            f"num_groups {g}")


@dataclass(frozen=True)
class BatchNormDescriptor(Descriptor, _ChannelShape):
    """Statistics per channel over (N, spatial). training: batch statistics (biased for the
    output; running_var takes the unbiased one, momentum as torch); eval: running statistics."""

    input_shape: tuple[int, ...]
    training: bool
    has_gamma: bool
    has_beta: bool
    has_running: bool
    momentum: float
    eps: float
    element: ElementKind

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)
        if not self.training and not self.has_running:
            raise V.InvalidProblem(f"{who}: eval mode (training=False) needs running statistics")

    @property
    def stats_shape(self) -> tuple[int, ...]:
        return (self.c,)


@dataclass(frozen=True)
class BatchNormBackwardDescriptor(Descriptor, _ChannelShape):
    """training=False: the statistics are constants (dx = dy * gamma * rstd)."""

    input_shape: tuple[int, ...]
    training: bool
    has_gamma: bool
    has_beta: bool
    element: ElementKind

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)

    @property
    def stats_shape(self) -> tuple[int, ...]:
        return (self.c,)


@dataclass(frozen=True)
class InstanceNormDescriptor(Descriptor, _ChannelShape):
    """Statistics per (sample, channel) over spatial positions (use_input_stats), or the
    running statistics; with has_running and use_input_stats the running ones take the batch
    average of the instances' mean and unbiased variance, as torch."""

    input_shape: tuple[int, ...]
    use_input_stats: bool
    has_gamma: bool
    has_beta: bool
    has_running: bool
    momentum: float
    eps: float
    element: ElementKind

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)
        if not self.use_input_stats and not self.has_running:
            raise V.InvalidProblem(f"{who}: use_input_stats=False needs running statistics")

    @property
    def stats_shape(self) -> tuple[int, ...]:
        return (self.n, self.c)


@dataclass(frozen=True)
class InstanceNormBackwardDescriptor(Descriptor, _ChannelShape):
    input_shape: tuple[int, ...]
    use_input_stats: bool
    has_gamma: bool
    has_beta: bool
    element: ElementKind

    def validate(self, who: str) -> None:
        validate_channel_norm(self, who)

    @property
    def stats_shape(self) -> tuple[int, ...]:
        return (self.n, self.c)


@dataclass
class GroupNormArgs(Args):
    x: torch.Tensor
    y: torch.Tensor
    mean: torch.Tensor
    rstd: torch.Tensor
    gamma: torch.Tensor | None = None
    beta: torch.Tensor | None = None
    OUTPUTS: ClassVar[tuple[str, ...]] = ("y", "mean", "rstd")


@dataclass
class ChannelNormBackwardArgs(Args):
    dy: torch.Tensor
    x: torch.Tensor
    mean: torch.Tensor
    rstd: torch.Tensor
    dx: torch.Tensor
    gamma: torch.Tensor | None = None
    dgamma: torch.Tensor | None = None
    dbeta: torch.Tensor | None = None
    OUTPUTS: ClassVar[tuple[str, ...]] = ("dx", "dgamma", "dbeta")


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
class BatchNormArgs(Args):
    """running_mean / running_var are read and (training) updated in place."""

    x: torch.Tensor
    y: torch.Tensor
    mean: torch.Tensor
    rstd: torch.Tensor
    gamma: torch.Tensor | None = None
    beta: torch.Tensor | None = None
    running_mean: torch.Tensor | None = None
    running_var: torch.Tensor | None = None
    OUTPUTS: ClassVar[tuple[str, ...]] = ("y", "mean", "rstd", "running_mean", "running_var")


@dataclass
class InstanceNormArgs(BatchNormArgs):
    pass
