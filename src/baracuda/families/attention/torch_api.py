"""torch.nn.functional.scaled_dot_product_attention on SdpaPlan (differentiable through
SdpaBackwardPlan), and a rotary-embedding function on RopePlan."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import Unsupported
from ...core.vocab import PlanPreference
from . import descriptors as D
from .plans import SdpaBackwardPlan, SdpaPlan
from .torch_rope import apply_rotary_emb, unit_last

__all__ = ["scaled_dot_product_attention", "apply_rotary_emb"]

_CAUSAL = (D.CausalKind.NONE, D.CausalKind.TOP_LEFT, D.CausalKind.BOTTOM_RIGHT)
_DEFAULT, _DETERMINISTIC = PlanPreference(), PlanPreference(require_deterministic=True)


def _desc(cls, q, k, v, mask, dropout_p: float, causal: int, scale: float):
    kind = D.MaskKind.NONE
    if mask is not None:
        kind = D.MaskKind.BOOLEAN if mask.dtype == torch.bool else D.MaskKind.ADDITIVE
    b, h, sq, dk = q.shape
    # cached: a training loop repeats a few shapes, and building a descriptor is host time
    return cls.cached(b, h, k.shape[1], sq, k.shape[2], dk, v.shape[3], float(scale), q.dtype,
                      _CAUSAL[causal], kind, None if mask is None else tuple(mask.shape),
                      float(dropout_p))


def _lse_dtype(q):
    return torch.float64 if q.dtype == torch.float64 else torch.float32


def _fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
         rng: torch.Tensor | None, dropout_p: float, causal: int,
         scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    q, k, v = _aligned_base(q), _aligned_base(k), _aligned_base(v)
    out = q.new_empty((*q.shape[:3], v.shape[3]))
    lse = q.new_empty(q.shape[:3], dtype=_lse_dtype(q))
    desc = _desc(D.SdpaDescriptor, q, k, v, mask, dropout_p, causal, scale)
    run_plan(SdpaPlan, desc, D.SdpaArgs(q, k, v, out, lse, mask, rng))
    return out, lse


def _fwd_fake(q, k, v, mask, rng, dropout_p, causal, scale):
    return (q.new_empty((*q.shape[:3], v.shape[3])),
            q.new_empty(q.shape[:3], dtype=_lse_dtype(q)))


def _bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
         out: torch.Tensor, lse: torch.Tensor, mask: torch.Tensor | None,
         rng: torch.Tensor | None, dropout_p: float, causal: int,
         scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k, v, out = (_aligned_base(t) for t in (q, k, v, out))
    dout = _aligned_base(_unit_last(dout))
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    desc = _desc(D.SdpaBackwardDescriptor, q, k, v, mask, dropout_p, causal, scale)
    # torch.use_deterministic_algorithms(True) selects a deterministic backward, as it does
    # for torch's own SDPA (the default cuDNN backward sums dQ with float atomics)
    pref = _DETERMINISTIC if torch.are_deterministic_algorithms_enabled() else _DEFAULT
    run_plan(SdpaBackwardPlan, desc,
             D.SdpaBackwardArgs(q, k, v, out, dout, lse, dq, dk, dv, mask, rng), pref)
    return dq, dk, dv


def _bwd_fake(dout, q, k, v, out, lse, mask, rng, dropout_p, causal, scale):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


_sdpa_bwd = define_op("sdpa_backward", _bwd, _bwd_fake)


def _setup(ctx, inputs, output):
    q, k, v, mask, rng, dropout_p, causal, scale = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, mask, rng)
    ctx.params = (dropout_p, causal, scale)
    ctx.mark_non_differentiable(lse)
    ctx.set_materialize_grads(False)  # no zero-filled gradient for lse on every step


def _mask_grad(dout, q, k, v, out, lse, mask, causal: int, scale: float) -> torch.Tensor:
    """d(additive mask) = dS = P ∘ (dP − rowsum(dO ∘ O)), as torch's math backend gives it;
    recomputed in torch at [B, H, Sq, Sk] (only when the mask itself requires grad)."""
    acc = lse.dtype
    group = q.shape[1] // max(k.shape[1], 1)
    k, v = (t.repeat_interleave(group, 1) if group > 1 else t for t in (k, v))
    s = (q.to(acc) @ k.to(acc).transpose(-1, -2)) * scale + mask.to(acc)
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        off = sk - sq if _CAUSAL[causal] is D.CausalKind.BOTTOM_RIGHT else 0
        i = torch.arange(sq, device=q.device)[:, None]
        s = s.masked_fill(torch.arange(sk, device=q.device)[None, :] > i + off, -math.inf)
    p = torch.exp(s - lse[..., None])  # rows that see no key: lse = +inf, p = 0
    dp = dout.to(acc) @ v.to(acc).transpose(-1, -2)
    delta = (dout.to(acc) * out.to(acc)).sum(-1, keepdim=True)
    return (p * (dp - delta)).to(mask.dtype)


def _autograd(ctx, dout, _dlse):
    if dout is None:
        return None, None, None, None, None, None, None, None
    q, k, v, out, lse, mask, rng = ctx.saved_tensors
    dq, dk, dv = _sdpa_bwd(dout, q, k, v, out, lse, mask, rng, *ctx.params)
    dmask = None
    if ctx.needs_input_grad[3]:
        _, causal, scale = ctx.params
        dmask = _mask_grad(dout, q, k, v, out, lse, mask, causal, scale)
    return dq, dk, dv, dmask, None, None, None, None


_sdpa_fwd = define_op("sdpa", _fwd, _fwd_fake, backward=_autograd, setup_context=_setup)


def _unit_last(t: torch.Tensor) -> torch.Tensor:
    """The kernels need a unit-stride head dim; other layouts (an expanded gradient, a
    transposed view) are packed once here, as torch's fused kernels do. f16/bf16 operands also
    get non-zero outer strides that are multiples of 16 bytes (cuDNN's TMA loads; torch's cuDNN
    and flash paths pack the same way), so the default cuDNN plan can take them; their base
    address is the implementation's to check (`_aligned_base`: a traced call has none)."""
    t = unit_last(t)
    if t.dtype in (torch.float16, torch.bfloat16) and t.numel() and any(
            n > 1 and (st == 0 or st % 8) for n, st in zip(t.shape[:-1], t.stride()[:-1])):
        return t.contiguous()
    return t


def _aligned_base(t: torch.Tensor) -> torch.Tensor:
    """t, or a packed copy when an f16/bf16 operand starts off a 16-byte boundary (a view at
    an odd offset): cuDNN's TMA loads need aligned bases."""
    if t.dtype in (torch.float16, torch.bfloat16) and t.numel() and t.data_ptr() % 16:
        return t.clone(memory_format=torch.contiguous_format)  # (contiguous() may keep it)
    return t


def _heads(t: torch.Tensor) -> int:
    return t.shape[-3] if t.dim() >= 3 else 1


def _broadcast_qkv(query, key, value, enable_gqa: bool):
    """(q, k, v) as [B, H, S, D] / [B, Hkv, S, D] and the output's leading shape, per torch:
    its math backend broadcasts every dim but the last two across q, k and v (any ranks >= 2,
    batch and head dims of extent 1), and enable_gqa first repeats k's and v's heads (dim -3)
    to q's. Broadcast dims stay stride-0 views (autograd's expand sums their gradients);
    k and v sharing fewer heads than q run natively as GQA / MQA (num_kv_heads)."""
    if (query.dim() == key.dim() == value.dim() == 4
            and query.shape[0] == key.shape[0] == value.shape[0]
            and key.shape[1] == value.shape[1]
            and (query.shape[1] == key.shape[1]
                 or (enable_gqa and key.shape[1] and query.shape[1] % key.shape[1] == 0))):
        # the common call (MHA, or GQA with enable_gqa): nothing to broadcast; skipping the
        # shape arithmetic and views saves host time (small eager steps are host-bound)
        return query, key, value, tuple(query.shape[:2])
    hq, hk, hv = _heads(query), _heads(key), _heads(value)
    if enable_gqa:
        if min(query.dim(), key.dim(), value.dim()) < 3:
            raise RuntimeError("scaled_dot_product_attention: enable_gqa needs a heads dim "
                               "(-3) on query, key and value, got ranks "
                               f"{query.dim()}, {key.dim()}, {value.dim()}")
        if (0 in (hk, hv) and hq) or (hk and hv and (hq % hk or hq % hv)):
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               f"heads in query, got {hk}, {hv} and {hq}")
        if hk != hv:  # each repeats by its own factor: give both q's heads
            key = key.repeat_interleave(hq // max(hk, 1), dim=-3)
            value = value.repeat_interleave(hq // max(hv, 1), dim=-3)
            hk = hv = hq
        heads, kv_heads = hq, hk
    else:
        try:
            heads = torch.broadcast_shapes((hq,), (hk,), (hv,))[0]
        except RuntimeError as exc:
            raise RuntimeError(f"scaled_dot_product_attention: the head counts of query, key "
                               f"and value ({hq}, {hk}, {hv}) do not broadcast (pass "
                               "enable_gqa=True for grouped-query attention)") from exc
        # k, v with one head serve every query head (MQA); a one-head q is broadcast
        kv_heads = 1 if hk == hv == 1 else heads
    try:
        batch = tuple(torch.broadcast_shapes(*(t.shape[:-3] for t in (query, key, value))))
    except RuntimeError as exc:
        raise RuntimeError(f"scaled_dot_product_attention: the batch dims of query, key and "
                           f"value ({tuple(query.shape)}, {tuple(key.shape)}, "
                           f"{tuple(value.shape)}) do not broadcast") from exc
    flat = [math.prod(batch)]
    q = query.expand(*batch, heads, *query.shape[-2:]).reshape(*flat, heads,
                                                                *query.shape[-2:])
    k, v = (t.expand(*batch, kv_heads, *t.shape[-2:]).reshape(*flat, kv_heads, *t.shape[-2:])
            for t in (key, value))
    lead = (*batch, heads) if max(query.dim(), key.dim(), value.dim()) >= 3 else ()
    return q, k, v, lead


def _mask_and_causal(attn_mask, is_causal: bool, q, lead: tuple, sq: int, sk: int):
    """(4-d mask or None, causal index) from torch's attn_mask / is_causal / CausalBias."""
    causal = 1 if is_causal else 0
    if attn_mask is None:
        return None, causal
    try:
        from torch.nn.attention.bias import CausalBias, CausalVariant
    except ImportError:  # pragma: no cover - older torch
        CausalBias = None
    if CausalBias is not None and isinstance(attn_mask, CausalBias):
        lower_right = attn_mask.variant == CausalVariant.LOWER_RIGHT
        return None, 2 if lower_right else 1
    # torch takes bool, the query's dtype, or float32 with any query (the plan reads either)
    if attn_mask.dtype not in (torch.bool, q.dtype, torch.float32):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {q.dtype} instead.")
    full = (*lead, sq, sk)
    try:
        mask = torch.broadcast_to(attn_mask, full)  # stride-0 view, no copy
    except RuntimeError as exc:
        raise RuntimeError(f"scaled_dot_product_attention: attn_mask of shape "
                           f"{tuple(attn_mask.shape)} is not broadcastable to {full}") from exc
    return mask.reshape(q.shape[0], q.shape[1], sq, sk), causal


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> torch.Tensor:
    """torch.nn.functional.scaled_dot_product_attention on SdpaPlan; differentiable in
    query, key and value. attn_mask may also be a torch.nn.attention.bias.CausalBias
    (causal_upper_left / causal_lower_right). Dropout draws a (seed, offset) pair from torch's
    generator, so torch.manual_seed makes it reproducible; the backward replays it exactly.
    Like torch, q, k and v broadcast in every dim but the last two (ranks may differ).

    Wider than torch in two places, by design: attn_mask together with is_causal=True applies
    both (torch's documentation says this raises; its CPU flash path accepts it), and any
    attn_mask that broadcasts to [..., L, S] is taken, a 1-D [S] one included."""
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"scaled_dot_product_attention: query, key and value must have "
                           f"rank >= 2, got {query.dim()}, {key.dim()}, {value.dim()}")
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query and key head dims differ: "
                           f"{query.shape[-1]} vs {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value lengths differ: "
                           f"{key.shape[-2]} vs {value.shape[-2]}")
    if (attn_mask is not None and attn_mask.requires_grad and torch.is_grad_enabled()
            and dropout_p > 0.0):
        raise Unsupported("scaled_dot_product_attention: a gradient for attn_mask with "
                          "dropout is not implemented; pass attn_mask.detach()")
    q, k, v, lead = _broadcast_qkv(query, key, value, enable_gqa)
    sq, sk, dk, dv = q.shape[2], k.shape[2], q.shape[3], v.shape[3]
    mask, causal = _mask_and_causal(attn_mask, is_causal, q, lead, sq, sk)
    if scale is None:
        scale = 1.0 / math.sqrt(dk) if dk else 1.0
    if dk == 0:  # scores are all 0 (torch: uniform weights): one zero feature says the same
        q, k = F.pad(q, (0, 1)), F.pad(k, (0, 1))
    if dv == 0:  # an empty output, through a one-feature value so the graph stays connected
        v = F.pad(v, (0, 1))
    rng = None
    if dropout_p > 0.0:
        rng = torch.randint(0, 2**62, (2,), dtype=torch.int64, device=query.device)
    q, k, v = (_unit_last(t) for t in (q, k, v))
    out, _ = _sdpa_fwd(q, k, v, mask, rng, float(dropout_p), causal, float(scale))
    return out[..., :dv].reshape(*lead, sq, dv)
