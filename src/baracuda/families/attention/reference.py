"""Float64 references: the oracle for tests and benches."""

from __future__ import annotations

import math

import torch


def _f64(t):
    if t is None:
        return None
    return (t if t.requires_grad else t.detach()).to("cpu", torch.float64)


def sdpa_scores(q, k, mask, scale: float, causal_offset: int | None, mask_is_bool: bool):
    """Scaled, masked scores [B, H, Sq, Sk] in f64 (kv heads repeated for GQA)."""
    q, k = _f64(q), _f64(k)
    group = q.shape[1] // max(k.shape[1], 1)
    k = k.repeat_interleave(group, dim=1)
    s = q @ k.transpose(-1, -2) * scale
    if mask is not None:
        m = mask.detach().cpu()
        if mask_is_bool:
            s = s.masked_fill(~m.to(torch.bool), -math.inf)
        else:
            s = s + m.to(torch.float64)
    if causal_offset is not None:
        sq, sk = s.shape[-2:]
        i = torch.arange(sq)[:, None]
        j = torch.arange(sk)[None, :]
        s = s.masked_fill(j > i + causal_offset, -math.inf)
    return s


def safe_softmax(s: torch.Tensor) -> torch.Tensor:
    """torch's SDPA convention: a row whose scores are all -inf attends to nothing (zeros)."""
    dead = torch.isneginf(s).all(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(dead, 0.0), -1)
    return p.masked_fill(dead, 0.0)


def sdpa_forward(q, k, v, mask=None, scale=1.0, causal_offset=None, mask_is_bool=False,
                 keep=None, dropout_p=0.0):
    """(out [B,H,Sq,Dv], lse [B,H,Sq]); `keep` (bool [B,H,Sq,Sk]) is the dropout keep-mask."""
    s = sdpa_scores(q, k, mask, scale, causal_offset, mask_is_bool)
    p = safe_softmax(s)
    lse = torch.logsumexp(s, -1)
    lse = torch.where(torch.isneginf(lse), torch.full_like(lse, math.inf), lse)
    if keep is not None:
        p = p * keep.cpu().to(torch.float64) / (1.0 - dropout_p)
    v = _f64(v)
    v = v.repeat_interleave(q.shape[1] // max(v.shape[1], 1), dim=1)
    return p @ v, lse


def sdpa_backward(q, k, v, dout, mask=None, scale=1.0, causal_offset=None, mask_is_bool=False,
                  keep=None, dropout_p=0.0):
    """(dq, dk, dv) by autograd through the f64 forward; GQA grads summed over the group."""
    with torch.enable_grad():
        qq, kk, vv = (t.detach().to("cpu", torch.float64).requires_grad_() for t in (q, k, v))
        out, _ = sdpa_forward(qq, kk, vv, mask, scale, causal_offset, mask_is_bool, keep,
                              dropout_p)
        return torch.autograd.grad(out, (qq, kk, vv), _f64(dout), allow_unused=True)


def rope(x, cos, sin, position_ids, seq_axis: int, rotary_dim: int, interleaved: bool,
         inverse: bool = False):
    """Rotary embedding in f64; x [B, d1, d2, D], tables [P, R/2], position_ids [B, S]."""
    x, cos, sin = _f64(x), _f64(cos), _f64(sin)
    b, s = x.shape[0], x.shape[seq_axis]
    pos = torch.arange(s).expand(b, s) if position_ids is None else position_ids.cpu().long()
    c, sn = cos[pos], sin[pos]  # [B, S, R/2]
    shape = [b, 1, 1, rotary_dim // 2]
    shape[seq_axis] = s
    c, sn = c.reshape(shape), sn.reshape(shape)
    if inverse:
        sn = -sn
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        y = torch.stack((x1 * c - x2 * sn, x2 * c + x1 * sn), -1).flatten(-2)
    else:
        x1, x2 = rot.chunk(2, -1)
        y = torch.cat((x1 * c - x2 * sn, x2 * c + x1 * sn), -1)
    return torch.cat((y, rest), -1)


def kv_cache_append(cache, new, starts):
    """The cache after writing `new` rows at `starts[b]` (rows past capacity dropped)."""
    out = cache.detach().cpu().clone()
    new = new.detach().cpu()
    cap = out.shape[2]
    for b, st in enumerate(starts.cpu().tolist()):
        n = max(0, min(new.shape[2], cap - st))
        out[b, :, st:st + n] = new[b, :, :n]
    return out
