"""Reduction benchmark rows: full reductions of 2**28 elements, row reductions of the softmax
shapes (N from 1k to 256k), column reductions of the same, and the gradients of the rows."""

from __future__ import annotations

import torch

from ...core.registry import register_bench
from ...core.spec import BenchCase

FULL_ELEMENTS = 1 << 28
ROW_SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536), (256, 262144)]
QUICK_ROWS = ((16384, 4096), (256, 262144))


def _label(shape, dtype) -> str:
    return f"{list(shape)} {str(dtype).removeprefix('torch.')}"


@register_bench("reduction")
def reduction_benches(quick: bool):
    from . import torch_api as bt

    out = []
    for dtype in (torch.bfloat16, torch.float32):
        nbytes = FULL_ELEMENTS * dtype.itemsize

        def full(device, dtype=dtype):
            return {"x": torch.randn(FULL_ELEMENTS, device=device, dtype=dtype)}

        for name in ("sum", "amax"):
            out.append(BenchCase(f"{name} full", _label((FULL_ELEMENTS,), dtype), full,
                                 ours=lambda x, name=name: getattr(bt, name)(x),
                                 torch_eager=lambda x, name=name: getattr(torch, name)(x),
                                 bytes=nbytes, quick=dtype == torch.bfloat16))
    dtype = torch.bfloat16
    for shape in ROW_SHAPES:
        nbytes = shape[0] * shape[1] * dtype.itemsize
        label = _label(shape, dtype)
        quick_row = shape in QUICK_ROWS

        def rows(device, shape=shape):
            x = torch.randn(shape, device=device, dtype=dtype)
            return {"x": x, "dy": torch.randn(shape[0], device=device, dtype=dtype)}

        for name, dim in (("sum", -1), ("sum", 0), ("amax", -1), ("logsumexp", -1)):
            what = "rows" if dim == -1 else "columns"
            out.append(BenchCase(f"{name} {what}", label, rows,
                                 ours=lambda x, dy, name=name, dim=dim: getattr(bt, name)(x, dim),
                                 torch_eager=lambda x, dy, name=name, dim=dim:
                                 getattr(torch, name)(x, dim),
                                 bytes=nbytes, quick=quick_row and name == "sum"))
        out.append(BenchCase("var_mean rows", label, rows,
                             ours=lambda x, dy: bt.var_mean(x, -1),
                             torch_eager=lambda x, dy: torch.var_mean(x, -1), bytes=nbytes,
                             quick=False))

        def grad_rows(device, shape=shape):
            x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
            return {"x": x, "dy": torch.randn(shape[0], device=device, dtype=dtype)}

        for name in ("sum", "logsumexp", "var"):
            # dx written (and x read again where the formula reads it)
            moved = 2 * nbytes if name != "sum" else nbytes
            out.append(BenchCase(
                f"{name} rows fwd+bwd", label, grad_rows,
                ours=lambda x, dy, name=name: torch.autograd.grad(getattr(bt, name)(x, -1), x,
                                                                  dy),
                torch_eager=lambda x, dy, name=name: torch.autograd.grad(
                    getattr(torch, name)(x, -1), x, dy),
                bytes=nbytes + moved, quick=quick_row and name == "logsumexp"))
    out.extend(_norm_benches())
    out.extend(_generic_benches())
    return out


def _generic_benches() -> list[BenchCase]:
    """`baracuda.reduce` with a user's `@triton.jit` add, against torch.sum on the same data:
    the cost of taking the combine as a function rather than a built-in kind."""
    from .generic import reduce
    from .spec_generic import add

    shape, dtype = (16384, 4096), torch.bfloat16

    def rows(device):
        return {"x": torch.randn(shape, device=device, dtype=dtype)}

    def full(device):
        return {"x": torch.randn(FULL_ELEMENTS, device=device, dtype=torch.float32)}

    return [
        BenchCase("reduce(add) rows", _label(shape, dtype), rows,
                  ours=lambda x: reduce(x, add, 0, -1),
                  torch_eager=lambda x: torch.sum(x, -1),
                  bytes=shape[0] * shape[1] * dtype.itemsize, quick=False),
        BenchCase("reduce(add) full", _label((FULL_ELEMENTS,), torch.float32), full,
                  ours=lambda x: reduce(x, add, 0),
                  torch_eager=lambda x: torch.sum(x),
                  bytes=FULL_ELEMENTS * 4, quick=False),
    ]


def _norm_benches() -> list[BenchCase]:
    """The 2-norm (x^2 summed in f32, one sqrt a line): rows of [16384, 4096] bf16, and every
    element of 2**28 f32."""
    from .torch_norms import linalg_vector_norm

    shape, dtype = (16384, 4096), torch.bfloat16

    def rows(device):
        return {"x": torch.randn(shape, device=device, dtype=dtype)}

    def full(device):
        return {"x": torch.randn(FULL_ELEMENTS, device=device, dtype=torch.float32)}

    return [
        BenchCase("vector_norm rows", _label(shape, dtype), rows,
                  ours=lambda x: linalg_vector_norm(x, 2, -1),
                  torch_eager=lambda x: torch.linalg.vector_norm(x, 2, -1),
                  bytes=shape[0] * shape[1] * dtype.itemsize, quick=False),
        BenchCase("vector_norm full", _label((FULL_ELEMENTS,), torch.float32), full,
                  ours=lambda x: linalg_vector_norm(x),
                  torch_eager=lambda x: torch.linalg.vector_norm(x),
                  bytes=FULL_ELEMENTS * 4, quick=False),
    ]
