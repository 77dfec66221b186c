"""Float64 (or exact) references for the indexing plans, from torch's CPU ops."""

from __future__ import annotations

import itertools

import torch


def _cpu(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().cpu()
    return t.double() if t.is_floating_point() else t


def index_select(x, dim, index):
    return _cpu(x).index_select(dim, index.detach().cpu().long())


def index_select_backward(grad_out, dim, index, input_shape):
    g = _cpu(grad_out)
    return torch.zeros(input_shape, dtype=g.dtype).index_add_(dim, index.detach().cpu().long(), g)


def gather(x, dim, index):
    return _cpu(x).gather(dim, index.detach().cpu().long())


def scatter(self_, dim, index, src, kind: str, include_self: bool, input_shape, alpha=1.0):
    """kind in assign / sum / prod / mean / amax / amin; self_ None scatters into zeros.

    ASSIGN with duplicate indices: the last source element (in index order) wins.
    """
    idx = index.detach().cpu().long()
    base = torch.zeros(input_shape, dtype=torch.float64) if self_ is None else _cpu(self_)
    s = _cpu(src)[tuple(slice(0, e) for e in idx.shape)] * alpha
    if kind == "assign":
        out = base.clone()
        o, i, v = out.movedim(dim, -1), idx.movedim(dim, -1), s.movedim(dim, -1)
        for p in itertools.product(*[range(e) for e in i.shape]):
            o[p[:-1] + (int(i[p]),)] = v[p]
        return out
    return base.clone().scatter_reduce(dim, idx, s, kind,
                                       include_self=include_self and self_ is not None)


def index_add(x, dim, index, source, alpha=1.0):
    return _cpu(x).index_add(dim, index.detach().cpu().long(), _cpu(source), alpha=alpha)


def index_copy(x, dim, index, source):
    """Sequential copies: on duplicate indices the last one wins."""
    out = _cpu(x).clone()
    s = _cpu(source)
    for k, i in enumerate(index.detach().cpu().long().tolist()):
        out.select(dim, i).copy_(s.select(dim, k))
    return out
