"""`reduce` / GenericReductionPlan: the reduction with a caller's `@triton.jit` combine, against
torch references (sum, max, bitwise or, max of |x|), strided inputs and several axes, the
identity of an empty reduction, bit-identical reruns, and its typed errors."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import baracuda as bc
from baracuda.core.errors import InvalidProblem, Unsupported
from baracuda.families.reduction import (
    GenericReductionArgs,
    GenericReductionDescriptor,
    GenericReductionPlan,
    reduce,
)
from conftest import DEVICE


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _or(a, b):
    return a | b


@triton.jit
def _max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


def _x(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(DEVICE, dtype)


def _ints(*shape, dtype=torch.int32, seed=0, hi=1 << 16):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, hi, shape, generator=g).to(DEVICE, dtype)


def test_is_exported():
    assert bc.reduce is reduce and bc.GenericReductionPlan is GenericReductionPlan


@pytest.mark.parametrize("dims,keepdim", [(1, False), ((0, 2), True), (None, False),
                                          (-1, True)])
def test_sum_matches_float64(dims, keepdim):
    x = _x(4, 37, 5)
    got = reduce(x, _add, 0.0, dims, keepdim)
    want = x.double().sum(() if dims is None else dims, keepdim=keepdim) if dims is not None \
        else x.double().sum()
    assert got.dtype == x.dtype and got.shape == want.shape
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16,
                                   torch.float64, torch.int8, torch.int64])
def test_max_is_exact(dtype):
    x = _x(6, 50, dtype=dtype) if dtype.is_floating_point else _ints(6, 50, dtype=dtype, hi=100)
    lowest = -float("inf") if dtype.is_floating_point else torch.iinfo(dtype).min
    got = reduce(x, _max, lowest, 1)
    assert torch.equal(got, x.amax(1))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool])
def test_bitwise_or(dtype):
    x = _ints(9, 33, dtype=dtype, hi=2 if dtype == torch.bool else 200)
    got = reduce(x, _or, 0, 1)
    want = torch.zeros(9, dtype=dtype, device=DEVICE)
    for i in range(x.shape[1]):
        want = want | x[:, i]
    assert torch.equal(got, want)


def test_custom_monoid_max_abs_on_strided_input_over_several_axes():
    base = _x(6, 8, 10, 4)
    x = base.permute(2, 0, 3, 1)[::2, :, 1:, ::3]  # no two dims contiguous
    assert not x.is_contiguous()
    got = reduce(x, _max_abs, 0.0, (0, 2))
    assert torch.equal(got, x.abs().amax((0, 2)))
    got = reduce(x, _max_abs, 0.0, (1, 3), keepdim=True)
    assert torch.equal(got, x.abs().amax((1, 3), keepdim=True))


def test_long_lines_split_over_programs_and_columns():
    x = _x(2, 9000, seed=3)
    torch.testing.assert_close(reduce(x, _add, 0.0, 1).double(), x.double().sum(1),
                               rtol=1e-5, atol=1e-4)
    assert torch.equal(reduce(x, _max, -float("inf"), 1), x.amax(1))
    c = _x(300, 24, seed=4)
    assert torch.equal(reduce(c, _max, -float("inf"), 0), c.amax(0))


def test_empty_reduction_gives_the_identity():
    e = torch.empty(3, 0, 4, device=DEVICE)
    assert torch.equal(reduce(e, _add, 0.0, 1), torch.zeros(3, 4, device=DEVICE))
    assert torch.equal(reduce(e, _max, -float("inf"), 1),
                       torch.full((3, 4), -float("inf"), device=DEVICE))
    ints = torch.empty(0, 5, dtype=torch.int32, device=DEVICE)
    assert torch.equal(reduce(ints, _or, 7, 0), torch.full((5,), 7, dtype=torch.int32,
                                                          device=DEVICE))
    assert reduce(torch.empty(0, 5, device=DEVICE), _add, 0.0, 1).shape == (0,)


def test_zero_dim_input():
    s = torch.tensor(-2.5, device=DEVICE)
    assert torch.equal(reduce(s, _max_abs, 0.0, None), torch.tensor(2.5, device=DEVICE))
    assert reduce(s, _add, 0.0, 0, keepdim=True).shape == ()


def test_reruns_are_bit_identical():
    x = _x(3, 7000, seed=6)
    first = reduce(x, _add, 0.0, 1)
    for _ in range(2):
        assert torch.equal(reduce(x, _add, 0.0, 1).view(torch.int32), first.view(torch.int32))


def test_plan_contract_directly():
    x = _x(4, 33)
    desc = GenericReductionDescriptor((4, 33), (1,), False, torch.float32, _max, -float("inf"))
    plan = GenericReductionPlan.select(desc)
    assert plan.precision_guarantee.deterministic
    y = torch.empty(4, device=DEVICE)
    n = plan.workspace_size()
    ws = torch.empty(n, dtype=torch.uint8, device=DEVICE) if n else None
    plan.run(GenericReductionArgs(x=x, y=y), workspace=ws)
    assert torch.equal(y, x.amax(1))


@pytest.mark.parametrize("fields,error,match", [
    (((4, 8), (2,), False, torch.float32, _add, 0), InvalidProblem, "axes must be in"),
    (((4, 8), (1, 0), False, torch.float32, _add, 0), InvalidProblem, "sorted"),
    (((4, 8), (1, 1), False, torch.float32, _add, 0), InvalidProblem, "distinct"),
    (((4, 8), (1,), False, torch.float32, lambda a, b: a + b, 0), InvalidProblem,
     "@triton.jit"),
    (((4, 8), (1,), False, torch.float32, _add, float("nan")), InvalidProblem, "NaN"),
    (((4, 8), (1,), False, torch.int8, _max, -129), InvalidProblem, r"\[-128, 127\]"),
    (((4, 8), (1,), False, torch.int32, _add, 0.5), InvalidProblem, "integer"),
    (((4, 8), (1,), False, torch.bool, _or, 2), InvalidProblem, r"\[0, 1\]"),
    (((1,) * 9, (0,), False, torch.float32, _add, 0), Unsupported, "rank"),
])
def test_descriptor_errors_say_what_expected_got(fields, error, match):
    with pytest.raises(error, match=match) as info:
        GenericReductionPlan.select(GenericReductionDescriptor(*fields))
    assert "GenericReductionPlan" in str(info.value)


def test_function_errors():
    x = _x(3, 4)
    with pytest.raises(Unsupported, match="no gradient"):
        reduce(x.clone().requires_grad_(), _add, 0.0, 1)
    with torch.no_grad():  # no gradient asked for: fine
        reduce(x.clone().requires_grad_(), _add, 0.0, 1)
    with pytest.raises(TypeError, match="triton.jit"):
        reduce(x, lambda a, b: a + b, 0.0, 1)
    with pytest.raises(TypeError, match="tensor"):
        reduce([1.0], _add, 0.0, 0)
    with pytest.raises(IndexError, match="out of range"):
        reduce(x, _add, 0.0, 2)
    with pytest.raises(InvalidProblem, match="distinct"):
        reduce(x, _add, 0.0, (1, -1))
    with pytest.raises(InvalidProblem, match="at least one"):
        reduce(x, _add, 0.0, ())
    with pytest.raises(InvalidProblem, match="integer"):
        reduce(_ints(3, 4), _add, 0.5, 1)


def test_unmergeable_reduced_dims_are_refused():
    base = _x(2, 3, 2, 3, 2, 3, 2, 3)
    x = base.permute(0, 2, 4, 6, 1, 3, 5, 7)[..., :2]
    x = x.permute(0, 4, 1, 5, 2, 6, 3, 7)  # five reduced dims that never merge
    with pytest.raises(Unsupported, match="merge"):
        reduce(x, _add, 0.0, (0, 2, 4, 6, 7))
