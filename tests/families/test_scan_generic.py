"""associative_scan / AssociativeScanPlan: the scan with a caller's @triton.jit combine against
torch references (cumsum, cummax, max of |x|, bitwise or, a non-commutative "first"), several
dims and directions, strided input, integer and bool dtypes, empty and tiny dims, long lines
through the chunked passes, bitwise reruns and typed errors."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import baracuda as bc
from baracuda.families.scan import generic as G
from baracuda.families.scan import plans as P
from baracuda.families.scan import reference as ref
from conftest import DEVICE


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@triton.jit
def bit_or(a, b):
    return a | b


@triton.jit
def first(a, b):
    """Associative and not commutative: every prefix is its first element (checks that the
    earlier operand comes first in every combination, carries included)."""
    return a + b * 0


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2 + 0.1).to(DEVICE, dtype)


def _ints(*shape, dtype=torch.int32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 1 << 7, shape, generator=g).to(DEVICE, dtype)


def _flipped(fn, x, dim, reverse):
    return fn(x.flip(dim)).flip(dim) if reverse else fn(x)


def _first_ref(x, dim, reverse):
    src = x.flip(dim) if reverse else x
    out = src.narrow(dim, 0, 1).expand_as(src) if src.shape[dim] else src
    return out.flip(dim) if reverse else out


@pytest.mark.parametrize("shape,dim", [((5, 37), 1), ((4, 6, 3), 1), ((9,), 0), ((40, 3), 0),
                                       ((3, 4, 5), -1), ((2, 3, 7), 0)])
@pytest.mark.parametrize("reverse", [False, True])
def test_combines_match_torch(shape, dim, reverse):
    x = _x(*shape)
    got = bc.associative_scan(add, x, dim, reverse)
    torch.testing.assert_close(got, _flipped(lambda t: t.cumsum(dim), x, dim, reverse),
                               rtol=1e-13, atol=1e-13)
    assert torch.equal(bc.associative_scan(maximum, x, dim, reverse),
                       _flipped(lambda t: t.cummax(dim).values, x, dim, reverse))
    want = ref.associative_scan(x, dim % x.dim(), lambda a, b: torch.maximum(a.abs(), b.abs()),
                                reverse)
    assert torch.equal(bc.associative_scan(max_abs, x, dim, reverse).cpu(), want)
    assert torch.equal(bc.associative_scan(first, x, dim, reverse),
                       _first_ref(x, dim % x.dim(), reverse))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.int16,
                                   torch.uint8])
def test_integer_bitwise_or_and_sum(dtype):
    x = _ints(6, 50, dtype=dtype)
    want = ref.associative_scan(x, 1, torch.bitwise_or)
    got = bc.associative_scan(bit_or, x, 1)
    assert got.dtype == dtype and torch.equal(got.cpu(), want)
    s = bc.associative_scan(add, x, 1)  # wraps in the input's own dtype, as a sum of it
    assert torch.equal(s.cpu(), ref.associative_scan(x, 1, torch.add))


def test_bool_or_is_a_running_any():
    x = _x(4, 33) > 1.5
    got = bc.associative_scan(bit_or, x, 1)
    assert got.dtype == torch.bool
    assert torch.equal(got, x.cumsum(1) > 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_half_and_float_combine_in_float32(dtype):
    x = _x(6, 300, dtype=dtype)
    got = bc.associative_scan(add, x, 1)
    assert got.dtype == dtype
    want = x.double().cumsum(1)
    tol = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol * want.abs().max())
    assert torch.equal(bc.associative_scan(maximum, x, 1), x.cummax(1).values)


def test_nan_and_inf_follow_the_combine():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, inf, 3.0, -inf, nan, 5.0], [-inf, 2.0, nan, 1.0, inf, 0.0]],
                     device=DEVICE)
    torch.testing.assert_close(bc.associative_scan(add, x, 1), x.cumsum(1), equal_nan=True)


def test_strided_and_transposed_inputs():
    base = _x(20, 30)
    for x in (base.t(), base[::2, ::3], base[:, :1].expand(20, 7), base[1:, 2:].t()):
        for dim in (0, 1):
            assert torch.equal(bc.associative_scan(maximum, x, dim), x.cummax(dim).values)
            torch.testing.assert_close(bc.associative_scan(add, x, dim), x.cumsum(dim))


def test_empty_size_one_and_zero_dim():
    for x, dim in ((torch.empty(0, 3, device=DEVICE), 0), (torch.empty(3, 0, device=DEVICE), 0),
                   (_x(1, 5), 0), (_x(4, 1), 1)):
        got = bc.associative_scan(add, x, dim)
        assert got.shape == x.shape
        torch.testing.assert_close(got, x.cumsum(dim))
    s = torch.tensor(2.5, device=DEVICE)
    got = bc.associative_scan(add, s, 0)
    assert got.shape == () and got.item() == 2.5


@pytest.fixture
def small_tiles(monkeypatch):
    """The scan family's small-tile setting (tests/families/test_scan.py): lines of a few
    hundred elements take every chunked pass."""
    monkeypatch.setattr(P, "TILE_ELEMS", 64)
    monkeypatch.setattr(P, "MAX_TOTALS_BLOCK", 2)
    monkeypatch.setattr(P, "MIN_CHUNK_BLOCKS", 1)
    G._STEPS.clear()
    yield
    G._STEPS.clear()


@pytest.mark.parametrize("reverse", [False, True])
def test_chunked_lines_match_and_rerun_bitwise(small_tiles, reverse):
    x = _x(2, 700, dtype=torch.float32)
    x[0, 600:] = x[0, 600:].abs() * 0.1 + 50  # a late record
    desc = bc.AssociativeScanDescriptor((2, 700), 1, torch.float32, maximum, reverse)
    assert P.launch_config(desc)["chunks"] > 2 * P.MAX_TOTALS_BLOCK
    assert bc.AssociativeScanPlan.select(desc).workspace_size() > 0
    for fn, want in ((maximum, lambda t: t.cummax(1).values), (first, None), (add, None)):
        got = bc.associative_scan(fn, x, 1, reverse)
        if fn is maximum:
            assert torch.equal(got, _flipped(want, x, 1, reverse))
        elif fn is first:
            assert torch.equal(got, _first_ref(x, 1, reverse))
        else:
            torch.testing.assert_close(got.double(),
                                       _flipped(lambda t: t.double().cumsum(1), x, 1, reverse),
                                       rtol=1e-4, atol=1e-3)
        again = bc.associative_scan(fn, x, 1, reverse)
        assert torch.equal(got.view(torch.int32), again.view(torch.int32))


def test_chunked_integer_columns(small_tiles):
    x = _ints(300, 3, dtype=torch.int64)
    got = bc.associative_scan(bit_or, x, 0)
    assert torch.equal(got.cpu(), ref.associative_scan(x, 0, torch.bitwise_or))


def test_reruns_are_bitwise_identical():
    x = _x(2, 1500, dtype=torch.float32)
    a, b = bc.associative_scan(add, x, 1), bc.associative_scan(add, x, 1)
    assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_errors_are_typed():
    x = _x(3, 4)
    with pytest.raises(TypeError, match="triton.jit"):
        bc.associative_scan(lambda a, b: a + b, x, 0)
    with pytest.raises(TypeError, match="tensor"):
        bc.associative_scan(add, [1.0, 2.0], 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        bc.associative_scan(add, x, 2)
    with pytest.raises(bc.Unsupported, match="no gradient"):
        bc.associative_scan(add, x.clone().requires_grad_(), 0)
    with torch.no_grad():  # no graph is built: allowed
        bc.associative_scan(add, x.clone().requires_grad_(), 0)
    with pytest.raises(bc.InvalidProblem, match="combine"):
        bc.AssociativeScanPlan.select(bc.AssociativeScanDescriptor((3, 4), 0, torch.float32,
                                                                   max))
    with pytest.raises(bc.InvalidProblem, match="shape"):
        plan = bc.AssociativeScanPlan.select(bc.AssociativeScanDescriptor((3, 4), 0,
                                                                          torch.float32, add))
        plan.run(bc.AssociativeScanArgs(x=torch.ones(3, 5, device=DEVICE),
                                        y=torch.empty(3, 4, device=DEVICE)))
