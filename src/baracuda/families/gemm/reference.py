"""Float64 references: THE oracle for GEMM tests and benches."""

from __future__ import annotations

import math

import torch

from .descriptors import GemmActivation


def act(x: torch.Tensor, kind: GemmActivation) -> torch.Tensor:
    if kind is GemmActivation.RELU:
        return torch.relu(x)
    if kind is GemmActivation.GELU:
        return torch.nn.functional.gelu(x)
    if kind is GemmActivation.GELU_TANH:
        return torch.nn.functional.gelu(x, approximate="tanh")
    if kind is GemmActivation.SILU:
        return torch.nn.functional.silu(x)
    return x


def dact(x: torch.Tensor, kind: GemmActivation) -> torch.Tensor:
    """activation'(x) for a pre-activation x."""
    if kind is GemmActivation.RELU:
        return (x > 0).to(x.dtype)
    if kind is GemmActivation.GELU:
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2.0)))
        return cdf + x * torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    if kind is GemmActivation.GELU_TANH:
        k0, k1 = math.sqrt(2 / math.pi), 0.044715
        t = torch.tanh(k0 * (x + k1 * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k0 * (1 + 3 * k1 * x * x)
    if kind is GemmActivation.SILU:
        s = torch.sigmoid(x)
        return s * (1 + x * (1 - s))
    return torch.ones_like(x)


def f64(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().to("cpu", torch.float64)


def dense_gemm(desc, a, b, c=None, bias=None, preact=None) -> dict[str, torch.Tensor]:
    """Every output of DenseGemmPlan for `desc`, in float64."""
    acc = desc.alpha * (f64(a) @ f64(b))
    if desc.has_c:
        acc = acc + desc.beta * f64(c)
    out: dict[str, torch.Tensor] = {}
    if desc.is_backward_epilogue:
        if desc.dactivation is not GemmActivation.NONE:
            acc = acc * dact(f64(preact), desc.dactivation)
        out["d"] = acc
        if desc.bias_grad:
            # torch sums the rounded gradient; the reference sums the exact one.
            out["dbias"] = acc.reshape(-1, desc.n).sum(0)
        return out
    if desc.bias:
        acc = acc + f64(bias)
    if desc.save_preact:
        out["preact_out"] = acc
    out["d"] = act(acc, desc.activation)
    return out


def linear(x, weight, bias, activation: GemmActivation) -> dict[str, torch.Tensor]:
    pre = f64(x) @ f64(weight).T
    if bias is not None:
        pre = pre + f64(bias)
    return {"y": act(pre, activation), "preact": pre}


def linear_backward(dy, x, weight, preact, activation: GemmActivation):
    dh = f64(dy)
    if activation is not GemmActivation.NONE:
        dh = dh * dact(f64(preact), activation)
    return {"dx": dh @ f64(weight), "dweight": dh.T @ f64(x), "dbias": dh.sum(0)}
