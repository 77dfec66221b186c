"""torch.nn.functional.embedding on baracuda plans, differentiable (deterministic gradient)."""

from __future__ import annotations

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core import validate as V
from . import descriptors as D
from .plans import EmbeddingBackwardPlan, EmbeddingPlan, EmbeddingRenormPlan
from .plans_bag import EmbeddingBagPlan

__all__ = ["embedding", "embedding_bag"]



def _padding_row(padding_idx: int | None, n: int) -> int:
    """padding_idx as a row number (-1: none), with torch's AssertionError for one outside
    [-n, n); raised explicitly so it survives `python -O`."""
    if padding_idx is None:
        return -1
    if not -n <= padding_idx < n and padding_idx != 0:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return int(padding_idx) % n if padding_idx < 0 else int(padding_idx)

def _flat(indices: torch.Tensor) -> torch.Tensor:
    # index tensors are small next to the rows they select: a copy here (only when the
    # indices are not viewable as 1-D) costs nothing that matters
    return indices.reshape(-1)


def _check_range(indices: torch.Tensor, v: int) -> None:
    if V.first_out_of_range(indices, v) is not None:  # one reduction and one sync
        raise IndexError("index out of range in self")


def _forward(input: torch.Tensor, weight: torch.Tensor, padding_idx: int) -> torch.Tensor:
    v, dm = weight.shape
    idx = _flat(input)
    if not idx.is_cuda:  # on CUDA the gather kernel asserts on the device, as torch's does
        _check_range(idx, v)
    out = weight.new_empty((idx.shape[0], dm))
    desc = D.EmbeddingDescriptor(v, dm, idx.shape[0], weight.dtype, idx.dtype,
                               None if padding_idx < 0 else padding_idx)
    run_plan(EmbeddingPlan, desc, D.EmbeddingArgs(weight, idx, out))
    return out.view(*input.shape, dm)


def _forward_fake(input, weight, padding_idx):
    return weight.new_empty((*input.shape, weight.shape[1]))


def _backward_impl(grad_out: torch.Tensor, input: torch.Tensor, num_weights: int,
                   padding_idx: int, scale_grad_by_freq: bool) -> torch.Tensor:
    dm = grad_out.shape[-1]
    idx = _flat(input)
    g = grad_out.reshape(idx.shape[0], dm)
    gw = grad_out.new_empty((num_weights, dm))
    desc = D.EmbeddingBackwardDescriptor(num_weights, dm, idx.shape[0], grad_out.dtype, idx.dtype,
                                       None if padding_idx < 0 else padding_idx,
                                       scale_grad_by_freq)
    run_plan(EmbeddingBackwardPlan, desc, D.EmbeddingBackwardArgs(g, idx, gw))
    return gw


def _backward_fake(grad_out, input, num_weights, padding_idx, scale_grad_by_freq):
    return grad_out.new_empty((num_weights, grad_out.shape[-1]))


_embedding_backward = define_op("embedding_backward", _backward_impl, _backward_fake)


def _setup(ctx, inputs, output):
    input, weight, padding_idx = inputs
    ctx.save_for_backward(input)
    ctx.num_weights, ctx.padding_idx = weight.shape[0], padding_idx


def _autograd(ctx, grad):
    (input,) = ctx.saved_tensors
    gw = _embedding_backward(grad, input, ctx.num_weights, ctx.padding_idx, ctx.freq)
    return None, gw, None


def _setup_freq(freq):
    def setup(ctx, inputs, output):
        _setup(ctx, inputs, output)
        ctx.freq = freq
    return setup


_embedding = define_op("embedding", _forward, _forward_fake, backward=_autograd,
                       setup_context=_setup_freq(False))
_embedding_freq = define_op("embedding_scale_grad_by_freq", _forward, _forward_fake,
                            backward=_autograd, setup_context=_setup_freq(True))


def _renorm_impl(weight: torch.Tensor, input: torch.Tensor, max_norm: float,
                 norm_type: float) -> None:
    idx = _flat(input)
    v, dm = weight.shape
    _check_range(idx, v)
    desc = D.EmbeddingRenormDescriptor(v, dm, idx.shape[0], weight.dtype, idx.dtype, max_norm,
                                     norm_type)
    run_plan(EmbeddingRenormPlan, desc, D.EmbeddingRenormArgs(idx, weight))


def _renorm_fake(weight, input, max_norm, norm_type) -> None:
    return None


_embedding_renorm = define_op("embedding_renorm_", _renorm_impl, _renorm_fake,
                              mutates_args=("weight",))


def embedding(input: torch.Tensor, weight: torch.Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> torch.Tensor:
    """torch.nn.functional.embedding on EmbeddingPlan; the weight gradient comes from the
    deterministic EmbeddingBackwardPlan (padding_idx row gets no gradient).

    max_norm renormalizes the referenced rows of weight in place first (EmbeddingRenormPlan),
    as torch does. Sparse gradients are not supported: NotImplementedError.
    """
    if sparse:
        raise NotImplementedError("baracuda embedding: sparse gradients are not supported")
    if input.dtype not in (torch.int32, torch.int64):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead")
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.dim()}-D")
    pad = _padding_row(padding_idx, weight.shape[0])
    if max_norm is not None:
        # torch renormalizes the referenced weight rows in place before the lookup
        with torch.no_grad():
            _embedding_renorm(weight, input, float(max_norm), float(norm_type))
    op = _embedding_freq if scale_grad_by_freq else _embedding
    return op(input, weight, pad)


def _bag_fwd(indices: torch.Tensor, weight: torch.Tensor, bounds: torch.Tensor,
             per_sample_weights: torch.Tensor | None, mode: str, padding_idx: int,
             freq: bool) -> tuple[torch.Tensor, torch.Tensor]:
    v, dm = weight.shape
    _check_range(indices, v)
    b = bounds.shape[0] - 1
    out = weight.new_empty((b, dm))
    mt = torch.empty((b, dm) if mode == "max" else (0,), dtype=torch.int64,
                     device=weight.device)
    desc = D.EmbeddingBagDescriptor(v, dm, indices.shape[0], b, mode, weight.dtype, indices.dtype,
                                  per_sample_weights is not None,
                                  None if padding_idx < 0 else padding_idx)
    run_plan(EmbeddingBagPlan, desc, D.EmbeddingBagArgs(
        weight, indices, bounds, out, per_sample_weights, mt if mode == "max" else None))
    return out, mt


def _bag_fake(indices, weight, bounds, per_sample_weights, mode, padding_idx, freq):
    b, dm = bounds.shape[0] - 1, weight.shape[1]
    mt = weight.new_empty((b, dm) if mode == "max" else (0,), dtype=torch.int64)
    return weight.new_empty((b, dm)), mt


def _bag_setup(ctx, inputs, output):
    indices, weight, bounds, psw, mode, padding_idx, freq = inputs
    ctx.save_for_backward(indices, weight, bounds, psw, output[1])
    ctx.mode, ctx.padding_idx, ctx.freq = mode, padding_idx, freq


def _bag_autograd(ctx, grad, grad_mt):
    indices, weight, bounds, psw, mt = ctx.saved_tensors
    t = indices.shape[0]
    pos = torch.arange(t, device=indices.device)
    # per-token rows of the gradient (torch ops, all deterministic), then one deterministic
    # sort-based EmbeddingBackwardPlan sum into the weight gradient
    bag = torch.searchsorted(bounds.to(torch.int64), pos, right=True) - 1
    valid = indices != ctx.padding_idx if ctx.padding_idx >= 0 else torch.ones_like(pos,
                                                                                 dtype=torch.bool)
    g_rows = grad.index_select(0, bag)
    if ctx.mode == "max":
        g_tok = torch.where(mt.index_select(0, bag) == pos[:, None], g_rows, 0)
    elif ctx.mode == "mean":
        size = torch.zeros(grad.shape[0], dtype=grad.dtype, device=grad.device)
        size = size.index_add(0, bag, valid.to(grad.dtype))  # integer-valued: exact
        g_tok = g_rows / size.clamp_min(1).index_select(0, bag)[:, None]
    else:
        g_tok = g_rows if psw is None else g_rows * psw[:, None]
    g_w = _embedding_backward(g_tok.contiguous(), indices, weight.shape[0], ctx.padding_idx,
                              ctx.freq)
    g_psw = None
    if psw is not None:
        rows = weight.index_select(0, indices)
        g_psw = torch.where(valid, (g_rows * rows).sum(-1), 0)
    return None, g_w, None, g_psw, None, None, None


_embedding_bag = define_op("embedding_bag", _bag_fwd, _bag_fake, backward=_bag_autograd,
                           setup_context=_bag_setup)


def embedding_bag(input: torch.Tensor, weight: torch.Tensor,
                  offsets: torch.Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: torch.Tensor | None = None,
                  include_last_offset: bool = False,
                  padding_idx: int | None = None) -> torch.Tensor:
    """torch.nn.functional.embedding_bag on EmbeddingBagPlan; the weight gradient goes
    through the deterministic EmbeddingBackwardPlan. sparse=True: NotImplementedError."""
    if sparse:
        raise NotImplementedError("baracuda embedding_bag: sparse gradients are not supported")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is "
                             "treated is a mini-batch of fixed length sequences.")
        nb, length = input.shape
        bounds = torch.arange(0, nb * length + 1, max(length, 1), device=input.device,
                              dtype=input.dtype)[: nb + 1]
        flat = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        flat = input
        offs = offsets.to(input.dtype)
        if offs.numel() and not torch.compiler.is_compiling():
            # torch (CPU) rejects these; unchecked, a bag would read before the first token
            # or past the last one (eager only: reading offsets back would break a compiled
            # graph, as other host-side checks here do not)
            first, last = int(offs[0]), int(offs[-1])
            if first != 0:
                raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                                   f"mini-batch has to start from position 0. However, got "
                                   f"{first}")
            if last > input.shape[0]:
                raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                                   f"({input.shape[0]}), but got offsets[-1] of {last}")
        bounds = offs if include_last_offset else torch.cat(
            [offs, torch.tensor([input.shape[0]], dtype=input.dtype, device=input.device)])
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    n = weight.shape[0]
    if padding_idx is not None and not -n <= padding_idx < n:  # torch: RuntimeError here
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} "
                           f"through {n - 1}, but got {padding_idx}")
    pad = _padding_row(padding_idx, n)
    if max_norm is not None:
        with torch.no_grad():
            _embedding_renorm(weight, flat, float(max_norm), float(norm_type))
    if per_sample_weights is not None:
        # the kernel reads the weights as a dense vector; torch takes any layout (a copy,
        # through which the gradient flows back)
        per_sample_weights = per_sample_weights.contiguous()
    out, _ = _embedding_bag(flat.contiguous(), weight, bounds.contiguous(),
                            per_sample_weights, mode, pad, bool(scale_grad_by_freq))
    return out
