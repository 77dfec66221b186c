"""Elementwise benchmarks: unary (silu), binary (add, mul), lerp and swiglu, forward and
forward+backward, bf16 and f32, plus a row-broadcast and a transposed layout, and the issue-34
rows (isnan, signbit, logical_not with bool results; nan_to_num, clamp_min). `bytes` is the
fewest bytes each op must move (read + written)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core.registry import register_bench
from ...core.spec import BenchCase
from .torch_api import (
    add,
    clamp_min,
    isnan,
    lerp,
    logical_not,
    mul,
    nan_to_num,
    signbit,
    silu,
    swiglu,
)

N28 = 1 << 28


def _label(dtype, shape) -> str:
    return f"{list(shape)} {str(dtype).replace('torch.', '')}"


def _grad(y, inputs, dy):
    return torch.autograd.grad(y, inputs, dy)


@register_bench("elementwise")
def elementwise_benches(quick: bool):
    out = []
    for dtype in (torch.bfloat16, torch.float32):
        q = dtype == torch.bfloat16
        s = dtype.itemsize
        label = _label(dtype, (N28,))

        def one(device, dtype=dtype, grad=False):
            x = torch.randn(N28, device=device, dtype=dtype, requires_grad=grad)
            return {"x": x, "dy": torch.randn_like(x, requires_grad=False)}

        def two(device, dtype=dtype, grad=False):
            a = torch.randn(N28, device=device, dtype=dtype, requires_grad=grad)
            b = torch.randn(N28, device=device, dtype=dtype, requires_grad=grad)
            return {"a": a, "b": b, "dy": torch.randn(N28, device=device, dtype=dtype)}

        out.append(BenchCase("silu fwd", label, one, ours=lambda x, dy: silu(x),
                             torch_eager=lambda x, dy: F.silu(x), bytes=2 * N28 * s,
                             quick=True))
        out.append(BenchCase("silu fwd+bwd", label, lambda d, f=one: f(d, grad=True),
                             ours=lambda x, dy: _grad(silu(x), x, dy),
                             torch_eager=lambda x, dy: _grad(F.silu(x), x, dy),
                             bytes=5 * N28 * s, quick=q))
        out.append(BenchCase("add fwd", label, two, ours=lambda a, b, dy: add(a, b),
                             torch_eager=lambda a, b, dy: torch.add(a, b), bytes=3 * N28 * s,
                             quick=q))
        out.append(BenchCase("mul fwd+bwd", label, lambda d, f=two: f(d, grad=True),
                             ours=lambda a, b, dy: _grad(mul(a, b), (a, b), dy),
                             torch_eager=lambda a, b, dy: _grad(a * b, (a, b), dy),
                             bytes=7 * N28 * s, quick=False))
        out.append(BenchCase("lerp fwd", label, two, ours=lambda a, b, dy: lerp(a, b, 0.3),
                             torch_eager=lambda a, b, dy: torch.lerp(a, b, 0.3),
                             bytes=3 * N28 * s, quick=q))
        out.append(BenchCase("lerp fwd+bwd", label, lambda d, f=two: f(d, grad=True),
                             ours=lambda a, b, dy: _grad(lerp(a, b, 0.3), (a, b), dy),
                             torch_eager=lambda a, b, dy: _grad(torch.lerp(a, b, 0.3), (a, b),
                                                                dy),
                             bytes=6 * N28 * s, quick=q))
        out += _rows34(dtype, label, one)
    # layouts: a row-broadcast operand and a transposed view
    rows, cols = 16384, 16384

    def bsetup(device):
        a = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
        return {"a": a, "b": torch.randn(cols, device=device, dtype=torch.bfloat16)}

    out.append(BenchCase("add row-broadcast fwd", _label(torch.bfloat16, (rows, cols)), bsetup,
                         ours=lambda a, b: add(a, b), torch_eager=lambda a, b: torch.add(a, b),
                         bytes=2 * rows * cols * 2, quick=True))

    def tsetup(device):
        return {"x": torch.randn(cols, rows, device=device, dtype=torch.float32).t()}

    out.append(BenchCase("silu transposed fwd", _label(torch.float32, (rows, cols)), tsetup,
                         ours=lambda x: silu(x), torch_eager=lambda x: F.silu(x),
                         bytes=2 * rows * cols * 4, quick=True))
    for shape in ((16384, 4096), (4096, 16384)):
        dtype = torch.bfloat16
        half = shape[0] * shape[1]

        def gsetup(device, shape=shape, dtype=dtype):
            x = torch.randn(shape[0], 2 * shape[1], device=device, dtype=dtype,
                            requires_grad=True)
            return {"x": x, "dy": torch.randn(shape, device=device, dtype=dtype)}

        def torch_swiglu(x):
            a, b = x.chunk(2, dim=-1)
            return F.silu(a) * b

        # halves a, b of [rows, cols] each: fwd reads a, b and writes y; bwd reads dy, a, b
        # and writes da, db: 8 half-size tensors.
        out.append(BenchCase("swiglu fwd+bwd", _label(dtype, shape) + " (per half)", gsetup,
                             ours=lambda x, dy: _grad(swiglu(x, -1), x, dy),
                             torch_eager=lambda x, dy: _grad(torch_swiglu(x), x, dy),
                             bytes=8 * half * 2, quick=shape == (16384, 4096)))
    return out


def _rows34(dtype, label, one):
    """Forward benches of the issue-34 rows: N28 elements read, N28 bools (1 byte) or
    elements written."""
    s = dtype.itemsize
    predicate = (N28 * s + N28)
    rows = [("isnan", isnan, torch.isnan, predicate),
            ("signbit", signbit, torch.signbit, predicate),
            ("logical_not", logical_not, torch.logical_not, predicate),
            ("nan_to_num", nan_to_num, torch.nan_to_num, 2 * N28 * s),
            ("clamp_min", lambda x: clamp_min(x, 0.0), lambda x: torch.clamp_min(x, 0.0),
             2 * N28 * s)]
    return [BenchCase(f"{name} fwd", label, one, ours=lambda x, dy, f=ours: f(x),
                      torch_eager=lambda x, dy, f=eager: f(x), bytes=nbytes,
                      quick=name in ("isnan", "nan_to_num"))
            for name, ours, eager, nbytes in rows]
