"""Set membership against a small test set (torch.isin, jnp.isin): each element is compared
with every test element (one program per block of elements, the test set read from cache), so
the work is elements x test elements. That is the right form up to about a hundred test
elements; far beyond that (thousands) sorting the test set and binary-searching it wins, which
is the sorting family's job, not this plan's.

Descriptor, args, kernel, plan and torch custom op in one module: the pattern (a unary map
reading a side table) is this op's alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ...backends.torch_ops import define_op, run_plan
from ...core import validate as V
from ...core.args import operand
from ...core.plan import Args, Descriptor, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from .descriptors import check_shape
from .kernels import _off, _position
from .launch import compute_type, expand_strides, launch_map
from .plans import _Triton
from .table import check_elem, promote

_NUMERIC = tuple(e for e in ElementKind if e.is_float) + (
    ElementKind.I8, ElementKind.I16, ElementKind.I32, ElementKind.I64, ElementKind.U8)


@dataclass(frozen=True)
class IsinDescriptor(Descriptor):
    """y = (x in test) != invert, x of `shape`, test a flat set of `test_count` elements; both
    compared in their promoted type (torch's rule). Bool elements are not supported (torch)."""

    shape: tuple[int, ...]
    element: ElementKind
    test_count: int
    test_element: ElementKind
    invert: bool = False

    def validate(self, who: str) -> None:
        check_elem(who, "element", self.element)
        check_elem(who, "test_element", self.test_element)
        check_shape(who, "shape", self.shape)
        V.check_element(who, "element", self.element, _NUMERIC)
        V.check_element(who, "test_element", self.test_element, _NUMERIC)
        if isinstance(self.test_count, bool) or not isinstance(self.test_count, int) or (
                self.test_count < 0):
            raise V.InvalidProblem(f"{who}: test_count must be an int >= 0, got "
                                   f"{self.test_count!r}")
        if not isinstance(self.invert, bool):
            raise V.InvalidProblem(f"{who}: invert must be a bool, got {self.invert!r}")

    @property
    def test_shape(self) -> tuple[int, ...]:
        return (self.test_count,)


@dataclass
class IsinArgs(Args):
    x: torch.Tensor = operand("shape", "element")
    test: torch.Tensor = operand("test_shape", "test_element")
    y: torch.Tensor = operand("shape", ElementKind.BOOL, output=True)


@triton.jit
def isin_kernel(
    x_ptr, t_ptr, y_ptr, N, S1, S2, S3,
    xs0, xs1, xs2, xs3, ts0, ts1, ts2, ts3, ys0, ys1, ys2, ys3,
    T, t_stride,
    INVERT: tl.constexpr, ACC: tl.constexpr, MODE: tl.constexpr, BIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c0, c1, c2, c3, m = _position(N, S1, S2, S3, BLOCK, BIG, MODE)
    xo = _off(c0, c1, c2, c3, xs0, xs1, xs2, xs3, MODE)
    yo = _off(c0, c1, c2, c3, ys0, ys1, ys2, ys3, MODE)
    x = tl.load(x_ptr + xo, mask=m, other=0).to(ACC)
    hit = xo < 0  # all false, of the block's shape
    for j in range(T):
        hit = hit | (x == tl.load(t_ptr + j * t_stride).to(ACC))
    tl.store(y_ptr + yo, hit != INVERT, mask=m)


@register_plan
class IsinPlan(Plan):
    """torch.isin / jnp.isin: y = (x in test) != invert.

    **Formulas**: every element compared (==, in the promoted type) with every test element;
    NaN is never found, -0 finds +0. The work is elements x test elements: meant for test sets
    up to about a hundred; larger sets want sort + search (the sorting family).

    **Dtypes / shape**: x and test of any float or integer element (bool refused, as torch),
    x of rank 0..8 with any non-negative strides, test flat (any stride); y bool of x's shape.

    **Workspace**: none.

    **Precision**: exact (comparisons only); deterministic.
    """
    category = OpCategory.BINARY_ELEMENTWISE
    descriptor_type = IsinDescriptor
    args_type = IsinArgs


@register_candidate(IsinPlan)
class TritonIsin(_Triton):
    name = "triton_isin_compare"

    def guarantee(self, desc, pref):
        return PrecisionGuarantee.for_element(ElementKind.BOOL)

    def launch(self, desc, args, workspace) -> None:
        common = promote(desc.element, desc.test_element)
        shape = desc.shape
        strides = [expand_strides(args.x, shape), [0] * len(shape),
                   expand_strides(args.y, shape)]
        t_stride = args.test.stride(0) if desc.test_count else 1
        launch_map(isin_kernel, shape, [args.x, args.test, args.y], [desc.test_count, t_stride],
                   strides=strides, INVERT=desc.invert, ACC=compute_type(common))


def _isin_fw(x: torch.Tensor, test: torch.Tensor, invert: bool) -> torch.Tensor:
    """x in test (a 1-D test set, any stride)."""
    desc = IsinDescriptor.cached(tuple(x.shape), x.dtype, test.shape[0], test.dtype,
                                 bool(invert))
    y = torch.empty_like(x, dtype=torch.bool)
    run_plan(IsinPlan, desc, IsinArgs(x=x, test=test, y=y))
    return y


def _isin_fake(x: torch.Tensor, test: torch.Tensor, invert: bool) -> torch.Tensor:
    return torch.empty_like(x, dtype=torch.bool)


isin_op = define_op("ew_isin", _isin_fw, _isin_fake)
