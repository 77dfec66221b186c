"""Float64 references: the oracle for tests and benches."""

from __future__ import annotations

import math

import torch


def _f64(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().to("cpu", torch.float64)


def _dims(x: torch.Tensor, n_norm: int) -> tuple[int, ...]:
    return tuple(range(x.dim() - n_norm, x.dim()))


def residual_sum(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """h = x + residual rounded to x's dtype (what the fused kernel stores and normalizes)."""
    return (_f64(x) + _f64(residual)).to(x.dtype)


def row_norm_forward(x, n_norm, gamma=None, beta=None, eps=1e-5, rms=False, residual=None):
    """{y, mean (layer norm only), rstd, residual_out (when residual)} in float64.

    Statistics have the input's shape with the normalized axes set to 1 (torch's layout).
    """
    out = {}
    if residual is not None:
        h = residual_sum(x, residual)
        out["residual_out"] = _f64(h)
        x = h
    xf = _f64(x)
    dims = _dims(xf, n_norm)
    m = 1
    for d in dims:
        m *= xf.shape[d]
    if m == 0:
        stats = xf.shape[: xf.dim() - n_norm] + (1,) * n_norm
        mean = torch.zeros(stats, dtype=torch.float64)
        rstd = torch.full(stats, float("nan"), dtype=torch.float64)
    elif rms:
        mean = torch.zeros((), dtype=torch.float64)
        rstd = torch.rsqrt((xf * xf).mean(dims, keepdim=True) + eps)
    else:
        mean = xf.mean(dims, keepdim=True)
        rstd = torch.rsqrt(((xf - mean) ** 2).mean(dims, keepdim=True) + eps)
    y = (xf - mean) * rstd
    if gamma is not None:
        y = y * _f64(gamma)
    if beta is not None:
        y = y + _f64(beta)
    out["y"] = y
    if not rms:
        out["mean"] = mean
    out["rstd"] = rstd
    return out


def row_norm_backward(dy, x, rstd, n_norm, mean=None, gamma=None, has_beta=False,
                      dresidual_out=None):
    """Seed formulas with the saved statistics (mean = None for RMSNorm):

    xhat = (x - mean) * rstd, g = dy * gamma,
    dx = rstd * (g - xhat * mean(g * xhat) - mean(g))   (the mean(g) term for LayerNorm only),
    dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy;
    the residual variant adds dresidual_out to dx.
    """
    dyf, xf, rs = _f64(dy), _f64(x), _f64(rstd)
    dims = _dims(xf, n_norm)
    mu = torch.zeros((), dtype=torch.float64) if mean is None else _f64(mean)
    xhat = (xf - mu) * rs
    g = dyf * _f64(gamma) if gamma is not None else dyf
    dx = g - xhat * (g * xhat).mean(dims, keepdim=True) if xf.numel() else g
    if mean is not None and xf.numel():
        dx = dx - g.mean(dims, keepdim=True)
    dx = dx * rs
    if dresidual_out is not None:
        dx = dx + _f64(dresidual_out)
    out = {"dx": dx}
    outer = tuple(range(xf.dim() - n_norm))
    if gamma is not None:
        out["dgamma"] = (dyf * xhat).sum(outer) if outer else dyf * xhat
    if has_beta:
        out["dbeta"] = dyf.sum(outer) if outer else dyf
    return out


def _channel_view(x):
    s = math.prod(x.shape[2:])
    return x.reshape(x.shape[0], x.shape[1], s)


def channel_norm_forward(x, mode, num_groups=None, gamma=None, beta=None, eps=1e-5,
                         use_running=False, running_mean=None, running_var=None,
                         momentum=0.1, update_running=False):
    """mode: "group" / "instance" / "batch". Returns y, mean, rstd (saved-statistics layout:
    (N, G), (N, C), (C,)) and the updated running statistics when update_running."""
    xf = _f64(x)
    n, c = xf.shape[:2]
    x3 = _channel_view(xf)
    s = x3.shape[2]
    out = {}
    if mode == "batch":
        if use_running:
            mean = _f64(running_mean)
            var = _f64(running_var)
        else:
            mean = x3.mean((0, 2))
            var = x3.var((0, 2), unbiased=False)
        rstd = torch.rsqrt(var + eps)
        y = (x3 - mean[None, :, None]) * rstd[None, :, None]
        if update_running:
            cnt = n * s
            unb = var * cnt / max(cnt - 1, 1)
            out["running_mean"] = _f64(running_mean) * (1 - momentum) + mean * momentum
            out["running_var"] = _f64(running_var) * (1 - momentum) + unb * momentum
    else:
        g = c if mode == "instance" else num_groups
        if use_running:
            mean = _f64(running_mean)[None, :].expand(n, c)
            rstd = torch.rsqrt(_f64(running_var)[None, :].expand(n, c) + eps)
            y = (x3 - mean[..., None]) * rstd[..., None]
        else:
            xg = x3.reshape(n, g, (c // g) * s)
            mean = xg.mean(2)
            var = xg.var(2, unbiased=False)
            rstd = torch.rsqrt(var + eps)
            y = ((xg - mean[..., None]) * rstd[..., None]).reshape(n, c, s)
            if update_running:
                unb = var * s / max(s - 1, 1)
                out["running_mean"] = _f64(running_mean) * (1 - momentum) + mean.mean(0) * momentum
                out["running_var"] = _f64(running_var) * (1 - momentum) + unb.mean(0) * momentum
    if gamma is not None:
        y = y * _f64(gamma)[None, :, None]
    if beta is not None:
        y = y + _f64(beta)[None, :, None]
    out.update(y=y.reshape(xf.shape), mean=mean.contiguous(), rstd=rstd.contiguous())
    return out


def channel_norm_backward(dy, x, mean, rstd, mode, num_groups=None, gamma=None,
                          has_beta=False, stats_const=False):
    """Gradients with the saved statistics (stats_const: batch-norm eval, statistics fixed)."""
    dyf, xf = _channel_view(_f64(dy)), _channel_view(_f64(x))
    n, c, s = xf.shape
    mu, rs = _f64(mean), _f64(rstd)
    if mode == "batch":
        mu_e, rs_e = mu[None, :, None], rs[None, :, None]
    else:
        g = c if mode == "instance" else num_groups
        rep = c // g
        mu_e = mu.repeat_interleave(rep, 1)[..., None]
        rs_e = rs.repeat_interleave(rep, 1)[..., None]
    xhat = (xf - mu_e) * rs_e
    gm = dyf * _f64(gamma)[None, :, None] if gamma is not None else dyf
    if stats_const:
        dx = gm * rs_e
    elif mode == "batch":
        dx = rs_e * (gm - xhat * (gm * xhat).mean((0, 2), keepdim=True)
                     - gm.mean((0, 2), keepdim=True))
    else:
        g = c if mode == "instance" else num_groups
        gg, xg = gm.reshape(n, g, (c // g) * s), xhat.reshape(n, g, (c // g) * s)
        dxg = gg - xg * (gg * xg).mean(2, keepdim=True) - gg.mean(2, keepdim=True)
        dx = rs_e * dxg.reshape(n, c, s)
    out = {"dx": dx.reshape(_f64(x).shape)}
    if gamma is not None:
        out["dgamma"] = (dyf * xhat).sum((0, 2))
    if has_beta:
        out["dbeta"] = dyf.sum((0, 2))
    return out
