"""MatrixPatternPlan test cases, malformed inputs, AOT variants and bench rows."""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import kernels_matrix as KM
from .descriptors_matrix import (
    PATTERN_CODES,
    MatrixPattern,
    MatrixPatternArgs,
    MatrixPatternDescriptor,
    diagonal_length,
)
from .plans_matrix import MatrixPatternPlan, matrix_tile

E = ElementKind
P = MatrixPattern

# (pattern, input shape, offset, layout, element, output element)
SMALL = [
    (P.LOWER, (3, 33, 47), 2, "contiguous", E.F32, None),
    (P.UPPER, (2, 3, 20, 9), -3, "transposed", E.BF16, None),
    (P.LOWER, (17, 5), -20, "strided", E.I64, None),
    (P.UPPER, (4, 0, 6), 0, "contiguous", E.F64, None),
    (P.EMBED, (3, 7), 2, "strided", E.F32, None),
    (P.EMBED, (13,), -4, "contiguous", E.BOOL, None),
    (P.DIAGONAL, (9, 14), 3, "transposed", E.F64, None),
    (P.DIAGONAL, (2, 11, 6), -2, "contiguous", E.I32, None),
    (P.BAND, (5, 7), 3, "strided", E.I32, E.F32),
    (P.BAND, (4, 30), 0, "transposed", E.BF16, E.BF16),
]
REAL = [
    (P.LOWER, (8, 8192, 8192), 0, "contiguous", E.F32, None),
    (P.UPPER, (16, 4096, 4096), 1, "contiguous", E.BF16, None),
    (P.EMBED, (4096, 2048), 0, "contiguous", E.F32, None),
]


def output_shape(pattern, shape, offset, columns=None):
    if pattern in (P.LOWER, P.UPPER):
        return shape
    if pattern is P.EMBED:
        n = shape[-1] + abs(offset)
        return shape[:-1] + (n, n)
    if pattern is P.DIAGONAL:
        return shape[:-2] + (diagonal_length(*shape[-2:], offset),)
    return (shape[0], columns)


def reference(pattern, x, offset, out_shape, out_dtype):
    """The exact result from torch's own functions on the host."""
    if pattern is P.LOWER:
        return torch.tril(x, offset)
    if pattern is P.UPPER:
        return torch.triu(x, offset)
    if pattern is P.EMBED:
        return torch.diag_embed(x, offset)
    if pattern is P.DIAGONAL:
        return torch.diagonal(x, offset, -2, -1).clone()
    y = torch.zeros(out_shape, dtype=out_dtype)
    y[:, offset:offset + x.shape[1]] = x.to(out_dtype)
    return y


def _case(pattern, shape, offset, layout, element, out_element) -> Case:
    out = output_shape(pattern, shape, offset, shape[-1] + offset + 5)
    desc = MatrixPatternDescriptor(pattern, shape, out, offset, element, out_element)
    out_dtype = desc.output_element.torch_dtype

    def make(device, gen):
        x = randn(shape, torch.float64, "cpu", gen, std=3.0)
        if not element.is_float:
            x = (x * 5).round()
        x = with_layout(x.to(device, element.torch_dtype), layout)
        return MatrixPatternArgs(x=x, y=poisoned(out, out_dtype, device))

    def expect(args):
        x = args.x.cpu()
        return {"y": reference(pattern, x, offset, out, out_dtype)}

    return Case(f"{pattern.value} {shape} k={offset} {layout} {element.value}", desc, make,
                expect)


class MatrixPatternSpec(PlanSpec):
    plan = MatrixPatternPlan

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            yield _case(*row)

    def malformed_descriptors(self):
        yield Malformed("rank 1 triangle",
                        lambda: MatrixPatternDescriptor(P.LOWER, (5,), (5,), 0, E.F32),
                        Unsupported)
        yield Malformed("wrong embedded length",
                        lambda: MatrixPatternDescriptor(P.EMBED, (4,), (5, 5), 0, E.F32),
                        InvalidProblem)
        yield Malformed("band past the output",
                        lambda: MatrixPatternDescriptor(P.BAND, (2, 4), (2, 5), 3, E.F32),
                        InvalidProblem)
        yield Malformed("converting triangle",
                        lambda: MatrixPatternDescriptor(P.LOWER, (2, 4), (2, 4), 0, E.F32,
                                                        E.F64), InvalidProblem)
        yield Malformed("offset not an int",
                        lambda: MatrixPatternDescriptor(P.UPPER, (2, 4), (2, 4), 0.5, E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        x = lambda: torch.zeros(d.input_shape, dtype=d.element.torch_dtype,  # noqa: E731
                                device=device)
        wrong = tuple(s + 1 for s in d.output_shape)
        y = lambda s=d.output_shape: torch.zeros(  # noqa: E731
            s, dtype=d.output_element.torch_dtype, device=device)
        yield Malformed("y wrong shape", lambda: MatrixPatternArgs(x(), y(wrong)),
                        InvalidProblem)

    def aot_variants(self):
        yield from aot_variants()


register_spec(MatrixPatternSpec())


def aot_variants():
    """Every pattern at a wide tile for 4- and 2-byte elements (f64, integers and bools
    share the code), the diagonal copy's column tile, a converting band."""
    rows = [(p, e, e, (8192, 8192)) for p in (P.LOWER, P.UPPER, P.EMBED, P.BAND)
            for e in (E.F32, E.BF16)]
    rows += [(P.LOWER, E.F64, E.F64, (8192, 8192)), (P.UPPER, E.BOOL, E.BOOL, (100, 100)),
             (P.DIAGONAL, E.F32, E.F32, (8192, 1)), (P.DIAGONAL, E.BF16, E.BF16, (8192, 1)),
             (P.BAND, E.I32, E.F32, (64, 4096)), (P.EMBED, E.I64, E.I64, (300, 300))]
    for pattern, element, out, (m, n) in rows:
        bm, bn = matrix_tile(m, n, out.itemsize)
        unit = {"yn": 1} if pattern is not P.DIAGONAL else {"ym": 1}
        yield AotVariant.auto(
            f"matrix_kernel {pattern.value} {element.value}->{out.value} {bm}x{bn}",
            KM.matrix_kernel,
            {"x_ptr": "*" + triton_dtype(element.torch_dtype),
             "y_ptr": "*" + triton_dtype(out.torch_dtype)},
            dict(PATTERN=PATTERN_CODES[pattern], BLOCK_M=bm, BLOCK_N=bn, **unit),
            divisible=("N", "ym") if pattern is not P.DIAGONAL else ())


def matrix_benches() -> list[BenchCase]:
    from . import torch_matrix as bt

    shape = (8, 8192, 8192)
    dtype = torch.float32
    # every element written, the kept triangle (about half) read: masked-off loads move nothing
    moved = 3 * math.prod(shape) * dtype.itemsize // 2

    def setup(device):
        return {"x": torch.randn(shape, device=device, dtype=dtype)}

    label = f"{list(shape)} f32"
    return [BenchCase("tril fwd", label, setup, ours=lambda x: bt.tril(x),
                      torch_eager=lambda x: torch.tril(x), bytes=moved),
            BenchCase("triu fwd", label, setup, ours=lambda x: bt.triu(x, 1),
                      torch_eager=lambda x: torch.triu(x, 1), bytes=moved, quick=False)]
