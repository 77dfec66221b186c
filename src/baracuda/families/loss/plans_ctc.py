"""CTC loss plans (torch.nn.functional.ctc_loss), forward and backward.

**Formulas** (torch's semantics; lp = log_probs, l' the target with blanks around and
between its labels, 2 L_b + 1 states): alpha_t(s) = lp[t, l'_s] + logsumexp(alpha_{t-1}(s),
alpha_{t-1}(s - 1), alpha_{t-1}(s - 2) when l'_s is a label differing from l'_{s-2});
nll_b = -logsumexp(alpha_{T_b - 1}(2 L_b), alpha_{T_b - 1}(2 L_b - 1)); T_b = 0 gives 0 for an
empty target and inf otherwise. beta the same backwards in time; d nll / d lp[t, c] =
exp(lp[t, c]) - sum_{s: l'_s = c} exp(alpha_t(s) + beta_t(s) + nll - lp[t, c]) for
t < T_b, 0 after (the label classes' sums grouped by comparing target positions, not by
atomics). zero_infinity: an infinite nll counts 0 and gets a zero gradient.
Reduction mean: mean over items of nll_b / max(L_b, 1); sum; none.

**Dtypes**: f32 and f64 log-probabilities (torch's set), i32 / i64 targets, int64 lengths
(on the device); padded (N, S) or concatenated targets.

**Workspace**: forward mean / sum: N accumulators; backward: log_beta, N T (2 L + 1)
accumulators.

**Precision**: deterministic and bit-stable: one program per batch item runs each dynamic
program in time order, one program per (t, b) writes a gradient row, grouping the label
states of a class by comparison; no atomics.
"""

from __future__ import annotations

from ...backends.triton_support import acc_type, next_pow2
from ...core import validate as V
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import OpCategory
from .descriptors import LossReduction
from .descriptors_ctc import (
    CtcLossArgs,
    CtcLossBackwardArgs,
    CtcLossBackwardDescriptor,
    CtcLossDescriptor,
)
from .kernels_ctc import ctc_alpha_kernel, ctc_beta_kernel, ctc_grad_kernel
from .kernels_structured import reduce_rows_kernel

#: What the family package re-exports from this module.
__all__ = ["CtcLossBackwardPlan", "CtcLossPlan"]

#: The DP holds all 2 L + 1 states of an item in one block.
MAX_STATES = 16384


def ctc_config(desc) -> dict:
    block_s = next_pow2(desc.states)
    return {"BLOCK_S": block_s, "num_warps": 4 if block_s <= 1024 else 8,
            "BLOCK_N": next_pow2(desc.N) if desc.concatenated else 1}


def grad_config(desc) -> dict:
    block_l = min(next_pow2(max(desc.max_target_length, 1)), 256)
    return {"BLOCK_L": block_l, "BLOCK_K": max(1, min(block_l, 1024 // block_l)),
            "BLOCK_C": min(next_pow2(desc.C), 1024), "num_warps": 4,
            "BLOCK_N": next_pow2(desc.N) if desc.concatenated else 1}


def _target_strides(desc, targets) -> tuple[int, int]:
    if desc.concatenated:
        return targets.stride(0), 0
    return targets.stride(0), targets.stride(1)


class _CtcPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LOSS

    def check_args(self, args) -> None:
        """The declared operands; lengths, nll and log_alpha are read as dense arrays."""
        super().check_args(args)
        who = type(self).__name__
        for name in ("input_lengths", "target_lengths", "neg_log_likelihood", "log_alpha"):
            t = getattr(args, name)
            if not t.is_contiguous():
                raise V.Unsupported(f"{who}: {name} must be contiguous, got strides "
                                    f"{tuple(t.stride())}")


@register_plan
class CtcLossPlan(_CtcPlan):
    __doc__ = __doc__
    descriptor_type = CtcLossDescriptor
    args_type = CtcLossArgs
    partner = "CtcLossBackwardPlan"


@register_plan
class CtcLossBackwardPlan(_CtcPlan):
    __doc__ = __doc__
    descriptor_type = CtcLossBackwardDescriptor
    args_type = CtcLossBackwardArgs
    partner = "CtcLossPlan"
    is_backward = True


class _TritonCtc(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)

    def supports(self, desc, pref, arch):
        if desc.states > MAX_STATES:
            return f"at most {MAX_STATES} states (2 max_target_length + 1), got {desc.states}"
        return None


@register_candidate(CtcLossPlan)
class TritonCtcForward(_TritonCtc):
    name = "triton_ctc_alpha"

    def workspace_size(self, desc) -> int:
        if desc.reduction is LossReduction.NONE:
            return 0
        return desc.N * desc.element.torch_dtype.itemsize

    def launch(self, desc, a, workspace) -> None:
        lp, tg = a.log_probs, a.targets
        none = desc.reduction is LossReduction.NONE
        ws = workspace.view(desc.element.torch_dtype) if workspace is not None else a.loss
        cfg = ctc_config(desc)
        acc = acc_type(desc.element)
        if desc.N > 0:
            ctc_alpha_kernel[(desc.N,)](
                lp, tg, a.input_lengths, a.target_lengths, a.neg_log_likelihood, a.log_alpha,
                ws, a.loss, desc.N, desc.C, desc.blank, *lp.stride(), *_target_strides(desc, tg),
                a.log_alpha.stride(0), a.log_alpha.stride(1),
                a.loss.stride(0) if a.loss.dim() else 0, desc.states,
                CONCAT=desc.concatenated, LOSS=1 if none else 2, ZERO_INF=desc.zero_infinity,
                MEAN=desc.reduction is LossReduction.MEAN, ACC=acc, **cfg)
        if not none:
            reduce_rows_kernel[(1,)](ws, a.loss, desc.N,
                                     MEAN=desc.reduction is LossReduction.MEAN, ACC=acc,
                                     BLOCK=1024)


@register_candidate(CtcLossBackwardPlan)
class TritonCtcBackward(_TritonCtc):
    name = "triton_ctc_beta_grad"

    def workspace_size(self, desc) -> int:
        return desc.N * desc.T * desc.states * desc.element.torch_dtype.itemsize

    def launch(self, desc, a, workspace) -> None:
        n_total = desc.N * desc.T
        if n_total == 0 or desc.C == 0:
            return
        lp, tg = a.log_probs, a.targets
        beta = workspace.view(desc.element.torch_dtype)
        acc = acc_type(desc.element)
        cfg = ctc_config(desc)
        ts = _target_strides(desc, tg)
        S, T = desc.states, desc.T
        ctc_beta_kernel[(desc.N,)](
            lp, tg, a.input_lengths, a.target_lengths, beta, desc.N, desc.C, desc.blank,
            *lp.stride(), *ts, T * S, S, S, CONCAT=desc.concatenated, ACC=acc, **cfg)
        mode = {LossReduction.NONE: 1, LossReduction.SUM: 2, LossReduction.MEAN: 3}
        g = a.grad_loss
        ctc_grad_kernel[(n_total,)](
            lp, tg, a.input_lengths, a.target_lengths, a.neg_log_likelihood, a.log_alpha, beta,
            g, a.grad_log_probs, desc.N, desc.C, desc.blank, T, *lp.stride(), *ts,
            a.log_alpha.stride(0), a.log_alpha.stride(1), T * S, S,
            g.stride(0) if g.dim() else 0, *a.grad_log_probs.stride(),
            CONCAT=desc.concatenated, GRAD=mode[desc.reduction], ZERO_INF=desc.zero_infinity,
            ACC=acc, **grad_config(desc))
