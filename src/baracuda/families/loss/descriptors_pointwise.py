"""Pointwise loss descriptors and args: losses that are a function of matching elements of their
operands (mse, l1, smooth_l1, huber, binary cross-entropy with and without logits, kl_div,
soft_margin, poisson_nll, gaussian_nll, hinge_embedding, margin_ranking,
multilabel_soft_margin), reduced to a scalar (mean / sum / batchmean) or kept per element."""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from operator import attrgetter

import torch

from ...core import validate as V
from ...core.args import NON_NEGATIVE, Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

#: What the family package re-exports from this module.
__all__ = [
    "PointwiseLossArgs", "PointwiseLossBackwardArgs", "PointwiseLossBackwardDescriptor",
    "PointwiseLossDescriptor", "PointwiseLossKind", "PointwiseReduction",
]

_FLOATS = sorted(FLOAT_KINDS, key=lambda k: k.value)


class PointwiseLossKind(enum.Enum):
    MSE = "mse"
    L1 = "l1"
    SMOOTH_L1 = "smooth_l1"
    HUBER = "huber"
    BCE = "binary_cross_entropy"
    BCE_LOGITS = "binary_cross_entropy_with_logits"
    KL_DIV = "kl_div"
    SOFT_MARGIN = "soft_margin"
    POISSON_NLL = "poisson_nll"
    GAUSSIAN_NLL = "gaussian_nll"
    HINGE_EMBEDDING = "hinge_embedding"
    MARGIN_RANKING = "margin_ranking"
    MULTILABEL_SOFT_MARGIN = "multilabel_soft_margin"


class PointwiseReduction(enum.Enum):
    NONE = "none"
    MEAN = "mean"
    SUM = "sum"
    #: kl_div only: the sum divided by the extent of dim 0
    BATCHMEAN = "batchmean"


@dataclass(frozen=True)
class KindRow:
    """What a kind takes. `code`: the kernel's KIND constexpr. `extra`: the role of the third
    operand ("weight", "var", "target" or None: no third operand); `extra_required`.
    `param`: the name and torch default of its scalar parameter (None: none). `grads`: the
    operands (input, target, extra) torch differentiates. `flags`: meaning of log_input / full.
    """

    code: int
    extra: str | None = None
    extra_required: bool = False
    param: tuple[str, float] | None = None
    grads: tuple[str, ...] = ("input", "target")
    flags: tuple[str, ...] = ()
    pos_weight: bool = False


K = PointwiseLossKind
KINDS: dict[PointwiseLossKind, KindRow] = {
    K.MSE: KindRow(0, "weight", grads=("input", "target", "extra")),
    K.L1: KindRow(1, "weight", grads=("input", "target", "extra")),
    K.SMOOTH_L1: KindRow(2, param=("beta", 1.0)),
    K.HUBER: KindRow(3, "weight", param=("delta", 1.0), grads=("input", "target", "extra")),
    K.BCE: KindRow(4, "weight"),
    K.BCE_LOGITS: KindRow(5, "weight", pos_weight=True),
    K.KL_DIV: KindRow(6, flags=("log_target",)),
    K.SOFT_MARGIN: KindRow(7, grads=("input",)),
    K.POISSON_NLL: KindRow(8, param=("eps", 1e-8), flags=("log_input", "full")),
    K.GAUSSIAN_NLL: KindRow(9, "var", True, ("eps", 1e-6), ("input", "target", "extra"),
                            ("full",)),
    K.HINGE_EMBEDDING: KindRow(10, param=("margin", 1.0), grads=("input",)),
    K.MARGIN_RANKING: KindRow(11, "target", True, ("margin", 0.0), ("input", "target", "extra")),
    K.MULTILABEL_SOFT_MARGIN: KindRow(12, "weight", grads=("input", "target", "extra")),
}


@dataclass(frozen=True)
class PointwiseLossDescriptor(Descriptor):
    """One pointwise loss over operands broadcast to `shape` (the torch functions broadcast
    and promote first: every operand has `element` and is seen at `shape`).

    Operands: `input` (input1 for margin_ranking), `target` (input2 for margin_ranking),
    `extra` (the kind's third operand: weight, gaussian var or the ranking target;
    `has_extra`), `pos_weight` (binary_cross_entropy_with_logits; `has_pos_weight`).
    `param`: beta / delta / margin / eps (None: torch's default for the kind). `log_input`:
    poisson_nll's log_input, kl_div's log_target. `full`: poisson_nll's and gaussian_nll's
    Stirling / constant term. multilabel_soft_margin averages over the last dim first, so its
    per-sample loss (reduction none) has `shape[:-1]`.
    """

    kind: PointwiseLossKind
    shape: tuple[int, ...]
    element: ElementKind
    reduction: PointwiseReduction = PointwiseReduction.MEAN
    has_extra: bool = False
    has_pos_weight: bool = False
    param: float | None = None
    log_input: bool = False
    full: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.param is None and isinstance(self.kind, PointwiseLossKind):
            row = KINDS[self.kind]
            object.__setattr__(self, "param", row.param[1] if row.param else 0.0)
        if isinstance(self.param, int) and not isinstance(self.param, bool):
            object.__setattr__(self, "param", float(self.param))

    @property
    def row(self) -> KindRow:
        return KINDS[self.kind]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def per_row(self) -> bool:
        """multilabel_soft_margin: the loss of a sample is the mean over the last dim."""
        return self.kind is K.MULTILABEL_SOFT_MARGIN

    @property
    def loss_shape(self) -> tuple[int, ...]:
        if self.reduction is not PointwiseReduction.NONE:
            return ()
        return self.shape[:-1] if self.per_row else self.shape

    @property
    def divisor(self) -> float:
        """What the sum of the elementwise losses is divided by (per reduced sample for
        multilabel_soft_margin with reduction none)."""
        red = self.reduction
        classes = self.shape[-1] if self.per_row else 1
        if red is PointwiseReduction.MEAN:
            return float(self.numel)  # multilabel: mean over samples of sums / C
        if red is PointwiseReduction.BATCHMEAN:
            return float(self.shape[0]) if self.shape else 1.0
        return float(classes)

    def validate(self, who: str) -> None:
        if not isinstance(self.kind, PointwiseLossKind):
            raise V.InvalidProblem(
                f"{who}: kind must be a PointwiseLossKind, got {self.kind!r}")
        V.check_kind(who, "element", self.element)
        shape = V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", shape, lo=1 if self.per_row else 0)
        V.check_element(who, "element", self.element, _FLOATS)
        if not isinstance(self.reduction, PointwiseReduction):
            raise V.InvalidProblem(
                f"{who}: {self.reduction!r} is not a valid value for reduction; expected one of "
                f"{[r.value for r in PointwiseReduction]}")
        if self.reduction is PointwiseReduction.BATCHMEAN and self.kind is not K.KL_DIV:
            raise V.InvalidProblem(
                f"{who}: reduction 'batchmean' is for kl_div only; expected none, mean or sum "
                f"for {self.kind.value}, got 'batchmean'")
        for name in ("has_extra", "has_pos_weight", "log_input", "full"):
            V.check_bool(who, name, getattr(self, name))
        row = self.row
        if self.has_extra and row.extra is None:
            raise V.InvalidProblem(f"{who}: {self.kind.value} takes no third operand; expected "
                                   f"has_extra False, got True")
        if row.extra_required and not self.has_extra:
            raise V.InvalidProblem(f"{who}: {self.kind.value} needs its {row.extra} operand; "
                                   f"expected has_extra True, got False")
        if self.has_pos_weight and not row.pos_weight:
            raise V.InvalidProblem(f"{who}: pos_weight is for binary_cross_entropy_with_logits "
                                   f"only; expected has_pos_weight False, got True")
        if isinstance(self.param, bool) or not isinstance(self.param, float):
            raise V.InvalidProblem(f"{who}: param must be a float, got {self.param!r}")
        V.check_finite(who, "param", self.param)
        if self.kind is K.SMOOTH_L1 and self.param < 0:
            raise V.InvalidProblem(f"{who}: smooth_l1_loss does not support negative values for "
                                   f"beta; expected beta >= 0, got {self.param}")
        if self.kind is K.HUBER and self.param <= 0:
            raise V.InvalidProblem(f"{who}: huber_loss does not support non-positive values for "
                                   f"delta; expected delta > 0, got {self.param}")
        for name in ("log_input", "full"):
            if getattr(self, name) and not _flag_allowed(self.kind, name):
                raise V.InvalidProblem(f"{who}: {self.kind.value} has no {name} option; "
                                       f"expected {name} False, got True")


def _flag_allowed(kind: PointwiseLossKind, name: str) -> bool:
    flags = KINDS[kind].flags
    if name == "log_input":
        return "log_input" in flags or "log_target" in flags
    return name in flags


@dataclass(frozen=True)
class PointwiseLossBackwardDescriptor(PointwiseLossDescriptor):
    """The gradients of the loss w.r.t. the operands torch differentiates, at `shape` (the
    torch functions sum them back to broadcast operands' shapes)."""


def _operand(when=None, output: bool = False, optional: bool = False):
    # a conditional operand stays positional (no default), like the plain ones
    default = dataclasses.MISSING if when is not None else None
    return operand("shape", "element", output=output, optional=optional, when=when,
                   strides=NON_NEGATIVE, default=default)


_extra = attrgetter("has_extra")
_pos = attrgetter("has_pos_weight")


@dataclass
class PointwiseLossArgs(Args):
    """Inputs at `shape` (any non-negative strides, broadcast views with stride 0 too); the
    loss (`loss_shape`, contiguous); `grad_input` (optional, reduced losses only): the
    input's gradient for a unit upstream gradient, written in the same pass (contiguous)."""

    input: torch.Tensor = _operand()
    target: torch.Tensor = _operand()
    extra: torch.Tensor | None = _operand(_extra)
    pos_weight: torch.Tensor | None = _operand(_pos)
    loss: torch.Tensor = operand("loss_shape", "element", output=True)
    grad_input: torch.Tensor | None = _operand(output=True, optional=True)


@dataclass
class PointwiseLossBackwardArgs(Args):
    """grad_loss (`loss_shape`, any strides) and the forward's inputs; each gradient is
    optional (None: not computed), contiguous at `shape`."""

    grad_loss: torch.Tensor = operand("loss_shape", "element", strides=NON_NEGATIVE)
    input: torch.Tensor = _operand()
    target: torch.Tensor = _operand()
    extra: torch.Tensor | None = _operand(_extra)
    pos_weight: torch.Tensor | None = _operand(_pos)
    grad_input: torch.Tensor | None = _operand(output=True, optional=True)
    grad_target: torch.Tensor | None = _operand(output=True, optional=True)
    grad_extra: torch.Tensor | None = _operand(output=True, optional=True)
