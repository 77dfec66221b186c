"""CTC loss descriptors and args (torch.nn.functional.ctc_loss)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import NON_NEGATIVE, Args, operand
from ...core.plan import Descriptor
from ...core.vocab import INDEX_KINDS, ElementKind
from .descriptors import LossReduction

#: What the family package re-exports from this module.
__all__ = ["CtcLossArgs", "CtcLossBackwardArgs", "CtcLossBackwardDescriptor",
           "CtcLossDescriptor"]

#: torch's ctc_loss takes float32 and float64 log-probabilities (its kernels have no others).
CTC_FLOATS = [ElementKind.F32, ElementKind.F64]


@dataclass(frozen=True)
class CtcLossDescriptor(Descriptor):
    """log_probs (T, N, C); targets padded (N, S) or concatenated (sum of target lengths,);
    input / target lengths (N,) int64 on the device; `max_target_length` bounds every target
    length (the DP holds 2 max_target_length + 1 states). blank in [0, C)."""

    log_probs_shape: tuple[int, ...]
    element: ElementKind
    target_shape: tuple[int, ...]
    max_target_length: int
    target_element: ElementKind = ElementKind.I64
    reduction: LossReduction = LossReduction.MEAN
    blank: int = 0
    zero_infinity: bool = False

    @property
    def T(self) -> int:
        return self.log_probs_shape[0]

    @property
    def N(self) -> int:
        return self.log_probs_shape[1]

    @property
    def C(self) -> int:
        return self.log_probs_shape[2]

    @property
    def concatenated(self) -> bool:
        return len(self.target_shape) == 1

    @property
    def states(self) -> int:
        return 2 * self.max_target_length + 1

    @property
    def loss_shape(self) -> tuple[int, ...]:
        return (self.N,) if self.reduction is LossReduction.NONE else ()

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        return (self.N, self.T, self.states)

    def validate(self, who: str) -> None:
        shape = V.check_shape(who, "log_probs_shape", self.log_probs_shape)
        V.check_rank(who, "log_probs_shape", shape, 3, 3)
        tshape = V.check_shape(who, "target_shape", self.target_shape)
        V.check_rank(who, "target_shape", tshape, 1, 2)
        V.check_element(who, "element", self.element, CTC_FLOATS)
        V.check_element(who, "target_element", self.target_element,
                        sorted(INDEX_KINDS, key=lambda k: k.value))
        if not isinstance(self.reduction, LossReduction):
            raise V.InvalidProblem(
                f"{who}: {self.reduction!r} is not a valid value for reduction; expected one of "
                f"{[r.value for r in LossReduction]}")
        V.check_bool(who, "zero_infinity", self.zero_infinity)
        for name in ("blank", "max_target_length"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise V.InvalidProblem(f"{who}: {name} must be an int, got {v!r}")
        if not 0 <= self.blank < self.C:
            raise V.InvalidProblem(f"{who}: blank must be in label range [0, {self.C}), got "
                                   f"{self.blank}")
        if self.max_target_length < 0:
            raise V.InvalidProblem(f"{who}: max_target_length must be >= 0, got "
                                   f"{self.max_target_length}")
        if len(tshape) == 2 and (tshape[0] != self.N or tshape[1] < self.max_target_length):
            raise V.InvalidProblem(
                f"{who}: padded targets must be (N, S) with N = {self.N} and S >= "
                f"max_target_length = {self.max_target_length}, got {tshape}")


@dataclass(frozen=True)
class CtcLossBackwardDescriptor(CtcLossDescriptor):
    """d loss / d log_probs from grad_loss and the forward's nll and log_alpha."""


def _lengths():
    return operand(lambda d: (d.N,), ElementKind.I64, strides=NON_NEGATIVE)


def _log_probs(output: bool = False):
    return operand("log_probs_shape", "element", output=output, strides=NON_NEGATIVE)


@dataclass
class CtcLossArgs(Args):
    log_probs: torch.Tensor = _log_probs()
    targets: torch.Tensor = operand("target_shape", "target_element", strides=NON_NEGATIVE)
    input_lengths: torch.Tensor = _lengths()
    target_lengths: torch.Tensor = _lengths()
    loss: torch.Tensor = operand("loss_shape", "element", output=True, strides=NON_NEGATIVE)
    #: -log p(target | input) per item (zero_infinity not applied), kept for the backward
    neg_log_likelihood: torch.Tensor = operand(lambda d: (d.N,), "element", output=True)
    #: log alpha[b, t, s] (t < input_length[b]), kept for the backward (contiguous)
    log_alpha: torch.Tensor = operand("alpha_shape", "element", output=True)


@dataclass
class CtcLossBackwardArgs(Args):
    grad_loss: torch.Tensor = operand("loss_shape", "element", strides=NON_NEGATIVE)
    log_probs: torch.Tensor = _log_probs()
    targets: torch.Tensor = operand("target_shape", "target_element", strides=NON_NEGATIVE)
    input_lengths: torch.Tensor = _lengths()
    target_lengths: torch.Tensor = _lengths()
    neg_log_likelihood: torch.Tensor = operand(lambda d: (d.N,), "element")
    log_alpha: torch.Tensor = operand("alpha_shape", "element")
    grad_log_probs: torch.Tensor = _log_probs(output=True)
