"""Float64 references for embedding forward and backward."""

from __future__ import annotations

import torch


def embedding(weight: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    return weight.detach().to("cpu", torch.float64)[indices.detach().cpu().long()]


def embedding_backward(grad_out: torch.Tensor, indices: torch.Tensor, num_embeddings: int,
                       padding_idx: int | None, scale_grad_by_freq: bool) -> torch.Tensor:
    g = grad_out.detach().to("cpu", torch.float64)
    idx = indices.detach().cpu().long()
    gw = torch.zeros((num_embeddings, g.shape[-1]), dtype=torch.float64)
    if scale_grad_by_freq:
        cnt = torch.bincount(idx, minlength=num_embeddings).double()
        g = g / cnt[idx][:, None]
    gw.index_add_(0, idx, g)
    if padding_idx is not None:
        gw[padding_idx] = 0
    return gw


def embedding_renorm(weight, indices, max_norm, norm_type):
    w = weight.detach().to("cpu", torch.float64).clone()
    torch.embedding_renorm_(w, indices.detach().cpu().long(), max_norm, norm_type)
    return w


def embedding_bag(weight, indices, bounds, mode, per_sample_weights=None, padding_idx=None):
    """(out float64 [B, Dm], max_token int64 [B, Dm] or None): loops, first token on ties."""
    w = weight.detach().to("cpu", torch.float64)
    idx = indices.detach().cpu().long()
    b = bounds.detach().cpu().long().tolist()
    psw = None if per_sample_weights is None else per_sample_weights.detach().cpu().double()
    nb, dm = len(b) - 1, w.shape[1]
    out = torch.zeros((nb, dm), dtype=torch.float64)
    mt = torch.full((nb, dm), -1, dtype=torch.int64)
    for k in range(nb):
        toks = [t for t in range(b[k], b[k + 1]) if padding_idx is None or
                int(idx[t]) != padding_idx]
        if not toks:
            continue
        rows = w[idx[toks]]
        if psw is not None:
            rows = rows * psw[toks][:, None]
        if mode == "sum":
            out[k] = rows.sum(0)
        elif mode == "mean":
            out[k] = rows.sum(0) / len(toks)
        else:
            best = rows.max(0).values
            first = (rows == best).int().argmax(0)
            out[k] = best
            mt[k] = torch.tensor(toks)[first]
    return out, (mt if mode == "max" else None)
