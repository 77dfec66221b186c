"""jnp.packbits: the truth of each integer or bool element packed 8 to a uint8 along one axis
(the flattened input for axis=None), the last byte zero-padded, bit order "big" (the first
element in the highest bit) or "little". One program writes a block of output bytes, each
reading its 8 inputs: a gather of 8 strided loads per byte, the pattern of this op alone, so
its descriptor, args, kernel, plan and custom op live here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ...backends.torch_ops import define_op, run_plan
from ...core import validate as V
from ...core.args import operand
from ...core.plan import Args, Descriptor, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from .plans import _Triton
from .table import check_elem

_INTEGERS = (ElementKind.BOOL, ElementKind.I8, ElementKind.I16, ElementKind.I32, ElementKind.I64,
             ElementKind.U8)
BLOCK = 1024


@dataclass(frozen=True)
class PackbitsDescriptor(Descriptor):
    """x of shape [outer, length, inner] packed along `length` into y [outer, ceil(length / 8),
    inner] uint8; `little` puts the first element in the lowest bit."""

    shape: tuple[int, int, int]
    element: ElementKind
    little: bool = False

    def validate(self, who: str) -> None:
        check_elem(who, "element", self.element)
        shape = V.check_shape(who, "shape", self.shape)
        if len(shape) != 3:
            raise V.InvalidProblem(f"{who}: shape must be [outer, length, inner], got {shape}")
        V.check_element(who, "element", self.element, _INTEGERS)
        if not isinstance(self.little, bool):
            raise V.InvalidProblem(f"{who}: little must be a bool, got {self.little!r}")

    @property
    def out_shape(self) -> tuple[int, int, int]:
        o, n, i = self.shape
        return o, cdiv(n, 8), i


@dataclass
class PackbitsArgs(Args):
    x: torch.Tensor = operand("shape", "element")
    y: torch.Tensor = operand("out_shape", ElementKind.U8, output=True)


@triton.jit
def packbits_kernel(x_ptr, y_ptr, TOTAL, L, J, INNER, sxo, sxl, sxi, syo, syj, syi,
                    LITTLE: tl.constexpr, BIG: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if BIG:
        pid = pid.to(tl.int64)
    n = pid * BLOCK + tl.arange(0, BLOCK)
    m = n < TOTAL
    i = n % INNER
    r = n // INNER
    j = r % J
    o = r // J
    first = x_ptr + o * sxo + (j * 8) * sxl + i * sxi
    byte = tl.zeros([BLOCK], tl.int32)
    for k in tl.static_range(8):
        v = tl.load(first + k * sxl, mask=m & (j * 8 + k < L), other=0)
        byte = byte | ((v != 0).to(tl.int32) << (k if LITTLE else 7 - k))
    tl.store(y_ptr + o * syo + j * syj + i * syi, byte.to(tl.uint8), mask=m)


@register_plan
class PackbitsPlan(Plan):
    """jnp.packbits: x [outer, length, inner] -> y [outer, ceil(length / 8), inner] uint8.

    **Formulas**: bit k of byte j is (x[.., 8j + k, ..] != 0), at position 7 - k ("big") or k
    ("little"); positions past `length` pack as 0.

    **Dtypes / shape**: bool and integer x with any non-negative strides; y uint8.

    **Workspace**: none.

    **Precision**: exact; deterministic.
    """
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = PackbitsDescriptor
    args_type = PackbitsArgs


@register_candidate(PackbitsPlan)
class TritonPackbits(_Triton):
    name = "triton_packbits"

    def guarantee(self, desc, pref):
        return PrecisionGuarantee.for_element(ElementKind.U8)

    def launch(self, desc, args, workspace) -> None:
        o, j, i = desc.out_shape
        total = o * j * i
        if total == 0:
            return
        x, y = args.x, args.y
        reach = sum((d - 1) * s for d, s in zip(x.shape, x.stride())) + 8 * x.stride(1)
        big = max(total, reach, y.numel()) >= 2**31
        packbits_kernel[(cdiv(total, BLOCK),)](
            x, y, total, desc.shape[1], j, i, *x.stride(), *y.stride(),
            LITTLE=desc.little, BIG=big, BLOCK=BLOCK, num_warps=4)


def _packbits_fw(x: torch.Tensor, little: bool) -> torch.Tensor:
    """x [outer, length, inner] (any strides) packed along dim 1."""
    desc = PackbitsDescriptor.cached(tuple(x.shape), x.dtype, bool(little))
    y = torch.empty(desc.out_shape, dtype=torch.uint8, device=x.device)
    run_plan(PackbitsPlan, desc, PackbitsArgs(x=x, y=y))
    return y


def _packbits_fake(x: torch.Tensor, little: bool) -> torch.Tensor:
    o, n, i = x.shape
    return x.new_empty((o, (n + 7) // 8, i), dtype=torch.uint8)


packbits_op = define_op("ew_packbits", _packbits_fw, _packbits_fake)


def as_outer_length_inner(x: torch.Tensor, axis: int) -> torch.Tensor | None:
    """x viewed as [outer, length, inner] around `axis`, or None when its strides don't allow
    a view (the caller copies once)."""
    shape = tuple(x.shape)
    o, n, i = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    try:
        return x.view(o, n, i)
    except RuntimeError:
        return None
