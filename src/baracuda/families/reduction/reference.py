"""Float64 references (exact int64 for integer results): the oracle for tests and benches."""

from __future__ import annotations

import warnings

import torch

from .descriptors import ReductionKind as K


def _wide(x: torch.Tensor) -> torch.Tensor:
    """x on the CPU in float64 (integers as they are); a tensor that requires grad keeps it."""
    x = x.cpu() if x.requires_grad else x.detach().cpu()
    if x.is_floating_point():
        return x.to(torch.float64)
    return x


def reduction_forward(x: torch.Tensor, kind: K, axes: tuple[int, ...], keepdim: bool,
                      correction: float = 0.0,
                      out_dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """{"y": ..., "y2": ...} of a reduction over `axes`, computed by torch on the CPU in
    float64 (integers in int64, exactly)."""
    x = _wide(x)
    dims = tuple(axes) if x.dim() else ()
    if kind in (K.SUM, K.PROD, K.NANSUM, K.MEAN, K.LOGSUMEXP) and out_dtype is not None:
        wide = torch.float64 if out_dtype.is_floating_point else torch.int64
        x = x.to(wide)
    if kind in (K.SUM, K.NANSUM, K.MEAN, K.NANMEAN, K.COUNT_NONZERO, K.ALL, K.ANY, K.AMAX,
                K.AMIN, K.MAX_ALL, K.MIN_ALL, K.LOGSUMEXP, K.VAR, K.STD):
        fn = {K.SUM: torch.sum, K.NANSUM: torch.nansum, K.MEAN: torch.mean,
              K.NANMEAN: torch.nanmean, K.AMAX: torch.amax, K.AMIN: torch.amin,
              K.MAX_ALL: torch.amax, K.MIN_ALL: torch.amin, K.LOGSUMEXP: torch.logsumexp}
        if kind in fn:
            y = fn[kind](x, dims, keepdim=keepdim)
        elif kind in (K.VAR, K.STD):
            op = torch.var if kind is K.VAR else torch.std
            with warnings.catch_warnings():  # (N <= correction: inf / NaN, as wanted)
                warnings.simplefilter("ignore")
                y = op(x, dims, correction=correction, keepdim=keepdim)
        elif kind is K.COUNT_NONZERO:
            y = torch.count_nonzero(x, dims)
            if keepdim:
                y = _keep(y, x.shape, dims)
        else:
            op = torch.all if kind is K.ALL else torch.any
            y = op(x, dims, keepdim=keepdim) if dims else op(x)
        return {"y": y}
    if kind is K.PROD:
        y = x
        for d in sorted(dims, reverse=True):
            y = torch.prod(y, d, keepdim=True)
        return {"y": y if keepdim else y.reshape(_kept(x.shape, dims))}
    if kind in (K.MAX, K.MIN):
        op = torch.max if kind is K.MAX else torch.min
        v, i = op(x, dims[0], keepdim=keepdim) if dims else op(x.reshape(1), 0)
        if not dims:
            v, i = v.reshape(()), i.reshape(())
        return {"y": v, "y2": i}
    if kind in (K.ARGMAX, K.ARGMIN):
        op = torch.argmax if kind is K.ARGMAX else torch.argmin
        if len(dims) <= 1:
            return {"y": op(x, dims[0], keepdim=keepdim) if dims else op(x)}
        moved = x.movedim(dims, tuple(range(x.dim() - len(dims), x.dim())))
        flat = moved.reshape(*moved.shape[:x.dim() - len(dims)], -1)
        y = op(flat, -1)
        return {"y": _keep(y, x.shape, dims) if keepdim else y}
    if kind in (K.VAR_MEAN, K.STD_MEAN):
        op = torch.var_mean if kind is K.VAR_MEAN else torch.std_mean
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v, m = op(x, dims, correction=correction, keepdim=keepdim)
        return {"y": v, "y2": m}
    lo, hi = torch.amin(x, dims, keepdim=keepdim), torch.amax(x, dims, keepdim=keepdim)
    return {"y": lo, "y2": hi}


def _kept(shape, dims) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in dims)


def _keep(y: torch.Tensor, shape, dims) -> torch.Tensor:
    return y.reshape(tuple(1 if i in dims else d for i, d in enumerate(shape)))


def reduction_backward(kind: K, x: torch.Tensor | None, dy: torch.Tensor,
                       dy2: torch.Tensor | None, shape: tuple[int, ...], axes: tuple[int, ...],
                       keepdim: bool, correction: float = 0.0,
                       indices: torch.Tensor | None = None,
                       y: torch.Tensor | None = None) -> torch.Tensor:
    """dx by torch's autograd in float64 through the reference forward; logsumexp's from the
    given output `y` when there is one (its formula reads the stored, rounded output)."""
    dims = tuple(axes) if shape else ()
    if kind is K.LOGSUMEXP and y is not None:
        g, out = _wide(dy), _wide(y)
        if not keepdim:
            for d in dims:
                g, out = g.unsqueeze(d), out.unsqueeze(d)
        return g * torch.exp(_wide(x) - out)
    if kind in (K.MAX, K.MIN):
        dx = torch.zeros(shape, dtype=torch.float64)
        g = _wide(dy)
        idx = indices.cpu()
        if not dims:
            return g.reshape(shape).clone()
        if not keepdim:
            g, idx = g.unsqueeze(dims[0]), idx.unsqueeze(dims[0])
        return dx.scatter_(dims[0], idx, g)
    if x is None:
        x = torch.zeros(shape, dtype=torch.float64)
    xd = _wide(x).requires_grad_()
    if kind in (K.MAX_ALL, K.MIN_ALL):  # torch's evenly_distribute_backward, per line
        xw = _wide(x)
        op = torch.amax if kind is K.MAX_ALL else torch.amin
        y = op(xw.nan_to_num(nan=-float("inf") if kind is K.MAX_ALL else float("inf")), dims,
               keepdim=True)
        nan_line = torch.isnan(xw).any(dims, keepdim=True) if dims else torch.isnan(xw)
        mask = torch.where(nan_line, torch.isnan(xw), xw == y).to(torch.float64)
        g = _wide(dy)
        if not keepdim:
            g = _keep(g, shape, dims)
        return mask * g / mask.sum(dims, keepdim=True)
    outs = reduction_forward(xd, kind, axes, keepdim, correction)
    pairs = [(outs["y"], _wide(dy))]
    if dy2 is not None and "y2" in outs:
        pairs.append((outs["y2"], _wide(dy2)))
    grads = torch.autograd.grad([p[0] for p in pairs], xd, [p[1] for p in pairs],
                                allow_unused=True)[0]
    return torch.zeros(shape, dtype=torch.float64) if grads is None else grads
