"""Float64 references (exact integer ones for integer results): the oracle for tests and
benches. Each kind's torch formula is its row's `ref` in `table.py`; gradients come from
torch autograd in float64. Results are rounded to the output element so that overflow to
+-inf matches what a kernel writing that element must produce."""

from __future__ import annotations

import torch

from ...core.vocab import ElementKind


def to64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def rounded(ref: torch.Tensor, out: ElementKind) -> torch.Tensor:
    """The float64 result as the output element holds it (exact results keep their type)."""
    if out.is_float:
        return ref.to(out.torch_dtype).to(torch.float64)
    return ref.to(out.torch_dtype)


def forward(fn, inputs, out: ElementKind, exact: bool = False, native=None) -> torch.Tensor:
    """fn on float64 copies of the inputs (or on the inputs themselves, promoted to `native`,
    for exact integer kinds and bit-level kinds such as nextafter)."""
    if exact or native is not None:
        dt = native or out.torch_dtype
        return rounded(fn(*[t.detach().cpu().to(dt) for t in inputs]), out)
    return rounded(fn(*[to64(t) for t in inputs]), out)


def gradients(fn, inputs, dy, needs, elements) -> list[torch.Tensor | None]:
    """d(sum(fn(inputs) * dy))/d(inputs) in float64, rounded to each input's element."""
    xs = [to64(t).requires_grad_(bool(n)) for t, n in zip(inputs, needs)]
    y = fn(*xs)
    wrt = [x for x, n in zip(xs, needs) if n]
    grads = iter(torch.autograd.grad(y, wrt, to64(dy), allow_unused=True))
    out = []
    for x, n, el in zip(xs, needs, elements):
        if not n:
            out.append(None)
            continue
        g = next(grads)
        out.append(rounded(torch.zeros_like(x) if g is None else g, el))
    return out


def gated(fn, x: torch.Tensor, axis: int) -> torch.Tensor:
    """fn(first half, second half) of x along axis (the gated row's `ref`)."""
    a, b = x.chunk(2, dim=axis)
    return fn(a, b)


def lerp_scalar(a: torch.Tensor, b: torch.Tensor, weight: float) -> torch.Tensor:
    return torch.lerp(a, b, weight)
