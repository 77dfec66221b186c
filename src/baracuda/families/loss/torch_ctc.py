"""torch.nn.functional.ctc_loss on the CTC plans, differentiable in log_probs (as torch's).

The lengths (tensors or lists) are read on the host, as torch's own ctc_loss does, for its
argument checks and the longest target (the DP's state count); they reach the kernels as
int64 tensors on the log-probabilities' device. The forward op returns the loss, the
per-item negative log-likelihood and log_alpha; the backward plan reuses the last two.
"""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from .plans_ctc import CtcLossBackwardPlan, CtcLossPlan

__all__ = ["ctc_loss"]


def _desc(plan, log_probs, targets, max_len: int, reduction: str, blank: int, zero_inf: bool):
    return plan.descriptor_type.cached(tuple(log_probs.shape), log_probs.dtype,
                                       tuple(targets.shape), max_len, targets.dtype, reduction,
                                       blank, zero_inf)


def _outputs(log_probs, max_len: int, reduction: str):
    T, N, _ = log_probs.shape
    loss = log_probs.new_empty((N,) if reduction == "none" else ())
    return loss, log_probs.new_empty((N,)), log_probs.new_empty((N, T, 2 * max_len + 1))


def _forward(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: torch.Tensor,
             target_lengths: torch.Tensor, max_len: int, blank: int, reduction: str,
             zero_infinity: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    loss, nll, alpha = _outputs(log_probs, max_len, reduction)
    run_plan(CtcLossPlan, _desc(CtcLossPlan, log_probs, targets, max_len, reduction, blank,
                                zero_infinity),
             CtcLossPlan.args_type(log_probs, targets, input_lengths, target_lengths, loss, nll,
                                   alpha))
    return loss, nll, alpha


def _forward_fake(log_probs, targets, input_lengths, target_lengths, max_len, blank, reduction,
                  zero_infinity):
    return _outputs(log_probs, max_len, reduction)


def _backward(grad: torch.Tensor, log_probs: torch.Tensor, targets: torch.Tensor,
              input_lengths: torch.Tensor, target_lengths: torch.Tensor, nll: torch.Tensor,
              alpha: torch.Tensor, max_len: int, blank: int, reduction: str,
              zero_infinity: bool) -> torch.Tensor:
    dlp = torch.empty_like(log_probs, memory_format=torch.contiguous_format)
    run_plan(CtcLossBackwardPlan, _desc(CtcLossBackwardPlan, log_probs, targets, max_len,
                                        reduction, blank, zero_infinity),
             CtcLossBackwardPlan.args_type(grad, log_probs, targets, input_lengths,
                                           target_lengths, nll, alpha, dlp))
    return dlp


def _backward_fake(grad, log_probs, targets, input_lengths, target_lengths, nll, alpha, max_len,
                   blank, reduction, zero_infinity):
    return torch.empty_like(log_probs, memory_format=torch.contiguous_format)


_bwd_op = define_op("ctc_loss_backward", _backward, _backward_fake)


def _setup(ctx, inputs, output):
    log_probs, targets, il, tl_, *params = inputs
    _, nll, alpha = output
    ctx.mark_non_differentiable(nll, alpha)
    ctx.save_for_backward(log_probs, targets, il, tl_, nll, alpha)
    ctx.params = params


def _autograd(ctx, grad, _g_nll, _g_alpha):
    saved = ctx.saved_tensors
    dlp = _bwd_op(grad, *saved, *ctx.params) if ctx.needs_input_grad[0] else None
    return dlp, None, None, None, None, None, None, None


_op = define_op("ctc_loss", _forward, _forward_fake, backward=_autograd, setup_context=_setup)


def _lengths(name: str, value, n: int, device) -> tuple[torch.Tensor, list[int]]:
    if isinstance(value, torch.Tensor):
        host = value.reshape(-1).tolist() if value.dim() <= 1 else None
        if host is None:
            raise RuntimeError(f"{name} must be a 1-D tensor or a list, got shape "
                               f"{list(value.shape)}")
        tensor = value.reshape(-1).to(device=device, dtype=torch.int64).contiguous()
    else:
        host = [int(v) for v in value]
        tensor = torch.tensor(host, dtype=torch.int64, device=device)
    if len(host) != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return tensor, [int(v) for v in host]


def _check(what: str, values: list[int], lo: int, hi: int | None) -> None:
    for v in values:
        if v < lo:
            raise RuntimeError(f"Expected {what} to have value at least {lo}, but got value {v} "
                               "(while checking arguments for ctc_loss_allocate_outputs)")
        if hi is not None and v > hi:
            raise RuntimeError(f"Expected {what} to have value at most {hi}, but got value {v} "
                               "(while checking arguments for ctc_loss_allocate_outputs)")


def ctc_loss(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> torch.Tensor:
    """torch.nn.functional.ctc_loss; differentiable in log_probs."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: log_probs must be 2-D (T, C) or 3-D (T, N, C), got "
                           f"{log_probs.dim()}-D")
    batched = log_probs.dim() == 3
    if log_probs.dtype not in (torch.float32, torch.float64):
        dev = "cuda" if log_probs.is_cuda else "cpu"
        raise NotImplementedError(f'"ctc_loss_{dev}" not implemented for '
                                  f"'{str(log_probs.dtype).split('.')[-1].capitalize()}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    T, N, C = lp.shape
    if targets.is_floating_point():  # torch accepts them, as integral class indices
        targets = targets.long()
    tg = targets if batched or targets.dim() != 1 else targets.unsqueeze(0)
    if tg.device != lp.device:  # (torch takes host targets with device log-probabilities)
        tg = tg.to(lp.device)
    if not batched:
        input_lengths = [int(input_lengths)] if not isinstance(input_lengths, (list, tuple)) \
            and (not isinstance(input_lengths, torch.Tensor) or input_lengths.dim() == 0) \
            else input_lengths
        target_lengths = [int(target_lengths)] if not isinstance(target_lengths, (list, tuple)) \
            and (not isinstance(target_lengths, torch.Tensor) or target_lengths.dim() == 0) \
            else target_lengths
    if not 0 <= int(blank) < C:
        raise RuntimeError("blank must be in label range")
    il, il_host = _lengths("input_lengths", input_lengths, N, lp.device)
    tl_, tl_host = _lengths("target_lengths", target_lengths, N, lp.device)
    _check("input_lengths", il_host, 0, T)
    _check("target_lengths", tl_host, 0, None)
    max_len = max(tl_host) if tl_host else 0
    if tg.dim() == 1:
        need = sum(tl_host)
        if tg.shape[0] != need:
            raise RuntimeError(f"Expected tensor to have size {need} at dimension 0, but got "
                               f"size {tg.shape[0]} for argument #2 'targets' (while checking "
                               "arguments for ctc_loss_allocate_outputs)")
    elif tg.dim() == 2:
        if tg.shape[1] < max_len:
            raise RuntimeError(f"Expected tensor to have size at least {max_len} at dimension "
                               f"1, but got size {tg.shape[1]} for argument #2 'targets' "
                               "(while checking arguments for ctc_loss_allocate_outputs)")
    else:
        raise RuntimeError(f"ctc_loss: targets must be 1-D or 2-D, got {tg.dim()}-D")
    if not tg.is_cuda and tg.numel() and not torch.compiler.is_compiling():
        # out-of-range labels would read past the class axis (torch does not check them)
        lo, hi = int(tg.min()), int(tg.max())
        if (lo < 0 or hi >= C) and max_len > 0:
            valid = _used(tg, tl_host)
            if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= C):
                raise IndexError(f"ctc_loss: target label out of range [0, {C})")
    loss = _op(lp, tg, il, tl_, max_len, int(blank), reduction, bool(zero_infinity))[0]
    return loss.reshape(()) if not batched and reduction == "none" else loss


def _used(tg: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """The labels the lengths select (padding beyond a target's length is never read)."""
    if tg.dim() == 1:
        return tg
    parts = [tg[b, :n] for b, n in enumerate(lengths)]
    return torch.cat(parts) if parts else tg.reshape(-1)
